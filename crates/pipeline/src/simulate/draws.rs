//! What a simulated step costs and whether its answer is right, drawn from the device
//! profile with the run's seed — and the one place the drawn cost waits for the lanes.
//!
//! Why a shared cell: on the virtual lanes a step's work runs at once and the lanes then
//! ask what it cost ([`mmsched_runtime::sched::virtual_time::StepCost`]). The simulated
//! model knows (its model, rung, step and how many lines or tokens it ran), the lanes do
//! not; so the model leaves the cost here and the lanes take it.
//!
//! Where the figures come from, most specific first: the profile's measured step of that
//! rung (`rungs.KIND[].steps.STEP`, drawn once per unit the step runs: a line, a token,
//! an encoder block), else the job's cost (`jobs.KIND`, or the scenario's `cost_ms`) split
//! evenly over the job's steps. Each draw is log-normal with the figure's median and P99
//! ([`ModelLatency::sample_nanos`]), as the simulator always drew.

use std::sync::{Arc, Mutex, MutexGuard};

use mmsched_core::profile::{Percentiles, RungProfile};
use mmsched_core::time::Nanos;
use mmsched_scenario::Scenario;
use mmsched_world::profile::{ModelLatency, Profile, ProfileError};
use mmsched_world::rng::{SeededRng, chance, stream_rng};

use crate::stats::Kind;

/// A random stream of its own for the simulated models (see [`stream_rng`]).
const MODELS_STREAM: u64 = 0x5151;

/// The figures of one job class.
#[derive(Debug, Clone)]
struct ClassFigures {
    /// A whole job.
    job: ModelLatency,
    /// Its rungs as measured, richest first (none from the reference profile or with a
    /// scenario's `cost_ms`).
    rungs: Vec<RungProfile>,
    /// A model of the user's own: the job cost of each of its declared rungs (the rung's
    /// `cost_ms`, else its profiled job, else the model's).
    own_rungs: Vec<(String, ModelLatency)>,
}

/// The drawn costs and outcomes of every simulated model of one run.
#[derive(Debug)]
pub struct Draws {
    rng: SeededRng,
    classes: Vec<(Kind, ClassFigures)>,
    /// The cost of the step that just ran and its class's co-run factor, for the lanes.
    left: Option<(Nanos, f64)>,
}

/// [`Draws`] shared by the models and the lanes.
pub type SharedDraws = Arc<Mutex<Draws>>;

/// Locks `draws` (a model that panicked mid-draw left nothing half-written that matters).
pub fn lock(draws: &SharedDraws) -> MutexGuard<'_, Draws> {
    draws.lock().unwrap_or_else(|p| p.into_inner())
}

/// A rung's figures as a latency to draw from.
fn latency(p: &Percentiles, corun_factor: f64) -> ModelLatency {
    let ms = |n: Nanos| n as f64 / 1e6;
    ModelLatency {
        p50_ms: ms(p.p50_nanos.max(1)),
        p95_ms: ms(p.p95_nanos.max(p.p50_nanos).max(1)),
        p99_ms: ms(p.p99_nanos.max(p.p50_nanos).max(1)),
        corun_factor,
    }
}

impl Draws {
    /// The figures of every class `scenario` runs, from `profile` (a model's `cost_ms`
    /// first), drawn with `seed`. A class the profile lacks is an error naming it.
    pub fn new(scenario: &Scenario, profile: &Profile, seed: u64) -> Result<Self, ProfileError> {
        let mut classes = Vec::new();
        for m in scenario.models() {
            let Some(kind) = super::class_of(m) else {
                continue;
            };
            if classes.iter().any(|(k, _)| *k == kind) {
                continue;
            }
            // A model of your own's cost: its own `cost_ms`, else its richest rung's.
            let cost_ms = m
                .cost_ms
                .or_else(|| m.rungs.first().and_then(|r| r.cost_ms));
            let mut figures = match cost_ms {
                Some(ms) => ClassFigures {
                    job: ModelLatency::from_median_ms(ms),
                    rungs: Vec::new(),
                    own_rungs: Vec::new(),
                },
                None => ClassFigures {
                    job: profile.latency(kind.as_str())?,
                    rungs: profile
                        .doc
                        .rungs
                        .get(kind.as_str())
                        .cloned()
                        .unwrap_or_default(),
                    own_rungs: Vec::new(),
                },
            };
            figures.own_rungs = m
                .rungs
                .iter()
                .map(|r| {
                    let measured = || {
                        let p = profile.doc.rung(kind.as_str(), &r.name)?;
                        Some(latency(&p.job, figures.job.corun_factor))
                    };
                    let job = match r.cost_ms {
                        Some(ms) => ModelLatency::from_median_ms(ms),
                        None => measured().unwrap_or(figures.job),
                    };
                    (r.name.clone(), job)
                })
                .collect();
            classes.push((kind, figures));
        }
        Ok(Self {
            rng: stream_rng(seed, MODELS_STREAM),
            classes,
            left: None,
        })
    }

