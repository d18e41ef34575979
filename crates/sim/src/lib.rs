//! # mmsched-sim — the *simulated* mmsched
//!
//! The one place in mmsched where inference is **modelled instead of run**: job costs are
//! drawn from a measured device latency profile, sensors and networks are statistical
//! models, and time is a virtual clock moved with `advance()`. Everything that *decides* —
//! alignment, playout, LDTI, health actions — is the real code from `mmsched-core`, so
//! what the simulator shows is what the runtime would do on the same events.
//!
//! - [`clock`] — the virtual clock;
//! - [`des`] — the discrete-event simulator driving the core `Scheduler` step function;
//! - [`health_loop`] — the core's health controller stepped inside a simulation;
//! - [`soak`] — long-run soaks in three arms (no health loop, a naive fix, mmsched's health
//!   loop) with stressors acting through named mechanisms (S10), [`plot`] its SVG;
//! - [`speech`] — the S6 experiment — fixed vs adaptive playout buffer;
//! - [`drift`] — the S5 alignment experiment on the world's clock-drift model;
//! - [`replay`] — rebuilds the core from a run's recorded calls and checks each decision.
//!
//! The models of the world it simulates — seeded randomness, jitter and loss, clock drift,
//! the microphone, background load, device latency profiles, the E-model — are
//! `mmsched-world`'s, the same ones the real runtime uses.
//!
#![deny(missing_docs)]

pub mod clock;
pub mod des;
pub mod drift;
pub mod health_loop;
pub mod plot;
pub mod replay;
pub mod soak;
pub mod speech;
