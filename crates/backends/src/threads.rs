//! Explicit thread budgets for engines.
//!
//! The scheduler owns the cores, so an engine must not spread over every core on its own.
//! candle runs its parallel kernels (the quantised matmuls and `gemm`) on rayon's
//! *current* pool; running an engine's calls inside [`EngineThreads::install`] puts them
//! on a dedicated pool of exactly the configured size instead of rayon's global pool
//! (which would otherwise size itself from `RAYON_NUM_THREADS` or the core count).
//! One exception: candle's Whisper log-mel code spawns its own scoped threads (at least
//! two, at most twelve, from `RAYON_NUM_THREADS` or the core count); set
//! `RAYON_NUM_THREADS` to bound that stage as well.

use crate::backend::BackendError;

/// A dedicated worker pool for one engine.
#[derive(Debug)]
pub struct EngineThreads {
    pool: rayon::ThreadPool,
    threads: usize,
}

impl EngineThreads {
    /// A pool of `threads` workers named `{name}-{index}`; `0` means one per core.
    pub fn new(name: &str, threads: usize) -> Result<Self, BackendError> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            threads
        };
        let prefix = name.to_owned();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("{prefix}-{i}"))
            .build()
            .map_err(|e| BackendError::engine("rayon", e))?;
        Ok(Self { pool, threads })
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f` with this pool as rayon's current pool.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_the_configured_number_of_threads() {
        let t = EngineThreads::new("test", 2).expect("pool");
        assert_eq!(t.threads(), 2);
        assert_eq!(t.install(rayon::current_num_threads), 2);
        let name = t.install(|| std::thread::current().name().map(str::to_owned));
        assert!(
            name.is_some_and(|n| n.starts_with("test-")),
            "runs on a pool thread"
        );
    }
}
