//! Speed goal: a 72-hour soak of each shipped scenario in ≤ 60 s of wall time.
//! Run with `cargo bench -p mmsched-sim --bench soak_72h` (optimised build).

use mmsched_core::policy::Policy;
use mmsched_scenario::{BUILTIN, Scenario};
use mmsched_sim::profile::Profile;
use mmsched_sim::soak::{self, SoakConfig};

fn main() {
    let profile = Profile::reference();
    let policy = Policy::default();
    println!(
        "{:>12} | {:>9} | {:>22} | {:>22}",
        "scenario", "wall", "compensated decay", "uncompensated decay"
    );
    for (name, _) in BUILTIN {
        let scenario = Scenario::load(name).expect("shipped scenario loads");
        // Wall time is what this benchmark measures.
        let started = std::time::Instant::now();
        let r = soak::run(&scenario, &profile, &policy, &SoakConfig::default(), || {})
            .expect("soak runs");
        let wall = started.elapsed().as_secs_f64();
        println!(
            "{name:>12} | {wall:>7.1} s | {:>6.1} → {:>5.1} ({:>4.1} %) | {:>6.1} → {:>5.1} ({:>4.1} %){}",
            r.compensated.summary.start_score,
            r.compensated.summary.end_score,
            r.compensated.summary.decay_pct,
            r.uncompensated.summary.start_score,
            r.uncompensated.summary.end_score,
            r.uncompensated.summary.decay_pct,
            if wall <= 60.0 {
                ""
            } else {
                "  (over the 60 s goal)"
            }
        );
    }
}
