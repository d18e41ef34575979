//! Golden trace: a seeded 3-second simulation of the default scenario, every arrival and
//! every decision of the real scheduling core (in the runtime's lane layout) and every
//! remedy the health controller switches, one line each. A change in scheduling
//! behaviour shows up as a diff of `tests/golden/ar-glasses-3s.trace` in review.
//! Regenerate after an intended change with `MMSCHED_BLESS=1 cargo test -p mmsched-sim --test golden`.

use mmsched_core::policy::Policy;
use mmsched_scenario::Scenario;
use mmsched_sim::des::{Conditions, Simulator};
use mmsched_sim::health_loop::HealthLoop;
use mmsched_world::profile::Profile;

#[test]
fn seeded_simulation_matches_the_golden_trace() {
    let scenario = Scenario::load("ar-glasses").expect("shipped scenario");
    let sim = Simulator::new(&scenario, &Profile::reference(), Policy::default())
        .expect("reference profile covers the scenario");
    let mut trace = Vec::new();
    let mut health = HealthLoop::new(Policy::default().ldti(), true);
    sim.run(
        1,
        3_000_000_000,
        &Conditions::default(),
        Some(&mut health),
        Some(&mut trace),
    );
    let got = format!(
        "# simulated: ar-glasses, seed 1, 3 s, reference profile, default policy\n# time_us event fields\n{}\n",
        trace.join("\n")
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ar-glasses-3s.trace");
    if std::env::var_os("MMSCHED_BLESS").is_some() {
        std::fs::write(&path, &got).expect("write golden file");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .expect("golden file present (create it with MMSCHED_BLESS=1)");
    if want != got {
        let first = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "scheduling decisions changed; first difference at line {}:\n  golden: {}\n  now:    {}\n\
             If the change is intended, run MMSCHED_BLESS=1 cargo test -p mmsched-sim --test golden and commit the diff.",
            first + 1,
            want.lines().nth(first).unwrap_or("<end>"),
            got.lines().nth(first).unwrap_or("<end>")
        );
    }
}
