//! One module per subcommand.

pub mod bench;
#[cfg(target_os = "linux")]
pub mod cgroup_selftest;
pub mod engine_arg;
pub mod infer;
pub mod kernel_size;
pub mod ldti;
pub mod models;
pub mod own_models;
pub mod policy;
pub mod profile;
pub mod profile_corun;
pub mod profile_own;
pub mod profile_rungs;
pub mod run;
pub mod serve;
pub mod serve_models;
pub mod sim;
pub mod synthetic;
pub mod trace;
