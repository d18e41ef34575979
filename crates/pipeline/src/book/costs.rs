//! The book's one cost model: what a step will cost, by the kind of job, its quality rung
//! and the kind of step (`detect`, `recognize`, `mel`, `encoder-layers`, `decode`, …: a
//! Whisper decoding step costs a fraction of an encoder step), and what a whole job costs
//! at each rung (for choosing rungs). Each key learns from the steps and jobs that ran
//! (a high percentile of the recent ones, trusted for [`super::COST_MAX_AGE_NANOS`]); until
//! it has, the device profile's figure stands in (the rung's measured step or job cost,
//! else the kind's one-job cost); once its figures are older than that, the lower of the
//! two.

use std::collections::HashMap;

use mmsched_backends::asr::AsrStepKind;
use mmsched_backends::ocr::OcrStepKind;
use mmsched_core::arbiter::ClassId;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::cost::{CostModel, Prior};
use mmsched_runtime::sched::dist::CostDist;
use mmsched_world::profile::Profile;

use super::{COST_MAX_AGE_NANOS, COST_MIN_SAMPLES, COST_WINDOW};
use crate::stats::Kind;

/// What a cost is of: a step (of a kind, at a rung) or a whole job at a rung.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: Kind,
    /// The rung's name (empty for a kind without rungs).
    rung: String,
    /// The kind of step, or `job` for a whole job.
    what: &'static str,
}

/// The rows of a `decode-N` step label (a call decoding N text requests together).
fn rows_of(what: &str) -> Option<u64> {
    what.strip_prefix("decode-")?.parse().ok()
}

/// The label of a whole job's cost.
const JOB: &str = "job";

/// The label the jobs give a kind of step named `name` in a profile (steps are keyed by
/// the jobs' own `&'static str` labels).
fn step_label(name: &str) -> Option<&'static str> {
    let asr = AsrStepKind::ALL.iter().map(|k| k.as_str());
    let ocr = [OcrStepKind::Detect, OcrStepKind::Recognize].map(OcrStepKind::as_str);
    asr.chain(ocr).find(|&label| label == name)
}

/// Step and job costs by key.
/// A model of the user's own that had no warm-up runs, until its steps are measured: a
/// guess of the order of a small vision model on one core here, which the first jobs
/// replace.
const USER_MODEL_PRIOR: Prior = Prior {
    p50_nanos: 30_000_000,
    p95_nanos: 60_000_000,
};

pub(super) struct Costs {
    model: CostModel,
    ids: HashMap<Key, ClassId>,
    /// The device profile's figures (priors until measured).
    profile: Profile,
    /// Per kind, the cost of one job or step when the profile says nothing finer.
    fallback: [Prior; 4],
    /// The user's own models: the cost of a job at each rung (the empty name for a model
    /// without rungs) as their warm-up runs on this device measured it, until their jobs
    /// are measured.
    warmed: HashMap<(Kind, String), Prior>,
}

impl std::fmt::Debug for Costs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Costs")
            .field("keys", &self.ids.len())
            .finish_non_exhaustive()
    }
}

impl Costs {
    pub(super) fn new(profile: Profile, models: &dyn crate::models::Models) -> Self {
        let fallback = crate::api::cost_prior_percentiles(&profile);
        Self {
            model: CostModel::new(COST_WINDOW, COST_MIN_SAMPLES, COST_MAX_AGE_NANOS),
            ids: HashMap::new(),
            profile,
            fallback,
            warmed: Kind::all()
                .into_iter()
                .flat_map(|k| {
                    let rungs = std::iter::once(String::new()).chain(models.own_rungs(k));
                    rungs.filter_map(move |r| Some(((k, r.clone()), models.warm_up_cost(k, &r)?)))
                })
                .collect(),
        }
    }

