//! The MCU's settings derived from the policy documents in `policies/`, checked against
//! values worked out by hand from the S2 score.

use mmsched_core::Modality;
use mmsched_core::policy::{Policy, PolicySpec};
use mmsched_kernel::Priority;
use mmsched_kernel::policy::{
    McuTask, health_monitor, level_of, priorities, slot_ticks, slot_window,
};

fn load(text: &str) -> Policy {
    let spec: PolicySpec = toml::from_str(text).expect("the policy parses");
    Policy::try_from(spec).expect("the policy is valid")
}

fn default_policy() -> Policy {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/default.toml");
    load(&std::fs::read_to_string(path).expect("policies/default.toml is readable"))
}

/// The demo firmware's tasks (firmware/mcu-demo/build.rs).
const TASKS: [McuTask<'static>; 4] = [
    McuTask {
        class: "uart",
        modality: Modality::Text,
        deadline_micros: 1_000,
    },
    McuTask {
        class: "imu",
        modality: Modality::Imu,
        deadline_micros: 5_000,
    },
    McuTask {
        class: "vad",
        modality: Modality::Audio,
        deadline_micros: 20_000,
    },
    McuTask {
        class: "ldti",
        modality: Modality::Log,
        deadline_micros: 50_000,
    },
];

fn levels(p: &[Priority]) -> Vec<u8> {
    p.iter().map(|p| p.level()).collect()
}

#[test]
fn default_policy_gives_the_documented_levels() {
    let policy = default_policy();
    // Urgency 1/δ in 1/ms: 1, 0.2, 0.05, 0.02, min-max normalised: 1, 0.18/0.98,
    // 0.03/0.98, 0. Score = 0.45·u + 0.35·γ + 0.20 (full battery), γ = 0.5 except vad 0.6:
    // uart 0.825 → 25.6, imu 0.4577 → 14.2, vad 0.4238 → 13.1, ldti 0.375 → 11.6.
    assert_eq!(levels(&priorities(&policy, &TASKS)), [26, 14, 13, 12]);
    assert_eq!(slot_ticks(&policy, 10), 10_000);
    assert_eq!(slot_window(&policy, 32), 32);
    let m = health_monitor(&policy);
    assert_eq!(
        (m.weights.alpha, m.weights.beta, m.weights.gamma),
        (0.4, 0.35, 0.25)
    );
    assert_eq!(
        (m.thresholds.degraded_at, m.thresholds.critical_at),
        (0.25, 0.6)
    );
}

#[test]
fn a_policy_change_moves_the_levels() {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../policies/default.toml"
    ))
    .unwrap();
    // Audio made far more important: it now outranks the IMU.
    let changed = load(&base.replace("vad = 0.60", "vad = 1.0"));
    let l = levels(&priorities(&changed, &TASKS));
    assert!(l[2] > l[1], "{l:?}");
    // Shorter slots and a short horizon reach the MCU too.
    let slots = load(
        &base
            .replace("slot_len_micros = 1000", "slot_len_micros = 250")
            .replace("horizon_slots = 65536", "horizon_slots = 16"),
    );
    assert_eq!(slot_ticks(&slots, 10), 2_500);
    assert_eq!(slot_window(&slots, 32), 16);
}

#[test]
fn levels_round_to_the_nearest_and_clamp() {
    assert_eq!(level_of(0.0), Priority::MIN);
    assert_eq!(level_of(1.0), Priority::MAX);
    assert_eq!(level_of(2.0), Priority::MAX);
    assert_eq!(level_of(f64::NAN), Priority::MIN);
    assert_eq!(level_of(0.5).level(), 16);
}