    fn figures(&self, kind: Kind) -> Option<&ClassFigures> {
        self.classes
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, f)| f)
    }

    /// The measured rung `rung` of `kind` with parameters `params` (a rung whose
    /// parameters changed under the same name is not the one measured).
    pub fn rung(&self, kind: Kind, rung: &str, params: &str) -> Option<&RungProfile> {
        self.figures(kind)?
            .rungs
            .iter()
            .find(|r| r.name == rung && r.params == params)
    }

    /// The measured rung of `kind` with parameters `params`, whatever its name.
    pub fn rung_with_params(&self, kind: Kind, params: &str) -> Option<&RungProfile> {
        self.figures(kind)?
            .rungs
            .iter()
            .find(|r| r.params == params)
    }

    /// How many units of `step` a job of `kind` at `rung` runs, as measured (`per_job`);
    /// `None` where not measured.
    pub fn per_job(&self, kind: Kind, rung: (&str, &str), step: &str) -> Option<f64> {
        self.rung(kind, rung.0, rung.1)?
            .step(step)
            .map(|s| s.per_job)
    }

    /// The measured share of `kind`'s jobs at `rung` that are right; `None` where not
    /// measured.
    pub fn correct_share(&self, kind: Kind, rung: (&str, &str)) -> Option<f64> {
        self.rung(kind, rung.0, rung.1).map(|r| r.accuracy.correct)
    }

    /// Draws `units` units of `step` of `kind` at `rung` (each drawn on its own, as
    /// lines read one by one vary); `None` where the step was not measured.
    pub fn step(
        &mut self,
        kind: Kind,
        rung: (&str, &str),
        step: &str,
        units: u32,
    ) -> Option<Nanos> {
        let corun = self.figures(kind)?.job.corun_factor;
        let lat = latency(&self.rung(kind, rung.0, rung.1)?.step(step)?.stats, corun);
        Some((0..units).map(|_| lat.sample_nanos(&mut self.rng)).sum())
    }

    /// Draws one whole job of `kind` (1 ms for a class without figures: none is run).
    pub fn job(&mut self, kind: Kind) -> Nanos {
        match self.figures(kind).map(|f| f.job) {
            Some(lat) => lat.sample_nanos(&mut self.rng),
            None => 1_000_000,
        }
    }

    /// Draws one job of the user's model of class `kind` at `rung` (none: a model without
    /// rungs), from that rung's figure.
    pub fn own_job(&mut self, kind: Kind, rung: Option<&str>) -> Nanos {
        let figure = rung.and_then(|name| {
            let f = self.figures(kind)?;
            f.own_rungs.iter().find(|(n, _)| n == name).map(|(_, l)| *l)
        });
        match figure {
            Some(lat) => lat.sample_nanos(&mut self.rng),
            None => self.job(kind),
        }
    }

    /// Whether an event of probability `p` happens.
    pub fn chance(&mut self, p: f64) -> bool {
        chance(&mut self.rng, p)
    }

    /// Leaves the cost of the step that just ran of `kind` for the lanes.
    pub fn leave(&mut self, kind: Kind, nanos: Nanos) {
        let corun = self.figures(kind).map_or(1.0, |f| f.job.corun_factor);
        let before = self.left.map_or(0, |(n, _)| n);
        self.left = Some((before.saturating_add(nanos), corun));
    }

    /// Takes the cost left by the step that just ran, with its class's co-run factor.
    pub fn take(&mut self) -> Option<(Nanos, f64)> {
        self.left.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(profile: &Profile) -> Draws {
        let s = Scenario::load("ar-glasses").expect("shipped");
        Draws::new(&s, profile, 7).expect("figures")
    }

    #[test]
    fn a_job_is_drawn_around_the_profiles_median_and_the_same_seed_draws_the_same() {
        let p = Profile::reference();
        let mut a = draws(&p);
        let mut b = draws(&p);
        let xs: Vec<Nanos> = (0..2001).map(|_| a.job(Kind::Vision)).collect();
        let ys: Vec<Nanos> = (0..2001).map(|_| b.job(Kind::Vision)).collect();
        assert_eq!(xs, ys);
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        let median = sorted[1000] as f64 / 1e6;
        // The reference profile's frame: 71.5 ms median.
        assert!((median - 71.5).abs() < 3.0, "{median}");
    }

    #[test]
    fn the_left_cost_is_taken_once_and_steps_without_figures_are_none() {
        let p = Profile::reference();
        let mut d = draws(&p);
        assert_eq!(
            d.step(Kind::Vision, ("det320", "det_long_side=320"), "detect", 1),
            None
        );
        d.leave(Kind::Vision, 5);
        d.leave(Kind::Vision, 7);
        assert_eq!(d.take().map(|(n, _)| n), Some(12));
        assert_eq!(d.take(), None);
    }
}
