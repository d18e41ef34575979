//! The S6 speech-jitter experiment: 20 ms audio packets through the jitter injector into
//! the real playout buffer of `mmsched-core`, with fixed buffers of 20, 40 and 60 ms and
//! with the adaptive buffer; frame loss, added delay and E-model MOS for each.
//!
//! Rows: stationary Gamma jitter (no jitter, P99 28 ms, P99 42 ms) and non-stationary
//! jitter taken from the shipped scenarios' episodes — the car's bursts of heavy jitter on
//! the microphone link, and the inspection robot's Wi-Fi switching (outages, then loss) —
//! where a buffer that adapts can show what it is worth. Each row says whether the
//! adaptive buffer has both a lower loss and a lower mean added delay than every fixed one
//! (`adaptive_dominates`), and against which it does.
//!
//! Time is simulated: the experiment walks packet arrivals and frame play times in time
//! order (a small discrete-event loop), so hours of audio take milliseconds.

use mmsched_core::playout::{FrameKind, PlayoutBuffer, PlayoutConfig, PlayoutMode};
use serde::Serialize;

use crate::emodel::{self, Codec};
use crate::jitter::{GammaJitter, JitterInjector, PacketRecord};
use crate::rng::{SimRng, stream_rng};
use rand::RngExt;

/// Audio frame (packet) length: 20 ms.
pub const FRAME_NANOS: u64 = 20_000_000;

/// Settings of the experiment.
#[derive(Debug, Clone, Copy)]
pub struct SpeechConfig {
    /// Run seed.
    pub seed: u64,
    /// Independent calls simulated per row (each starts a fresh buffer).
    pub calls: u32,
    /// 20 ms frames per call.
    pub frames_per_call: u32,
    /// Constant one-way network delay, in ms.
    pub base_delay_ms: f64,
    /// Random packet loss on the network, in percent (on top of late packets).
    pub network_loss_pct: f64,
    /// Codec impairment values for the MOS.
    pub codec: Codec,
}

impl Default for SpeechConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            calls: 20,
            frames_per_call: 15_000,
            base_delay_ms: 30.0,
            network_loss_pct: 0.0,
            codec: Codec::g711_plc(),
        }
    }
}

/// Result of one buffer on one packet stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BufferResult {
    /// Frames concealed (packet late or lost), in percent of all frames.
    pub loss_pct: f64,
    /// E-model MOS.
    pub mos: f64,
    /// Mean delay the buffer added over the fastest path, in ms.
    pub added_delay_ms: f64,
    /// Mean mouth-to-ear delay used for the MOS, in ms.
    pub mouth_to_ear_ms: f64,
}

/// The fixed buffer sizes compared, ms.
pub const FIXED_SIZES_MS: [u64; 3] = [20, 40, 60];

/// One row of the S6 table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JitterRow {
    /// What the jitter is, e.g. `gamma P99 42 ms` or `car: bursts`.
    pub label: String,
    /// Whether the jitter's distribution is the same all the time.
    pub stationary: bool,
    /// P99 of the injected jitter, in ms (0 = no jitter).
    pub p99_ms: f64,
    /// Gamma scale θ of the (base) jitter, in ms.
    pub scale_ms: f64,
    /// Fixed buffers of 20, 40 and 60 ms, in that order.
    pub fixed: [BufferResult; 3],
    /// The adaptive buffer.
    pub adaptive: BufferResult,
}

impl JitterRow {
    /// The fixed buffers the adaptive one beats on both loss and mean added delay, by size.
    pub fn dominated(&self) -> Vec<u64> {
        FIXED_SIZES_MS
            .iter()
            .zip(&self.fixed)
            .filter(|(_, f)| {
                self.adaptive.loss_pct < f.loss_pct
                    && self.adaptive.added_delay_ms < f.added_delay_ms
            })
            .map(|(ms, _)| *ms)
            .collect()
    }

    /// Whether the adaptive buffer beats every fixed one on both loss and delay.
    pub fn adaptive_dominates(&self) -> bool {
        self.dominated().len() == FIXED_SIZES_MS.len()
    }
}

