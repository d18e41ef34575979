//! Parsers for the kernel's CPU accounting text: a thread's `schedstat`, the machine's
//! `/proc/stat` and a cgroup v2 group's `cpu.stat`.
//!
//! They are pure functions on text, so the signals built on them ([`super::signals`]) are
//! tested on fixed figures and fuzzed ([`parse_any`] is the fuzz target's entry). Each
//! accepts what the kernel writes, ignores fields it does not use (newer kernels add
//! some), and rejects anything else with an error naming the field: a half-written or
//! foreign file never panics.
//!
//! ```text
//! /proc/self/task/<tid>/schedstat    43212194 45653675 114
//!                                    (on-CPU ns, run-queue wait ns, timeslices)
//! /proc/stat (first line)            cpu  4705 356 584 3699 23 23 0 0 0 0
//!                                    (user nice system idle iowait irq softirq steal
//!                                     guest guest_nice, in USER_HZ ticks)
//! <group>/cpu.stat (cgroup v2)       usage_usec 1234
//!                                    user_usec 1000
//!                                    system_usec 234 …
//! ```

/// One thread's scheduler statistics (`/proc/<pid>/task/<tid>/schedstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedStat {
    /// Time spent running on a CPU, nanoseconds.
    pub on_cpu_nanos: u64,
    /// Time spent runnable but waiting on a run queue, nanoseconds.
    pub wait_nanos: u64,
    /// Timeslices run on this CPU.
    pub timeslices: u64,
}

/// The machine's CPU time from the aggregate `cpu` line of `/proc/stat`, in ticks of
/// `USER_HZ` (100 per second on every Linux architecture mmsched builds for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MachineCpu {
    /// Ticks the CPUs spent on anything but idling or waiting for I/O (guest time is
    /// already inside user and nice, so it is not added twice).
    pub busy_ticks: u64,
    /// Every tick of every CPU, busy or not.
    pub total_ticks: u64,
}

/// Nanoseconds per `USER_HZ` tick of `/proc/stat`.
pub const NANOS_PER_TICK: u64 = 10_000_000;

/// A cgroup v2 group's CPU time (`cpu.stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupCpu {
    /// CPU time used by the group's tasks, microseconds.
    pub usage_micros: u64,
}

