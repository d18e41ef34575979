//! `bench e2e --neighbour`: another program on the same cores beside every column's run,
//! the same for every column, started before the run and stopped after it, with its own
//! progress reported beside the column.
//!
//! - `niced`: two busy loops at nice 19 (the lowest CPU priority);
//! - `busy`: one busy loop at nice 0 (the priority mmsched runs at);
//! - `build`: a real compilation at nice 19, repeated for the whole run: `gcc -O2` (the
//!   system's `cc`) compiling a C file of [`BUILD_FUNCTIONS`] generated functions (loops,
//!   switches, calls the optimiser inlines), written next to the reports.
//!
//! Each neighbour is a `sh` child in a process group of its own, so a Ctrl-C at the
//! terminal reaches only the benchmark, which then stops it. It is stopped with SIGTERM
//! to its whole group (the compiler too) when the column's run ends, when the benchmark
//! returns an error, and when it panics ([`Drop`]); a loop also ends by itself once the
//! benchmark's process is gone, so none is left behind even when the benchmark is
//! killed. Its progress: the loop's iterations per second, or compilations finished per
//! minute, and the CPU it got (from `/proc/<pid>/stat`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde::Serialize;

/// Functions in the generated C file of the `build` neighbour: about 3 s of `gcc -O2` on
/// one core of a current x86 server.
pub const BUILD_FUNCTIONS: u32 = 150;

/// What runs beside every column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NeighbourKind {
    /// Nothing: the machine as it is.
    None,
    /// Two busy loops at nice 19.
    Niced,
    /// One busy loop at nice 0.
    Busy,
    /// A real compilation (`cc -O2` on a generated C file) at nice 19, repeated.
    Build,
}

impl NeighbourKind {
    /// How the table names it.
    pub fn describe(self) -> &'static str {
        match self {
            NeighbourKind::None => "none",
            NeighbourKind::Niced => "two busy loops at nice 19",
            NeighbourKind::Busy => "one busy loop at nice 0",
            NeighbourKind::Build => "a compilation (cc -O2) at nice 19, repeated",
        }
    }
}

/// A loop counting its iterations; ends on SIGTERM, printing the count, or by itself
/// once the process `$1` is gone (checked every 2^16 iterations).
const LOOP: &str = "p=$1; i=0; trap 'echo $i; exit 0' TERM; \
    while :; do i=$((i+1)); \
    if [ $((i % 65536)) -eq 0 ]; then kill -0 \"$p\" 2>/dev/null || exit 0; fi; done";

/// Compiles `$2` over and over while the process `$1` lives, counting finished
/// compilations; prints the count on SIGTERM.
const BUILD: &str = "p=$1; n=0; trap 'echo $n; exit 0' TERM; \
    while kill -0 \"$p\" 2>/dev/null; do \
    cc -O2 -c \"$2\" -o \"$2.o\" && n=$((n+1)); done; echo $n";

/// One neighbour process (a loop or the compiling shell).
struct Proc {
    child: Child,
}

/// The neighbour of one column's run. Stop it with [`Neighbour::stop`]; dropped without,
/// it is killed all the same.
pub struct Neighbour {
    kind: NeighbourKind,
    procs: Vec<Proc>,
    started: Instant,
}

/// What a neighbour did beside one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct NeighbourProgress {
    /// Seconds it ran.
    pub seconds: f64,
    /// Busy-loop iterations per second, over all its loops (`busy`, `niced`).
    pub iterations_per_s: Option<f64>,
    /// Compilations finished per minute (`build`).
    pub compilations_per_min: Option<f64>,
    /// Share of every core's time it got (its CPU time, children included, over the
    /// seconds it ran times the cores).
    pub cpu_share: Option<f64>,
}

impl Neighbour {
    /// Starts `kind` (nothing for `none`); the build's C file goes into `dir`.
    pub fn start(kind: NeighbourKind, dir: &Path) -> Result<Option<Self>> {
        let me = std::process::id().to_string();
        let (nice, script, extra, count): (&str, &str, Option<PathBuf>, usize) = match kind {
            NeighbourKind::None => return Ok(None),
            NeighbourKind::Niced => ("19", LOOP, None, 2),
            NeighbourKind::Busy => ("0", LOOP, None, 1),
            NeighbourKind::Build => ("19", BUILD, Some(write_build_source(dir)?), 1),
        };
        let mut n = Self {
            kind,
            procs: Vec::new(),
            started: Instant::now(),
        };
        for _ in 0..count {
            let mut cmd = Command::new("nice");
            cmd.args(["-n", nice, "sh", "-c", script, "sh", &me]);
            if let Some(source) = &extra {
                cmd.arg(source);
            }
            use std::os::unix::process::CommandExt as _;
            let child = cmd
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| {
                    format!("cannot start the {kind:?} neighbour (`nice` and `sh` are needed)")
                })?;
            n.procs.push(Proc { child });
        }
        Ok(Some(n))
    }

    /// Stops it and says how far it got.
    pub fn stop(mut self) -> NeighbourProgress {
        let seconds = self.started.elapsed().as_secs_f64();
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let cpu: Option<f64> = self.procs.iter().map(|p| cpu_seconds(p.child.id())).sum();
        let counts: Vec<Option<u64>> = self.procs.iter_mut().map(terminate).collect();
        self.procs.clear();
        let total: Option<u64> = counts.into_iter().sum();
        let per_s = total.map(|t| t as f64 / seconds.max(1e-9));
        NeighbourProgress {
            seconds,
            iterations_per_s: per_s.filter(|_| self.kind != NeighbourKind::Build),
            compilations_per_min: per_s
                .filter(|_| self.kind == NeighbourKind::Build)
                .map(|r| r * 60.0),
            cpu_share: cpu.map(|c| c / (seconds.max(1e-9) * cores)),
        }
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = terminate(p);
        }
    }
}

