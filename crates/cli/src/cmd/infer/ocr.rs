//! `mmsched infer ocr --image P`: PP-OCRv4 on one PNG/JPEG image.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use mmsched_backends::ocr::{DetInputSize, OcrConfig, OcrPipeline};
use mmsched_backends::{RgbFrame, run_timed};
use mmsched_core::time::MonotonicClock;
use serde_json::json;

use crate::cmd::engine_arg::{EngineFlags, ms};

/// Arguments of `infer ocr`.
#[derive(Debug, Args)]
pub struct OcrArgs {
    /// The image to read (PNG or JPEG).
    #[arg(long, value_name = "FILE")]
    image: PathBuf,
    /// Detector input size: `WxH` in pixels, multiples of 32 (e.g. `320x320` for a camera
    /// stream; the image is scaled to fit and padded), or `max:N` (longest side scaled to N
    /// pixels, sides rounded up to multiples of 32).
    #[arg(long, value_name = "SIZE", default_value = "max:640")]
    det_size: String,
    #[command(flatten)]
    engine: EngineFlags,
    /// Print {"lines":[{"text","score","box"}],"timing_ms":{"pre","exec","post"}} as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `infer ocr`.
pub fn run(a: OcrArgs) -> Result<ExitCode> {
    let det_size: DetInputSize = a.det_size.parse()?;
    let frame = RgbFrame::load(&a.image)?;
    let config = OcrConfig {
        det_size,
        engine: a.engine.options(),
        ..OcrConfig::default()
    };
    let spinner = indicatif::ProgressBar::new_spinner().with_message("loading PP-OCRv4");
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut ocr = OcrPipeline::new(config).context("loading the OCR models")?;
    spinner.set_message("reading text");
    let clock = MonotonicClock::new();
    let (lines, timing) = run_timed(&mut ocr, &frame, &clock)?;
    spinner.finish_and_clear();
    let bd = ocr.last_breakdown();
    if a.json {
        let out = json!({
            "lines": lines,
            "timing_ms": {"pre": ms(timing.pre_nanos), "exec": ms(timing.exec_nanos), "post": ms(timing.post_nanos)},
            "breakdown_ms": {
                "det_pre": ms(bd.det_pre_nanos), "det_exec": ms(bd.det_exec_nanos), "det_post": ms(bd.det_post_nanos),
                "rec_pre": ms(bd.rec_pre_nanos), "rec_exec": ms(bd.rec_exec_nanos), "rec_post": ms(bd.rec_post_nanos),
                "boxes": bd.boxes,
            },
            "engine": a.engine.options().kind.as_str(),
            "det_size": det_size.label(),
            "image": {"width": frame.width(), "height": frame.height()},
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        if lines.is_empty() {
            outln!("(no text found)");
        }
        for l in &lines {
            let [p0, _, p2, _] = l.corners;
            outln!(
                "{:<40} score {:.3}  box ({:.0},{:.0})-({:.0},{:.0})",
                l.text,
                l.score,
                p0[0],
                p0[1],
                p2[0],
                p2[1]
            );
        }
        outln!(
            "timing: pre {:.2} ms, exec {:.2} ms (det {:.2}, boxes {:.2}, crops {:.2}, rec {:.2} × {} boxes), post {:.2} ms  [{}]",
            ms(timing.pre_nanos),
            ms(timing.exec_nanos),
            ms(bd.det_exec_nanos),
            ms(bd.det_post_nanos),
            ms(bd.rec_pre_nanos),
            ms(bd.rec_exec_nanos),
            bd.boxes,
            ms(timing.post_nanos),
            a.engine.options().kind,
        );
    }
    Ok(ExitCode::SUCCESS)
}
