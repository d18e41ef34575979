//! How many of the lines an OCR job found to read, decided once its detection has run:
//! the number is known then, and so is the time left. Reading every line is the only way
//! to a right answer, so every line is read when they fit; when they do not, the job
//! reads the number that makes the most lines on time expected (the chance that their
//! recognition steps end in time, times the share of the lines they hold) — a partial
//! answer on time rather than a whole one too late. A frame with five lines is not read
//! at a rung's "top 3" when five fit.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::Work;

use super::Book;
use super::decide::Reading;
use crate::stats::Kind;

impl Book {
    /// Before the next step of `tag`: an OCR job whose detection has run decides how many
    /// of its lines to read.
    pub(super) fn plan_lines(&mut self, now: Nanos, tag: u64, work: &mut dyn Work) {
        if !self.rules.lines_later() {
            return;
        }
        let Some(found) = work.parts_left() else {
            return;
        };
        let Some(j) = self.jobs.get_mut(&tag) else {
            return;
        };
        if j.kind != Kind::Vision || j.lines_planned {
            return;
        }
        j.lines_planned = true;
        let (deadline, rung) = (
            j.deadline,
            j.rung.as_ref().map_or("", |r| r.name()).to_string(),
        );
        let importance = self.importance_of(&self.jobs[&tag]);
        let ahead = self.work_ahead(tag, Kind::Vision, deadline, importance, now, Reading::Mean);
        let budget = deadline.saturating_sub(now.saturating_add(ahead));
        let step = self
            .costs
            .step_dist(Kind::Vision, &rung, Some("recognize"), now);
        let per_step = work.parts_per_step().max(1);
        let value = |k: usize| {
            let steps = k.div_ceil(per_step) as Nanos;
            let whole = if k == found { 1.0 } else { 0.0 };
            step.within(budget / steps) * (whole + k as f64 / found as f64) / 2.0
        };
        // Most lines first: fewer are read only if they are worth strictly more.
        let mut best = (found, value(found));
        for k in (1..found).rev() {
            let v = value(k);
            if v > best.1 {
                best = (k, v);
            }
        }
        if best.0 == found {
            self.decisions.lines_all_read += 1;
        } else {
            self.decisions.lines_cut += 1;
            work.keep_parts(best.0);
        }
    }
}
