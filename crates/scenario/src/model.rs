//! The scenario document: what a user writes, field by field.

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// The only scenario format version this build reads.
pub const SCENARIO_VERSION: u32 = 1;

/// The whole document as written (see `docs/scenario-format.md`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Format version; must be 1.
    #[serde(default)]
    pub version: Option<u32>,
    /// Short name, shown in output.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Default run length, in seconds (the runtime's `--duration`).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Default seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Device settings.
    #[serde(default)]
    pub device: Device,
    /// Battery curve.
    #[serde(default)]
    pub battery: Battery,
    /// The models that run.
    #[serde(default)]
    pub models: Vec<Spanned<Model>>,
    /// The input streams.
    #[serde(default)]
    pub streams: Vec<Spanned<Stream>>,
    /// Timed disturbances.
    #[serde(default)]
    pub episodes: Vec<Spanned<Episode>>,
}

/// `[device]`: where job costs come from and what runs in the background.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    /// Latency profile file (JSON); default: `$MMSCHED_HOME/profile.json`, else the shipped
    /// `profiles/reference-2core.json`.
    #[serde(default)]
    pub profile: Option<String>,
    /// Number of workers (cores) the scheduler may use (default 2).
    #[serde(default)]
    pub workers: Option<u32>,
    /// Background CPU load from other software, in percent of one core (default 0).
    #[serde(default)]
    pub background_load_pct: Option<f64>,
    /// Assumed long-run wear for `sim soak`: growth of job cost per hour of uptime, in
    /// percent; a restart resets it. Not a simulated mechanism but an assumption: when set,
    /// the soak lists it in its output's `assumptions`. Default 0 (none).
    #[serde(default)]
    pub wear_pct_per_hour: Option<f64>,
}

/// `[battery]`: a linear battery curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Battery {
    /// Charge at the start, in percent (default 100).
    #[serde(default = "hundred")]
    pub start_pct: f64,
    /// Drain, in percent per hour (default 0: mains powered). Charge never goes below 0.
    #[serde(default)]
    pub drain_pct_per_hour: f64,
    /// Low-power mode: the device runs its cores at reduced frequency (default false).
    #[serde(default)]
    pub low_power: bool,
}

fn hundred() -> f64 {
    100.0
}

impl Default for Battery {
    fn default() -> Self {
        Self {
            start_pct: 100.0,
            drain_pct_per_hour: 0.0,
            low_power: false,
        }
    }
}

impl Battery {
    /// Charge after `hours`, in percent.
    pub fn charge_pct_at(&self, hours: f64) -> f64 {
        (self.start_pct - self.drain_pct_per_hour * hours).clamp(0.0, 100.0)
    }
}

/// What a model does (its job class in the policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Vision (OCR / detector).
    Vision,
    /// Voice-activity detection.
    Vad,
    /// Speech recognition.
    Asr,
    /// Text generation.
    Llm,
    /// A model of the user's own, an ONNX file (`engine = "onnx"`): its class is its name.
    Onnx,
}

impl ModelKind {
    /// The lowercase name (also the policy job class).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Vision => "vision",
            ModelKind::Vad => "vad",
            ModelKind::Asr => "asr",
            ModelKind::Llm => "llm",
            ModelKind::Onnx => "onnx",
        }
    }
}

/// `[[models]]`: one model — a built-in one by its `kind`, or one of the user's own by its
/// `engine` and `file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ModelEntry")]
pub struct Model {
    /// Unique name, referenced by streams (a model of your own: also its job class).
    pub name: String,
    /// `vision`, `vad`, `asr` or `llm`; `onnx` for a model of your own.
    pub kind: ModelKind,
    /// Model file, absolute or relative to `$MMSCHED_HOME` (default: the cached model of
    /// that kind; a model of your own must give it).
    #[serde(default)]
    pub file: Option<String>,
    /// Cost of one job in ms, overriding the latency profile (simulation only).
    #[serde(default)]
    pub cost_ms: Option<f64>,
    /// A model of your own: how an image becomes its input (`size`, `resize`,
    /// `short_side`, `layout`, `channels`, `scale`, `mean`, `std`; see
    /// docs/own-models.md), read by the runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<toml::Table>,
    /// A model of your own: how its output reads as classes (`output`, `top_k`, `labels`,
    /// `labels_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<toml::Table>,
    /// A model of your own: how its output reads as boxes (`output`, `layout`,
    /// `score_threshold`, `iou_threshold`, `max_detections`, `labels`, `labels_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detections: Option<toml::Table>,
    /// A model of your own: its quality rungs, richest first (`[[models.rungs]]`; none: it
    /// runs as it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rungs: Vec<OwnRung>,
}

