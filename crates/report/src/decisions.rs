//! `summary.json`'s `decisions`: how mmsched's choices of rung and admission turned out —
//! how many of each kind it made, which were wrong in hindsight, how well its predicted
//! chances of ending in time matched what happened (a reliability table per class and
//! rung), and what it estimated of each rung's chance to be right. Empty for the
//! baselines, which predict nothing.

use serde::{Deserialize, Serialize};

use crate::num::de_f64;

/// The fewest decisions that populate a calibration bin enough to read it
/// ([`CalibrationBin::populated`]).
pub const POPULATED_BIN: u64 = 20;

/// The gap a calibration bin is read against: its realised share is to lie within this of
/// its mean prediction.
pub const CALIBRATION_TOLERANCE: f64 = 0.1;

/// See the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecisionsSummary {
    /// Jobs whose rung (or shedding) was decided by expected correct results.
    pub decided: u64,
    /// Of which shed at once: no rung was worth what it cost the work behind.
    pub shed_at_admission: u64,
    /// Of which run though no rung was worth it, to measure a cost not yet measured on
    /// this device while it had room.
    pub explored: u64,
    /// Admitted but late, shed later or unfinished.
    pub admitted_late: u64,
    /// Run at a cheaper rung and on time, though the richest rung would have ended in time
    /// too (the richest's mean cost in place of the work run).
    pub degraded_richer_fit: u64,
    /// Shed (at admission or later) though the general lanes stood idle for at least the
    /// job's mean cost before its deadline.
    pub shed_device_idle: u64,
    /// OCR jobs whose lines to read were decided after detection: every line found read.
    pub lines_all_read: u64,
    /// Of those, the lines cut short to end in time.
    pub lines_cut: u64,
    /// Shadow comparisons run (a job's input at another rung while the device was idle, or
    /// busy for a rung compared too few times to tell).
    pub shadows: u64,
    /// Of which run while the device was busy.
    pub shadows_busy: u64,
    /// Jobs whose first step the scheduling core's admission shed when it came to run (the
    /// high percentiles of the work due by its deadline overflowed), and which ran because
    /// their rung was still worth its time by expected value.
    pub kept_over_core: u64,
    /// Reliability per class and rung.
    pub calibration: Vec<CalibrationRow>,
    /// The largest gap between predicted and realised in any populated bin
    /// ([`CalibrationBin::populated`]) of any row; NaN when no bin is populated.
    #[serde(deserialize_with = "de_f64")]
    pub calibration_max_gap: f64,
    /// Each rung's estimated chance to be right, its mean cost and whether dominated.
    pub rungs: Vec<RungEstimate>,
}

/// One class and rung's reliability table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CalibrationRow {
    /// Job class (`vision`, `asr`).
    pub class: String,
    /// Rung.
    pub rung: String,
    /// Bins of predicted chance, tenths, each with at least one decision.
    pub bins: Vec<CalibrationBin>,
}

/// Decisions whose predicted chance of ending in time fell in `[lo, hi)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CalibrationBin {
    /// Lower edge.
    pub lo: f64,
    /// Upper edge.
    pub hi: f64,
    /// Decisions.
    pub decisions: u64,
    /// Mean predicted chance.
    #[serde(deserialize_with = "de_f64")]
    pub predicted: f64,
    /// Share that ended in time.
    #[serde(deserialize_with = "de_f64")]
    pub on_time: f64,
}

impl CalibrationBin {
    /// Whether the bin holds decisions enough that the realised share's sampling error
    /// alone stays within [`CALIBRATION_TOLERANCE`] of a calibrated prediction (at 95 %):
    /// 1.96² · p(1 − p) / 0.1² of them at its mean prediction p — about 100 near ½, 35
    /// near 0.9 — and never fewer than [`POPULATED_BIN`]. With one floor of 20 for every
    /// bin, a perfectly calibrated bin near ½ would read more than 0.1 off about one time
    /// in three.
    pub fn populated(&self) -> bool {
        let p = self.predicted.clamp(0.0, 1.0);
        let z = 1.96_f64;
        let needed = (z * z * p * (1.0 - p) / CALIBRATION_TOLERANCE.powi(2)).ceil();
        self.decisions >= POPULATED_BIN && self.decisions as f64 >= needed
    }
}

/// A rung as the decisions saw it at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RungEstimate {
    /// Job class.
    pub class: String,
    /// Rung.
    pub rung: String,
    /// Estimated chance to be right, 0..=1.
    #[serde(deserialize_with = "de_f64")]
    pub p_right: f64,
    /// Where the estimate comes from: `reference` (the richest rung), `profile`,
    /// `shadow` (this run's comparisons, with the profile's scores where it has them),
    /// `assumed` (nothing measured: one in two).
    pub source: String,
    /// Shadow comparisons with the richest rung, and how many agreed.
    pub shadow_runs: u64,
    /// Of which agreed.
    pub shadow_agreed: u64,
    /// Mean cost of a whole job, milliseconds.
    #[serde(deserialize_with = "de_f64")]
    pub mean_cost_ms: f64,
    /// Never chosen: a richer rung serves more right answers per second of device time.
    pub dominated: bool,
}

impl CalibrationRow {
    /// The largest |predicted − on time| over its populated bins.
    pub fn max_gap(&self) -> Option<f64> {
        self.bins
            .iter()
            .filter(|b| b.populated())
            .map(|b| (b.predicted - b.on_time).abs())
            .reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(predicted: f64, decisions: u64) -> CalibrationBin {
        CalibrationBin {
            lo: (predicted * 10.0).floor() / 10.0,
            hi: (predicted * 10.0).floor() / 10.0 + 0.1,
            decisions,
            predicted,
            on_time: predicted,
        }
    }

    #[test]
    fn a_bin_is_read_once_sampling_alone_stays_within_the_tolerance() {
        // Near one half about 96 decisions, near 0.95 the floor of 20.
        assert!(!bin(0.55, 95).populated());
        assert!(bin(0.55, 96).populated());
        assert!(!bin(0.95, 19).populated());
        assert!(bin(0.95, 20).populated());
        assert!(!bin(0.9, 34).populated());
        assert!(bin(0.9, 35).populated());
    }

    #[test]
    fn the_largest_gap_counts_populated_bins_only() {
        let mut thin = bin(0.55, 40);
        thin.on_time = 0.2;
        let mut read = bin(0.95, 50);
        read.on_time = 0.9;
        let row = CalibrationRow {
            class: "vision".into(),
            rung: "det320".into(),
            bins: vec![thin, read],
        };
        let gap = row.max_gap().expect("one populated bin");
        assert!((gap - 0.05).abs() < 1e-9, "{gap}");
    }
}
