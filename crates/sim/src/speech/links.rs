//! The packets of one call: through the jitter injector (stationary rows) or over a
//! non-stationary link taken from a shipped scenario's episodes.

use rand::RngExt;

use super::{FRAME_NANOS, SpeechConfig};
use mmsched_world::jitter::{GammaJitter, JitterInjector, PacketRecord};
use mmsched_world::rng::{SeededRng, stream_rng};

/// Generates one call's packets through the injector.
pub(super) fn call_packets(
    cfg: &SpeechConfig,
    injector: &JitterInjector,
    call: u64,
) -> Vec<PacketRecord> {
    let mut rng = stream_rng(cfg.seed, 0x5EEC_0000 + call);
    (0..cfg.frames_per_call as u64)
        .map(|seq| {
            let send = seq * FRAME_NANOS;
            PacketRecord {
                seq,
                send_nanos: send as i64,
                arrival_nanos: injector.arrival(send, &mut rng).map(|a| a as i64),
            }
        })
        .collect()
}

/// A non-stationary link: base jitter, plus bursts of heavier jitter and Wi-Fi switches.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    /// Jitter outside bursts.
    pub base: GammaJitter,
    /// Bursts: every `every_ms`, `len_ms` long, with this jitter.
    pub bursts: Option<(f64, f64, GammaJitter)>,
    /// Wi-Fi switches: per minute (Poisson), outage ms (everything sent is lost), loss
    /// percent for the 2 s after a switch.
    pub wifi: Option<(f64, f64, f64)>,
    /// Hand-overs to a longer path and back.
    pub hand_over: Option<HandOver>,
}

/// A path that changes: every `every_ms`, for `len_ms` (starting half a period in), the
/// one-way delay is `extra_ms` longer — a hand-over to a longer path and back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandOver {
    /// Period, in ms.
    pub every_ms: f64,
    /// Time on the longer path, in ms.
    pub len_ms: f64,
    /// Extra one-way delay of the longer path, in ms.
    pub extra_ms: f64,
}

impl HandOver {
    /// The extra delay of a packet sent at `send_ms`.
    fn extra_at(&self, send_ms: f64) -> f64 {
        let phase = (send_ms + self.every_ms / 2.0) % self.every_ms.max(1.0);
        if phase < self.len_ms {
            self.extra_ms
        } else {
            0.0
        }
    }
}

/// Seconds of loss after a Wi-Fi switch (the soak's figure too).
const SWITCH_LOSSY_NANOS: u64 = 2_000_000_000;

impl Link {
    pub(super) fn call(&self, cfg: &SpeechConfig, call: u64) -> Vec<PacketRecord> {
        let mut rng: SeededRng = stream_rng(cfg.seed, 0x5EEC_1000 + call);
        let base = (cfg.base_delay_ms * 1e6) as u64;
        let total = u64::from(cfg.frames_per_call) * FRAME_NANOS;
        // Switch times (Poisson).
        let mut switches = Vec::new();
        if let Some((per_min, _, _)) = self.wifi.filter(|w| w.0 > 0.0) {
            let mean_gap = 60e9 / per_min;
            let mut t = 0.0;
            loop {
                let u: f64 = rng.random::<f64>().max(1e-12);
                t += -u.ln() * mean_gap;
                if t >= total as f64 {
                    break;
                }
                switches.push(t as u64);
            }
        }
        let mut k = 0;
        (0..u64::from(cfg.frames_per_call))
            .map(|seq| {
                let send = seq * FRAME_NANOS;
                let in_burst = self
                    .bursts
                    .is_some_and(|(every, len, _)| (send as f64 / 1e6) % every.max(1.0) < len);
                let jitter = match self.bursts {
                    Some((_, _, j)) if in_burst => j,
                    _ => self.base,
                };
                let path_ms = self
                    .hand_over
                    .map_or(0.0, |h| h.extra_at(send as f64 / 1e6));
                let extra = jitter.sample_nanos(&mut rng) + (path_ms * 1e6) as u64;
                while k + 1 < switches.len() && switches[k + 1] <= send {
                    k += 1;
                }
                let mut lost = cfg.network_loss_pct > 0.0
                    && rng.random::<f64>() < cfg.network_loss_pct / 100.0;
                if let (Some((_, outage_ms, loss_pct)), Some(&sw)) = (self.wifi, switches.get(k))
                    && send >= sw
                {
                    let since = send - sw;
                    let in_outage = since < (outage_ms * 1e6) as u64;
                    let lossy = since < SWITCH_LOSSY_NANOS;
                    lost |= in_outage || (lossy && rng.random::<f64>() < loss_pct / 100.0);
                }
                PacketRecord {
                    seq,
                    send_nanos: send as i64,
                    arrival_nanos: (!lost).then_some((send + base + extra) as i64),
                }
            })
            .collect()
    }
}

/// The non-stationary links of the shipped scenarios: the microphone link of each scenario
/// that has jitter bursts or Wi-Fi switching, with its base jitter.
pub fn scenario_links() -> Vec<(String, Link)> {
    use mmsched_scenario::{BUILTIN, EpisodeKind, Scenario, StreamKind};
    let mut out = Vec::new();
    for (name, _) in BUILTIN {
        let Ok(s) = Scenario::load(name) else {
            continue;
        };
        let Some(mic) = s.streams().iter().find(|st| st.kind == StreamKind::Audio) else {
            continue;
        };
        let base = mic
            .jitter
            .as_ref()
            .and_then(|j| match (j.scale_ms, j.p99_ms) {
                (Some(scale), _) => GammaJitter::new(j.shape, scale).ok(),
                (None, Some(p99)) => GammaJitter::with_p99(j.shape, p99).ok(),
                _ => None,
            })
            .unwrap_or_else(GammaJitter::reference);
        for e in s.episodes() {
            let on_mic = e.stream.as_deref().is_none_or(|n| n == mic.name);
            match e.kind {
                EpisodeKind::Jitter if on_mic => {
                    if let (Some(every), Some(len), Some(p99)) =
                        (e.burst_every_ms, e.burst_ms, e.p99_ms)
                        && let Ok(burst) = GammaJitter::with_p99(2.0, p99)
                    {
                        out.push((
                            format!("{name}: bursts P99 {p99} ms, {len} ms every {every} ms"),
                            Link {
                                base,
                                bursts: Some((every, len, burst)),
                                wifi: None,
                                hand_over: None,
                            },
                        ));
                    }
                }
                EpisodeKind::WifiSwitching => {
                    let (per_min, outage, loss) = (
                        e.switches_per_min.unwrap_or(0.0),
                        e.outage_ms.unwrap_or(150.0),
                        e.loss_pct.unwrap_or(0.0),
                    );
                    out.push((
                        format!(
                            "{name}: Wi-Fi {per_min}/min, {outage} ms outages, {loss} % loss after"
                        ),
                        Link {
                            base,
                            bursts: None,
                            wifi: Some((per_min, outage, loss)),
                            hand_over: None,
                        },
                    ));
                }
                _ => {}
            }
        }
    }
    out
}
