//! Axes: a data range mapped to [0, 1], linear or logarithmic, with "nice" ticks
//! (1, 2 or 5 times a power of ten) and labels.

/// Maximum number of ticks [`nice_ticks`] aims for (it returns at most one more).
const TARGET_TICKS: usize = 6;

/// How values map onto the axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal distances for equal differences.
    Linear,
    /// Equal distances for equal ratios (positive values only).
    Log,
}

/// A data range on one axis. The constructors repair any range (non-finite, empty or
/// reversed), so every axis maps finite values to finite positions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
}

impl Axis {
    /// A linear axis over `[lo, hi]`, widened to the nearest ticks so it starts and ends
    /// on one. A non-finite bound becomes 0 or 1; an empty range is widened by 1.
    pub fn linear(lo: f64, hi: f64) -> Self {
        let (mut lo, mut hi) = sane_range(lo, hi);
        let magnitude = lo.abs().max(hi.abs());
        // Too narrow to split into distinct ticks (relative to the values, or near the
        // smallest floating-point numbers).
        if hi - lo <= magnitude * 1e-12 || hi - lo < 1e-250 {
            let pad = (magnitude * 0.1).max(1.0);
            lo -= pad;
            hi += pad;
        }
        let step = nice_step(hi - lo, TARGET_TICKS);
        let (nice_lo, nice_hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
        if nice_lo.is_finite() && nice_hi.is_finite() && nice_lo < nice_hi {
            (lo, hi) = (nice_lo, nice_hi);
        }
        Self {
            scale: Scale::Linear,
            lo,
            hi,
        }
    }

    /// A linear axis over exactly `[lo, hi]`, not widened to a tick: a time axis ends
    /// where the run ended (a 61 s run on a 0–80 s axis reads as a longer run). Falls back
    /// to [`Axis::linear`] when the range is too narrow to split.
    pub fn linear_exact(lo: f64, hi: f64) -> Self {
        let (lo, hi) = sane_range(lo, hi);
        let magnitude = lo.abs().max(hi.abs());
        if hi - lo <= magnitude * 1e-12 || hi - lo < 1e-250 {
            return Self::linear(lo, hi);
        }
        Self {
            scale: Scale::Linear,
            lo,
            hi,
        }
    }

    /// A logarithmic axis over `[lo, hi]`, widened to whole decades. Bounds that are not
    /// positive and finite are replaced (the lower by `hi / 1000`, or 1 and 10 if neither is).
    pub fn log(lo: f64, hi: f64) -> Self {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let (lo, hi) = match (positive(lo), positive(hi)) {
            (true, true) => (lo.min(hi), lo.max(hi)),
            (true, false) => (lo, lo * 1000.0),
            (false, true) => (hi / 1000.0, hi),
            (false, false) => (1.0, 10.0),
        };
        // Within f64's range so the bounds stay finite and positive, and at least a decade.
        let lo_exp = lo.log10().floor().clamp(-300.0, 299.0);
        let hi_exp = hi.log10().ceil().clamp(lo_exp + 1.0, 300.0);
        Self {
            scale: Scale::Log,
            lo: 10f64.powf(lo_exp),
            hi: 10f64.powf(hi_exp),
        }
    }

    /// The scale of this axis.
    pub fn scale(&self) -> Scale {
        self.scale
    }

    /// The lower and upper bound of the axis.
    pub fn bounds(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// Position of `value` as a fraction of the axis (0 at `lo`, 1 at `hi`; outside that
    /// for values outside), or `None` when it has no position (non-finite, or not positive
    /// on a log axis).
    pub fn fraction(&self, value: f64) -> Option<f64> {
        let f = match self.scale {
            Scale::Linear => (value - self.lo) / (self.hi - self.lo),
            Scale::Log if value > 0.0 => {
                (value.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
            }
            Scale::Log => return None,
        };
        f.is_finite().then_some(f)
    }

    /// Tick positions in data units, increasing, all within the axis.
    pub fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => nice_ticks(self.lo, self.hi),
            Scale::Log => log_ticks(self.lo, self.hi),
        }
    }

    /// The label of a tick at `value` (as few decimals as tell the ticks apart).
    pub fn label(&self, value: f64) -> String {
        let precision_of = match self.scale {
            Scale::Linear => {
                let ticks = self.ticks();
                ticks
                    .windows(2)
                    .map(|w| w[1] - w[0])
                    .fold(f64::INFINITY, f64::min)
            }
            Scale::Log => value,
        };
        format_number(value, precision_of)
    }
}

/// Largest magnitude an axis bound may have, so that spans stay finite.
const MAX_BOUND: f64 = 1e300;

/// Replaces non-finite bounds, limits magnitudes to [`MAX_BOUND`] and orders them.
fn sane_range(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) => (lo, hi),
        (true, false) => (lo, lo + 1.0),
        (false, true) => (hi - 1.0, hi),
        (false, false) => (0.0, 1.0),
    };
    let (lo, hi) = (
        lo.clamp(-MAX_BOUND, MAX_BOUND),
        hi.clamp(-MAX_BOUND, MAX_BOUND),
    );
    (lo.min(hi), lo.max(hi))
}

