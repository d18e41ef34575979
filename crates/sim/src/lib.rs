//! # mmsched-sim — the *simulated* mmsched
//!
//! The one place in mmsched where inference is **modelled instead of run**: job costs are
//! drawn from a measured device latency profile, sensors and networks are statistical
//! models, and time is a virtual clock moved with `advance()`. Everything that *decides* —
//! alignment, playout, LDTI, health actions — is the real code from `mmsched-core`, so
//! what the simulator shows is what the runtime would do on the same events.
//!
//! - [`clock`] — the virtual clock;
//! - [`soak`] — long-run soaks in three arms (no health loop, a naive fix, mmsched's health
//!   loop) with stressors acting through named mechanisms (S10), sampled from the real run
//!   loop in virtual time (`mmsched_pipeline::simulate`), [`plot`] its SVG;
//! - [`speech`] — the S6 experiment — fixed vs adaptive playout buffer;
//! - [`drift`] — the S5 alignment experiment on the world's clock-drift model;
//!
//! The models of the world it simulates — seeded randomness, jitter and loss, clock drift,
//! the microphone, background load, device latency profiles, the E-model — are
//! `mmsched-world`'s, the same ones the real runtime uses.
//!
#![deny(missing_docs)]

pub mod clock;
pub mod drift;
pub mod plot;
pub mod soak;
pub mod speech;
