//! Platform integration (S11): resource groups, real-time threads, CPU pressure and power,
//! and the signals that tell mmsched's own load from its neighbours' (`signals`).
//!
//! Each file has one job. The Linux-specific parts sit behind `cfg(target_os = "linux")`;
//! what does not touch the OS (the PSI text parser, the power trait and its budgets) is
//! portable so that other platforms can implement the same seams.
//!
//! Every operation that the OS may refuse (no permission, read-only filesystem, missing
//! kernel feature) returns a status the caller logs **once** and then runs without the
//! feature: an unprivileged user still gets a working scheduler, only without the kernel's
//! help.

pub mod budget;
#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod power;
pub mod procfs;
pub mod psi;
#[cfg(target_os = "linux")]
pub mod rt;
pub mod signals;
