//! # mmsched-core
//!
//! The pure, deterministic heart of mmsched. Everything here is `no_std` + `alloc`, never
//! reads a wall clock (a [`time::Clock`] is passed in), never does I/O (but for the
//! `std`-only [`bounded`] reader every crate uses for user files), and never branches on
//! which modality a job belongs to: modality is data recorded for arbitration and tracing.
//!
//! - [`slots`]: the time-slot reservation layer (S1);
//! - [`arbiter`]: the dynamic priority score, pruning and dispatch rules (S2);
//! - [`ldti`]: the Latency–Drift–Throughput Imbalance index and its actions (S3);
//! - [`health`]: the health loop's step function (index → level → remedies), shared by the
//!   runtime, the simulator and the MCU hook;
//! - [`layout`]: the scheduler's lanes and standing reservations, shared by the runtime
//!   and the simulator;
//! - [`steps`] and [`places`]: jobs cut into steps (step deadlines, committed steps,
//!   retries of shed steps) and the places a model has for them, shared by the runtime's
//!   book of jobs and the simulator;
//! - [`policy`]: the validated policy document that parameterises all of the above;
//! - [`profile`]: the device latency profile format (what jobs cost on a device, and what
//!   each quality rung costs and how accurate it is);
//! - [`rungs`]: the quality rungs of a model (cheaper ways to run a job), declared in the
//!   policy;
//! - [`score`]: judging results against the truth (OCR line accuracy and CER, WER);
//! - [`playout`]: the audio playout controller (S6), which maximises the listener's quality
//!   by the [`emodel`]; [`align`]: per-stream clock alignment (S5).
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![deny(missing_docs)]

extern crate alloc;

pub mod align;
pub mod arbiter;
#[cfg(feature = "std")]
pub mod bounded;
pub mod emodel;
pub mod health;
pub mod layout;
pub mod ldti;
pub mod modality;
pub mod places;
pub mod playout;
pub mod policy;
pub mod profile;
pub mod rungs;
pub mod scheduler;
pub mod score;
pub mod slots;
pub mod steps;
pub mod text;
pub mod time;

pub use modality::Modality;
pub use time::Clock;
