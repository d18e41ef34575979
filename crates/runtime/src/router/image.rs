//! The image branch gate: skip vision inference on dark or blurred frames.

use mmsched_core::policy::{Policy, RoutingPolicy};
use mmsched_core::time::Nanos;

use super::{GateCounts, RouteEvent, SkipReason};

/// What the image gate measured on one frame (the vision backend's gate computes these on
/// a small grey copy of the frame).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageMeasures {
    /// Mean luma, 0–255.
    pub mean_luma: f64,
    /// Variance of the 4-neighbour Laplacian of the luma.
    pub laplacian_var: f64,
}

/// Decides per frame whether vision inference runs, counting every decision.
#[derive(Debug, Clone)]
pub struct ImageRouter {
    routing: RoutingPolicy,
    counts: GateCounts,
}

impl ImageRouter {
    /// A router with the thresholds of `policy`.
    pub fn new(policy: &Policy) -> Self {
        Self {
            routing: *policy.routing(),
            counts: GateCounts::default(),
        }
    }

    /// Switches to the thresholds of a new policy (hot reload).
    pub fn set_policy(&mut self, policy: &Policy) {
        self.routing = *policy.routing();
    }

    /// Decides for a frame captured at `at_nanos` whose gate measures are `m` and took
    /// `gate_nanos`. Darkness is checked first: a dark frame has no edges either, and
    /// "dark" is the more useful reason to report.
    pub fn route(&mut self, at_nanos: Nanos, m: ImageMeasures, gate_nanos: Nanos) -> RouteEvent {
        let r = &self.routing;
        // NaN measures (an empty frame) count as no information.
        let skipped = if !r.enabled {
            None
        } else if m.mean_luma.is_nan() || m.mean_luma < r.dark_max_mean_luma {
            Some(SkipReason::Dark {
                mean_luma: m.mean_luma,
            })
        } else if m.laplacian_var.is_nan() || m.laplacian_var < r.blur_min_laplacian_var {
            Some(SkipReason::Blurred {
                laplacian_var: m.laplacian_var,
            })
        } else {
            None
        };
        let event = RouteEvent {
            branch: "vision",
            at_nanos,
            skipped,
            gate_nanos,
        };
        self.counts.count(&event);
        event
    }

    /// Counts so far.
    pub fn counts(&self) -> GateCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::policy::PolicySpec;

    #[test]
    fn dark_and_blurred_frames_are_skipped_and_counted() {
        let mut r = ImageRouter::new(&Policy::default());
        let clear = r.route(
            1,
            ImageMeasures {
                mean_luma: 180.0,
                laplacian_var: 400.0,
            },
            50,
        );
        assert_eq!(clear.skipped, None);
        let dark = r.route(
            2,
            ImageMeasures {
                mean_luma: 8.0,
                laplacian_var: 0.5,
            },
            40,
        );
        assert_eq!(dark.skipped, Some(SkipReason::Dark { mean_luma: 8.0 }));
        let blur = r.route(
            3,
            ImageMeasures {
                mean_luma: 150.0,
                laplacian_var: 4.0,
            },
            40,
        );
        assert_eq!(
            blur.skipped,
            Some(SkipReason::Blurred { laplacian_var: 4.0 })
        );
        let empty = r.route(
            4,
            ImageMeasures {
                mean_luma: f64::NAN,
                laplacian_var: f64::NAN,
            },
            1,
        );
        assert!(matches!(empty.skipped, Some(SkipReason::Dark { .. })));
        let c = r.counts();
        assert_eq!(
            (c.seen, c.passed, c.skipped_dark, c.skipped_blurred),
            (4, 1, 2, 1)
        );
        assert_eq!(c.gate_nanos, 131);
        assert_eq!(c.skipped(), 3);
    }

    #[test]
    fn thresholds_come_from_the_policy_and_reload() {
        let mut spec = PolicySpec::default();
        spec.routing.blur_min_laplacian_var = Some(2.0);
        let lenient = Policy::try_from(spec).expect("valid");
        let m = ImageMeasures {
            mean_luma: 150.0,
            laplacian_var: 4.0,
        };
        let mut r = ImageRouter::new(&Policy::default());
        assert!(r.route(0, m, 0).skipped.is_some());
        r.set_policy(&lenient);
        assert!(r.route(0, m, 0).skipped.is_none());
        let mut off = PolicySpec::default();
        off.routing.enabled = Some(false);
        r.set_policy(&Policy::try_from(off).expect("valid"));
        assert!(
            r.route(
                0,
                ImageMeasures {
                    mean_luma: 0.0,
                    laplacian_var: 0.0
                },
                0
            )
            .skipped
            .is_none()
        );
    }
}