/// `[[models.rungs]]`: one way to run a model of your own, the scheduler choosing one per
/// job as for the built-in models' rungs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnRung {
    /// Its name (1 to 32 letters, digits, `-`, `_`, `.`), as results, traces and the
    /// profile show it.
    pub name: String,
    /// Another `.onnx` file with the same inputs and outputs, absolute or relative to
    /// `$MMSCHED_HOME` (default: the model's `file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The image size fed, `[width, height]` (default: the model's); only for a graph with
    /// free height and width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[u32; 2]>,
    /// Cost of one job at this rung in ms, overriding the latency profile (simulation
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ms: Option<f64>,
}

/// A `[[models]]` entry as written: `kind`, or `engine = "onnx"` for a model of your own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntry {
    name: String,
    #[serde(default)]
    kind: Option<ModelKind>,
    #[serde(default)]
    engine: Option<String>,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    cost_ms: Option<f64>,
    #[serde(default)]
    image: Option<toml::Table>,
    #[serde(default)]
    classes: Option<toml::Table>,
    #[serde(default)]
    detections: Option<toml::Table>,
    #[serde(default)]
    rungs: Vec<OwnRung>,
}

impl TryFrom<ModelEntry> for Model {
    type Error = String;

    fn try_from(e: ModelEntry) -> Result<Self, String> {
        let kind = match (e.kind, e.engine.as_deref()) {
            (Some(ModelKind::Onnx) | None, Some("onnx")) | (Some(ModelKind::Onnx), None) => {
                ModelKind::Onnx
            }
            (Some(kind), None) => kind,
            (Some(kind), Some("onnx")) => {
                return Err(format!(
                    "model `{}` has kind `{}` and engine `onnx`: a built-in model takes no engine; for a model of your own leave `kind` out",
                    e.name,
                    kind.as_str()
                ));
            }
            (_, Some(other)) => {
                return Err(format!(
                    "model `{}`: engine `{other}` is not known; `onnx` runs a model of your own from its `file`",
                    e.name
                ));
            }
            (None, None) => {
                return Err(format!(
                    "model `{}` needs `kind` (vision, vad, asr, llm) or, for a model of your own, `engine = \"onnx\"` and its `file`",
                    e.name
                ));
            }
        };
        if kind == ModelKind::Onnx && e.file.is_none() {
            return Err(format!(
                "model `{}` of your own needs its `file` (an .onnx file, absolute or relative to $MMSCHED_HOME)",
                e.name
            ));
        }
        let tables = e.image.is_some()
            || e.classes.is_some()
            || e.detections.is_some()
            || !e.rungs.is_empty();
        if kind != ModelKind::Onnx && tables {
            return Err(format!(
                "model `{}`: `image`, `classes`, `detections` and `rungs` describe a model of your own (engine = \"onnx\"); the built-in {} model takes none of them (its rungs are the policy's `[rungs]`)",
                e.name,
                kind.as_str()
            ));
        }
        Ok(Model {
            name: e.name,
            kind,
            file: e.file,
            cost_ms: e.cost_ms,
            image: e.image,
            classes: e.classes,
            detections: e.detections,
            rungs: e.rungs,
        })
    }
}

/// What a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKind {
    /// Camera frames (`fps`).
    Camera,
    /// Audio packets (`packet_ms`).
    Audio,
    /// IMU samples (`rate_hz`).
    Imu,
    /// Text requests (`requests_per_min`).
    Text,
}

impl StreamKind {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamKind::Camera => "camera",
            StreamKind::Audio => "audio",
            StreamKind::Imu => "imu",
            StreamKind::Text => "text",
        }
    }
}

/// Network behaviour of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterSettings {
    /// Gamma shape k (default 2).
    #[serde(default = "two")]
    pub shape: f64,
    /// Gamma scale θ in ms (give this or `p99_ms`).
    #[serde(default)]
    pub scale_ms: Option<f64>,
    /// Target P99 of the jitter in ms; θ is calibrated to it.
    #[serde(default)]
    pub p99_ms: Option<f64>,
}

