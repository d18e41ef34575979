//! SIGHUP for long-running commands (`run`, `serve`), as daemons take it: write the report
//! so far and reopen the `--results` file (after logrotate moved it away). The handler only
//! sets a flag (all a signal handler may safely do); a watcher thread hands each press to
//! the flags the command registered, which the run loop and the results writer read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Result, bail};

/// Set by the handler, cleared by the watcher.
static HANGUP: AtomicBool = AtomicBool::new(false);
/// The flags each SIGHUP sets.
static FLAGS: OnceLock<Mutex<Vec<Arc<AtomicBool>>>> = OnceLock::new();

extern "C" fn on_sighup(_signal: libc::c_int) {
    HANGUP.store(true, Ordering::SeqCst);
}

/// How often the watcher looks for a SIGHUP.
const WATCH: Duration = Duration::from_millis(100);

/// Sets each of `flags` on every SIGHUP from now on (the handler is installed on first use,
/// with a watcher thread; SIGHUP then no longer ends the process).
pub fn on_hangup(flags: &[Arc<AtomicBool>]) -> Result<()> {
    let mut first = false;
    let list = FLAGS.get_or_init(|| {
        first = true;
        Mutex::new(Vec::new())
    });
    list.lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(flags.iter().cloned());
    if first {
        // The Ctrl-C handler (with its `termination` feature) takes SIGHUP as well: it goes
        // first, and this handler then takes SIGHUP back.
        super::interrupt::stop_flag()?;
        install()?;
        std::thread::Builder::new()
            .name("mmsched-sighup".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(WATCH);
                    if HANGUP.swap(false, Ordering::SeqCst)
                        && let Some(list) = FLAGS.get()
                    {
                        for f in list.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                            f.store(true, Ordering::SeqCst);
                        }
                    }
                }
            })?;
    }
    Ok(())
}

/// Installs the handler, restarting interrupted system calls (a SIGHUP must not fail a
/// read or a write elsewhere in the process).
#[allow(unsafe_code)]
fn install() -> Result<()> {
    // SAFETY: `sigaction` is given a zeroed, then filled struct of the C library's layout
    // and a handler that only stores to an atomic, which is async-signal-safe.
    let rc = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sighup as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGHUP, &action, std::ptr::null_mut())
    };
    if rc != 0 {
        bail!(
            "cannot install the SIGHUP handler: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
