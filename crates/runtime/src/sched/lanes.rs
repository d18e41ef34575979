//! The worker layout every scheduler gets, so a comparison is about scheduling only.
//!
//! A careful engineer building any of the four schedulers on this device would give it:
//! one general worker per configured worker (the first for the camera's frames, in the
//! `vision` resource group; the others in `general`), each pinned to its own CPU, plus one
//! audio worker, real time when the OS permits, in the `audio` group, that runs only
//! voice-activity chunks so a 32 ms chunk never waits behind a frame or a transcript.
//! Without platform integration (`--no-platform`) the same lanes exist, unpinned, at
//! normal priority, in no group. [`standard_lanes`] builds that layout for the executors
//! with a shared queue or a slot table; [`class_lane`] gives the `os-threads` baseline the
//! same set-up per model thread.

use mmsched_core::layout::{AUDIO_LANE_CLASSES, Layout};

use super::worker::LaneConfig;

/// SCHED_FIFO priority of the audio worker.
pub const AUDIO_FIFO_PRIORITY: u8 = 50;

/// The class name of the jobs the audio worker runs (the core layout's audio lane).
pub const AUDIO_LANE_CLASS: &str = AUDIO_LANE_CLASSES[0];

/// Workers and which of them is restricted to which classes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaneLayout {
    /// One entry per worker thread: the general workers, then the audio worker.
    pub lanes: Vec<LaneConfig>,
    /// Workers restricted to some job classes (by class name): the audio worker.
    pub restricted: Vec<(usize, Vec<String>)>,
}

impl LaneLayout {
    /// How many workers run any class.
    pub fn general(&self) -> usize {
        self.lanes.len() - self.restricted.len()
    }
}

fn general_lane(i: usize, platform: bool, cpus: &[usize]) -> LaneConfig {
    LaneConfig {
        cpu: if platform && !cpus.is_empty() {
            Some(cpus[i % cpus.len()])
        } else {
            None
        },
        fifo_priority: None,
        cgroup_class: platform.then(|| if i == 0 { "vision" } else { "general" }.to_string()),
    }
}

fn audio_lane(platform: bool) -> LaneConfig {
    LaneConfig {
        cpu: None,
        fifo_priority: platform.then_some(AUDIO_FIFO_PRIORITY),
        cgroup_class: platform.then(|| "audio".to_string()),
    }
}

/// `workers` general workers (at least one) and the audio worker; with `platform`,
/// pinned round-robin to `cpus`, in resource groups, the audio worker real time.
/// The lane count and restrictions are the core's [`Layout`], the simulator's too.
pub fn standard_lanes(workers: usize, platform: bool, cpus: &[usize]) -> LaneLayout {
    let layout = Layout::new(u32::try_from(workers).unwrap_or(u32::MAX));
    let mut lanes: Vec<LaneConfig> = (0..layout.compute_workers as usize)
        .map(|i| general_lane(i, platform, cpus))
        .collect();
    lanes.push(audio_lane(platform));
    debug_assert_eq!(lanes.len(), layout.lanes() as usize);
    LaneLayout {
        lanes,
        restricted: layout
            .restricted()
            .iter()
            .map(|(lane, classes)| {
                (
                    *lane as usize,
                    classes.iter().map(|c| c.to_string()).collect(),
                )
            })
            .collect(),
    }
}

/// The set-up of the `os-threads` baseline's thread for the model of `class`, matching
/// [`standard_lanes`]: voice activity like the audio worker, vision like the first
/// general worker, everything else like the second (or the first when there is one).
pub fn class_lane(class: &str, workers: usize, platform: bool, cpus: &[usize]) -> LaneConfig {
    match class {
        AUDIO_LANE_CLASS => audio_lane(platform),
        "vision" => general_lane(0, platform, cpus),
        _ => general_lane(usize::from(workers > 1), platform, cpus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheduler_gets_pinned_general_workers_and_a_real_time_audio_worker() {
        let l = standard_lanes(2, true, &[0, 1]);
        assert_eq!(l.lanes.len(), 3);
        assert_eq!(l.general(), 2);
        assert_eq!(
            (l.lanes[0].cpu, l.lanes[1].cpu, l.lanes[2].cpu),
            (Some(0), Some(1), None)
        );
        assert_eq!(l.lanes[2].fifo_priority, Some(AUDIO_FIFO_PRIORITY));
        assert_eq!(l.lanes[0].cgroup_class.as_deref(), Some("vision"));
        assert_eq!(l.lanes[1].cgroup_class.as_deref(), Some("general"));
        assert_eq!(l.restricted, vec![(2, vec!["vad".to_string()])]);
        // os-threads: the same set-up per model thread.
        assert_eq!(class_lane("vad", 2, true, &[0, 1]), l.lanes[2]);
        assert_eq!(class_lane("vision", 2, true, &[0, 1]), l.lanes[0]);
        assert_eq!(class_lane("asr", 2, true, &[0, 1]), l.lanes[1]);
        assert_eq!(class_lane("llm", 1, true, &[0, 1]).cpu, Some(0));
    }

    #[test]
    fn without_platform_the_same_lanes_are_plain_threads() {
        let l = standard_lanes(0, false, &[0, 1]);
        assert_eq!(l.lanes.len(), 2, "at least one general worker");
        assert!(
            l.lanes
                .iter()
                .all(|c| c.cpu.is_none() && c.fifo_priority.is_none() && c.cgroup_class.is_none())
        );
        assert_eq!(class_lane("vad", 2, false, &[]), LaneConfig::default());
    }
}
