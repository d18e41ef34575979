//! The scenario's sensors, built for a real-time run: each stream's source on its own
//! clock, delivered through its transport (latency, jitter, loss) to the device.

use mmsched_backends::audio::read_wav_16k;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_models::{Artifact, ModelPaths};
use mmsched_runtime::source::SourceClock;
use mmsched_runtime::source::camera::{
    Camera, CameraConfig, Degradation, Episode as CameraEpisode, Scenes, default_texts,
};
use mmsched_runtime::source::delivery::Delivered;
use mmsched_runtime::source::imu::{Imu, ImuConfig};
use mmsched_runtime::source::microphone::{
    AudioInput, GeneratedSpeech, Microphone, MicrophoneConfig,
};
use mmsched_runtime::source::text::{TextConfig, TextRequests};
use mmsched_scenario::{EpisodeKind, Scenario, Stream, StreamKind};
use mmsched_sim::jitter::{GammaJitter, JitterInjector};

use crate::config::RunError;
use crate::stats::Kind;

/// Width and height of generated camera frames.
pub const FRAME_SIZE: (u32, u32) = (640, 360);

/// Silence after each pass of the recorded speech, so the microphone carries talk spurts.
const PAUSE_AFTER_SPEECH_SECS: usize = 4;

/// Prompts of text requests (a transcript, when there is one, is asked about instead).
pub const PROMPTS: [&str; 4] = [
    "List three safety checks before entering a plant room.",
    "What does a yellow warning sign usually mean?",
    "Give one tip for reading small text in low light.",
    "Name two uses of an inertial measurement unit.",
];

/// Where the device timeline starts: a minute after zero, so that a stream clock with a
/// negative offset (a camera 512 ms behind) never reads below zero at the start of a run.
pub const DEVICE_EPOCH_NANOS: Nanos = 60_000_000_000;

/// Device clock of the run: the OS monotonic clock from [`DEVICE_EPOCH_NANOS`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Device {
    inner: MonotonicClock,
}

impl Device {
    /// A device clock reading [`DEVICE_EPOCH_NANOS`] now.
    pub fn new() -> Self {
        Self {
            inner: MonotonicClock::new(),
        }
    }
}

impl Clock for Device {
    fn now_nanos(&self) -> Nanos {
        DEVICE_EPOCH_NANOS + self.inner.now_nanos()
    }
}

/// The sensors of one run (at most one stream of each kind).
#[derive(Debug, Default)]
pub struct Inputs {
    /// The camera and its stream settings.
    pub camera: Option<(Delivered<Camera<Device>, Device>, Stream)>,
    /// The microphone and its stream settings.
    pub mic: Option<(Delivered<Microphone<Device>, Device>, Stream)>,
    /// The IMU and its stream settings.
    pub imu: Option<(Delivered<Imu<Device>, Device>, Stream)>,
    /// Text requests and their stream settings.
    pub text: Option<(Delivered<TextRequests<Device>, Device>, Stream)>,
    /// What was chosen in place of something unavailable, to tell the user once.
    pub notes: Vec<String>,
}

fn injector(s: &Stream, scenario: &Scenario) -> Result<JitterInjector, RunError> {
    let bad = |e: mmsched_sim::jitter::JitterError| RunError::Scenario {
        scenario: scenario.name().to_string(),
        reason: format!("stream {}: {e}", s.name),
    };
    let jitter = match &s.jitter {
        None => GammaJitter::new(2.0, 0.0).map_err(bad)?,
        Some(j) => match (j.scale_ms, j.p99_ms) {
            (Some(scale), _) => GammaJitter::new(j.shape, scale).map_err(bad)?,
            (None, Some(p99)) => GammaJitter::with_p99(j.shape, p99).map_err(bad)?,
            (None, None) => GammaJitter::new(j.shape, 0.0).map_err(bad)?,
        },
    };
    let extra_loss: f64 = scenario
        .episodes()
        .iter()
        .filter(|e| e.kind == EpisodeKind::PacketLoss && e.stream.as_deref() == Some(&s.name))
        .filter_map(|e| e.loss_pct)
        .sum();
    Ok(JitterInjector {
        base_delay_nanos: (s.latency_ms.max(0.0) * 1e6) as Nanos,
        jitter,
        loss_probability: ((s.loss_pct + extra_loss) / 100.0).clamp(0.0, 1.0),
    })
}

fn clock_of(s: &Stream) -> SourceClock {
    SourceClock::from_ms_ppm(s.clock_offset_ms, s.clock_drift_ppm)
}

fn camera_episodes(scenario: &Scenario, stream: &str) -> Vec<CameraEpisode> {
    scenario
        .episodes()
        .iter()
        .filter(|e| e.stream.as_deref().is_none_or(|n| n == stream))
        .filter_map(|e| {
            let degradation = match e.kind {
                EpisodeKind::Blur => Degradation::Blur { radius_px: 6 },
                EpisodeKind::Dark => Degradation::Dark { brightness_pct: 5 },
                _ => return None,
            };
            Some(CameraEpisode {
                from_nanos: (e.start_s.max(0.0) * 1e9) as Nanos,
                until_nanos: e.end_s.map_or(Nanos::MAX, |s| (s.max(0.0) * 1e9) as Nanos),
                degradation,
            })
        })
        .collect()
}

