//! Standard output for every command. A reader that goes away early (`mmsched … | head`)
//! ends the command quietly with status 141, what a shell shows for a process stopped by
//! SIGPIPE, instead of a panic with a backtrace: Rust ignores SIGPIPE, so a write to a
//! closed pipe fails with EPIPE, and `println!` panics on a failed write.

use std::io::Write;

/// Exit status of a command whose standard output was closed by its reader (128 + SIGPIPE).
pub const PIPE_CLOSED: i32 = 141;

/// Writes one line to standard output ([`outln!`] formats it).
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
    if let Err(e) = written {
        drop(out);
        failed(&e);
    }
}

/// Ends the process after a failed write to standard output: quietly when the reader went
/// away, else with the error (a full disk behind `> file`).
pub fn failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        crate::cmd::run::interrupt::exit_now(PIPE_CLOSED);
    }
    eprintln!("error: cannot write to standard output: {e}");
    crate::cmd::run::interrupt::exit_now(1)
}

/// Makes a write to a closed standard error end the process quietly too: `eprintln!` (and
/// the progress bars) panic on it, where a reader of `2>&1` went away (`… 2>&1 | head`).
pub fn quiet_on_closed_stderr() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // The message of the standard library's own panic in `eprintln!`.
        let msg = info.payload_as_str().unwrap_or_default();
        if msg.starts_with("failed printing to std") && msg.contains("Broken pipe") {
            crate::cmd::run::interrupt::exit_now(PIPE_CLOSED);
        }
        default(info);
    }));
}

/// `println!` for the commands' output: see the module's note on closed pipes.
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
