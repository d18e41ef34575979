//! The S4 routing gate on real rendered text: sharp passes, blurred and dark are skipped.

mod common;

use mmsched_backends::gate::{GateVerdict, evaluate, measure};
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;

#[test]
fn sharp_text_passes_blurred_and_dark_are_skipped() {
    let policy = Policy::default();
    let clock = MonotonicClock::new();
    let sharp = common::render_text(
        640,
        480,
        &["Hello World 2026", "Edge scheduler 42"],
        40.0,
        40.0,
        150.0,
    );
    let blurred = common::blur(&sharp, 6);
    let dark = common::darken(&sharp, 0.06);
    let s = evaluate(&sharp, policy.routing(), &clock);
    let b = evaluate(&blurred, policy.routing(), &clock);
    let d = evaluate(&dark, policy.routing(), &clock);
    assert_eq!(s.verdict, GateVerdict::Pass, "{s:?}");
    assert_eq!(b.verdict, GateVerdict::Blurred, "{b:?}");
    assert_eq!(d.verdict, GateVerdict::Dark, "{d:?}");
    assert!(s.laplacian_var > 10.0 * b.laplacian_var, "{s:?} vs {b:?}");
    assert!(s.verdict.runs_model() && !b.verdict.runs_model() && !d.verdict.runs_model());
}

#[test]
fn disabled_routing_always_runs() {
    let mut spec = Policy::default().to_spec();
    spec.routing.enabled = Some(false);
    let policy = Policy::try_from(spec).expect("valid policy");
    let dark = common::darken(
        &common::render_text(320, 240, &["x"], 20.0, 10.0, 10.0),
        0.0,
    );
    let r = evaluate(&dark, policy.routing(), &MonotonicClock::new());
    assert_eq!(r.verdict, GateVerdict::Disabled);
    assert!(measure(&dark).mean_luma < 1.0);
}