    /// The prior of `key`: the profile's percentiles for the rung's step or job, else the
    /// kind's one-job figure.
    fn prior(&self, key: &Key) -> Prior {
        let rung = self.profile.doc.rung(key.kind.as_str(), &key.rung);
        let measured = match (rung, key.what) {
            (Some(r), JOB) => Some(&r.job),
            (Some(r), step) => r.step(step).map(|s| &s.stats),
            (None, _) => None,
        };
        if let Some(m) = measured {
            return Prior::new(m.p50_nanos, m.p95_nanos);
        }
        // A model of the user's own: its rung's warm-up runs (a rung's own figure before
        // the model's), `mmsched profile --model`'s figure, else its warm-up runs', else a
        // guess.
        let warmed = |rung: &str| self.warmed.get(&(key.kind, rung.to_string())).copied();
        let one = self
            .fallback
            .get(key.kind.index())
            .copied()
            .or_else(|| warmed(&key.rung).filter(|_| !key.rung.is_empty()))
            .or_else(|| {
                let l = self.profile.latency(key.kind.as_str()).ok()?;
                Some(Prior::new(
                    (l.p50_ms * 1e6) as Nanos,
                    (l.p95_ms * 1e6) as Nanos,
                ))
            })
            .or_else(|| warmed(""))
            .unwrap_or(USER_MODEL_PRIOR);
        match rows_of(key.what) {
            // A call decoding N requests' tokens together, until measured: a guess on the
            // safe side, half a lone step more for each further row (one call reads the
            // weights once for all its rows, so it costs less than that).
            Some(rows) => Prior::new(
                one.p50_nanos.saturating_mul(rows + 1) / 2,
                one.p95_nanos.saturating_mul(rows + 1) / 2,
            ),
            None => one,
        }
    }

    fn id(&mut self, key: Key) -> ClassId {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        // Ids of their own: the cost model keys by class, and these are never the
        // executor's.
        let id = ClassId(1_000_000 + self.ids.len() as u32);
        let prior = self.prior(&key);
        self.model.set_prior(id, prior);
        self.ids.insert(key, id);
        id
    }

    fn key(kind: Kind, rung: &str, what: &'static str) -> Key {
        Key {
            kind,
            rung: rung.to_string(),
            what,
        }
    }

    /// The predicted cost of the next step of a `kind` job at `rung` (`step`: the kind of
    /// step, when the job's steps differ).
    pub(super) fn step(
        &mut self,
        kind: Kind,
        rung: &str,
        step: Option<&'static str>,
        now: Nanos,
    ) -> Nanos {
        let id = self.id(Self::key(kind, rung, step.unwrap_or(JOB)));
        self.model.predict(id, now)
    }

    /// [`Costs::step`], but a kind of step this device has not measured and the profile
    /// has no figure for is priced as the whole job's prediction over `steps` (the work's
    /// hint of the steps the whole job takes), not as a whole job: a transcription's step
    /// priced at the whole transcription fits no gap between a camera's frames, so it
    /// waited until its deadline forced it in (or, as a first step, was never run and never
    /// measured).
    pub(super) fn step_hinted(
        &mut self,
        kind: Kind,
        rung: &str,
        step: Option<&'static str>,
        steps: Option<u32>,
        now: Nanos,
    ) -> Nanos {
        match self.share_of_job(kind, rung, step, steps) {
            Some(steps) => self.job(kind, rung, now) / Nanos::from(steps),
            None => self.step(kind, rung, step, now),
        }
    }