/// Speech for the microphone: the recorded `beckett.wav` clip followed by a pause, looped,
/// or generated talk spurts when the clip is not cached.
fn speech(notes: &mut Vec<String>) -> AudioInput {
    match ModelPaths::from_env()
        .require(Artifact::Beckett)
        .map_err(|e| e.to_string())
        .and_then(|p| read_wav_16k(&p).map_err(|e| e.to_string()))
    {
        Ok(audio) => {
            let mut samples = audio.samples;
            samples.extend(std::iter::repeat_n(0.0, 16_000 * PAUSE_AFTER_SPEECH_SECS));
            AudioInput::Samples {
                samples,
                looped: true,
            }
        }
        Err(e) => {
            notes.push(format!(
                "microphone: recorded speech unavailable ({e}); using generated talk spurts"
            ));
            AudioInput::Generated(GeneratedSpeech::default())
        }
    }
}

impl Inputs {
    /// Builds the sensors of `scenario`, first events at `start_nanos` on `device`.
    pub fn build(
        scenario: &Scenario,
        device: &Device,
        start_nanos: Nanos,
        seed: u64,
    ) -> Result<Self, RunError> {
        let mut inputs = Inputs::default();
        let mut seen = Vec::new();
        for (i, s) in scenario.streams().iter().enumerate() {
            if seen.contains(&s.kind) {
                inputs.notes.push(format!(
                    "stream {}: only the first {} stream runs in real time; this one is ignored",
                    s.name,
                    s.kind.as_str()
                ));
                continue;
            }
            seen.push(s.kind);
            let stream_no = i as u64 + 1;
            let inj = injector(s, scenario)?;
            let bad = |reason: String| RunError::Scenario {
                scenario: scenario.name().to_string(),
                reason: format!("stream {}: {reason}", s.name),
            };
            match s.kind {
                StreamKind::Camera => {
                    let cam = Camera::new(
                        CameraConfig {
                            scenes: Scenes::Generated {
                                texts: default_texts(),
                                font_path: mmsched_runtime::source::camera::DEFAULT_FONT_PATH
                                    .into(),
                            },
                            width: FRAME_SIZE.0,
                            height: FRAME_SIZE.1,
                            fps: s.fps.unwrap_or(5.0).round().max(1.0) as u32,
                            frames_per_scene: 10,
                            episodes: camera_episodes(scenario, &s.name),
                            start_nanos,
                            limit: None,
                            clock: clock_of(s),
                        },
                        *device,
                    )
                    .map_err(|e| bad(e.to_string()))?;
                    inputs.camera = Some((
                        Delivered::new(cam, *device, inj, seed, stream_no),
                        s.clone(),
                    ));
                }
                StreamKind::Audio => {
                    let mic = Microphone::new(
                        MicrophoneConfig {
                            input: speech(&mut inputs.notes),
                            packet_ms: s.packet_ms.unwrap_or(20.0).round().clamp(10.0, 60.0) as u32,
                            start_nanos,
                            limit: None,
                            clock: clock_of(s),
                        },
                        *device,
                    );
                    inputs.mic = Some((
                        Delivered::new(mic, *device, inj, seed, stream_no),
                        s.clone(),
                    ));
                }
                StreamKind::Imu => {
                    let imu = Imu::new(
                        ImuConfig {
                            rate_hz: s.rate_hz.unwrap_or(200.0).round().max(1.0) as u32,
                            start_nanos,
                            limit: None,
                            clock: clock_of(s),
                        },
                        *device,
                    );
                    inputs.imu = Some((
                        Delivered::new(imu, *device, inj, seed, stream_no),
                        s.clone(),
                    ));
                }
                StreamKind::Text => {
                    let per_min = s.requests_per_min.unwrap_or(0.0);
                    if per_min <= 0.0 {
                        continue;
                    }
                    let text = TextRequests::new(
                        TextConfig {
                            prompts: PROMPTS.iter().map(|p| p.to_string()).collect(),
                            period_nanos: (60e9 / per_min) as Nanos,
                            max_tokens: s.tokens_per_request.unwrap_or(32),
                            // The first request comes after a short warm-up.
                            start_nanos: start_nanos + 2_000_000_000,
                            limit: None,
                            clock: clock_of(s),
                        },
                        *device,
                    )
                    .map_err(|e| bad(e.to_string()))?;
                    inputs.text = Some((
                        Delivered::new(text, *device, inj, seed, stream_no),
                        s.clone(),
                    ));
                }
            }
        }
        Ok(inputs)
    }

    /// The stream that feeds jobs of `kind` (speech recognition is fed by the microphone).
    pub fn stream(&self, kind: Kind) -> Option<&Stream> {
        match kind {
            Kind::Vision => self.camera.as_ref().map(|c| &c.1),
            Kind::Vad | Kind::Asr => self.mic.as_ref().map(|m| &m.1),
            Kind::Llm => self.text.as_ref().map(|t| &t.1),
        }
    }

    /// The earliest time any source has something due.
    pub fn next_due_nanos(&self) -> Option<Nanos> {
        [
            self.camera.as_ref().and_then(|c| c.0.next_due_nanos()),
            self.mic.as_ref().and_then(|c| c.0.next_due_nanos()),
            self.imu.as_ref().and_then(|c| c.0.next_due_nanos()),
            self.text.as_ref().and_then(|c| c.0.next_due_nanos()),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}