/// A fixed buffer of `ms` milliseconds.
pub fn fixed_mode_ms(ms: u64) -> PlayoutMode {
    PlayoutMode::Fixed {
        delay_nanos: ms * 1_000_000,
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    frames: u64,
    concealed: u64,
    delay_sum_nanos: f64,
}

/// Runs one playout buffer over `packets` (one call) and adds to `tally`.
fn play(packets: &[PacketRecord], mode: PlayoutMode, tally: &mut Tally) {
    let Some(first) = packets.first() else { return };
    let last_seq = packets.iter().map(|p| p.seq).max().unwrap_or(first.seq);
    // Shift times so the earliest is at 1 s: the buffer works in unsigned nanoseconds.
    let origin = packets
        .iter()
        .filter_map(|p| p.arrival_nanos)
        .min()
        .unwrap_or(0)
        - 1_000_000_000;
    let mut arrivals: Vec<(u64, u64)> = packets
        .iter()
        .filter_map(|p| p.arrival_nanos.map(|a| ((a - origin) as u64, p.seq)))
        .collect();
    arrivals.sort_unstable();
    let mut buf = PlayoutBuffer::new(PlayoutConfig {
        frame_nanos: FRAME_NANOS,
        capacity_frames: 256,
        mode,
    });
    let record = |d: mmsched_core::playout::FrameDecision, t: &mut Tally| {
        t.frames += 1;
        if d.kind == FrameKind::Conceal {
            t.concealed += 1;
        }
        t.delay_sum_nanos += d.added_delay_nanos as f64;
    };
    for &(at, seq) in &arrivals {
        while let Some(due) = buf.next_play_nanos() {
            if due > at || buf.next_seq().is_some_and(|s| s > last_seq) {
                break;
            }
            if let Some(d) = buf.poll(due) {
                record(d, tally);
            }
        }
        buf.on_packet(seq, at);
    }
    // Drain: decide every remaining frame up to the last sequence number.
    while let (Some(due), Some(next)) = (buf.next_play_nanos(), buf.next_seq()) {
        if next > last_seq {
            break;
        }
        if let Some(d) = buf.poll(due) {
            record(d, tally);
        }
    }
    // Frames before the first arrival (lost leading packets) never reach the buffer.
}

fn result(t: &Tally, codec: &Codec, network_delay_ms: f64) -> BufferResult {
    let frames = t.frames.max(1) as f64;
    let loss_pct = 100.0 * t.concealed as f64 / frames;
    let added_delay_ms = t.delay_sum_nanos / frames / 1e6;
    let mouth_to_ear_ms = codec.codec_delay_ms + network_delay_ms + added_delay_ms;
    BufferResult {
        loss_pct,
        mos: emodel::mos(codec, mouth_to_ear_ms, loss_pct),
        added_delay_ms,
        mouth_to_ear_ms,
    }
}

/// Generates one call's packets through the injector.
fn call_packets(cfg: &SpeechConfig, injector: &JitterInjector, call: u64) -> Vec<PacketRecord> {
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
}

/// Seconds of loss after a Wi-Fi switch (the soak's figure too).
const SWITCH_LOSSY_NANOS: u64 = 2_000_000_000;

impl Link {
    fn call(&self, cfg: &SpeechConfig, call: u64) -> Vec<PacketRecord> {
        let mut rng: SimRng = stream_rng(cfg.seed, 0x5EEC_1000 + call);
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
                let extra = jitter.sample_nanos(&mut rng);
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

fn row_from(
    label: String,
    stationary: bool,
    p99_ms: f64,
    scale_ms: f64,
    cfg: &SpeechConfig,
    calls: impl Fn(u64) -> Vec<PacketRecord>,
) -> JitterRow {
    let mut fixed = [Tally::default(); 3];
    let mut adaptive = Tally::default();
    for call in 0..cfg.calls as u64 {
        let packets = calls(call);
        for (size, t) in FIXED_SIZES_MS.iter().zip(fixed.iter_mut()) {
            play(&packets, fixed_mode_ms(*size), t);
        }
        play(&packets, PlayoutMode::adaptive_default(), &mut adaptive);
    }
    JitterRow {
        label,
        stationary,
        p99_ms,
        scale_ms,
        fixed: fixed.map(|t| result(&t, &cfg.codec, cfg.base_delay_ms)),
        adaptive: result(&adaptive, &cfg.codec, cfg.base_delay_ms),
    }
}

/// One stationary row: `calls` seeded calls with Gamma jitter, through every buffer.
pub fn run_row(cfg: &SpeechConfig, p99_ms: f64, jitter: GammaJitter) -> JitterRow {
    let injector = JitterInjector {
        base_delay_nanos: (cfg.base_delay_ms * 1e6) as u64,
        jitter,
        loss_probability: cfg.network_loss_pct / 100.0,
    };
    let label = if p99_ms == 0.0 {
        "no jitter".to_string()
    } else {
        format!("gamma P99 {p99_ms} ms")
    };
    row_from(label, true, p99_ms, jitter.scale_ms(), cfg, |call| {
        call_packets(cfg, &injector, call)
    })
}

/// One non-stationary row over `link`.
pub fn run_link(cfg: &SpeechConfig, label: &str, link: &Link) -> JitterRow {
    // The P99 of the jitter actually injected (bursts included), from the first call.
    let first = link.call(cfg, 0);
    let base = cfg.base_delay_ms;
    let mut j: Vec<f64> = first
        .iter()
        .filter_map(|p| {
            p.arrival_nanos
                .map(|a| (a - p.send_nanos) as f64 / 1e6 - base)
        })
        .collect();
    let p99 = crate::stats::quantile(&mut j, 0.99);
    row_from(
        label.to_string(),
        false,
        p99,
        link.base.scale_ms(),
        cfg,
        |call| link.call(cfg, call),
    )
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
                        },
                    ));
                }
                _ => {}
            }
        }
    }
    out
}

