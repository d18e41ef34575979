//! Choosing a job's quality rung when it is admitted, by expected correct results: for each
//! rung, the chance that the job ends by its deadline — from the cost model's distribution
//! of that rung's cost, given the work admitted ahead of it — times the rung's chance to
//! be right ([`super::accuracy`]), times the job's importance, less what its time costs
//! the admitted work behind it (each job behind loses the chance that the extra time
//! pushes it past its deadline). Running nothing is an option too, worth nothing and
//! costing nothing: a job no rung is worth running is shed at once, unless its cost has
//! not been measured on this device yet and the device has room, when it runs to be
//! measured (bounded exploration: one job of a kind at a time). Dominated rungs are never
//! chosen. A job's rung is fixed once its first step has run: Whisper's span is set by its
//! log-mel step, OCR's detector input by its detection; how many of the lines found are
//! read is decided after detection ([`super::lines`]).
//!
//! The work behind a job includes the inputs still to come from its kind's own stream
//! ([`super::to_come`]): a frame's extra milliseconds at a richer rung are paid by the
//! frames that arrive while it runs.
//!
//! Work counts as ahead when it is due no later and is at least as important, so under
//! load the least important jobs degrade first. With headroom every job runs its richest
//! rung: a cheaper one is chosen only where its chance to end in time makes up for its
//! chance to be wrong.
//!
//! On one general lane the camera's standing reservation takes the lane at every frame, so
//! another job runs only in the gaps between frames: a rung then ends in time only if its
//! dearest step fits one gap (a longer step waits for a gap that never comes) and its cost
//! fits the time the frames leave before the deadline.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::dist::CostDist;

use super::accuracy::{self, Estimate};
use super::rungs::RungMode;
use super::{Book, Job};
use crate::models::Rung;
use crate::stats::Kind;

/// Exploring a kind takes at most one in this many parts of a lane's time: a job explored
/// at a mean cost `c` is followed by the next of its kind no sooner than `c` times this.
pub(super) const EXPLORE_EVERY: Nanos = 20;

/// A job whose high-percentile cost does not fit before its deadline runs only if its
/// chance to end in time is at least this: more likely on time than not. Its value counts
/// what its time costs the admitted work behind it, not the work still to arrive, which a
/// job likely to be late would take the lanes from for little.
const LIKELY: f64 = 0.5;

/// What admission decided for a job.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Choice {
    /// The rung it runs at (none for a kind without rungs).
    pub rung: Option<Rung>,
    /// The predicted chance that it ends by its deadline at that rung (mmsched's choice
    /// only: the baselines predict nothing).
    pub p_on_time: Option<f64>,
    /// Whether it runs.
    pub verdict: Verdict,
}

impl Choice {
    fn fixed(rung: Option<Rung>) -> Self {
        Self {
            rung,
            p_on_time: None,
            verdict: Verdict::Run,
        }
    }
}

/// Whether a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It runs at its rung.
    Run,
    /// It runs though no rung was worth it: its cost has not been measured on this device
    /// and the device has room (its steps are committed: admission does not shed them).
    Explore,
    /// No rung is worth what it costs: it is shed at once.
    Shed,
}

/// One rung's figures at one decision.
#[derive(Debug, Clone)]
pub(super) struct RungFigures {
    /// The rung.
    pub rung: Rung,
    /// Its chance to be right.
    pub estimate: Estimate,
    /// Its mean cost (a whole job), nanoseconds.
    pub mean_cost: Nanos,
    /// Whether its cost is known here (profiled or measured), not only the kind's prior.
    pub cost_known: bool,
    /// Whether a richer rung serves more right answers per second of device time.
    pub dominated: bool,
}

/// The admitted jobs on the same lanes as a job being decided (as
/// [`Book::admitted_beside`] lists them), each with the mean of what is left of it.
struct Beside {
    jobs: Vec<(Kind, String, Nanos, u32, Nanos, f64)>,
    rests: Vec<Nanos>,
}

impl Beside {
    /// What is left of the jobs due no later than `deadline`, but the `except`-th.
    fn due_by(&self, deadline: Nanos, except: Option<usize>) -> Nanos {
        self.jobs
            .iter()
            .zip(&self.rests)
            .enumerate()
            .filter(|&(m, ((.., d, _), _))| Some(m) != except && *d <= deadline)
            .map(|(_, (_, rest))| *rest)
            .sum()
    }
}

