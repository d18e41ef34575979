#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod bound;
pub mod compare;
pub mod decisions;
pub mod escape;
mod html;
pub mod num;
pub mod series;
pub mod summary;
pub mod svg;
mod table;
#[cfg(test)]
mod testdata;
pub mod thin;
pub mod window;
mod write;

pub use compare::{
    MissRatio, Spread, change_pct, comparison_json, median_summary, render_comparison,
    render_repeated, repeated_json,
};
pub use decisions::{CalibrationBin, CalibrationRow, DecisionsSummary, RungEstimate};
pub use html::render_html;
pub use series::{
    AlignmentPoint, LdtiPoint, MissPoint, OccupancyPoint, PlayoutPoint, RatePoint, RunSeries,
};
pub use summary::{
    AlignmentSummary, AudioSummary, HealthActionRecord, HealthSummary, LdtiSummary, LevelSeconds,
    LlmSummary, MeanMax, ModalitySummary, OriginSummary, PlatformSignals, RoutingSummary,
    RunSummary, StreamAlignment,
};
pub use table::render_table;
pub use thin::LatencyStride;
pub use window::{WindowModality, WindowSummary};
pub use write::{
    HTML_FILE, ReportError, ReportFiles, SERIES_FILE, SUMMARY_FILE, read_summary, write_report,
};
