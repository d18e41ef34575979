//! The scenario's sensors, built for a real-time run: each stream's source on its own
//! clock, delivered through its transport (latency, jitter, loss) to the device.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use mmsched_backends::audio::read_wav_16k;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_models::{Artifact, BECKETT_TRANSCRIPT, ModelPaths};
use mmsched_runtime::source::camera::{
    Camera, CameraConfig, Degradation, Episode as CameraEpisode, Frame, Scenes, default_texts,
};
use mmsched_runtime::source::delivery::{Delivered, ExtraDrift, ExtraLoss};
use mmsched_runtime::source::feed::{FeedCamera, FeedConfig, FrameReader, Pace};
use mmsched_runtime::source::folder::FolderReader;
use mmsched_runtime::source::imu::{Imu, ImuConfig};
use mmsched_runtime::source::microphone::{
    AudioInput, AudioPacket, GeneratedSpeech, Microphone, MicrophoneConfig,
};
use mmsched_runtime::source::rtp::{L16Format, RtpConfig, RtpMicrophone};
use mmsched_runtime::source::text::{Prompt, TextConfig, TextRequests, read_prompts};
use mmsched_runtime::source::video::{VideoConfig, VideoInput, VideoReader};
use mmsched_runtime::source::{BoxedSource, SourceClock};
use mmsched_scenario::{
    EpisodeKind, ModelKind, Scenario, SourceKind, SourceSpec, Stream, StreamKind,
};
use mmsched_world::jitter::{GammaJitter, JitterInjector};

use crate::config::RunError;
use crate::source_error::SourceError;
use crate::stats::Kind;
use crate::truth::SpeechScript;

/// Width and height of generated camera frames.
pub const FRAME_SIZE: (u32, u32) = (640, 360);

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

/// The sensors of one run (at most one stream of each kind). The camera and the
/// microphone are whichever source their stream names (generated, files, a device, the
/// network).
/// Sources read the device clock `C`: [`Device`] in a real run, a virtual clock in tests.
pub struct Inputs<C: Clock = Device> {
    /// The camera and its stream settings.
    pub camera: Option<(Delivered<BoxedSource<Frame>, C>, Stream)>,
    /// Whether the camera's stream lists an OCR model: a camera that feeds only models of
    /// the user's own offers its frames to them alone.
    pub camera_ocr: bool,
    /// The microphone and its stream settings.
    pub mic: Option<(Delivered<BoxedSource<AudioPacket>, C>, Stream)>,
    /// The IMU and its stream settings.
    pub imu: Option<(Delivered<Imu<C>, C>, Stream)>,
    /// Text requests and their stream settings.
    pub text: Option<(Delivered<TextRequests<C>, C>, Stream)>,
    /// What is said where in the microphone's stream, when it plays a recording whose
    /// words are known (the shipped clip, a WAV source with `truth`).
    pub speech_script: Option<SpeechScript>,
    /// What was chosen in place of something unavailable, to tell the user once.
    pub notes: Vec<String>,
}

impl<C: Clock> std::fmt::Debug for Inputs<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |s: Option<&Stream>| s.map(|s| s.name.clone());
        f.debug_struct("Inputs")
            .field("camera", &name(self.camera.as_ref().map(|c| &c.1)))
            .field("mic", &name(self.mic.as_ref().map(|c| &c.1)))
            .field("imu", &self.imu)
            .field("text", &self.text)
            .field("notes", &self.notes)
            .finish()
    }
}

fn injector(s: &Stream, scenario: &Scenario) -> Result<JitterInjector, RunError> {
    let bad = |e: mmsched_world::jitter::JitterError| RunError::Scenario {
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
                fraction: e.fraction.unwrap_or(1.0),
            })
        })
        .collect()
}

