//! Arbitrary text into the CPU accounting parsers behind mmsched's own signals (a
//! thread's schedstat, /proc/stat, a cgroup's cpu.stat): the first byte picks the format.
//! Every input must parse or give an error, never panic, and a parsed /proc/stat never
//! has more busy ticks than ticks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_runtime::platform::procfs::parse_any;

fuzz_target!(|data: &[u8]| {
    let _ = parse_any(data);
});