/// Why accounting text could not be parsed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProcParseError {
    /// A field is missing.
    #[error("{file}: missing {field}")]
    Missing {
        /// Which file's format.
        file: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field is not a whole number.
    #[error("{file}: {field}={value:?} is not a whole number")]
    NotANumber {
        /// Which file's format.
        file: &'static str,
        /// The field.
        field: &'static str,
        /// What was there (at most 32 characters of it).
        value: String,
    },
    /// The figures contradict each other (a sum that overflows).
    #[error("{file}: {reason}")]
    Inconsistent {
        /// Which file's format.
        file: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

fn number(
    file: &'static str,
    field: &'static str,
    word: Option<&str>,
) -> Result<u64, ProcParseError> {
    let word = word.ok_or(ProcParseError::Missing { file, field })?;
    word.parse::<u64>().map_err(|_| ProcParseError::NotANumber {
        file,
        field,
        value: word.chars().take(32).collect(),
    })
}

/// Parses a thread's `schedstat`: three whole numbers on one line.
pub fn parse_schedstat(text: &str) -> Result<SchedStat, ProcParseError> {
    const FILE: &str = "schedstat";
    let mut words = text.split_whitespace();
    Ok(SchedStat {
        on_cpu_nanos: number(FILE, "on-CPU time", words.next())?,
        wait_nanos: number(FILE, "run-queue wait", words.next())?,
        timeslices: number(FILE, "timeslices", words.next())?,
    })
}

/// Parses the aggregate `cpu` line of `/proc/stat` (the first line starting `cpu `).
/// Kernels before 2.6.33 print fewer than ten fields: the missing ones count as zero, but
/// the first four (user, nice, system, idle) are required.
pub fn parse_proc_stat(text: &str) -> Result<MachineCpu, ProcParseError> {
    const FILE: &str = "/proc/stat";
    const NAMES: [&str; 10] = [
        "user",
        "nice",
        "system",
        "idle",
        "iowait",
        "irq",
        "softirq",
        "steal",
        "guest",
        "guest_nice",
    ];
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or(ProcParseError::Missing {
            file: FILE,
            field: "the aggregate `cpu` line",
        })?;
    let mut words = line.split_whitespace().skip(1);
    let mut v = [0u64; 10];
    for (i, name) in NAMES.iter().enumerate() {
        match words.next() {
            Some(w) => v[i] = number(FILE, name, Some(w))?,
            None if i < 4 => {
                return Err(ProcParseError::Missing {
                    file: FILE,
                    field: name,
                });
            }
            None => break,
        }
    }
    let overflow = ProcParseError::Inconsistent {
        file: FILE,
        reason: "the tick counts overflow when added",
    };
    let sum = |xs: &[u64]| xs.iter().try_fold(0u64, |a, &x| a.checked_add(x));
    // user nice system irq softirq steal: busy. idle iowait: not. guest, guest_nice are
    // counted inside user and nice already.
    let busy = sum(&[v[0], v[1], v[2], v[5], v[6], v[7]]).ok_or(overflow.clone())?;
    let total = sum(&[busy, v[3], v[4]]).ok_or(overflow)?;
    Ok(MachineCpu {
        busy_ticks: busy,
        total_ticks: total,
    })
}

/// Parses a cgroup v2 group's `cpu.stat` (`key value` lines; only `usage_usec` is used).
pub fn parse_cgroup_cpu_stat(text: &str) -> Result<GroupCpu, ProcParseError> {
    const FILE: &str = "cpu.stat";
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some("usage_usec") {
            return Ok(GroupCpu {
                usage_micros: number(FILE, "usage_usec", words.next())?,
            });
        }
    }
    Err(ProcParseError::Missing {
        file: FILE,
        field: "usage_usec",
    })
}

/// The fuzz target's entry: the first byte picks the format, the rest is its text (lossy
/// UTF-8). Returns whether it parsed; panics only on a broken invariant of a parsed value.
pub fn parse_any(data: &[u8]) -> bool {
    let Some((&kind, rest)) = data.split_first() else {
        return false;
    };
    let text = String::from_utf8_lossy(rest);
    match kind % 3 {
        0 => parse_schedstat(&text).is_ok(),
        1 => parse_proc_stat(&text).is_ok_and(|m| {
            assert!(m.busy_ticks <= m.total_ticks, "busy {m:?} beyond total");
            true
        }),
        _ => parse_cgroup_cpu_stat(&text).is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_a_threads_schedstat() {
        assert_eq!(
            parse_schedstat("43212194 45653675 114\n"),
            Ok(SchedStat {
                on_cpu_nanos: 43_212_194,
                wait_nanos: 45_653_675,
                timeslices: 114
            })
        );
    }

    #[test]
    fn a_short_or_foreign_schedstat_names_the_field() {
        let e = parse_schedstat("1 2").expect_err("two fields");
        assert!(e.to_string().contains("timeslices"), "{e}");
        let e = parse_schedstat("1 -2 3").expect_err("negative");
        assert!(e.to_string().contains("run-queue wait"), "{e}");
        assert!(parse_schedstat("").is_err());
    }

    #[test]
    fn parses_the_machines_cpu_line() {
        let text = "cpu  4705 356 584 3699 23 23 0 0 0 0\n\
                    cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0\n\
                    intr 1462898\n";
        let m = parse_proc_stat(text).expect("parses");
        assert_eq!(m.busy_ticks, 4705 + 356 + 584 + 23);
        assert_eq!(m.total_ticks, m.busy_ticks + 3699 + 23);
    }

    #[test]
    fn an_old_kernels_short_cpu_line_parses_and_a_truncated_one_does_not() {
        let m = parse_proc_stat("cpu 10 0 5 85\n").expect("four fields");
        assert_eq!((m.busy_ticks, m.total_ticks), (15, 100));
        let e = parse_proc_stat("cpu 10 0 5\n").expect_err("three fields");
        assert!(e.to_string().contains("idle"), "{e}");
        let e = parse_proc_stat("cpu0 1 2 3 4\n").expect_err("no aggregate line");
        assert!(e.to_string().contains("aggregate"), "{e}");
        let e = parse_proc_stat(&format!("cpu {} {} 0 0", u64::MAX, u64::MAX)).expect_err("sum");
        assert!(e.to_string().contains("overflow"), "{e}");
    }

    #[test]
    fn parses_a_groups_cpu_stat() {
        let text = "usage_usec 1234\nuser_usec 1000\nsystem_usec 234\nnr_periods 0\n";
        assert_eq!(
            parse_cgroup_cpu_stat(text),
            Ok(GroupCpu { usage_micros: 1234 })
        );
        assert!(parse_cgroup_cpu_stat("user_usec 1\n").is_err());
        assert!(parse_cgroup_cpu_stat("usage_usec x\n").is_err());
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_any(&data);
        }

        #[test]
        fn never_panics_on_near_miss_lines(
            head in "(cpu|cpu0|usage_usec|)",
            fields in proptest::collection::vec("[0-9\\-x]{0,21}", 0..12),
            kind in 0u8..3,
        ) {
            let mut data = vec![kind];
            data.extend(format!("{head} {}\n", fields.join(" ")).bytes());
            let _ = parse_any(&data);
        }

        #[test]
        fn schedstat_round_trips(a in any::<u64>(), b in any::<u64>(), c in any::<u64>()) {
            let s = parse_schedstat(&format!("{a} {b} {c}\n")).expect("valid");
            prop_assert_eq!(s, SchedStat { on_cpu_nanos: a, wait_nanos: b, timeslices: c });
        }

        #[test]
        fn busy_never_exceeds_total(v in proptest::collection::vec(0u64..1 << 40, 4..=10)) {
            let line: Vec<String> = v.iter().map(u64::to_string).collect();
            let m = parse_proc_stat(&format!("cpu {}\n", line.join(" "))).expect("valid");
            prop_assert!(m.busy_ticks <= m.total_ticks);
        }
    }
}
