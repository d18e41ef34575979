//! The platform's signals over the run, once a second: the neighbours' CPU share, mmsched's
//! own CPU and run-queue wait, CPU pressure ([`mmsched_runtime::platform::signals`]), into
//! the trace, the observer (`/metrics`) and the summary's `platform_signals`; and how often
//! the health loop found the run's own work past its lanes.

use mmsched_core::time::{Clock, Nanos};
use mmsched_report::{MeanMax, PlatformSignals};
use mmsched_runtime::platform::signals::{
    CpuSnapshot, FigureStats, PlatformFigures, SignalSource, window,
};

use super::Run;

/// Trace counters of the signals (percent).
const NEIGHBOUR_COUNTER: &str = "neighbour_cpu_pct";
const WAIT_COUNTER: &str = "own_runqueue_wait_pct";

/// The sampler and what it gathered.
pub(super) struct Signals {
    source: Option<Box<dyn SignalSource>>,
    last: Option<CpuSnapshot>,
    neighbour: FigureStats,
    own_cpu: FigureStats,
    wait: FigureStats,
    machine_pressure: FigureStats,
    group_pressure: FigureStats,
    windows: u64,
    /// Health evaluations with the run's own load known, and those that found it over.
    pub(super) own_evaluations: u64,
    pub(super) own_overloaded: u64,
    /// What the source could not read (said once each).
    pub(super) notes: Vec<String>,
}

impl Signals {
    pub(super) fn new(source: Option<Box<dyn SignalSource>>) -> Self {
        Self {
            source,
            last: None,
            neighbour: FigureStats::default(),
            own_cpu: FigureStats::default(),
            wait: FigureStats::default(),
            machine_pressure: FigureStats::default(),
            group_pressure: FigureStats::default(),
            windows: 0,
            own_evaluations: 0,
            own_overloaded: 0,
            notes: Vec::new(),
        }
    }

    /// Reads the source at `now`; the figures since the last reading, if there was one.
    fn read(&mut self, now: Nanos) -> Option<PlatformFigures> {
        let source = self.source.as_mut()?;
        let snap = source.snapshot(now);
        self.notes.extend(source.take_notes());
        let figures = self.last.as_ref().map(|last| window(last, &snap));
        self.last = Some(snap);
        let f = figures?;
        self.windows += 1;
        self.neighbour.add(f.neighbour_cpu_share);
        self.own_cpu.add(f.own_cpu_share);
        self.wait.add(f.own_runqueue_wait_share);
        self.machine_pressure.add(f.machine_pressure_some_avg10);
        self.group_pressure.add(f.own_group_pressure_some_avg10);
        Some(f)
    }

    /// The summary's `platform_signals`.
    pub(super) fn summary(&self) -> PlatformSignals {
        let mm = |s: &FigureStats| MeanMax {
            mean: s.mean(),
            max: s.maximum(),
        };
        PlatformSignals {
            windows: self.windows,
            neighbour_cpu_share: mm(&self.neighbour),
            own_cpu_share: mm(&self.own_cpu),
            own_runqueue_wait_share: mm(&self.wait),
            machine_pressure_some_avg10: mm(&self.machine_pressure),
            own_group_pressure_some_avg10: mm(&self.group_pressure),
            own_overload_share: (self.own_evaluations > 0)
                .then(|| self.own_overloaded as f64 / self.own_evaluations as f64),
        }
    }
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Reads the platform's signals (once a second, with the progress report).
    pub(super) fn sample_signals(&mut self, now: Nanos) {
        let said = self.monitor.signals.notes.len();
        let figures = self.monitor.signals.read(now);
        for note in &self.monitor.signals.notes[said..] {
            self.observer.status(note);
        }
        let Some(f) = figures else {
            return;
        };
        if let Some(v) = f.neighbour_cpu_share {
            self.book.trace.counter(NEIGHBOUR_COUNTER, now, 100.0 * v);
        }
        if let Some(v) = f.own_runqueue_wait_share {
            self.book.trace.counter(WAIT_COUNTER, now, 100.0 * v);
        }
        self.observer.platform(&f);
    }
}
