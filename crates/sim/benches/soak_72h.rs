//! Speed goal: a 72-hour soak of each shipped scenario in ≤ 60 s of wall time.
//! Run with `cargo bench -p mmsched-sim --bench soak_72h` (optimised build).

use mmsched_core::policy::Policy;
use mmsched_scenario::{BUILTIN, Scenario};
use mmsched_sim::soak::{self, Arm, SoakConfig};
use mmsched_world::profile::Profile;

fn main() {
    let profile = Profile::reference();
    let policy = Policy::default();
    println!(
        "{:>12} | {:>9} | {:>28} | {:>28} | {:>28}",
        "scenario",
        "wall",
        "no_health on time / drops",
        "naive on time / drops",
        "mmsched on time / drops"
    );
    for (name, _) in BUILTIN {
        let scenario = Scenario::load(name).expect("shipped scenario loads");
        // Wall time is what this benchmark measures.
        let started = std::time::Instant::now();
        let r = soak::run(
            &scenario,
            &profile,
            &policy,
            &SoakConfig::default(),
            &mmsched_world::mic::SpeechLoop::default(),
            || {},
        )
        .expect("soak runs");
        let wall = started.elapsed().as_secs_f64();
        let cell = |a: Arm| {
            let s = &r.arm(a).summary;
            format!("{:.2} % / {:.2} %", s.on_time_pct, s.drops_pct)
        };
        println!(
            "{name:>12} | {wall:>7.1} s | {:>28} | {:>28} | {:>28}{}",
            cell(Arm::NoHealth),
            cell(Arm::Naive),
            cell(Arm::Mmsched),
            if wall <= 60.0 {
                ""
            } else {
                "  (over the 60 s goal)"
            }
        );
    }
}
