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
//! - [`profile`] — device latency profiles (job costs);
//! - [`load`] — the scenario's background CPU load and how it slows the workers;
//! - [`mic`] — the microphone's talk spurts and the utterances they make;
//! - [`soak`] — long-run soaks in three arms (no health loop, a naive fix, mmsched's health
//!   loop) with stressors acting through named mechanisms (S10), [`plot`] its SVG;
//! - [`rng`] — seeded, reproducible random streams;
//! - [`jitter`] — Gamma jitter injection, P99 calibration and packet-trace replay (S6);
//! - [`emodel`] — ITU-T G.107 E-model MOS from delay and loss;
//! - [`speech`] — the S6 experiment — fixed vs adaptive playout buffer;
//! - [`drift`] — the S5 clock-drift model and the alignment experiment;
//! - [`stats`] — percentiles.
//!
#![deny(missing_docs)]

pub mod clock;
pub mod des;
pub mod drift;
pub mod emodel;
pub mod health_loop;
pub mod jitter;
pub mod load;
pub mod mic;
pub mod plot;
pub mod profile;
pub mod replay;
pub mod rng;
pub mod soak;
pub mod speech;
pub mod stats;
