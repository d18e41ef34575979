//! Ingest: putting every event of every stream on the one device timeline (S5).

pub mod align;

pub use align::{Placed, StreamIngest};