/// The smallest step of 1, 2 or 5 times a power of ten that splits `span` into at most
/// `target` intervals.
fn nice_step(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        // Tolerate rounding in `raw` (1.2 / 6 may come out a hair above 0.2).
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude);
    if step.is_finite() && step > 0.0 {
        step
    } else {
        span.abs().max(f64::MIN_POSITIVE)
    }
}

/// Ticks at multiples of a nice step within `[lo, hi]`: increasing, within the range, and
/// between 2 and 7 of them for any finite range (the bounds themselves when the range is
/// too narrow for the floating-point steps to differ).
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = sane_range(lo, hi);
    let mut ticks = Vec::new();
    if hi > lo {
        let step = nice_step(hi - lo, TARGET_TICKS);
        let first = (lo / step).ceil();
        let last = (hi / step).floor();
        if first.is_finite() && last.is_finite() && last - first <= TARGET_TICKS as f64 {
            let mut k = first;
            while k <= last {
                let tick = (k * step).clamp(lo, hi);
                if ticks.last().is_none_or(|prev| tick > *prev) {
                    ticks.push(tick);
                }
                k += 1.0;
            }
        }
    }
    if ticks.len() < 2 {
        ticks = if hi > lo { vec![lo, hi] } else { vec![lo] };
    }
    ticks
}

/// Ticks on a log axis over `[lo, hi]` (both positive): decades, thinned when there are
/// more than ten; 1-2-5 steps when the range spans less than two decades.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let first = lo.log10().ceil() as i32;
    let last = hi.log10().floor() as i32;
    let within = |v: &f64| *v >= lo * (1.0 - 1e-12) && *v <= hi * (1.0 + 1e-12);
    let mut decades: Vec<f64> = (first..=last).map(|e| 10f64.powi(e)).collect();
    if decades.len() > 10 {
        let stride = decades.len().div_ceil(10);
        decades = decades.into_iter().step_by(stride).collect();
    }
    if decades.len() >= 3 {
        return decades;
    }
    let with_steps: Vec<f64> = (first - 1..=last)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .filter(within)
        .collect();
    if with_steps.len() >= 2 {
        with_steps
    } else {
        nice_ticks(lo, hi)
            .into_iter()
            .filter(|v| *v > 0.0)
            .collect()
    }
}

