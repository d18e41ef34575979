//! Ctrl-C for long runs: the first press asks the run to stop (it finishes its jobs in
//! flight and writes its report); the second removes the resource groups and exits at once.
//! One process-wide handler, installed on first use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result};

#[derive(Default)]
struct State {
    stop: Arc<AtomicBool>,
    #[cfg(target_os = "linux")]
    cgroups: Mutex<Vec<mmsched_runtime::platform::cgroup::CgroupHandle>>,
}

static STATE: OnceLock<State> = OnceLock::new();

fn state() -> Result<&'static State> {
    if let Some(s) = STATE.get() {
        return Ok(s);
    }
    let s = STATE.get_or_init(State::default);
    ctrlc::set_handler(|| {
        let Some(s) = STATE.get() else { return };
        if s.stop.swap(true, Ordering::SeqCst) {
            #[cfg(target_os = "linux")]
            for h in s.cgroups.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                h.cleanup();
            }
            eprintln!("\ninterrupted twice: resource groups removed, exiting");
            std::process::exit(130);
        }
        eprintln!("\nstopping: finishing the jobs in flight and writing the report (Ctrl-C again to quit now)");
    })
    .context("installing the Ctrl-C handler")?;
    Ok(s)
}

/// The flag the first Ctrl-C sets (cleared again for the next run).
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    Ok(Arc::clone(&state()?.stop))
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    STATE.get().is_some_and(|s| s.stop.load(Ordering::SeqCst))
}

/// Remembers resource groups to remove if the user presses Ctrl-C twice.
#[cfg(target_os = "linux")]
pub fn guard_cgroups(handle: mmsched_runtime::platform::cgroup::CgroupHandle) {
    if let Some(s) = STATE.get() {
        let mut g = s.cgroups.lock().unwrap_or_else(|p| p.into_inner());
        g.push(handle);
    }
}
