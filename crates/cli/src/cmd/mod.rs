//! One module per subcommand.

pub mod bench;
#[cfg(target_os = "linux")]
pub mod cgroup_selftest;
pub mod kernel_size;
pub mod ldti;
pub mod policy;
pub mod serve;
pub mod sim;
pub mod trace;
