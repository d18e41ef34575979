//! The report directory as a script sees it: files on disk, keys read as plain JSON.

use std::fs;

use mmsched_report::{RunSeries, RunSummary, render_comparison, render_table, write_report};
use serde_json::Value;

fn run(scheduler: &str, vision_misses: u64, tokens_per_s: f64) -> RunSummary {
    let mut summary = RunSummary {
        scenario: "inspection".into(),
        scheduler: scheduler.into(),
        duration: 5.0,
        seed: 9,
        ..RunSummary::default()
    };
    summary.vision.jobs = 50;
    summary.vision.completed = 48;
    summary.vision.deadline_misses = vision_misses;
    summary.vision.sla_ms = 100.0;
    summary.llm.tokens_per_s = tokens_per_s;
    summary
}

#[test]
fn a_written_report_carries_every_documented_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut series = RunSeries::default();
    for i in 0..48 {
        series.record_latency("vision", 30.0 + i as f64);
    }
    let files = write_report(dir.path(), &run("mmsched", 1, 10.0), &series).expect("writable");
    let value: Value =
        serde_json::from_str(&fs::read_to_string(&files.summary_json).expect("written"))
            .expect("valid JSON");
    for modality in ["vision", "vad", "asr", "llm"] {
        for key in [
            "jobs",
            "completed",
            "deadline_misses",
            "skipped",
            "shed",
            "p50_ms",
            "p99_ms",
        ] {
            assert!(value[modality][key].is_number(), "{modality}.{key}");
        }
    }
    for pointer in [
        "/llm/tokens_per_s",
        "/ldti/mean",
        "/ldti/max",
        "/ldti/seconds_by_level",
        "/alignment/residual_p99_ms",
        "/audio/frame_loss_pct",
        "/scheduler_overhead_pct",
        "/scenario",
        "/scheduler",
        "/duration",
    ] {
        assert!(value.pointer(pointer).is_some(), "{pointer}");
    }
    assert_eq!(value["vision"]["deadline_misses"], 1);
    let html = fs::read_to_string(&files.report_html).expect("written");
    assert!(html.contains("vision (n=48)"));
}

#[test]
fn the_terminal_views_show_the_same_figures() {
    let mmsched = run("mmsched", 2, 10.0);
    let fifo = run("fifo", 11, 9.0);
    let table = render_table(&mmsched);
    assert!(table.contains("10.0 tokens/s of request time"), "{table}");
    let comparison = render_comparison(&[("mmsched", &mmsched), ("fifo", &fifo)]);
    let misses = comparison
        .lines()
        .find(|l| l.starts_with("vision+audio misses"))
        .expect("a misses row");
    assert_eq!(
        misses.split_whitespace().collect::<Vec<_>>(),
        ["vision+audio", "misses", "2", "11", "mmsched"],
        "{comparison}"
    );
}