/// Speech for the microphone: the recorded `beckett.wav` clip followed by a pause, looped,
/// or generated talk spurts when the clip is not cached.
fn speech(notes: &mut Vec<String>) -> (AudioInput, Option<SpeechScript>) {
    match ModelPaths::from_env()
        .require(Artifact::Beckett)
        .map_err(SourceError::Clip)
        .and_then(|p| read_wav_16k(&p).map_err(SourceError::Wav))
    {
        Ok(audio) => {
            let mut samples = audio.samples;
            // Silence after each pass, so the microphone carries talk spurts (the simulator
            // loops the same).
            let pause =
                (mmsched_world::mic::RECORDING_PAUSE_NANOS * 16_000 / 1_000_000_000) as usize;
            let script = SpeechScript::recording(
                samples.len() as u64,
                BECKETT_TRANSCRIPT,
                pause as u64,
                true,
            );
            samples.extend(std::iter::repeat_n(0.0, pause));
            let input = AudioInput::Samples {
                samples,
                looped: true,
            };
            (input, Some(script))
        }
        Err(e) => {
            notes.push(format!(
                "microphone: recorded speech unavailable ({}); using generated talk spurts",
                mmsched_runtime::chain::chain(&e)
            ));
            (AudioInput::Generated(GeneratedSpeech::default()), None)
        }
    }
}

/// The path of a checked file source (the scenario crate resolved it).
fn path_of(src: &SourceSpec) -> PathBuf {
    PathBuf::from(src.path.as_deref().unwrap_or_default())
}

/// The camera of stream `s`: generated scenes, or frames from a folder, a video file or a
/// V4L2 device.
fn camera<C: Clock + Clone + Send + 'static>(
    scenario: &Scenario,
    s: &Stream,
    device: &C,
    (start_nanos, virtual_clock): (Nanos, bool),
    notes: &mut Vec<String>,
) -> Result<BoxedSource<Frame>, SourceError> {
    let fps = s.fps.unwrap_or(5.0);
    let src = match &s.source {
        Some(src) if src.kind != SourceKind::Generated => src,
        _ => {
            let cam = Camera::new(
                CameraConfig {
                    scenes: Scenes::Generated {
                        texts: default_texts(),
                        font_path: mmsched_runtime::source::camera::DEFAULT_FONT_PATH.into(),
                    },
                    width: FRAME_SIZE.0,
                    height: FRAME_SIZE.1,
                    fps: fps.round().max(1.0) as u32,
                    frames_per_scene: 10,
                    episodes: camera_episodes(scenario, &s.name),
                    start_nanos,
                    limit: None,
                    clock: clock_of(s),
                },
                device.clone(),
            )
            .map_err(SourceError::Camera)?;
            return Ok(Box::new(cam));
        }
    };
    if !camera_episodes(scenario, &s.name).is_empty() {
        notes.push(format!(
            "stream {}: blur and dark episodes degrade generated frames only; the {} frames are shown as they are",
            s.name,
            src.kind.as_str()
        ));
    }
    let video = |input: VideoInput| VideoConfig {
        input,
        fps,
        width: FRAME_SIZE.0,
        height: FRAME_SIZE.1,
    };
    let frames = |source| SourceError::Frames {
        kind: src.kind.as_str(),
        source,
    };
    let (reader, pace): (Box<dyn FrameReader>, Pace) = match src.kind {
        SourceKind::Frames => (
            Box::new(FolderReader::open(&path_of(src), src.looped()).map_err(frames)?),
            Pace::Replay,
        ),
        SourceKind::Video => (
            Box::new(
                VideoReader::open(&video(VideoInput::File {
                    path: path_of(src),
                    looped: src.looped(),
                }))
                .map_err(frames)?,
            ),
            Pace::Replay,
        ),
        _ => (
            Box::new(
                VideoReader::open(&video(VideoInput::V4l2 {
                    device: path_of(src),
                }))
                .map_err(frames)?,
            ),
            Pace::Live,
        ),
    };
    let config = FeedConfig {
        fps,
        pace,
        start_nanos,
        limit: None,
        clock: clock_of(s),
        wait_for_reads: virtual_clock,
    };
    Ok(Box::new(FeedCamera::new(reader, config, device.clone())))
}

