//! The runtime as a library: the models of the shipped `ar-glasses` model set and
//! mmsched's scheduler behind one call per input ([`mmsched_pipeline::api`]). Each image
//! becomes an OCR job of the `dashcam` stream (due 500 ms after submission), and a prompt
//! of the `assistant` stream is answered token by token while the frames go through.
//!
//! ```sh
//! scenarios/examples/render-signs.sh /tmp/signs
//! cargo run --release -p mmsched-pipeline --example runtime_api -- /tmp/signs/*.png
//! ```

use mmsched_backends::RgbFrame;
use mmsched_pipeline::api::{Runtime, StreamTerms};
use mmsched_pipeline::engines::Engines;
use mmsched_pipeline::request::Update;
use mmsched_scenario::Scenario;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let images: Vec<String> = std::env::args().skip(1).collect();
    if images.is_empty() {
        return Err("give one or more PNG or JPEG files".into());
    }
    let scenario = Scenario::load("ar-glasses")?;
    let engines = Engines::load(&scenario, 2, |name| eprintln!("loading {name}"))?;
    let mut rt = Runtime::start(Default::default(), engines)?;
    rt.add_stream("dashcam", StreamTerms::new(500.0, 0.8))?;
    rt.add_stream("assistant", StreamTerms::new(20_000.0, 0.3))?;

    // The answer streams on its own thread while the frames are submitted on this one.
    let mut answer = rt.prompt("assistant", "Name three road signs.", 24)?;
    let printer = std::thread::spawn(move || {
        while let Some(u) = answer.next_update() {
            match u {
                Update::Token(t) => eprint!("{t}"),
                Update::Finished(a) => eprintln!(
                    "\n[answer done in {} ms, {}]",
                    (a.ended_nanos - a.release_nanos) / 1_000_000,
                    if a.on_time { "on time" } else { "late" }
                ),
                other => eprintln!("\n[answer: {other:?}]"),
            }
        }
    });
    for path in &images {
        let frame = RgbFrame::load(std::path::Path::new(path))?;
        match rt.frame("dashcam", rt.now_nanos(), frame)?.wait() {
            Update::Finished(a) => {
                let text = a.reply.text();
                println!(
                    "{path}: {text:?} (trace {}) in {} ms, {}",
                    a.trace_id,
                    (a.ended_nanos - a.release_nanos) / 1_000_000,
                    if a.on_time { "on time" } else { "late" }
                );
            }
            Update::Shed(why) => println!("{path}: shed ({why:?}: the deadline could not be met)"),
            other => println!("{path}: {other:?}"),
        }
    }
    printer
        .join()
        .map_err(|_| "the answer's printer stopped with a panic")?;
    // What the runtime ran, as `mmsched run` would report it.
    let outcome = rt.finish()?;
    eprintln!("{}", mmsched_report::render_table(&outcome.summary));
    Ok(())
}