/// `value` with as many decimals as a spacing of `precision` needs (at most 6).
fn format_number(value: f64, precision: f64) -> String {
    if !value.is_finite() {
        return String::new();
    }
    let magnitude = value.abs();
    if magnitude >= 1e6 || (magnitude > 0.0 && magnitude < 1e-4) {
        return format!("{value:e}");
    }
    let decimals = if precision.is_finite() && precision > 0.0 && precision < 1.0 {
        ((-precision.log10()).ceil() as usize).min(6)
    } else {
        0
    };
    let text = format!("{value:.decimals$}");
    // "-0" reads oddly on an axis.
    if text
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        text.trim_start_matches('-').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn nice_ticks_are_increasing_within_range_and_few(
            lo in -1e9f64..1e9,
            span in 1e-6f64..1e9,
        ) {
            let hi = lo + span;
            prop_assume!(hi > lo);
            let ticks = nice_ticks(lo, hi);
            prop_assert!((2..=10).contains(&ticks.len()), "{} ticks: {ticks:?}", ticks.len());
            for pair in ticks.windows(2) {
                prop_assert!(pair[0] < pair[1], "not increasing: {ticks:?}");
            }
            for tick in &ticks {
                prop_assert!(*tick >= lo && *tick <= hi, "{tick} outside [{lo}, {hi}]");
            }
        }

        #[test]
        fn log_axis_ticks_are_positive_increasing_and_within(
            lo in 1e-6f64..1e6,
            factor in 1.01f64..1e8,
        ) {
            let axis = Axis::log(lo, lo * factor);
            let (a, b) = axis.bounds();
            let ticks = axis.ticks();
            prop_assert!((2..=10).contains(&ticks.len()), "{ticks:?}");
            for pair in ticks.windows(2) {
                prop_assert!(pair[0] < pair[1]);
            }
            for tick in &ticks {
                prop_assert!(*tick > 0.0 && *tick >= a * 0.999_999 && *tick <= b * 1.000_001);
            }
        }

        #[test]
        fn every_axis_maps_its_bounds_to_zero_and_one(lo in any::<f64>(), hi in any::<f64>()) {
            for axis in [Axis::linear(lo, hi), Axis::log(lo, hi)] {
                let (a, b) = axis.bounds();
                prop_assert!(a.is_finite() && b.is_finite() && a < b);
                prop_assert_eq!(axis.fraction(a), Some(0.0));
                let top = axis.fraction(b).expect("finite");
                prop_assert!((top - 1.0).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn an_exact_axis_ends_at_its_bound_with_ticks_inside() {
        let axis = Axis::linear_exact(0.0, 61.3);
        assert_eq!(axis.bounds(), (0.0, 61.3));
        let ticks = axis.ticks();
        assert_eq!(ticks.first(), Some(&0.0));
        assert!(ticks.iter().all(|t| *t <= 61.3), "{ticks:?}");
        assert_eq!(
            Axis::linear(0.0, 61.3).bounds(),
            (0.0, 80.0),
            "the widened axis"
        );
        assert_eq!(
            Axis::linear_exact(5.0, 5.0).bounds(),
            Axis::linear(5.0, 5.0).bounds()
        );
    }

    #[test]
    fn linear_axis_ends_on_ticks() {
        let axis = Axis::linear(0.0, 0.73);
        assert_eq!(axis.bounds(), (0.0, 0.8));
        assert_eq!(axis.ticks().len(), 5);
        assert_eq!(axis.label(0.4), "0.4");
        let rounded_up = 6.0 * 0.2;
        assert_eq!(nice_ticks(0.0, rounded_up).len(), 7, "step 0.2, not 0.5");
    }

    #[test]
    fn log_axis_uses_decades_and_fills_in_narrow_ranges() {
        assert_eq!(
            Axis::log(3.0, 800.0).ticks(),
            vec![1.0, 10.0, 100.0, 1000.0]
        );
        let narrow = Axis::log(12.0, 40.0);
        assert_eq!(narrow.bounds(), (10.0, 100.0));
        assert_eq!(narrow.ticks(), vec![10.0, 20.0, 50.0, 100.0]);
        assert_eq!(Axis::log(0.02, 0.5).label(0.05), "0.05");
    }

    #[test]
    fn degenerate_ranges_are_repaired() {
        assert_eq!(Axis::linear(f64::NAN, f64::NAN).bounds(), (0.0, 1.0));
        let flat = Axis::linear(5.0, 5.0);
        let (lo, hi) = flat.bounds();
        assert!(lo < 5.0 && hi > 5.0);
        assert_eq!(Axis::log(0.0, -3.0).bounds(), (1.0, 10.0));
        let (lo, hi) = Axis::linear(0.0, f64::MIN_POSITIVE).bounds();
        assert!(hi - lo >= 1.0, "{lo}..{hi}");
        assert_eq!(Axis::log(1.0, 1.0).fraction(-1.0), None);
    }
}