/// The microphone of stream `s`: generated or recorded speech, a WAV file, or RTP; with
/// what is said in it, where that is known.
fn microphone<C: Clock + Clone + Send + 'static>(
    s: &Stream,
    device: &C,
    start_nanos: Nanos,
    notes: &mut Vec<String>,
) -> Result<(BoxedSource<AudioPacket>, Option<SpeechScript>), SourceError> {
    let packet_ms = s.packet_ms.unwrap_or(20.0).round().clamp(10.0, 60.0) as u32;
    let input = match &s.source {
        Some(src) if src.kind == SourceKind::Rtp => {
            let bind = src.bind.as_deref().unwrap_or("127.0.0.1");
            let ip: IpAddr = bind.parse().map_err(|source| SourceError::Bind {
                value: bind.to_string(),
                source,
            })?;
            let format = L16Format::of(
                src.payload_type.unwrap_or(96),
                src.sample_rate_hz.unwrap_or(16_000),
                src.channels.unwrap_or(1),
            )
            .map_err(SourceError::Rtp)?;
            let config = RtpConfig {
                bind: SocketAddr::new(ip, src.port.unwrap_or(0)),
                format,
                packet_ms,
            };
            let rtp = RtpMicrophone::new(config, device.clone()).map_err(SourceError::Rtp)?;
            notes.push(format!(
                "stream {}: receiving RTP (L16, payload type {}, {} Hz) on udp://{}",
                s.name,
                format.payload_type,
                format.sample_rate_hz,
                rtp.local_addr()
            ));
            return Ok((Box::new(rtp), None));
        }
        Some(src) if src.kind == SourceKind::Wav => {
            let audio = read_wav_16k(&path_of(src)).map_err(SourceError::Wav)?;
            let script = src.truth.as_ref().map(|words| {
                SpeechScript::recording(audio.samples.len() as u64, words, 0, src.looped())
            });
            let input = AudioInput::Samples {
                samples: audio.samples,
                looped: src.looped(),
            };
            (input, script)
        }
        _ => speech(notes),
    };
    let (input, script) = input;
    let mic = Box::new(Microphone::new(
        MicrophoneConfig {
            input,
            packet_ms,
            start_nanos,
            limit: None,
            clock: clock_of(s),
        },
        device.clone(),
    ));
    Ok((mic, script))
}