fn two() -> f64 {
    2.0
}

/// `[[streams]]`: one input stream with its own clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stream {
    /// Unique name.
    pub name: String,
    /// `camera`, `audio`, `imu` or `text`.
    pub kind: StreamKind,
    /// Models fed by this stream, in pipeline order (e.g. `["vad", "asr"]`).
    #[serde(default)]
    pub models: Vec<String>,
    /// Camera frame rate, frames/s (camera only).
    #[serde(default)]
    pub fps: Option<f64>,
    /// Audio packet length, ms (audio only; 10–60).
    #[serde(default)]
    pub packet_ms: Option<f64>,
    /// IMU sample rate, Hz (imu only).
    #[serde(default)]
    pub rate_hz: Option<f64>,
    /// Text requests per minute (text only).
    #[serde(default)]
    pub requests_per_min: Option<f64>,
    /// Tokens generated per text request (text only; default 32).
    #[serde(default)]
    pub tokens_per_request: Option<u32>,
    /// Deadline of one job after its input arrives, in ms.
    pub sla_ms: f64,
    /// Semantic importance γ in [0, 1].
    pub importance: f64,
    /// Offset of the stream's clock against the device clock, in ms.
    #[serde(default)]
    pub clock_offset_ms: f64,
    /// Drift of the stream's clock, in ppm.
    #[serde(default)]
    pub clock_drift_ppm: f64,
    /// Fixed pipeline latency from sampling to arrival, in ms.
    #[serde(default)]
    pub latency_ms: f64,
    /// Standard deviation of the source's own timestamps around the true event time, in
    /// ms (default by kind: see [`Stream::stamp_noise`]).
    #[serde(default)]
    pub stamp_noise_ms: Option<f64>,
    /// Arrival jitter (none if absent).
    #[serde(default)]
    pub jitter: Option<JitterSettings>,
    /// Random packet loss, in percent.
    #[serde(default)]
    pub loss_pct: f64,
    /// Where the events come from (default: generated by mmsched).
    #[serde(default)]
    pub source: Option<SourceSpec>,
}

/// Where a stream's events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// Generated by mmsched (sign images, speech, prompts): the default.
    Generated,
    /// Camera: a folder of PNG/JPEG frames, played in name order (`path`, `at_end`).
    Frames,
    /// Camera: a video file decoded by ffmpeg (`path`, `at_end`).
    Video,
    /// Camera: a V4L2 device (`path`, default `/dev/video0`; needs the `v4l2` feature).
    V4l2,
    /// Audio: a WAV file, any rate, resampled to 16 kHz (`path`, `at_end`).
    Wav,
    /// Audio: RTP with an L16 payload on a UDP port (`port`, `payload_type`, `bind`,
    /// `sample_rate_hz`, `channels`).
    Rtp,
    /// Text: a file of prompts, one per line or JSONL (`path`, `at_end`).
    Prompts,
}

impl SourceKind {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Generated => "generated",
            SourceKind::Frames => "frames",
            SourceKind::Video => "video",
            SourceKind::V4l2 => "v4l2",
            SourceKind::Wav => "wav",
            SourceKind::Rtp => "rtp",
            SourceKind::Prompts => "prompts",
        }
    }

    /// Whether the source runs on its own time (a device, the network), as opposed to
    /// content replayed at the stream's rate.
    pub fn is_live(self) -> bool {
        matches!(self, SourceKind::V4l2 | SourceKind::Rtp)
    }
}

/// What a file source does at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AtEnd {
    /// Start again from the beginning (the default).
    Loop,
    /// Stop: the stream sends nothing more.
    Stop,
}

/// `[[streams]] source = { … }`: a stream fed from a real source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// What kind of source.
    pub kind: SourceKind,
    /// The folder, file or device (relative paths: to the scenario file's folder). After
    /// checking, the resolved path.
    #[serde(default)]
    pub path: Option<String>,
    /// At the end of a file: `loop` (default) or `stop`.
    #[serde(default)]
    pub at_end: Option<AtEnd>,
    /// RTP: local address to listen on (default `127.0.0.1`; `0.0.0.0` for every interface).
    #[serde(default)]
    pub bind: Option<String>,
    /// RTP: UDP port.
    #[serde(default)]
    pub port: Option<u16>,
    /// RTP: payload type (10, 11 or 96–127).
    #[serde(default)]
    pub payload_type: Option<u8>,
    /// RTP, dynamic payload type: sample rate (default 16000).
    #[serde(default)]
    pub sample_rate_hz: Option<u32>,
    /// RTP, dynamic payload type: channels (default 1).
    #[serde(default)]
    pub channels: Option<u16>,
    /// WAV: the words said in the file, so transcripts of it are scored (`correct`,
    /// `accuracy`).
    #[serde(default)]
    pub truth: Option<String>,
}