/// How a cost distribution is read for the work ahead: its mean (mmsched's choice: the
/// sum of several jobs' costs lies near the sum of their means), or a high percentile
/// (the rule before it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Reading {
    Mean,
    Quantile(f64),
}

impl Reading {
    fn of(self, d: &CostDist) -> Nanos {
        match self {
            Reading::Mean => d.mean(),
            Reading::Quantile(q) => d.quantile(q),
        }
    }
}

impl Book {
    /// The rungs of `kind`'s model, richest first: the policy's for OCR and speech, the
    /// model's own for a model of the user's (none for a kind without rungs).
    pub(super) fn rungs_of(&self, kind: Kind) -> Vec<Rung> {
        let r = self.policy.rungs();
        match kind {
            Kind::Vision => r.vision().iter().cloned().map(Rung::Vision).collect(),
            Kind::Asr => r.asr().iter().cloned().map(Rung::Asr).collect(),
            Kind::Model(_) => self.own_rungs[kind]
                .iter()
                .cloned()
                .map(Rung::Own)
                .collect(),
            Kind::Vad | Kind::Llm => Vec::new(),
        }
    }

    /// The name of `kind`'s richest rung (empty for a kind without rungs).
    pub(super) fn rungs_of_richest(&self, kind: Kind) -> String {
        self.rungs_of(kind)
            .first()
            .map_or(String::new(), |r| r.name().to_string())
    }

    /// Every rung of `kind`, richest first, with its chance to be right, its mean cost and
    /// whether it is dominated. A rung whose cost is known only by the kind's prior is
    /// neither dominated nor dominates: nothing says what it saves.
    pub(super) fn rung_figures(&mut self, kind: Kind, now: Nanos) -> Vec<RungFigures> {
        let rungs = self.rungs_of(kind);
        let names: Vec<&str> = rungs.iter().map(Rung::name).collect();
        let scored: Vec<_> = names.iter().map(|n| self.costs.scored(kind, n)).collect();
        let estimates: Vec<Estimate> = (0..rungs.len())
            .map(|i| self.accuracy.estimate(kind, &names, &scored, i))
            .collect();
        let mean: Vec<Nanos> = names
            .iter()
            .map(|n| self.costs.job_dist(kind, n, now).mean())
            .collect();
        let known: Vec<bool> = names
            .iter()
            .map(|n| self.costs.cost_known(kind, n))
            .collect();
        let cost: Vec<f64> = mean
            .iter()
            .zip(&known)
            .map(|(&m, &k)| if k { m as f64 } else { f64::NAN })
            .collect();
        let dominated = accuracy::dominated(&estimates, &cost);
        rungs
            .into_iter()
            .enumerate()
            .map(|(i, rung)| RungFigures {
                rung,
                estimate: estimates[i],
                mean_cost: mean[i],
                cost_known: known[i],
                dominated: dominated[i],
            })
            .collect()
    }

    /// The rung for the job of `tag`, about to be admitted at `now`, and whether it runs.
    pub(super) fn choose(&mut self, tag: u64, now: Nanos) -> Choice {
        let Some((kind, deadline, importance)) = self
            .jobs
            .get(&tag)
            .map(|j| (j.kind, j.deadline, self.importance_of(j)))
        else {
            return Choice::fixed(None);
        };
        let mut rungs = self.rungs_of(kind);
        if rungs.is_empty() {
            return Choice::fixed(None);
        }
        let cheapest = rungs.len() - 1;
        match self.rules.rungs {
            RungMode::Richest => Choice::fixed(Some(rungs.swap_remove(0))),
            RungMode::Cheapest => Choice::fixed(Some(rungs.swap_remove(cheapest))),
            RungMode::Fitting => {
                let ahead = self.work_ahead(
                    tag,
                    kind,
                    deadline,
                    importance,
                    now,
                    Reading::Quantile(0.95),
                );
                let start = now + ahead;
                let pick = (0..rungs.len())
                    .find(|&i| self.fits_p95(kind, rungs[i].name(), (start, deadline), now))
                    .unwrap_or(cheapest);
                Choice::fixed(Some(rungs.swap_remove(pick)))
            }
            RungMode::Adaptive => self.choose_by_value(tag, kind, deadline, importance, now),
        }
    }