/// The S6 table: stationary rows (no jitter, P99 28 ms and 42 ms, Gamma shape 2, scale
/// calibrated), then the scenarios' non-stationary links.
pub fn run_table(cfg: &SpeechConfig, mut progress: impl FnMut()) -> Vec<JitterRow> {
    let mut rows: Vec<JitterRow> = [0.0, 28.0, 42.0]
        .iter()
        .map(|&p99| {
            let jitter = if p99 == 0.0 {
                GammaJitter::new(2.0, 0.0)
            } else {
                GammaJitter::with_p99(2.0, p99)
            }
            .expect("table parameters are valid");
            let row = run_row(cfg, p99, jitter);
            progress();
            row
        })
        .collect();
    for (label, link) in scenario_links() {
        rows.push(run_link(cfg, &label, &link));
        progress();
    }
    rows
}

/// Replays a captured packet-arrival trace through every buffer. The network delay for the
/// MOS is the trace's fastest one-way delay (0 if the clocks of the trace are not comparable).
pub fn replay_trace(packets: &[PacketRecord], codec: &Codec) -> JitterRow {
    let one_way: Vec<f64> = packets
        .iter()
        .filter_map(|p| p.arrival_nanos.map(|a| (a - p.send_nanos) as f64 / 1e6))
        .collect();
    let fastest = one_way
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(0.0);
    let fastest = if fastest.is_finite() { fastest } else { 0.0 };
    let mut jitter: Vec<f64> = one_way.iter().map(|d| d - fastest).collect();
    let p99 = crate::stats::quantile(&mut jitter, 0.99);
    // Lost packets inside the trace are concealed by the buffers like late ones.
    let cfg = SpeechConfig {
        calls: 1,
        base_delay_ms: fastest,
        codec: *codec,
        ..SpeechConfig::default()
    };
    row_from("trace".into(), false, p99, 0.0, &cfg, |_| packets.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SpeechConfig {
        SpeechConfig {
            calls: 4,
            frames_per_call: 5000,
            ..SpeechConfig::default()
        }
    }

    #[test]
    fn no_jitter_loses_nothing() {
        let row = run_row(&small(), 0.0, GammaJitter::new(2.0, 0.0).expect("valid"));
        assert!(row.stationary);
        for f in row.fixed.iter().chain([&row.adaptive]) {
            assert_eq!(f.loss_pct, 0.0, "{row:?}");
        }
        assert!(row.fixed[0].mos > 4.3);
    }

    #[test]
    fn bigger_fixed_buffers_lose_less_and_wait_longer() {
        let row = run_row(
            &small(),
            42.0,
            GammaJitter::with_p99(2.0, 42.0).expect("valid"),
        );
        let [f20, f40, f60] = row.fixed;
        assert!(
            f20.loss_pct > f40.loss_pct && f40.loss_pct >= f60.loss_pct,
            "{row:?}"
        );
        assert!(f20.added_delay_ms < f40.added_delay_ms, "{row:?}");
        assert!(f40.added_delay_ms < f60.added_delay_ms, "{row:?}");
        assert!(row.adaptive.loss_pct < f20.loss_pct / 3.0, "{row:?}");
    }

    #[test]
    fn scenario_links_are_non_stationary_and_lose_packets_in_outages() {
        let links = scenario_links();
        assert!(
            links.iter().any(|(l, _)| l.starts_with("car: bursts")),
            "{links:?}"
        );
        let (label, wifi) = links
            .iter()
            .find(|(l, _)| l.starts_with("inspection: Wi-Fi"))
            .expect("inspection switches Wi-Fi");
        let row = run_link(&small(), label, wifi);
        assert!(!row.stationary);
        // Outages and post-switch loss: every buffer conceals at least those packets.
        assert!(row.fixed[2].loss_pct > 0.5, "{row:?}");
    }

    #[test]
    fn same_seed_same_result() {
        let j = GammaJitter::with_p99(2.0, 28.0).expect("valid");
        assert_eq!(run_row(&small(), 28.0, j), run_row(&small(), 28.0, j));
    }
}
