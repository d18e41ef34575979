//! One module per subcommand.

pub mod bench;
pub mod ldti;
pub mod policy;
pub mod trace;
