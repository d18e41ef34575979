//! Speed goal: a 72-hour soak of each shipped scenario in ≤ 60 s of wall time.
//! Run with `cargo bench -p mmsched-sim --bench soak_72h` (optimised build). Each soak runs
//! its three arms side by side, one thread each: the wall time depends on the cores free.

use mmsched_core::policy::Policy;
use mmsched_scenario::{BUILTIN, Scenario};
use mmsched_sim::soak::{self, Arm, SoakConfig};
use mmsched_world::profile::Profile;

fn main() {
    let profile = Profile::reference();
    let policy = Policy::default();
    let cfg = SoakConfig::default();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "72 h soaks on the real run loop in virtual time: {} windows × {} s sample × 3 arms, the arms in 3 threads on {cores} core(s)",
        (cfg.hours * 3600.0 / cfg.window_s).ceil(),
        cfg.sample_s
    );
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
        let r = soak::run(&scenario, &profile, &policy, &cfg, || {}).expect("soak runs");
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
