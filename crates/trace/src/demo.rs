//! A synthetic demo trace: a camera, a microphone with speech recognition, an LLM answering
//! what was heard, an IMU, and the health counters — generated from a seed, never measured.
//!
//! It exists so the viewer, the exporters and their tests have a realistic trace before a
//! device is at hand. Everything it writes is labelled `"demo": true` in the header.

use std::collections::BTreeMap;

use mmsched_core::Modality;
use serde_json::{Value, json};

use crate::format::Trace;
use crate::ids::{IdGen, SpanId, TraceId};
use crate::record::{ClockDomain, FORMAT_VERSION, Header, Record, RecordKind, attr, stage};

const MS: u64 = 1_000_000;

/// Settings of the demo generator.
#[derive(Debug, Clone, Copy)]
pub struct DemoConfig {
    /// Seed of every random choice: the same seed gives the same trace.
    pub seed: u64,
    /// Stop once at least this many records exist (the trace's length follows).
    pub min_records: usize,
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            min_records: 20_000,
        }
    }
}

/// A tiny deterministic PRNG (SplitMix64) so the demo needs no extra dependency.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Roughly normal (sum of uniforms), mean 0, sd 1.
    fn normal(&mut self) -> f64 {
        (0..6).map(|_| self.unit()).sum::<f64>() * std::f64::consts::SQRT_2
            - 6.0 * std::f64::consts::FRAC_1_SQRT_2
    }
    fn range_ns(&mut self, lo_ms: f64, hi_ms: f64) -> u64 {
        ((lo_ms + (hi_ms - lo_ms) * self.unit()) * MS as f64) as u64
    }
}

const PROMPTS: [&str; 4] = [
    "what is written on that sign",
    "read the label on the box",
    "how far is the next exit",
    "summarise what you see",
];

struct Gen {
    ids: IdGen,
    rng: Rng,
    out: Vec<Record>,
    next_job: u64,
    run_trace: TraceId,
    busy_until: BTreeMap<&'static str, u64>,
    /// Until when the LLM is decoding (it slows vision down: shared memory bandwidth).
    llm_busy_until: u64,
    queue_depth: u64,
}

#[derive(Clone, Copy)]
struct JobCtx {
    trace_id: TraceId,
    root: SpanId,
    job: u64,
    modality: Modality,
    model: Option<&'static str>,
    track: &'static str,
    clock: &'static str,
    sync_offset_ms: i64,
}

impl Gen {
    fn rec(
        &mut self,
        ctx: &JobCtx,
        kind: RecordKind,
        name: &str,
        ts_ns: u64,
        dur_ns: u64,
    ) -> SpanId {
        let span_id = self.ids.span_id();
        self.out.push(Record {
            kind,
            trace_id: ctx.trace_id,
            span_id,
            parent_span_id: (span_id != ctx.root).then_some(ctx.root),
            job: Some(ctx.job),
            modality: Some(ctx.modality),
            model: ctx.model.map(str::to_string),
            track: ctx.track.to_string(),
            ts_ns,
            dur_ns,
            clock: ctx.clock.to_string(),
            sync_offset_ms: ctx.sync_offset_ms,
            name: name.to_string(),
            value: None,
            attrs: BTreeMap::new(),
        });
        span_id
    }

    fn attr(&mut self, key: &str, v: Value) {
        if let Some(r) = self.out.last_mut() {
            r.attrs.insert(key.to_string(), v);
        }
    }

    fn counter(&mut self, name: &str, ts_ns: u64, value: f64) {
        let span_id = self.ids.span_id();
        self.out.push(Record {
            kind: RecordKind::Counter,
            trace_id: self.run_trace,
            span_id,
            parent_span_id: None,
            job: None,
            modality: None,
            model: None,
            track: "health".into(),
            ts_ns,
            dur_ns: 0,
            clock: "device".into(),
            sync_offset_ms: 0,
            name: name.to_string(),
            value: Some(value),
            attrs: BTreeMap::new(),
        });
    }

    fn new_job(
        &mut self,
        modality: Modality,
        model: Option<&'static str>,
        track: &'static str,
        clock: &'static str,
        sync_offset_ms: i64,
    ) -> JobCtx {
        self.next_job += 1;
        JobCtx {
            trace_id: self.ids.trace_id(),
            root: self.ids.span_id(),
            job: self.next_job,
            modality,
            model,
            track,
            clock,
            sync_offset_ms,
        }
    }

