//! One module per subcommand.

pub mod ldti;
pub mod policy;
pub mod sim;
