//! # mmsched-world — what the world does to mmsched
//!
//! The models of everything outside the scheduler that both the real runtime and the
//! simulator need: networks that delay and lose packets, sensor clocks that drift, the
//! microphone's talk spurts and the speech gate's timing, background load on the cores,
//! the device latency profile that prices each job, and the E-model that scores speech.
//! `mmsched-runtime` delivers its sources through them and `mmsched-pipeline` takes its
//! cost priors, microphone budgets and load from them; `mmsched-sim`'s experiments (and the
//! simulated runs its soaks drive) use the same ones. This crate sits below all three, so
//! the runtime does not depend on the simulator.
//!
//! - [`rng`] — seeded, reproducible random streams;
//! - [`jitter`] — Gamma jitter injection, P99 calibration and packet-trace replay (S6);
//! - [`drift`] — the S5 clock-drift model of a stream (offset, crystal drift, temperature
//!   episodes);
//! - [`mic`] — the microphone's talk spurts, the utterances they make and their budgets;
//! - [`load`] — the scenario's background CPU load and how it slows the workers;
//! - [`profile`] — device latency profile files (job costs);
//! - [`emodel`] — ITU-T G.107 E-model MOS from delay and loss;
//! - [`stats`] — percentiles.
#![deny(missing_docs)]

pub mod drift;
pub mod emodel;
pub mod jitter;
pub mod load;
pub mod mic;
pub mod profile;
pub mod rng;
pub mod stats;