impl SourceSpec {
    /// Whether the source starts again at its end.
    pub fn looped(&self) -> bool {
        self.at_end.unwrap_or(AtEnd::Loop) == AtEnd::Loop
    }
}

/// Stamp noise σ of a camera (exposure mid-point unknown within a few ms), ms.
pub const CAMERA_STAMP_NOISE_MS: f64 = 2.0;
/// Stamp noise σ of a microphone packet (buffer granularity, interrupt latency), ms.
pub const AUDIO_STAMP_NOISE_MS: f64 = 1.0;
/// Stamp noise σ of an IMU sample (interrupt latency), ms.
pub const IMU_STAMP_NOISE_MS: f64 = 0.2;
/// Stamp noise σ of a text request (stamped where it is read), ms.
pub const TEXT_STAMP_NOISE_MS: f64 = 1.0;

impl Stream {
    /// The stamp noise σ of the stream's source, in ms: `stamp_noise_ms`, else by kind
    /// (camera 2, audio 1, IMU 0.2, text 1).
    pub fn stamp_noise(&self) -> f64 {
        self.stamp_noise_ms.unwrap_or(match self.kind {
            StreamKind::Camera => CAMERA_STAMP_NOISE_MS,
            StreamKind::Audio => AUDIO_STAMP_NOISE_MS,
            StreamKind::Imu => IMU_STAMP_NOISE_MS,
            StreamKind::Text => TEXT_STAMP_NOISE_MS,
        })
    }

    /// Events per second of the stream.
    pub fn events_per_sec(&self) -> f64 {
        match self.kind {
            StreamKind::Camera => self.fps.unwrap_or(0.0),
            StreamKind::Audio => 1000.0 / self.packet_ms.unwrap_or(20.0),
            StreamKind::Imu => self.rate_hz.unwrap_or(0.0),
            StreamKind::Text => self.requests_per_min.unwrap_or(0.0) / 60.0,
        }
    }
}

/// What an episode does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeKind {
    /// Blurred camera frames (`stream`, optional `fraction`).
    Blur,
    /// Dark camera frames (`stream`, optional `fraction`).
    Dark,
    /// Extra arrival jitter (`stream`, `p99_ms`, optional `burst_every_ms` + `burst_ms`).
    Jitter,
    /// Temperature cycling that changes clock drift and throttles the cores
    /// (`temp_min_c`, `temp_max_c`, `cycle_h`, optional `drift_ppm_per_c`).
    Temperature,
    /// Random packet loss (`stream`, `loss_pct`).
    PacketLoss,
    /// Wi-Fi channel switches (`switches_per_min`, optional `outage_ms`, `loss_pct`).
    WifiSwitching,
    /// Periodic load spikes (`every_ms`, `spike_ms`, `load_pct`).
    LoadSpike,
    /// Mechanical vibration (`amplitude_g`): motion blur and sensor noise.
    Vibration,
}

impl EpisodeKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeKind::Blur => "blur",
            EpisodeKind::Dark => "dark",
            EpisodeKind::Jitter => "jitter",
            EpisodeKind::Temperature => "temperature",
            EpisodeKind::PacketLoss => "packet_loss",
            EpisodeKind::WifiSwitching => "wifi_switching",
            EpisodeKind::LoadSpike => "load_spike",
            EpisodeKind::Vibration => "vibration",
        }
    }
}

