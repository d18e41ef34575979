//! # mmsched-runtime
//!
//! The std side of mmsched: everything that touches the operating system or real time.
//!
//! - [`chain`]: an error and its causes on one line;
//! - [`ingest`]: every event placed on the one device timeline by online clock alignment
//!   (S5), with the residual alignment error tracked;
//! - [`platform`]: Linux integration (S11) — a cgroup per scheduler class, real-time
//!   threads and CPU affinity, CPU pressure (PSI) as a saturation signal, and a small
//!   power-control trait whose calls are timed against the S11 budgets;
//! - [`router`]: information gates (S4) — dark/blurred frames skip vision, voice activity
//!   gates speech recognition; every skip counted and emitted as an event;
//! - [`sched`]: the scheduler — admission by score, dispatch by the policy rule into
//!   reserved slots, LLM preemption at token boundaries, workers pinned to cores;
//! - [`source`]: sensor sources (camera, microphone, IMU, text requests) that each stamp
//!   events with their own drifting clock (S5).
//!
//! No code here reads the wall clock directly: a [`mmsched_core::Clock`] is passed in, so
//! tests drive time with [`mmsched_core::time::ManualClock`].
#![deny(missing_docs)]

pub mod chain;
pub mod ingest;
pub mod platform;
pub mod router;
pub mod sched;
pub mod source;
