//! A step at risk of missing its deadline gets a larger share of its core: while it runs,
//! its worker's resource group has a raised CPU weight, so the device's other work on that
//! core (the background load, other processes) yields more of the core to it, and catches
//! up once the step ends. Only mmsched does this; the baselines keep their groups' weights.

use std::fmt;

/// Sets a resource group's CPU weight (`None`: back to the weight it was created with).
pub type SetWeight = Box<dyn FnMut(&str, Option<u32>) -> Result<(), WeightError> + Send>;

/// Why the OS refused a resource group's CPU weight.
#[derive(Debug, thiserror::Error)]
#[error("cannot set the CPU weight of resource group {group:?}")]
pub struct WeightError {
    /// The group.
    pub group: String,
    /// The platform's error.
    #[source]
    pub source: crate::chain::Cause,
}

/// Raised CPU weights of the workers' groups while steps at risk run on them.
pub struct RiskBoost {
    set_weight: SetWeight,
    /// The raised weight.
    weight: u32,
    /// Per worker: its group, if it has one.
    groups: Vec<Option<String>>,
    /// Per worker: whether the step running on it raised its group's weight.
    raised: Vec<bool>,
    /// Steps that ran with their group's weight raised.
    steps: u64,
    /// The last refusal by the OS, and how many there were.
    refused: Option<(u64, String)>,
}

impl fmt::Debug for RiskBoost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RiskBoost")
            .field("weight", &self.weight)
            .field("steps", &self.steps)
            .finish()
    }
}

impl RiskBoost {
    /// Raises a worker's group to `weight` while a step at risk runs on it; `groups[w]` is
    /// worker `w`'s group.
    pub fn new(weight: u32, groups: Vec<Option<String>>, set_weight: SetWeight) -> Self {
        Self {
            set_weight,
            weight,
            raised: vec![false; groups.len()],
            groups,
            steps: 0,
            refused: None,
        }
    }

    /// Whether a step at risk on any worker in `group` holds it raised (workers can share
    /// a group).
    fn held(&self, group: &str) -> bool {
        self.groups
            .iter()
            .zip(&self.raised)
            .any(|(g, &raised)| raised && g.as_deref() == Some(group))
    }

    /// A step at risk starts on `worker`.
    pub fn start(&mut self, worker: usize) {
        let Some(Some(group)) = self.groups.get(worker).cloned() else {
            return;
        };
        if self.raised[worker] {
            return;
        }
        let first = !self.held(&group);
        self.raised[worker] = true;
        self.steps += 1;
        if first {
            self.set(&group, Some(self.weight));
        }
    }

    /// The step on `worker` ended: its group goes back to its weight when no other step
    /// at risk holds it raised.
    pub fn end(&mut self, worker: usize) {
        if !self.raised.get(worker).copied().unwrap_or(false) {
            return;
        }
        self.raised[worker] = false;
        let Some(Some(group)) = self.groups.get(worker).cloned() else {
            return;
        };
        if !self.held(&group) {
            self.set(&group, None);
        }
    }

    fn set(&mut self, group: &str, weight: Option<u32>) {
        if let Err(e) = (self.set_weight)(group, weight) {
            let n = self.refused.as_ref().map_or(0, |r| r.0);
            self.refused = Some((n + 1, crate::chain::chain(&e)));
        }
    }

    /// What happened, for the run's notes.
    pub fn note(&self) -> String {
        let mut note = format!(
            "steps at risk: {} ran with their worker's resource group at CPU weight {}",
            self.steps, self.weight
        );
        if let Some((n, e)) = &self.refused {
            note.push_str(&format!("; the OS refused {n} weight change(s), last: {e}"));
        }
        note
    }
}

/// Weight changes as a test's [`SetWeight`] records them: the group and the weight.
#[cfg(test)]
pub(super) type WeightCalls = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<u32>)>>>;

/// A [`SetWeight`] that records every change instead of making it.
#[cfg(test)]
pub(super) fn recorder() -> (WeightCalls, SetWeight) {
    let calls = WeightCalls::default();
    let c = std::sync::Arc::clone(&calls);
    let set: SetWeight = Box::new(move |g: &str, w: Option<u32>| {
        c.lock().expect("lock").push((g.to_string(), w));
        Ok(())
    });
    (calls, set)
}

/// What a [`recorder`] holds after one step at risk on `group`: raised, then restored.
#[cfg(test)]
pub(super) fn raised_then_restored(group: &str, weight: u32) -> Vec<(String, Option<u32>)> {
    vec![(group.to_string(), Some(weight)), (group.to_string(), None)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_group_stays_raised_until_its_last_step_at_risk_ends() {
        let (calls, set) = recorder();
        let groups = vec![
            Some("vision".into()),
            Some("general".into()),
            Some("general".into()),
            None,
        ];
        let mut b = RiskBoost::new(400, groups, set);
        b.start(1);
        b.start(2);
        b.start(3); // no group: nothing to raise
        b.end(1);
        b.end(0); // nothing raised there
        b.end(2);
        let calls = calls.lock().expect("lock").clone();
        assert_eq!(calls, raised_then_restored("general", 400));
        assert!(b.note().starts_with("steps at risk: 2 ran"), "{}", b.note());
    }

    #[test]
    fn a_refusal_is_reported_not_dropped() {
        let set: SetWeight = Box::new(|group: &str, _: Option<u32>| {
            Err(WeightError {
                group: group.to_string(),
                source: "permission denied".into(),
            })
        });
        let mut b = RiskBoost::new(400, vec![Some("general".into())], set);
        b.start(0);
        b.end(0);
        assert!(
            b.note()
                .ends_with("the OS refused 2 weight change(s), last: cannot set the CPU weight of resource group \"general\": permission denied"),
            "{}",
            b.note()
        );
    }
}