/// Sends SIGTERM to the process group of `p` (its loop or its shell and compiler), waits
/// up to 2 s for it to print its count and exit, then kills it.
fn terminate(p: &mut Proc) -> Option<u64> {
    let group = format!("-{}", p.child.id());
    let sent = Command::new("kill")
        .args(["-TERM", "--", &group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let deadline = Instant::now() + Duration::from_secs(2);
    while sent && Instant::now() < deadline {
        if let Ok(Some(_)) = p.child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if !matches!(p.child.try_wait(), Ok(Some(_))) {
        let _ = p.child.kill();
        let _ = p.child.wait();
        return None;
    }
    let mut out = String::new();
    p.child.stdout.take()?.read_to_string(&mut out).ok()?;
    out.split_whitespace().last()?.parse().ok()
}

/// CPU seconds of process `pid` and of its children it has waited for
/// (`/proc/<pid>/stat` fields 14–17, in ticks of 1/100 s).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count from after its closing bracket.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 → index 11.
    let ticks: u64 = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some(ticks as f64 / 100.0)
}

/// Writes the build neighbour's C source into `dir`; returns its path.
fn write_build_source(dir: &Path) -> Result<PathBuf> {
    if which_cc().is_none() {
        bail!("the build neighbour needs a C compiler: install one (`apt-get install gcc`)");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join("neighbour-build.c");
    std::fs::write(&path, build_source(BUILD_FUNCTIONS))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

fn which_cc() -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("cc"))
        .find(|p| p.is_file())
}

/// A C file of `functions` functions, each calling the one before it, with loops and
/// switches for the optimiser to work on (deterministic: the same text every time).
pub fn build_source(functions: u32) -> String {
    let mut s = String::from(
        "/* Generated by `mmsched bench e2e --neighbour build`: work for the compiler. */\n\
         static unsigned g0(unsigned x, const unsigned *v, int n) { return x + (unsigned)n + v[0]; }\n",
    );
    for i in 1..=functions {
        let (a, b, c, d) = ((i * 31 + 7) % 1000 + 3, i % 13 + 1, i % 11 + 2, i % 97 + 5);
        let mask = (1u32 << (i % 5 + 3)) - 1;
        let salt = i.wrapping_mul(2_654_435_761);
        s.push_str(&format!(
            "static unsigned g{i}(unsigned x, const unsigned *v, int n) {{\n\
             \x20 unsigned acc = x ^ {salt}u;\n\
             \x20 for (int k = 0; k < n; k++) {{\n\
             \x20   switch ((v[k & 63] + acc) % 7u) {{\n\
             \x20   case 0: acc = acc * {a}u + v[(k * 3) & 63]; break;\n\
             \x20   case 1: acc ^= (acc << {b}) | (v[k & 63] >> 3); break;\n\
             \x20   case 2: acc += (acc >> {c}) * {d}u; break;\n\
             \x20   case 3: acc = (acc ^ {salt}u) + (unsigned)k; break;\n\
             \x20   case 4: for (int j = 0; j < (k & 7); j++) acc += v[(j + k) & 63] * (unsigned)j; break;\n\
             \x20   case 5: acc -= v[(k + {i}) & 63] ^ (acc >> 5); break;\n\
             \x20   default: acc = acc * 2654435761u + (unsigned)n; break;\n\
             \x20   }}\n\
             \x20   if ((acc & {mask}u) == 0) acc += g{prev}(acc, v, k / 2);\n\
             \x20 }}\n\
             \x20 return acc;\n\
             }}\n",
            prev = i - 1,
        ));
    }
    s.push_str(&format!(
        "unsigned entry(unsigned x, const unsigned *v, int n) {{ return g{functions}(x, v, n); }}\n"
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_source_is_deterministic_and_grows_with_its_functions() {
        let a = build_source(3);
        assert_eq!(a, build_source(3));
        assert!(a.contains("g3(unsigned x") && a.contains("return g3(x, v, n)"));
        assert!(build_source(10).len() > a.len());
    }

    #[test]
    fn nothing_starts_for_no_neighbour() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(
            Neighbour::start(NeighbourKind::None, dir.path())
                .expect("none")
                .is_none()
        );
    }

    #[test]
    fn a_busy_loop_counts_its_iterations_and_is_gone_after_stop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = Neighbour::start(NeighbourKind::Busy, dir.path())
            .expect("start")
            .expect("a loop");
        let pids: Vec<u32> = n.procs.iter().map(|p| p.child.id()).collect();
        std::thread::sleep(Duration::from_millis(300));
        let p = n.stop();
        assert!(p.iterations_per_s.is_some_and(|r| r > 0.0), "{p:?}");
        assert_eq!(p.compilations_per_min, None);
        for pid in pids {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "loop {pid} left behind"
            );
        }
    }

    #[test]
    fn a_dropped_neighbour_is_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = Neighbour::start(NeighbourKind::Niced, dir.path())
            .expect("start")
            .expect("loops");
        let pids: Vec<u32> = n.procs.iter().map(|p| p.child.id()).collect();
        assert_eq!(pids.len(), 2);
        drop(n);
        for pid in pids {
            assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} left");
        }
    }
}
