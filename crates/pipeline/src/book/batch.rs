//! How many text requests one decoding step serves. With the text model's requests in one
//! shared batch decoder, a request's decoding step can decode the next token of the other
//! ready requests in the same call (see [`crate::text_batch`]). Each row makes the step a
//! little longer, and a step cannot be preempted, so the book caps the rows before it
//! submits the step: the most rows whose predicted cost (the cost model's, keyed by the
//! step's kind `decode-N`, learned from the calls that ran with N rows) fits the time the
//! admitted frames and utterances leave — the least, over those jobs, of their deadline
//! less now less their predicted remaining work. With none admitted, every request whose
//! prompt is in may join; when one is already short of time the step decodes one row, as
//! a request alone does. The cap counts the requests that may be ready when the step runs,
//! not only those ready at submission, so a step never ends up longer than predicted and
//! requests that take their tokens a moment later still join. The camera's standing
//! reservation is kept by the executor, which starts a step only if its predicted cost
//! fits before the reserved slot.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::Work;

use super::Book;
use crate::jobs::decode_label;
use crate::stats::Kind;

impl Book {
    /// Caps the rows of `work`'s next step (the job of `tag`), if it could serve several.
    pub(super) fn limit_batch(&mut self, now: Nanos, tag: u64, work: &mut dyn Work) {
        let most = work.batchable();
        if most <= 1 {
            work.limit_batch(1);
            return;
        }
        let Some((kind, rung)) = self
            .jobs
            .get(&tag)
            .map(|j| (j.kind, j.rung.as_ref().map_or("", |r| r.name()).to_string()))
        else {
            return;
        };
        let budget = self.time_left_by_due_work(now);
        let rows = rows_within(most, budget, |k| {
            self.costs.step(kind, &rung, decode_label(k), now)
        });
        work.limit_batch(rows);
    }

    /// The time a step on a general lane may take before an admitted frame or utterance
    /// would have to start to meet its deadline: the least of `deadline − now − predicted
    /// remaining work` over them (0 when one is already short); `None` without any.
    fn time_left_by_due_work(&mut self, now: Nanos) -> Option<Nanos> {
        let due: Vec<(Kind, String, Nanos, Nanos)> = self
            .jobs
            .values()
            .filter(|j| j.admitted && matches!(j.kind, Kind::Vision | Kind::Asr))
            .map(|j| {
                let rung = j.rung.as_ref().map_or("", |r| r.name()).to_string();
                (j.kind, rung, j.deadline, j.work)
            })
            .collect();
        due.into_iter()
            .map(|(kind, rung, deadline, done)| {
                let rest = self.costs.job(kind, &rung, now).saturating_sub(done);
                deadline.saturating_sub(now).saturating_sub(rest)
            })
            .min()
    }
}

/// The most rows, of `ready`, whose step's predicted cost (`cost(rows)`) fits `budget`; all
/// of them without a budget, and one (what a request alone costs) when none fits.
fn rows_within(ready: usize, budget: Option<Nanos>, mut cost: impl FnMut(usize) -> Nanos) -> usize {
    match budget {
        None => ready,
        Some(budget) => (2..=ready).rev().find(|&k| cost(k) <= budget).unwrap_or(1),
    }
}

#[cfg(test)]
mod tests {
    use super::rows_within;

    const MS: u64 = 1_000_000;

    /// 20 ms for one row, 5 ms more for each further row.
    fn cost(rows: usize) -> u64 {
        20 * MS + 5 * MS * (rows as u64 - 1)
    }

    #[test]
    fn without_due_work_every_ready_request_joins() {
        assert_eq!(rows_within(4, None, cost), 4);
        assert_eq!(rows_within(1, None, cost), 1);
    }

    #[test]
    fn the_rows_shrink_to_the_time_left() {
        assert_eq!(rows_within(4, Some(35 * MS), cost), 4);
        assert_eq!(rows_within(4, Some(34 * MS), cost), 3);
        assert_eq!(rows_within(4, Some(25 * MS), cost), 2);
        assert_eq!(rows_within(8, Some(50 * MS), cost), 7);
    }

    #[test]
    fn with_no_time_left_a_step_decodes_its_own_request_only() {
        assert_eq!(rows_within(4, Some(0), cost), 1);
        assert_eq!(rows_within(4, Some(24 * MS), cost), 1);
    }
}