    /// mmsched's choice: see the [module docs](self).
    fn choose_by_value(
        &mut self,
        tag: u64,
        kind: Kind,
        deadline: Nanos,
        importance: f64,
        now: Nanos,
    ) -> Choice {
        let figures = self.rung_figures(kind, now);
        let start = self.start_of(tag, kind, (deadline, importance), now);
        // (rung, value, chance on time); running nothing is worth 0.
        let mut best: Option<(usize, f64, f64)> = None;
        for (i, f) in figures.iter().enumerate() {
            if f.dominated {
                continue;
            }
            let (value, p_on) = self.value_of(tag, kind, (deadline, importance), f, start, now);
            if best.is_none_or(|(_, v, _)| value > v) {
                best = Some((i, value, p_on));
            }
        }
        let Some((pick, value, p_on)) = best else {
            return Choice::fixed(None);
        };
        let chosen = |verdict, rung: &RungFigures, p_on| Choice {
            rung: Some(rung.rung.clone()),
            p_on_time: Some(p_on),
            verdict,
        };
        // Admission sheds a step whose high-percentile cost does not fit: where no rung's
        // does, or no rung is worth running, the verdict rests on the cost model — explore
        // it if this device has not measured it and has room.
        let fits = figures
            .iter()
            .any(|f| !f.dominated && self.fits_p95(kind, f.rung.name(), (start, deadline), now));
        // Only the device's own streams explore: an outside client that asked for a
        // deadline its request cannot make is told so at once (503), not answered late.
        let own = self
            .jobs
            .get(&tag)
            .is_some_and(|j| j.origin == crate::request::Origin::Streams);
        if (value <= 0.0 || !fits) && own {
            let budget = deadline.saturating_sub(start);
            if let Some(i) = self.exploration(kind, &figures, budget, now) {
                let p = self.p_on_time(kind, figures[i].rung.name(), (start, deadline), now);
                return chosen(Verdict::Explore, &figures[i], p);
            }
        }
        // A job more likely late than not whose high percentile does not fit either would be
        // shed by the core's admission as it came to run, or run for little if the core did
        // not see what holds the lanes (it counts the work queued, not the steps running).
        let likely = !self.rules.mechanisms.running_steps
            || p_on >= LIKELY
            || self.fits_p95(kind, figures[pick].rung.name(), (start, deadline), now);
        // Without admission control nothing is shed: the best rung runs, worth it or not.
        if (value > 0.0 && likely) || !self.rules.mechanisms.admission {
            return chosen(Verdict::Run, &figures[pick], p_on);
        }
        chosen(Verdict::Shed, &figures[pick], p_on)
    }

    /// When a `kind` job due at `deadline` with `importance` would start: after the work
    /// ahead of it at its mean, and the steps running now that hold its lanes.
    fn start_of(
        &mut self,
        tag: u64,
        kind: Kind,
        (deadline, importance): (Nanos, f64),
        now: Nanos,
    ) -> Nanos {
        let ahead = self.work_ahead(tag, kind, deadline, importance, now, Reading::Mean);
        let blocked = self.blocked(tag, kind, (deadline, importance), now);
        now.saturating_add(ahead).saturating_add(blocked)
    }

    /// What running the job of `tag` at `f`'s rung from `start` is worth: its importance
    /// times its chance to be right times its chance to end by its deadline, less what its
    /// time costs the admitted work behind it and the inputs still to come; and that chance
    /// to end in time.
    fn value_of(
        &mut self,
        tag: u64,
        kind: Kind,
        (deadline, importance): (Nanos, f64),
        f: &RungFigures,
        start: Nanos,
        now: Nanos,
    ) -> (f64, f64) {
        let p_on = self.p_on_time(kind, f.rung.name(), (start, deadline), now);
        let gain = importance * f.estimate.p_right * p_on;
        let beside = self.beside(tag, kind, now);
        let behind = self.loss_behind(&beside, kind, (deadline, importance), f.mean_cost, now);
        let to_come = self.loss_to_come(&beside, kind, f, start, now);
        (gain - behind - to_come, p_on)
    }

