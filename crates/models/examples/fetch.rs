//! Fetches every model into the cache, like `mmsched models fetch` (library usage example).
//!
//! `cargo run -p mmsched-models --example fetch [-- --no-ort]`

use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::{FetchOptions, ModelPaths, fetch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let skip_ort = std::env::args().any(|a| a == "--no-ort");
    let clock = MonotonicClock::new();
    let opts = FetchOptions {
        skip_ort,
        progress: true,
        ..FetchOptions::default()
    };
    let reports = fetch(&ModelPaths::from_env(), &opts, &clock)?;
    for r in reports {
        println!(
            "{:<18} {:>11} B  {:?}  {}",
            r.name,
            r.bytes,
            r.outcome,
            r.path.display()
        );
    }
    println!("total {} ms", clock.now_nanos() / 1_000_000);
    Ok(())
}
