//! The scheduler's overhead: CPU time of the loop's thread spent submitting, deciding,
//! collecting, gating, aligning and evaluating health.
//!
//! Reading a thread's CPU clock is a system call that takes the kernel's run-queue lock.
//! A real run makes a few hundred spans a second and reads the clock around each. A
//! simulated run makes the same spans thousands of times faster, and reading the clock
//! around every one of them was a quarter of its wall time; there the meter reads it
//! around one span in [`SIMULATED_STRIDE`], chosen at random so that no periodic pattern
//! of the loop (a health tick every few passes) is always or never measured, and counts
//! each measured span that many times: an unbiased estimate of the same figure.

/// One span in this many is timed in a simulated run.
pub(super) const SIMULATED_STRIDE: u64 = 16;

/// Which spans are timed, and what a timed one counts for.
#[derive(Debug, Clone)]
pub(super) struct OverheadMeter {
    stride: u64,
    /// xorshift64 state: which spans are timed (fixed seed, the same spans each run).
    state: u64,
}

impl OverheadMeter {
    /// Every span timed (a real run), or one in [`SIMULATED_STRIDE`] (a simulated one).
    pub(super) fn new(simulated: bool) -> Self {
        Self {
            stride: if simulated { SIMULATED_STRIDE } else { 1 },
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Starts a span: reads the thread's CPU clock if this span is one of those timed.
    pub(super) fn start(&mut self) -> ThreadCpu {
        if self.stride <= 1 {
            return ThreadCpu::read(1);
        }
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        if x.is_multiple_of(self.stride) {
            ThreadCpu::read(self.stride)
        } else {
            ThreadCpu(None)
        }
    }
}

/// CPU time of the calling thread at a span's start, and how many spans it stands for:
/// wall time would also count the moments the main loop waits for a core while the
/// workers compute.
pub(super) struct ThreadCpu(Option<(cpu_time::ThreadTime, u64)>);

impl ThreadCpu {
    fn read(weight: u64) -> Self {
        Self(cpu_time::ThreadTime::try_now().ok().map(|t| (t, weight)))
    }

    /// CPU time since the start, times the spans it stands for (0 when not timed).
    pub(super) fn elapsed_nanos(&self) -> u64 {
        self.0
            .as_ref()
            .and_then(|(t, w)| t.try_elapsed().ok().map(|d| (d, *w)))
            .map_or(0, |(d, w)| {
                u64::try_from(d.as_nanos())
                    .unwrap_or(u64::MAX)
                    .saturating_mul(w)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_run_times_about_one_span_in_the_stride() {
        let mut m = OverheadMeter::new(true);
        let timed = (0..16_000).filter(|_| m.start().0.is_some()).count();
        assert!((800..1_200).contains(&timed), "{timed}");
        let mut real = OverheadMeter::new(false);
        assert!((0..100).all(|_| real.start().0.is_some()));
    }
}
