//! Renders a report from generated figures into a directory, to preview the layout:
//! `cargo run -p mmsched-report --example preview -- DIR`. The numbers are made up here;
//! real reports come from `mmsched run`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mmsched_report::{
    HealthActionRecord, LdtiSummary, LevelSeconds, ModalitySummary, OccupancyPoint, RatePoint,
    RunSeries, RunSummary, StreamAlignment, render_comparison, render_table, write_report,
};

/// A small deterministic generator (xorshift) so the preview needs no dependency.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .ok_or("usage: preview DIR")?;
    let mut rng = Gen(0x9e37_79b9_7f4a_7c15);
    let mut series = RunSeries::default();
    let duration = 60.0;
    for (name, base, spread, count, sla) in [
        ("vision", 35.0, 40.0, 580, 100.0),
        ("vad", 0.8, 1.5, 3000, 20.0),
        ("asr", 300.0, 500.0, 40, 1000.0),
        ("llm", 900.0, 2500.0, 12, 5000.0),
    ] {
        for i in 0..count {
            let tail = rng.next().powi(6) * spread * 3.0;
            let latency = base + rng.next() * spread + tail;
            series.record_latency(name, latency);
            if latency > sla {
                series.record_miss(duration * i as f64 / count as f64, name, latency);
            }
        }
    }
    for i in 0..6000 {
        let t = i as f64 / 100.0;
        let burst = if (20.0..26.0).contains(&t) { 0.3 } else { 0.0 };
        let spike = if i == 4100 { 0.5 } else { 0.0 };
        let value = 0.08 + 0.05 * rng.next() + burst + spike;
        series.record_ldti(t, value, if value >= 0.25 { "degraded" } else { "stable" });
        if i % 10 == 0 {
            series.slot_occupancy.push(OccupancyPoint {
                t_s: t,
                per_worker_pct: vec![40.0 + 30.0 * rng.next(), 70.0 + 25.0 * rng.next()],
            });
            series.rates.push(RatePoint {
                t_s: t,
                per_modality_hz: BTreeMap::from([
                    ("vision".to_string(), 9.0 + rng.next() * 2.0),
                    ("vad".to_string(), 50.0),
                    ("asr".to_string(), 0.6 + rng.next() * 0.2),
                ]),
            });
        }
    }
    let modality = |jobs: u64, misses: u64, p50: f64, p99: f64, sla: f64| ModalitySummary {
        offered: jobs + 12,
        on_time: jobs - 20 - misses,
        late: misses,
        jobs,
        completed: jobs - 20,
        deadline_misses: misses,
        skipped: 12,
        shed: 3,
        unfinished: 17,
        dropped: 0,
        dropped_by: Default::default(),
        failed: 0,
        failures: Default::default(),
        on_time_per_s: (jobs - 20 - misses) as f64 / duration,
        importance: 0.7,
        p50_ms: p50,
        p99_ms: p99,
        mean_ms: p50 * 1.1,
        sla_ms: sla,
        sla_rule: None,
        origin: Default::default(),
        scored: jobs - 20,
        correct: jobs - 22,
        correct_on_time: jobs - 22 - misses,
        accuracy: 0.97,
        rung_counts: Default::default(),
    };
    let mut summary = RunSummary {
        scenario: "ar-glasses <preview>".into(),
        scheduler: "mmsched".into(),
        duration,
        seed: 42,
        vision: modality(600, 2, 55.0, 98.0, 100.0),
        vad: modality(3020, 0, 1.5, 2.9, 20.0),
        asr: modality(60, 0, 520.0, 870.0, 1000.0),
        ldti: LdtiSummary {
            mean: 0.13,
            max: 0.63,
            seconds_by_level: LevelSeconds {
                stable: 54.0,
                degraded: 5.99,
                critical: 0.01,
            },
            ..LdtiSummary::default()
        },
        scheduler_overhead_pct: 0.4,
        platform: vec!["cgroup v1 cpu: workers in mmsched/audio".into()],
        ..RunSummary::default()
    };
    summary.llm.modality = modality(32, 1, 1500.0, 3100.0, 5000.0);
    summary.llm.tokens_per_s = 14.2;
    summary.alignment.streams = vec![StreamAlignment {
        name: "camera".into(),
        offset_ms: 12.3,
        drift_ppm: 41.0,
        residual_p99_ms: 0.7,
        source: "stamp".into(),
    }];
    summary.alignment.residual_p99_ms = 0.7;
    summary.utility = summary.compute_utility();
    summary.health.actions = vec![HealthActionRecord {
        t_s: 20.01,
        level: "degraded".into(),
        action: "camera 15 fps; retransmit on".into(),
    }];
    print!("{}", render_table(&summary));
    let mut baseline = summary.clone();
    baseline.scheduler = "os-threads".into();
    baseline.vision.deadline_misses = 31;
    baseline.vad.deadline_misses = 4;
    baseline.llm.tokens_per_s = 15.0;
    baseline.vision.on_time -= 29;
    baseline.vision.late += 29;
    baseline.utility = baseline.compute_utility();
    println!();
    print!(
        "{}",
        render_comparison(&[("mmsched", &summary), ("os-threads", &baseline)])
    );
    let files = write_report(&dir, &summary, &series)?;
    println!("\nreport: {}", files.report_html.display());
    Ok(())
}
