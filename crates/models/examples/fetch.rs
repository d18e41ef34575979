//! Fetches every model into the cache, like `mmsched models fetch` (library usage example).
//!
//! `cargo run -p mmsched-models --example fetch [-- --with-ort]`

use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::{FetchOptions, ModelPaths, fetch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let with_ort = std::env::args().any(|a| a == "--with-ort");
    let clock = MonotonicClock::new();
    let opts = FetchOptions {
        with_ort,
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