    /// The job span, written last (it needs the end time) but with the pre-drawn root id.
    fn root(&mut self, ctx: &JobCtx, arrival: u64, end: u64, deadline: u64) {
        self.out.push(Record {
            kind: RecordKind::Span,
            trace_id: ctx.trace_id,
            span_id: ctx.root,
            parent_span_id: None,
            job: Some(ctx.job),
            modality: Some(ctx.modality),
            model: ctx.model.map(str::to_string),
            track: ctx.track.to_string(),
            ts_ns: arrival,
            dur_ns: end - arrival,
            clock: ctx.clock.to_string(),
            sync_offset_ms: ctx.sync_offset_ms,
            name: stage::JOB.into(),
            value: None,
            attrs: [(attr::DEADLINE_NS.to_string(), json!(deadline))].into(),
        });
        self.rec(ctx, RecordKind::Instant, stage::DEADLINE, deadline, 0);
        self.attr(attr::DEADLINE_NS, json!(deadline));
        if end > deadline {
            self.rec(ctx, RecordKind::Instant, stage::MISS, end, 0);
            self.attr("late_ns", json!(end - deadline));
        }
    }

    /// queued → admitted → pre → exec → post on `ctx.track`; returns (exec span, end).
    fn pipeline(
        &mut self,
        ctx: &JobCtx,
        arrival: u64,
        pre_ms: (f64, f64),
        exec: u64,
        post_ms: (f64, f64),
    ) -> (SpanId, u64) {
        let pre = self.rng.range_ns(pre_ms.0, pre_ms.1);
        let post = self.rng.range_ns(post_ms.0, post_ms.1);
        let free = self.busy_until.get(ctx.track).copied().unwrap_or(0);
        let start = arrival.max(free) + self.rng.range_ns(0.05, 0.6);
        self.rec(
            ctx,
            RecordKind::Span,
            stage::QUEUED,
            arrival,
            start - arrival,
        );
        self.rec(ctx, RecordKind::Instant, stage::ADMITTED, start, 0);
        self.rec(ctx, RecordKind::Span, stage::PRE, start, pre);
        let exec_id = self.rec(ctx, RecordKind::Span, stage::EXEC, start + pre, exec);
        let end = start + pre + exec + post;
        self.rec(ctx, RecordKind::Span, stage::POST, start + pre + exec, post);
        self.busy_until.insert(ctx.track, end);
        (exec_id, end)
    }
}

