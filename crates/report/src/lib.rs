//! # mmsched-report
//!
//! The report of one `mmsched run`: the summary schema (`summary.json`), the terminal
//! summary table, the side-by-side table of `bench e2e`, and the self-contained HTML report
//! with plots. The runtime fills [`RunSummary`] and [`RunSeries`]; this crate renders them.
#![deny(missing_docs)]

pub mod compare;
pub mod escape;
mod html;
pub mod num;
pub mod series;
pub mod summary;
pub mod svg;
mod table;

pub use compare::{MissRatio, change_pct, comparison_json, render_comparison};
pub use html::render_html;
pub use series::{LdtiPoint, OccupancyPoint, RatePoint, RunSeries};
pub use summary::{
    AlignmentSummary, AudioSummary, HealthActionRecord, HealthSummary, LdtiSummary, LevelSeconds,
    LlmSummary, ModalitySummary, RoutingSummary, RunSummary, StreamAlignment,
};
pub use table::render_table;