    /// The mean of what is left of a step that has run for `elapsed`, its cost priced as
    /// [`Costs::step_hinted`] prices its high percentile (a share of the job's when the
    /// kind of step is not known here).
    pub(super) fn step_rest_hinted(
        &mut self,
        kind: Kind,
        rung: &str,
        (step, steps): (Option<&'static str>, Option<u32>),
        elapsed: Nanos,
        now: Nanos,
    ) -> Nanos {
        match self.share_of_job(kind, rung, step, steps) {
            // A step is a share of the job: what is left of it, a share of what is left of
            // a job that ran `steps` times as long.
            Some(steps) => {
                let n = Nanos::from(steps);
                self.job_dist(kind, rung, now)
                    .mean_rest_after(elapsed.saturating_mul(n))
                    / n
            }
            None => self
                .step_dist(kind, rung, step, now)
                .mean_rest_after(elapsed),
        }
    }

    /// How many shares of the whole job a step of kind `step` is priced at: `steps` (the
    /// work's hint) when that kind of step was neither profiled nor measured here, else
    /// none (its own figures price it).
    fn share_of_job(
        &mut self,
        kind: Kind,
        rung: &str,
        step: Option<&'static str>,
        steps: Option<u32>,
    ) -> Option<u32> {
        let (Some(what), Some(steps)) = (step, steps.filter(|&n| n > 1)) else {
            return None;
        };
        let id = self.id(Self::key(kind, rung, what));
        let profiled = self
            .profile
            .doc
            .rung(kind.as_str(), rung)
            .is_some_and(|r| r.step(what).is_some());
        (!profiled && self.model.measured(id) == 0).then_some(steps)
    }

    /// A step of that key took `cost` and ended at `at`.
    pub(super) fn record_step(
        &mut self,
        kind: Kind,
        rung: &str,
        step: Option<&'static str>,
        cost: Nanos,
        at: Nanos,
    ) {
        let id = self.id(Self::key(kind, rung, step.unwrap_or(JOB)));
        self.model.record(id, cost, at);
    }

    /// The predicted cost of a whole `kind` job at `rung`.
    pub(super) fn job(&mut self, kind: Kind, rung: &str, now: Nanos) -> Nanos {
        let id = self.id(Self::key(kind, rung, JOB));
        self.model.predict(id, now)
    }

    /// The distribution of the next step's cost of a `kind` job at `rung` (`step`: the
    /// kind of step, or the whole job's when `None`).
    pub(super) fn step_dist(
        &mut self,
        kind: Kind,
        rung: &str,
        step: Option<&'static str>,
        now: Nanos,
    ) -> CostDist {
        let id = self.id(Self::key(kind, rung, step.unwrap_or(JOB)));
        self.model
            .dist(id, now)
            .unwrap_or_else(|| CostDist::from_percentiles(0, 0))
    }

    /// The distribution of a whole `kind` job's cost at `rung`.
    pub(super) fn job_dist(&mut self, kind: Kind, rung: &str, now: Nanos) -> CostDist {
        self.step_dist(kind, rung, None, now)
    }

    /// Fresh measurements of whole `kind` jobs at `rung` (or of their steps, for jobs in
    /// steps): none means the prior decides.
    pub(super) fn fresh(&mut self, kind: Kind, rung: &str, now: Nanos) -> usize {
        let id = self.id(Self::key(kind, rung, JOB));
        self.model.fresh(id, now)
    }

    /// The `q`-quantile of the dearest step of a `kind` job at `rung`, over the kinds of
    /// step the profile measured for that rung (0 when it measured none).
    pub(super) fn largest_step(&mut self, kind: Kind, rung: &str, now: Nanos, q: f64) -> Nanos {
        let labels: Vec<&'static str> = self
            .profile
            .doc
            .rung(kind.as_str(), rung)
            .map(|r| r.steps.keys().filter_map(|k| step_label(k)).collect())
            .unwrap_or_default();
        labels
            .into_iter()
            .map(|what| self.step_dist(kind, rung, Some(what), now).quantile(q))
            .max()
            .unwrap_or(0)
    }

    /// What the profile scored of `kind`'s rung `rung` (none where it did not).
    pub(super) fn scored(&self, kind: Kind, rung: &str) -> Option<super::accuracy::Scored> {
        let r = self.profile.doc.rung(kind.as_str(), rung)?;
        (r.accuracy.samples > 0).then_some(super::accuracy::Scored {
            correct: r.accuracy.correct,
            samples: r.accuracy.samples,
        })
    }

    /// Whether a whole `kind` job's cost at `rung` is known on this device: the profile
    /// measured the rung, or jobs at it ran (else only the kind's prior stands in).
    pub(super) fn cost_known(&mut self, kind: Kind, rung: &str) -> bool {
        if self.profile.doc.rung(kind.as_str(), rung).is_some() {
            return true;
        }
        let id = self.id(Self::key(kind, rung, JOB));
        self.model.measured(id) > 0
    }

    /// A whole `kind` job at `rung` took `cost` of work and ended at `at` (a job of one
    /// step was already recorded as its step).
    pub(super) fn record_job(&mut self, kind: Kind, rung: &str, cost: Nanos, at: Nanos) {
        let id = self.id(Self::key(kind, rung, JOB));
        self.model.record(id, cost, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_world::profile::Profile;

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_step_never_measured_is_priced_as_its_share_of_the_job() {
        // The reference profile knows a transcription as a whole (P95 1.19 s), not its
        // steps.
        let mut c = Costs::new(Profile::reference(), &crate::engines::Engines::default());
        let whole = c.job(Kind::Asr, "window", 0);
        assert!(whole > 1_000 * MS, "{whole}");
        // Unhinted, a step is priced as the whole job (the rule for one-step jobs).
        assert_eq!(c.step(Kind::Asr, "window", Some("mel"), 0), whole);
        // Hinted with twenty steps in all: a twentieth of it.
        let hinted = c.step_hinted(Kind::Asr, "window", Some("mel"), Some(20), 0);
        assert_eq!(hinted, whole / 20);
        // Once measured, the measurement decides, hint or not: the prior's spread around
        // it (its P95 is 1.25 times its median).
        c.record_step(Kind::Asr, "window", Some("mel"), 130 * MS, 0);
        let measured = c.step_hinted(Kind::Asr, "window", Some("mel"), Some(20), 0);
        assert!((155 * MS..170 * MS).contains(&measured), "{measured}");
    }
}
