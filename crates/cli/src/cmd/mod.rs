//! One module per subcommand.

pub mod bench;
pub mod engine_arg;
pub mod infer;
pub mod ldti;
pub mod policy;
pub mod profile;
pub mod synthetic;