/// Generates the demo trace.
pub fn generate(cfg: DemoConfig) -> Trace {
    let ids = IdGen::from_seed(cfg.seed);
    let run_trace = ids.trace_id();
    let mut g = Gen {
        ids,
        rng: Rng(cfg.seed ^ 0x5eed),
        out: Vec::with_capacity(cfg.min_records + 64),
        next_job: 0,
        run_trace,
        busy_until: BTreeMap::new(),
        llm_busy_until: 0,
        queue_depth: 0,
    };
    // Periods of each source, ns.
    let cam_period = 33_333_333;
    let mic_period = 20 * MS;
    let imu_period = 10 * MS;
    let ldti_period = 8_333_333; // 120 evaluations per second (S3)
    let (mut next_cam, mut next_mic, mut next_imu, mut next_ldti) = (0u64, 5 * MS, 2 * MS, 0u64);
    let mut next_slow = 0u64; // queue depth, slot occupancy, PSI every 50 ms
    let mut next_policy = 1_500 * MS;
    let mut policy_rev = 1u32;
    let mut speech_frames = 0u32;
    let mut speech_start = 0u64;
    let mut ldti = 0.1f64;
    let mut recent_misses = 0.0f64;

    while g.out.len() < cfg.min_records {
        let t = next_cam
            .min(next_mic)
            .min(next_imu)
            .min(next_ldti)
            .min(next_slow)
            .min(next_policy);
        let secs = t as f64 / 1e9;
        // A load wave every ~20 s pushes the device into the degraded and critical bands.
        let wave = ((secs / 20.0) * std::f64::consts::TAU).sin().max(0.0);
        if t == next_ldti {
            let target = 0.12 + 0.55 * wave.powi(3) + 0.08 * recent_misses.min(3.0);
            ldti = (0.8 * ldti + 0.2 * target + 0.01 * g.rng.normal()).clamp(0.0, 1.0);
            g.counter(stage::LDTI, t, (ldti * 1000.0).round() / 1000.0);
            recent_misses *= 0.97;
            next_ldti += ldti_period;
        } else if t == next_slow {
            let qd = g.queue_depth as f64 + (3.0 * wave).round();
            g.counter(stage::QUEUE_DEPTH, t, qd);
            let occ = (0.35 + 0.5 * wave + 0.05 * g.rng.unit()).min(1.0);
            g.counter(stage::SLOT_OCCUPANCY, t, (occ * 1000.0).round() / 1000.0);
            let psi = (4.0 + 60.0 * wave.powi(2) + 2.0 * g.rng.unit()).round();
            g.counter(stage::PSI_CPU, t, psi);
            g.queue_depth = g.queue_depth.saturating_sub(1);
            next_slow += 50 * MS;
        } else if t == next_policy {
            policy_rev += 1;
            let ctx = g.new_job(Modality::Log, None, "scheduler", "device", 0);
            g.rec(&ctx, RecordKind::Instant, stage::POLICY_CHANGE, t, 0);
            g.attr(attr::ETAG, json!(format!("\"p-{policy_rev}\"")));
            g.attr(
                "changed",
                json!(if policy_rev.is_multiple_of(2) {
                    "weights.deadline 0.45→0.6"
                } else {
                    "weights.deadline 0.6→0.45"
                }),
            );
            next_policy += 15_000 * MS + g.rng.range_ns(0.0, 5_000.0);
        } else if t == next_cam {
            if camera_frame(&mut g, t, secs, wave, t + cam_period) {
                recent_misses += 1.0;
            }
            next_cam += cam_period;
        } else if t == next_mic {
            let offset = -18 + (g.rng.normal() * 2.0) as i64;
            let ctx = g.new_job(
                Modality::Audio,
                Some("silero-vad"),
                "worker-audio",
                "mic0",
                offset,
            );
            // Speech comes in bursts: ~1.6 s of talking every ~7 s.
            let talking = (secs % 7.0) > 0.5 && (secs % 7.0) < 2.1;
            let (_, end) = {
                let exec = g.rng.range_ns(0.6, 1.2);
                g.pipeline(&ctx, t, (0.1, 0.3), exec, (0.05, 0.1))
            };
            g.root(&ctx, t, end, t + mic_period);
            if talking {
                if speech_frames == 0 {
                    speech_start = t;
                }
                speech_frames += 1;
            } else {
                g.rec(&ctx, RecordKind::Instant, stage::SKIP, end, 0);
                g.attr(attr::REASON, json!("silence: ASR skipped"));
                if speech_frames > 10 {
                    // End of utterance: transcribe it, then ask the LLM.
                    let asr = g.new_job(
                        Modality::Audio,
                        Some("whisper-tiny.en"),
                        "worker-audio",
                        "mic0",
                        offset,
                    );
                    let exec = g.rng.range_ns(160.0, 320.0);
                    let (asr_exec, asr_end) = g.pipeline(&asr, end, (4.0, 8.0), exec, (1.0, 3.0));
                    let prompt = PROMPTS[(g.next_job % 4) as usize];
                    if let Some(r) = g.out.iter_mut().rev().find(|r| r.span_id == asr_exec) {
                        r.attrs.insert("transcript".into(), json!(prompt));
                        r.attrs
                            .insert("audio_ms".into(), json!((end - speech_start) / MS));
                    }
                    g.root(&asr, end, asr_end, end + 500 * MS);
                    llm_request(&mut g, asr_exec, asr_end);
                }
                speech_frames = 0;
            }
            next_mic += mic_period;
        } else {
            let ctx = g.new_job(Modality::Imu, None, "cpu0", "imu0", 3);
            let (_, end) = {
                let exec = g.rng.range_ns(0.1, 0.3);
                g.pipeline(&ctx, t, (0.02, 0.05), exec, (0.02, 0.05))
            };
            g.root(&ctx, t, end, t + 5 * MS);
            next_imu += imu_period;
        }
    }
    g.out.sort_by_key(|r| r.ts_ns);
    Trace {
        header: demo_header(cfg.seed),
        records: g.out,
    }
}

/// A camera frame at `t`: skipped (dark), shed (overload), or run through OCR; whether its
/// result missed `deadline`.
fn camera_frame(g: &mut Gen, t: u64, secs: f64, wave: f64, deadline: u64) -> bool {
    let offset = 35 + (secs * 0.4) as i64; // camera clock drifts against the device
    let ctx = g.new_job(
        Modality::Image,
        Some("ppocr-v4"),
        "worker-vision",
        "camera0",
        offset,
    );
    if g.rng.unit() < 0.06 {
        g.rec(&ctx, RecordKind::Instant, stage::SKIP, t, 0);
        g.attr(attr::REASON, json!("dark frame: text-only path"));
    } else if wave > 0.85 && g.rng.unit() < 0.3 {
        g.rec(&ctx, RecordKind::Instant, stage::SHED, t, 0);
        g.attr(
            attr::REASON,
            json!("overload: priority below admission cut"),
        );
        g.queue_depth += 1;
    } else {
        let slow = if g.llm_busy_until > t { 1.6 } else { 1.0 } * (1.0 + 0.6 * wave);
        let exec = (g.rng.range_ns(11.0, 17.0) as f64 * slow) as u64;
        let (_, end) = g.pipeline(&ctx, t, (1.5, 2.5), exec, (0.8, 1.6));
        g.root(&ctx, t, end, deadline);
        return end > deadline;
    }
    false
}