    /// What running a `kind` job at `f`'s rung from `start` costs the inputs still to come
    /// from its kind's own stream, at the same rung ([`super::to_come`]), with the admitted
    /// work `beside` it.
    fn loss_to_come(
        &mut self,
        beside: &Beside,
        kind: Kind,
        f: &RungFigures,
        start: Nanos,
        now: Nanos,
    ) -> f64 {
        if !self.rules.mechanisms.inputs_to_come {
            return 0.0;
        }
        let lanes = self.lanes_of(kind);
        let shift = f.mean_cost / lanes;
        let expected = self.streams[kind].expected(now, start.saturating_add(shift));
        if expected.is_empty() {
            return 0.0;
        }
        let cost = self.costs.job_dist(kind, f.rung.name(), now);
        let mut loss = 0.0;
        for (release, deadline, importance) in expected {
            let queued = beside.due_by(deadline, None) / lanes;
            let lost = super::to_come::chance_lost(
                &cost,
                (release, deadline),
                queued,
                (start, shift),
                now,
            );
            loss += importance * f.estimate.p_right * lost;
        }
        loss
    }

    /// Whether the job of `tag`, whose first step the scheduling core's admission shed as
    /// it came to run, runs all the same. The core sheds when the high percentiles of the
    /// work due by a deadline overflow it — the rule before expected values, and a step it
    /// sheds is often one that waited behind a step it could not preempt. With expected
    /// values the book decides again at that moment: the job runs if its rung is still
    /// worth its time and it is more likely on time than not, and its steps are then
    /// committed, so the core does not shed them again. Its predicted chance is the one of
    /// this decision, the one calibrated.
    pub(super) fn keeps_over_core(&mut self, tag: u64, now: Nanos) -> bool {
        let m = self.rules.mechanisms;
        if self.rules.rungs != RungMode::Adaptive || !m.admission || !m.running_steps {
            return false;
        }
        let Some((kind, deadline, importance, rung)) = self.jobs.get(&tag).and_then(|j| {
            let first = !j.chain.started && !j.kept && j.shadow.is_none();
            let rung = j.rung.as_ref().filter(|_| first)?.name().to_string();
            Some((j.kind, j.deadline, self.importance_of(j), rung))
        }) else {
            return false;
        };
        let figures = self.rung_figures(kind, now);
        let Some(f) = figures.iter().find(|f| f.rung.name() == rung) else {
            return false;
        };
        let start = self.start_of(tag, kind, (deadline, importance), now);
        let (value, p_on) = self.value_of(tag, kind, (deadline, importance), f, start, now);
        if value <= 0.0 || p_on < LIKELY {
            return false;
        }
        if let Some(j) = self.jobs.get_mut(&tag) {
            j.kept = true;
            if !j.explored {
                j.p_on_time = Some(p_on);
            }
        }
        self.decisions.kept_over_core += 1;
        true
    }

    /// The rung to explore for a `kind` job no rung was worth running, if any: the cheapest
    /// rung not dominated with no fresh measurement of its cost, while no other job of the
    /// kind explores, the general lanes have room (fewer admitted jobs than lanes), and
    /// the kind's last exploration is long enough ago that exploring takes at most one
    /// [`EXPLORE_EVERY`]th of a lane's time (and no sooner than its measurements go stale),
    /// and `budget`, the time before its deadline, would fit a cost that many times below
    /// the prediction.
    fn exploration(
        &mut self,
        kind: Kind,
        figures: &[RungFigures],
        budget: Nanos,
        now: Nanos,
    ) -> Option<usize> {
        if !self.rules.mechanisms.exploration {
            return None;
        }
        let exploring = self.jobs.values().any(|j| j.kind == kind && j.explored);
        let busy = self
            .jobs
            .values()
            .filter(|j| j.admitted && j.kind != Kind::Vad)
            .count();
        if exploring || busy >= self.general_lanes.max(1) {
            return None;
        }
        let pick = (0..figures.len())
            .rev()
            .filter(|&i| !figures[i].dominated)
            .find(|&i| self.costs.fresh(kind, figures[i].rung.name(), now) == 0)?;
        // A job is explored only if it could end in time should the cost prove as far below
        // its prediction as exploring allows for: a frame due in 1 ms is not.
        let median = self
            .costs
            .job_dist(kind, figures[pick].rung.name(), now)
            .quantile(0.5);
        if budget < median / EXPLORE_EVERY {
            return None;
        }
        // The last exploration's cost as measured since (or as predicted, if it was not).
        if let Some((last, rung)) = &self.explored_at[kind] {
            let cost = self.costs.job_dist(kind, rung, now).mean();
            let gap = cost
                .saturating_mul(EXPLORE_EVERY)
                .max(super::COST_MAX_AGE_NANOS);
            if now < last.saturating_add(gap) {
                return None;
            }
        }
        self.explored_at[kind] = Some((now, figures[pick].rung.name().to_string()));
        Some(pick)
    }

