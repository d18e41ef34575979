//! # mmsched-runtime
//!
//! The std side of mmsched: everything that touches the operating system or real time.
//!
//! - [`platform`]: Linux integration (S11) — a cgroup per scheduler class, real-time
//!   threads and CPU affinity, CPU pressure (PSI) as a saturation signal, and a small
//!   power-control trait whose calls are timed against the S11 budgets;
//! - [`source`]: sensor sources that each stamp events with their own drifting clock (S5).
//!
//! No code here reads the wall clock directly: a [`mmsched_core::Clock`] is passed in, so
//! tests drive time with [`mmsched_core::time::ManualClock`].
#![deny(missing_docs)]

pub mod platform;
pub mod source;
