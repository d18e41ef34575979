//! Ctrl-C (and SIGTERM) for long-running commands: the first press asks the command to stop
//! (a run finishes its jobs in flight and writes its report; a server gives open requests a
//! few seconds); the second removes the resource groups and exits at once, whatever is
//! still open ([`exit_now`]). One process-wide handler, installed on first use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use anyhow::{Context, Result};

/// What the first press prints for `run`.
const RUN_STOPPING: &str =
    "stopping: finishing the jobs in flight and writing the report (Ctrl-C again to quit now)";

#[derive(Default)]
struct State {
    stop: Arc<AtomicBool>,
    /// Wakes [`wait`] on the first press.
    pressed: (Mutex<bool>, Condvar),
    /// What the first press prints.
    message: OnceLock<&'static str>,
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
            eprintln!("\ninterrupted twice: exiting now");
            exit_now(130);
        }
        eprintln!("\n{}", s.message.get().copied().unwrap_or(RUN_STOPPING));
        let (lock, woken) = &s.pressed;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        woken.notify_all();
    })
    .context("installing the Ctrl-C handler")?;
    Ok(s)
}

/// Ends the process at once with `code`, every thread where it stands.
///
/// Why not `std::process::exit`: it runs the C library's exit handlers, C++ static
/// destructors among them, while a worker thread may still be inside llama.cpp or ggml;
/// their destructors free the backend registries that thread is using, and it then reads
/// freed memory (a segmentation fault, exit 139, on a second Ctrl-C during a generation).
/// `_exit` runs no handler; the kernel releases the memory, files and sockets. Standard
/// error is unbuffered, so every message printed before is out.
#[allow(unsafe_code)]
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointer, touches no memory of this process and never returns.
    unsafe { libc::_exit(code) }
}

/// The flag the first Ctrl-C sets.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    Ok(Arc::clone(&state()?.stop))
}

/// Installs the handler with `message` as what the first press prints, and returns a
/// function that blocks until that press (the second press exits the process).
pub fn install(message: &'static str) -> Result<impl Fn() + Send + 'static> {
    let s = state()?;
    let _ = s.message.set(message);
    Ok(move || {
        let (lock, woken) = &s.pressed;
        let mut pressed = lock.lock().unwrap_or_else(|p| p.into_inner());
        while !*pressed {
            pressed = woken.wait(pressed).unwrap_or_else(|p| p.into_inner());
        }
    })
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