    /// The chance that a `kind` job at `rung` starting at `start` ends by `deadline`: its
    /// cost within the time before it, and on one general lane beside the camera's
    /// standing reservation, within the time the frames leave — nil if its dearest step
    /// (at its median) does not fit a gap between frames.
    pub(super) fn p_on_time(
        &mut self,
        kind: Kind,
        rung: &str,
        (start, deadline): (Nanos, Nanos),
        now: Nanos,
    ) -> f64 {
        let budget = match self.standing_beside(kind) {
            Some(s) => {
                if self.costs.largest_step(kind, rung, now, 0.5) > s.gap() {
                    return 0.0;
                }
                s.free_within(start, deadline)
            }
            None => deadline.saturating_sub(start),
        };
        self.costs.job_dist(kind, rung, now).within(budget)
    }

    /// The camera's standing reservation, where a `kind` job runs on the one general lane
    /// beside it (with more general lanes a frame takes one of them and a step runs on
    /// another).
    fn standing_beside(&self, kind: Kind) -> Option<super::Standing> {
        let beside_frames = matches!(kind, Kind::Asr | Kind::Llm) && self.general_lanes <= 1;
        self.standing.filter(|_| beside_frames)
    }

    /// The rule before expected values: the rung's P95 cost fits before the deadline and,
    /// beside the camera's frames on one lane, its dearest step's P95 fits a gap.
    fn fits_p95(
        &mut self,
        kind: Kind,
        rung: &str,
        (start, deadline): (Nanos, Nanos),
        now: Nanos,
    ) -> bool {
        let cost = self.costs.job(kind, rung, now);
        if start.saturating_add(cost) > deadline {
            return false;
        }
        match self.standing_beside(kind) {
            Some(s) => {
                self.costs.largest_step(kind, rung, now, 0.95) <= s.gap()
                    && cost <= s.free_within(start, deadline)
            }
            None => true,
        }
    }

    /// The importance a job is scheduled with.
    pub(super) fn importance_of(&self, j: &Job) -> f64 {
        j.importance
            .unwrap_or_else(|| self.policy.importance(j.kind.as_str()))
    }

    /// The mean of the rest of `job`'s work at `now` (at its rung, else the richest).
    pub(super) fn mean_rest(&mut self, job: &Job, now: Nanos) -> Nanos {
        let rung = job
            .rung
            .as_ref()
            .map_or_else(|| self.rungs_of_richest(job.kind), |r| r.name().to_string());
        let steps = job.chain.steps_after + 1;
        self.rest_of((job.kind, &rung, job.work, steps), now, Reading::Mean)
    }

    /// The rest of an admitted job's work, read by `reading`.
    pub(super) fn rest_of(
        &mut self,
        j: (Kind, &str, Nanos, u32),
        now: Nanos,
        reading: Reading,
    ) -> Nanos {
        let (kind, rung, done, steps_left) = j;
        if kind == Kind::Llm {
            // A text request: its tokens left, a step each.
            let d = self.costs.step_dist(kind, rung, None, now);
            reading.of(&d) * Nanos::from(steps_left)
        } else {
            let d = self.costs.job_dist(kind, rung, now);
            reading.of(&d).saturating_sub(done)
        }
    }

