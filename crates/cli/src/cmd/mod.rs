//! One module per subcommand.

pub mod kernel_size;
pub mod ldti;
pub mod policy;