/// The demo's header: its clock domains and a fixed start.
fn demo_header(seed: u64) -> Header {
    let mut metadata = BTreeMap::new();
    metadata.insert("generator".into(), json!("mmsched trace demo"));
    metadata.insert("demo".into(), json!(true));
    metadata.insert("seed".into(), json!(seed));
    metadata.insert("policy_etag".into(), json!("\"p-1\""));
    Header {
        mmtrace: FORMAT_VERSION,
        clocks: vec![
            ClockDomain {
                name: "device".into(),
                description: "scheduler monotonic timeline".into(),
            },
            ClockDomain {
                name: "camera0".into(),
                description: "camera sensor clock".into(),
            },
            ClockDomain {
                name: "mic0".into(),
                description: "microphone codec clock".into(),
            },
            ClockDomain {
                name: "imu0".into(),
                description: "IMU sample clock".into(),
            },
        ],
        // 2026-01-01T00:00:00Z: a fixed start keeps the demo reproducible.
        start_unix_nanos: 1_767_225_600_000_000_000,
        metadata,
    }
}

/// One LLM request caused by an ASR transcript: prefill, then one decode span per token.
fn llm_request(g: &mut Gen, cause: SpanId, arrival: u64) {
    let ctx = g.new_job(
        Modality::Text,
        Some("gemma3-270m"),
        "worker-text",
        "device",
        0,
    );
    let free = g.busy_until.get(ctx.track).copied().unwrap_or(0);
    let start = arrival.max(free) + g.rng.range_ns(0.2, 2.0);
    let q = g.rec(
        &ctx,
        RecordKind::Span,
        stage::QUEUED,
        arrival,
        start - arrival,
    );
    let _ = q;
    g.attr(attr::CAUSED_BY, json!(cause.to_hex()));
    g.rec(&ctx, RecordKind::Instant, stage::ADMITTED, start, 0);
    let input_tokens = 30 + (g.rng.unit() * 40.0) as i64;
    let prefill = g.rng.range_ns(70.0, 130.0);
    g.rec(&ctx, RecordKind::Span, stage::PREFILL, start, prefill);
    g.attr(attr::INPUT_TOKENS, json!(input_tokens));
    let tokens = 12 + (g.rng.unit() * 36.0) as i64;
    let mut t = start + prefill;
    for i in 0..tokens {
        let d = g.rng.range_ns(16.0, 28.0);
        g.rec(&ctx, RecordKind::Span, stage::DECODE, t, d);
        g.attr(attr::TOKEN_INDEX, json!(i));
        // Token-level scheduling: the decode loop yields to due frames between tokens.
        t += d + g.rng.range_ns(0.2, 3.0);
    }
    let post = g.rng.range_ns(0.5, 1.5);
    g.rec(&ctx, RecordKind::Span, stage::POST, t, post);
    let end = t + post;
    g.busy_until.insert(ctx.track, end);
    g.llm_busy_until = end;
    g.root(&ctx, arrival, end, arrival + 1_200 * MS);
    if let Some(r) = g.out.iter_mut().rev().find(|r| r.span_id == ctx.root) {
        r.attrs
            .insert(attr::CAUSED_BY.into(), json!(cause.to_hex()));
        r.attrs.insert("output_tokens".into(), json!(tokens));
        r.attrs
            .insert(attr::INPUT_TOKENS.into(), json!(input_tokens));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_is_reproducible_valid_and_rich() {
        let cfg = DemoConfig {
            seed: 3,
            min_records: 5_000,
        };
        let a = generate(cfg);
        let b = generate(cfg);
        assert_eq!(a, b);
        assert!(a.records.len() >= 5_000);
        for r in &a.records {
            r.check().expect("demo records are valid");
        }
        let has = |n: &str| a.records.iter().any(|r| r.name == n);
        for n in [
            "queued",
            "admitted",
            "pre",
            "exec",
            "post",
            "prefill",
            "decode",
            "skip",
            "deadline",
            "miss",
            "ldti",
            "policy_change",
        ] {
            assert!(has(n), "demo lacks {n}");
        }
        assert!(a.records.iter().any(|r| r.caused_by().is_some()));
        assert!(a.records.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    }
}