    /// The admitted jobs on the same lanes as a `kind` job (the voice-activity lane's, or
    /// the general lanes'), but for `tag`, at `now`: (kind, rung, work done — its steps
    /// ended and the time its step running has run —, steps left, deadline, importance).
    fn admitted_beside(
        &self,
        tag: u64,
        kind: Kind,
        now: Nanos,
    ) -> Vec<(Kind, String, Nanos, u32, Nanos, f64)> {
        let audio = kind == Kind::Vad;
        self.jobs
            .iter()
            .filter(|&(&t, j)| t != tag && j.admitted && (j.kind == Kind::Vad) == audio)
            .map(|(&t, j)| {
                let rung = j.rung.as_ref().map_or("", |r| r.name()).to_string();
                let imp = self.importance_of(j);
                let running = self.running_steps.iter().find(|&&(r, _)| r == t);
                let elapsed = running.map_or(0, |&(_, started)| now.saturating_sub(started));
                (
                    j.kind,
                    rung,
                    j.work.saturating_add(elapsed),
                    j.chain.steps_after + 1,
                    j.deadline,
                    imp,
                )
            })
            .collect()
    }

    /// The admitted jobs beside the job of `tag` ([`Self::admitted_beside`]), each with the
    /// mean of what is left of it.
    fn beside(&mut self, tag: u64, kind: Kind, now: Nanos) -> Beside {
        let jobs = self.admitted_beside(tag, kind, now);
        let rests = jobs
            .iter()
            .map(|(k, r, done, steps, ..)| self.rest_of((*k, r, *done, *steps), now, Reading::Mean))
            .collect();
        Beside { jobs, rests }
    }

    pub(super) fn lanes_of(&self, kind: Kind) -> Nanos {
        if kind == Kind::Vad {
            1
        } else {
            self.general_lanes.max(1) as Nanos
        }
    }

    /// The time the admitted work ahead of a job takes on its lanes: the rest of every job
    /// on the same lanes due no later than `deadline` and at least as important, over the
    /// lanes.
    pub(super) fn work_ahead(
        &mut self,
        tag: u64,
        kind: Kind,
        deadline: Nanos,
        importance: f64,
        now: Nanos,
        reading: Reading,
    ) -> Nanos {
        let mut total: Nanos = 0;
        for (k, rung, done, steps, d, imp) in self.admitted_beside(tag, kind, now) {
            if d <= deadline && imp >= importance {
                let rest = self.rest_of((k, &rung, done, steps), now, reading);
                total = total.saturating_add(rest);
            }
        }
        total / self.lanes_of(kind)
    }

    /// What running `extra` more work ahead of them costs the admitted jobs behind a
    /// `kind` job due at `deadline` with `importance` (those due later, or as soon and
    /// less important): for each, its importance times the chance the extra time takes
    /// from its ending in time.
    fn loss_behind(
        &mut self,
        beside: &Beside,
        kind: Kind,
        (deadline, importance): (Nanos, f64),
        extra: Nanos,
        now: Nanos,
    ) -> f64 {
        let lanes = self.lanes_of(kind);
        let shift = extra / lanes;
        let mut loss = 0.0;
        for (i, (k, rung, done, steps, d, imp)) in beside.jobs.iter().enumerate() {
            let behind = *d > deadline || (*d == deadline && *imp < importance);
            if !behind {
                continue;
            }
            let ahead = beside.due_by(*d, Some(i)) / lanes;
            let budget = d.saturating_sub(now.saturating_add(ahead));
            let before = self.chance_within(*k, rung, *done, *steps, budget, now);
            let after =
                self.chance_within(*k, rung, *done, *steps, budget.saturating_sub(shift), now);
            loss += imp * (before - after);
        }
        loss.max(0.0)
    }

    /// The chance that the rest of an admitted job (`done` of its work run, `steps` left)
    /// fits `budget`.
    fn chance_within(
        &mut self,
        kind: Kind,
        rung: &str,
        done: Nanos,
        steps: u32,
        budget: Nanos,
        now: Nanos,
    ) -> f64 {
        if kind == Kind::Llm {
            let d = self.costs.step_dist(kind, rung, None, now);
            d.within(budget / Nanos::from(steps.max(1)))
        } else {
            self.costs
                .job_dist(kind, rung, now)
                .within(done.saturating_add(budget))
        }
    }
}
