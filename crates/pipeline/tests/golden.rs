//! Golden trace of the real path: a seeded 3-second simulated run of the default scenario
//! (`sim run`: the real run loop, book of jobs and health loop in virtual time, on
//! simulated models drawn from the reference profile), every job that ended, one line
//! each in the order they ended — its kind, release and deadline, the rung the book chose,
//! its steps and their time, and how it ended. A change in scheduling behaviour shows up
//! as a diff of `tests/golden/ar-glasses-3s.jobs` in review. Regenerate after an intended
//! change with `MMSCHED_BLESS=1 cargo test -p mmsched-pipeline --test golden`.

use mmsched_core::policy::Policy;
use mmsched_pipeline::RunConfig;
use mmsched_pipeline::run::Quiet;
use mmsched_pipeline::simulate::simulate;
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;

const REFERENCE_PROFILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../profiles/reference-2core.json"
);

#[test]
fn a_seeded_simulated_run_matches_the_golden_trace() {
    let scenario = Scenario::load("ar-glasses").expect("shipped scenario");
    let mut config = RunConfig::new(scenario, Policy::default(), SchedulerKind::Mmsched);
    config.duration_nanos = 3_000_000_000;
    config.seed = 1;
    config.profile = Some(REFERENCE_PROFILE.into());
    config.job_records = true;
    let outcome = simulate(config, &mut Quiet).expect("simulated");
    let start = outcome
        .jobs
        .iter()
        .map(|j| j.release_nanos)
        .min()
        .unwrap_or(0);
    let us = |n: u64| n.saturating_sub(start) / 1000;
    let lines: Vec<String> = outcome
        .jobs
        .iter()
        .map(|j| {
            format!(
                "{:>9} {:<7} due={:<9} rung={:<8} steps={:<3} work_us={:<8} {:?} correct={:?}",
                us(j.release_nanos),
                j.kind.as_str(),
                us(j.deadline_nanos),
                j.rung.as_deref().unwrap_or("-"),
                j.steps,
                j.work_nanos / 1000,
                j.end,
                j.correct
            )
        })
        .collect();
    let got = format!(
        "# simulated: ar-glasses, seed 1, 3 s, reference profile, default policy; times in µs from the first release\n{}\n",
        lines.join("\n")
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ar-glasses-3s.jobs");
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
             If the change is intended, run MMSCHED_BLESS=1 cargo test -p mmsched-pipeline --test golden and commit the diff.",
            first + 1,
            want.lines().nth(first).unwrap_or("<end>"),
            got.lines().nth(first).unwrap_or("<end>")
        );
    }
}
