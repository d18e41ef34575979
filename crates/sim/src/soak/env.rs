//! The environment of a soak's windows, from the scenario's stressors, and the
//! mechanisms through which it acts on the simulated device.

use mmsched_scenario::{EpisodeKind, Scenario};

use super::Mechanism;

/// The environment of one window.
#[derive(Debug, Clone, Copy)]
pub(super) struct Env {
    /// The largest crystal drift of the streams' clocks, ppm.
    pub drift_ppm: f64,
    /// What the temperature adds to every stream's own drift, ppm.
    pub warm_drift_ppm: f64,
    /// Job-cost multiplier (thermal throttling, low-power mode).
    pub cost: f64,
    /// Link loss during outages, percent.
    pub outage_loss_pct: f64,
    /// Link loss after Wi-Fi switches, vibration and jitter bursts, percent.
    pub random_loss_pct: f64,
    /// Battery charge, a fraction.
    pub battery_fraction: f64,
}

/// Loss during the seconds after a Wi-Fi switch.
const SWITCH_LOSSY_S: f64 = 2.0;

pub(super) fn env_at(s: &Scenario, hour: f64) -> Env {
    let t_s = hour * 3600.0;
    let mut temp_c = 25.0;
    let mut drift_per_c = 0.0;
    let mut outage = 0.0;
    let mut random = 0.0;
    for e in s.episodes().iter().filter(|e| e.active_at(t_s)) {
        match e.kind {
            EpisodeKind::Temperature => {
                let (lo, hi) = (e.temp_min_c.unwrap_or(25.0), e.temp_max_c.unwrap_or(25.0));
                let cycle_s = e.cycle_h.unwrap_or(24.0) * 3600.0;
                // Start at the mid-point, warming up first.
                let phase = 2.0 * std::f64::consts::PI * (t_s - e.start_s) / cycle_s;
                temp_c = (lo + hi) / 2.0 + (hi - lo) / 2.0 * phase.sin();
                drift_per_c = e.drift_ppm_per_c.unwrap_or(0.5);
            }
            EpisodeKind::WifiSwitching => {
                let per_min = e.switches_per_min.unwrap_or(0.0);
                outage += 100.0 * (per_min * e.outage_ms.unwrap_or(150.0) / 60_000.0).min(1.0);
                let lossy = (per_min * SWITCH_LOSSY_S / 60.0).min(1.0);
                random += e.loss_pct.unwrap_or(0.0) * lossy;
            }
            EpisodeKind::Vibration => random += 0.2 * e.amplitude_g.unwrap_or(0.0),
            EpisodeKind::Jitter => {
                if let (Some(every), Some(burst)) = (e.burst_every_ms, e.burst_ms) {
                    random += 100.0 * (burst / every).min(1.0) * 0.1;
                }
            }
            EpisodeKind::LoadSpike
            | EpisodeKind::PacketLoss
            | EpisodeKind::Blur
            | EpisodeKind::Dark => {}
        }
    }
    let drift_ppm = s
        .streams()
        .iter()
        .map(|st| (st.clock_drift_ppm + drift_per_c * (temp_c - 25.0)).abs())
        .fold(0.0, f64::max);
    let battery_pct = s.battery().charge_pct_at(hour);
    let low_power = if battery_pct < 20.0 {
        1.3
    } else if s.battery().low_power {
        1.15
    } else {
        1.0
    };
    let throttle = 1.0 + 0.01 * (temp_c - 70.0).max(0.0);
    // Background load and spikes act in the simulated run itself, sharing the cores.
    Env {
        drift_ppm,
        warm_drift_ppm: drift_per_c * (temp_c - 25.0),
        cost: throttle * low_power,
        outage_loss_pct: outage.min(100.0),
        random_loss_pct: random.min(100.0),
        battery_fraction: battery_pct / 100.0,
    }
}

/// The mechanisms active in `s`, with its figures.
pub fn mechanisms(s: &Scenario) -> Vec<Mechanism> {
    let mut out = Vec::new();
    let mut add = |name: &'static str, effect: String| {
        if !out.iter().any(|m: &Mechanism| m.name == name) {
            out.push(Mechanism { name, effect });
        }
    };
    if let Some(bg) = s.device().background_load_pct.filter(|b| *b > 0.0) {
        add(
            "background load",
            format!(
                "{bg} % of one core taken by another thread, from the workers' cores when no core is idle"
            ),
        );
    }
    let b = s.battery();
    if b.low_power || b.drain_pct_per_hour > 0.0 {
        add(
            "low-power mode",
            format!(
                "job cost × {} (× 1.3 below 20 % charge; {:.0} % at start, −{} %/h)",
                if b.low_power { "1.15" } else { "1" },
                b.start_pct,
                b.drain_pct_per_hour
            ),
        );
        add(
            "battery saver",
            "the charge goes to the scheduler at every health evaluation, which prunes unimportant jobs when low".into(),
        );
    }
    for e in s.episodes() {
        match e.kind {
            EpisodeKind::Temperature => {
                add(
                    "thermal throttling",
                    format!(
                        "{}…{} °C every {} h; job cost +1 % per °C above 70 °C",
                        e.temp_min_c.unwrap_or(25.0),
                        e.temp_max_c.unwrap_or(25.0),
                        e.cycle_h.unwrap_or(24.0)
                    ),
                );
                add(
                    "crystal drift",
                    format!(
                        "{} ppm/°C away from 25 °C on every stream's clock, which the alignment estimates and the health loop reads",
                        e.drift_ppm_per_c.unwrap_or(0.5)
                    ),
                );
            }
            EpisodeKind::WifiSwitching => {
                let per_min = e.switches_per_min.unwrap_or(0.0);
                add(
                    "Wi-Fi outages",
                    format!(
                        "{per_min} switches/min × {} ms outage lost on the camera's and the microphone's links (a retransmitted copy meets the same loss)",
                        e.outage_ms.unwrap_or(150.0)
                    ),
                );
                add(
                    "Wi-Fi switch loss",
                    format!(
                        "{} % loss for {SWITCH_LOSSY_S} s after each switch (recoverable by retransmission)",
                        e.loss_pct.unwrap_or(0.0)
                    ),
                );
            }
            EpisodeKind::LoadSpike => add(
                "load spikes",
                format!(
                    "{} % of one core for {} ms every {} ms, shared with the workers like the background load",
                    e.load_pct.unwrap_or(0.0),
                    e.spike_ms.unwrap_or(0.0),
                    e.every_ms.unwrap_or(0.0)
                ),
            ),
            EpisodeKind::Vibration => add(
                "vibration",
                format!("{} g: +0.2 % link loss per g", e.amplitude_g.unwrap_or(0.0)),
            ),
            EpisodeKind::Jitter => add(
                "jitter bursts",
                "the late tenth of a burst's packets are lost".into(),
            ),
            EpisodeKind::PacketLoss | EpisodeKind::Blur | EpisodeKind::Dark => {}
        }
    }
    out
}
