//! One module per subcommand.

pub mod infer;
pub mod ldti;
pub mod models;
pub mod policy;