impl<C: Clock + Clone + Send + 'static> Inputs<C> {
    /// Applies `conditions` (counted from the inputs' start at `start_nanos`) to the
    /// streams: camera frames and microphone packets are lost on their links with the
    /// probability they give for the moment each is sent, on top of each stream's own
    /// loss (the IMU and text requests travel on no radio link), and every stream's clock
    /// drifts by their extra drift.
    pub fn apply_conditions(
        &mut self,
        conditions: &crate::conditions::ConditionSchedule,
        start_nanos: Nanos,
    ) {
        let since = move |t: Nanos| t.saturating_sub(start_nanos);
        let loss = |c: crate::conditions::ConditionSchedule| -> ExtraLoss {
            std::sync::Arc::new(move |t: Nanos| c.at(since(t)).link_loss)
        };
        let drift = || -> ExtraDrift {
            let c = conditions.clone();
            std::sync::Arc::new(move |t: Nanos| c.at(since(t)).clock_drift_ppm)
        };
        if let Some((d, _)) = &mut self.camera {
            d.set_extra_loss(loss(conditions.clone()));
            d.set_extra_drift(drift());
        }
        if let Some((d, _)) = &mut self.mic {
            d.set_extra_loss(loss(conditions.clone()));
            d.set_extra_drift(drift());
        }
        if let Some((d, _)) = &mut self.imu {
            d.set_extra_drift(drift());
        }
        if let Some((d, _)) = &mut self.text {
            d.set_extra_drift(drift());
        }
    }

    /// Builds the sensors of `scenario`, first events at `start_nanos` on `device`.
    pub fn build(
        scenario: &Scenario,
        device: &C,
        start_nanos: Nanos,
        seed: u64,
    ) -> Result<Self, RunError> {
        Self::build_on(scenario, device, start_nanos, seed, false)
    }

    /// [`Inputs::build`] for a device clock that stands still while files are read
    /// (`virtual_clock`: a simulated run's, which jumps ahead while a reader decodes in
    /// real time): a camera replaying files waits for each frame at its tick.
    pub fn build_on(
        scenario: &Scenario,
        device: &C,
        start_nanos: Nanos,
        seed: u64,
        virtual_clock: bool,
    ) -> Result<Self, RunError> {
        let mut inputs = Inputs {
            camera: None,
            camera_ocr: false,
            mic: None,
            imu: None,
            text: None,
            speech_script: None,
            notes: Vec::new(),
        };
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
            let bad = |source: SourceError| RunError::Source {
                scenario: scenario.name().to_string(),
                stream: s.name.clone(),
                source: Box::new(source),
            };
            match s.kind {
                StreamKind::Camera => {
                    let cam = camera(
                        scenario,
                        s,
                        device,
                        (start_nanos, virtual_clock),
                        &mut inputs.notes,
                    )
                    .map_err(bad)?;
                    inputs.camera_ocr = s.models.iter().any(|name| {
                        scenario
                            .models()
                            .iter()
                            .any(|m| &m.name == name && m.kind == ModelKind::Vision)
                    });
                    // Nobody re-requests a lost frame: no copies are kept for it.
                    inputs.camera = Some((
                        Delivered::new(cam, device.clone(), inj, seed, stream_no)
                            .without_retransmission(),
                        s.clone(),
                    ));
                }
                StreamKind::Audio => {
                    let (mic, script) =
                        microphone(s, device, start_nanos, &mut inputs.notes).map_err(bad)?;
                    inputs.speech_script = script;
                    inputs.mic = Some((
                        Delivered::new(mic, device.clone(), inj, seed, stream_no),
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
                        device.clone(),
                    );
                    inputs.imu = Some((
                        Delivered::new(imu, device.clone(), inj, seed, stream_no),
                        s.clone(),
                    ));
                }
                StreamKind::Text => {
                    let per_min = s.requests_per_min.unwrap_or(0.0);
                    if per_min <= 0.0 {
                        continue;
                    }
                    let (prompts, as_written, limit) = match &s.source {
                        Some(src) if src.kind == SourceKind::Prompts => {
                            let prompts = read_prompts(&path_of(src))
                                .map_err(|e| bad(SourceError::Prompts(e)))?;
                            let limit = (!src.looped()).then_some(prompts.len() as u64);
                            (prompts, true, limit)
                        }
                        _ => (
                            PROMPTS.iter().map(|p| Prompt::from(*p)).collect(),
                            false,
                            None,
                        ),
                    };
                    let text = TextRequests::new(
                        TextConfig {
                            prompts,
                            period_nanos: (60e9 / per_min) as Nanos,
                            max_tokens: s.tokens_per_request.unwrap_or(32),
                            as_written,
                            // The first request comes after a short warm-up.
                            start_nanos: start_nanos + 2_000_000_000,
                            limit,
                            clock: clock_of(s),
                        },
                        device.clone(),
                    )
                    .map_err(|e| bad(SourceError::Text(e)))?;
                    inputs.text = Some((
                        Delivered::new(text, device.clone(), inj, seed, stream_no),
                        s.clone(),
                    ));
                }
            }
        }
        Ok(inputs)
    }

    /// The stream that feeds jobs of `kind` (speech recognition is fed by the microphone;
    /// the OCR and a model of the user's own by the camera that lists it among its models).
    pub fn stream(&self, kind: Kind) -> Option<&Stream> {
        match kind {
            Kind::Vision => self
                .camera
                .as_ref()
                .filter(|_| self.camera_ocr)
                .map(|c| &c.1),
            Kind::Vad | Kind::Asr => self.mic.as_ref().map(|m| &m.1),
            Kind::Llm => self.text.as_ref().map(|t| &t.1),
            Kind::Model(_) => self
                .camera
                .as_ref()
                .map(|c| &c.1)
                .filter(|s| s.models.iter().any(|m| m == kind.as_str())),
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