/// `[[episodes]]`: a timed disturbance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Episode {
    /// What happens.
    pub kind: EpisodeKind,
    /// Start, in seconds from the start of the run (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// End, in seconds (default: the end of the run).
    #[serde(default)]
    pub end_s: Option<f64>,
    /// The stream affected (blur, dark, jitter, packet_loss; optional for the others).
    #[serde(default)]
    pub stream: Option<String>,
    /// Share of frames affected, 0–1 (blur, dark; default 1).
    #[serde(default)]
    pub fraction: Option<f64>,
    /// Jitter P99, ms (jitter).
    #[serde(default)]
    pub p99_ms: Option<f64>,
    /// Jitter bursts: one every this many ms (jitter; default: continuous).
    #[serde(default)]
    pub burst_every_ms: Option<f64>,
    /// Length of one jitter burst, ms (jitter, with `burst_every_ms`).
    #[serde(default)]
    pub burst_ms: Option<f64>,
    /// Packet loss, percent (packet_loss; wifi_switching: loss during a switch).
    #[serde(default)]
    pub loss_pct: Option<f64>,
    /// Wi-Fi channel switches per minute (wifi_switching).
    #[serde(default)]
    pub switches_per_min: Option<f64>,
    /// Outage per switch, ms (wifi_switching; default 150).
    #[serde(default)]
    pub outage_ms: Option<f64>,
    /// Period of load spikes, ms (load_spike).
    #[serde(default)]
    pub every_ms: Option<f64>,
    /// Length of one spike, ms (load_spike).
    #[serde(default)]
    pub spike_ms: Option<f64>,
    /// Extra load during a spike, percent of one core (load_spike).
    #[serde(default)]
    pub load_pct: Option<f64>,
    /// Lowest temperature, °C (temperature).
    #[serde(default)]
    pub temp_min_c: Option<f64>,
    /// Highest temperature, °C (temperature).
    #[serde(default)]
    pub temp_max_c: Option<f64>,
    /// Length of one temperature cycle, hours (temperature).
    #[serde(default)]
    pub cycle_h: Option<f64>,
    /// Clock drift change per °C away from 25 °C, ppm (temperature; default 0.5).
    #[serde(default)]
    pub drift_ppm_per_c: Option<f64>,
    /// Vibration amplitude, g (vibration).
    #[serde(default)]
    pub amplitude_g: Option<f64>,
}

impl Episode {
    /// Whether the episode is active at `t_s` seconds.
    pub fn active_at(&self, t_s: f64) -> bool {
        t_s >= self.start_s && self.end_s.is_none_or(|e| t_s < e)
    }
}

/// A checked scenario: every value in range, every reference resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) duration_s: f64,
    pub(crate) seed: u64,
    pub(crate) device: Device,
    pub(crate) battery: Battery,
    pub(crate) models: Vec<Model>,
    pub(crate) streams: Vec<Stream>,
    pub(crate) episodes: Vec<Episode>,
}

impl Scenario {
    /// The scenario's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its description.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// Default run length, seconds (60 if not given).
    pub fn duration_s(&self) -> f64 {
        self.duration_s
    }
    /// Default seed (1 if not given).
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Device settings.
    pub fn device(&self) -> &Device {
        &self.device
    }
    /// Battery curve.
    pub fn battery(&self) -> &Battery {
        &self.battery
    }
    /// Models.
    pub fn models(&self) -> &[Model] {
        &self.models
    }
    /// Streams.
    pub fn streams(&self) -> &[Stream] {
        &self.streams
    }
    /// Episodes.
    pub fn episodes(&self) -> &[Episode] {
        &self.episodes
    }
    /// The model called `name`.
    pub fn model(&self, name: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.name == name)
    }

    /// This scenario with the model of `kind` read from `file` instead (a model of the
    /// user's own in place of the default one); `None` if it has no model of that kind.
    pub fn with_model_file(&self, kind: ModelKind, file: &str) -> Option<Scenario> {
        let mut s = self.clone();
        s.models.iter_mut().find(|m| m.kind == kind)?.file = Some(file.to_string());
        Some(s)
    }

    /// This scenario with every live source (a camera device, an RTP port) replaced by
    /// the generated sensor of its kind, and a note for each one replaced: a simulation
    /// runs in virtual time, and a live source delivers in real time or not at all.
    pub fn without_live_sources(&self) -> (Scenario, Vec<String>) {
        let mut out = self.clone();
        let mut notes = Vec::new();
        for s in &mut out.streams {
            let live = s
                .source
                .as_ref()
                .filter(|src| matches!(src.kind, SourceKind::Rtp | SourceKind::V4l2));
            if let Some(src) = live {
                notes.push(format!(
                    "stream {}: its live {} source is simulated as the generated {} sensor",
                    s.name,
                    src.kind.as_str(),
                    s.kind.as_str()
                ));
                s.source = None;
            }
        }
        (out, notes)
    }
}
