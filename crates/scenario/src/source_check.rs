//! Checks of a stream's `source` table: the kind fits the stream, each field belongs to
//! the kind, values are in range, and files and folders exist (named, with the fix, when
//! they do not). Relative paths are resolved against the scenario file's folder.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::validate::Checker;
use crate::{ScenarioError, SourceKind, SourceSpec, Stream, StreamKind};

/// The source kinds a stream kind takes.
fn kinds_for(stream: StreamKind) -> &'static [SourceKind] {
    use SourceKind as S;
    match stream {
        StreamKind::Camera => &[S::Generated, S::Frames, S::Video, S::V4l2],
        StreamKind::Audio => &[S::Generated, S::Wav, S::Rtp],
        StreamKind::Text => &[S::Generated, S::Prompts],
        StreamKind::Imu => &[S::Generated],
    }
}

/// The optional fields each source kind takes.
fn fields_for(kind: SourceKind) -> &'static [&'static str] {
    use SourceKind as S;
    match kind {
        S::Generated => &[],
        S::Wav => &["path", "at_end", "truth"],
        S::Frames | S::Video | S::Prompts => &["path", "at_end"],
        S::V4l2 => &["path"],
        S::Rtp => &["bind", "port", "payload_type", "sample_rate_hz", "channels"],
    }
}

fn resolve(base: Option<&Path>, path: &str) -> PathBuf {
    let p = Path::new(path);
    match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p.to_path_buf(),
    }
}

/// Checks `streams[i].source` and resolves its path. `at` is the stream entry's offset.
pub(crate) fn check_source(
    c: &Checker,
    i: usize,
    at: usize,
    s: &mut Stream,
    base: Option<&Path>,
) -> Result<(), ScenarioError> {
    let Some(src) = &mut s.source else {
        return Ok(());
    };
    let f = |name: &str| format!("streams[{i}].source.{name}");
    let allowed = kinds_for(s.kind);
    if !allowed.contains(&src.kind) {
        let names: Vec<&str> = allowed.iter().map(|k| k.as_str()).collect();
        return Err(c.err(
            at,
            f("kind"),
            format!("{:?}", src.kind.as_str()),
            &format!(
                "is not a source of {} streams (they take: {})",
                s.kind.as_str(),
                names.join(", ")
            ),
        ));
    }
    let own = fields_for(src.kind);
    let given: [(&str, Option<String>); 8] = [
        ("path", src.path.clone()),
        (
            "at_end",
            src.at_end.map(|a| format!("{a:?}").to_lowercase()),
        ),
        ("bind", src.bind.clone()),
        ("port", src.port.map(|v| v.to_string())),
        ("payload_type", src.payload_type.map(|v| v.to_string())),
        ("sample_rate_hz", src.sample_rate_hz.map(|v| v.to_string())),
        ("channels", src.channels.map(|v| v.to_string())),
        ("truth", src.truth.clone()),
    ];
    for (name, v) in given {
        if let Some(v) = v
            && !own.contains(&name)
        {
            let takes = if own.is_empty() {
                "no other fields".to_string()
            } else {
                own.join(", ")
            };
            return Err(c.err(
                at,
                f(name),
                v,
                &format!(
                    "does not apply to source kind {} (it takes: {takes})",
                    src.kind.as_str()
                ),
            ));
        }
    }
    if src.kind.is_live() {
        // The transport is real: a simulated one on top would hide what it does.
        if s.jitter.is_some() {
            return Err(c.err(
                at,
                format!("streams[{i}].jitter"),
                "(set)".into(),
                &format!(
                    "does not apply to source kind {}: its network delay is real",
                    src.kind.as_str()
                ),
            ));
        }
        if s.loss_pct != 0.0 {
            return Err(c.err(
                at,
                format!("streams[{i}].loss_pct"),
                s.loss_pct.to_string(),
                &format!(
                    "does not apply to source kind {}: its losses are real",
                    src.kind.as_str()
                ),
            ));
        }
    }
    match src.kind {
        SourceKind::Generated => {}
        SourceKind::Frames | SourceKind::Video | SourceKind::Wav | SourceKind::Prompts => {
            check_file(c, at, &f("path"), src, base)?
        }
        SourceKind::V4l2 => {
            let device = src.path.get_or_insert_with(|| "/dev/video0".into());
            *device = resolve(base, device).display().to_string();
        }
        SourceKind::Rtp => check_rtp(c, at, &f, src, s.packet_ms)?,
    }
    Ok(())
}

fn check_file(
    c: &Checker,
    at: usize,
    field: &str,
    src: &mut SourceSpec,
    base: Option<&Path>,
) -> Result<(), ScenarioError> {
    let (what, example) = match src.kind {
        SourceKind::Frames => ("a folder of PNG or JPEG frames", "frames/"),
        SourceKind::Video => ("a video file ffmpeg can read", "clip.mp4"),
        SourceKind::Wav => ("a WAV file", "speech.wav"),
        _ => ("a text file of prompts", "prompts.txt"),
    };
    let Some(path) = &src.path else {
        return Err(c.err(
            at,
            field.to_string(),
            "(missing)".into(),
            &format!(
                "is required for source kind {}: {what}, e.g. path = \"{example}\"",
                src.kind.as_str()
            ),
        ));
    };
    let resolved = resolve(base, path);
    let folder = src.kind == SourceKind::Frames;
    let ok = if folder {
        resolved.is_dir()
    } else {
        resolved.is_file()
    };
    if !ok {
        let relative = base
            .filter(|_| Path::new(path).is_relative())
            .map(|b| format!(" (relative paths start at {})", b.display()))
            .unwrap_or_default();
        return Err(c.err(
            at,
            field.to_string(),
            format!("{path:?}"),
            &format!(
                "{} {} does not exist: point path at {what}{relative}",
                if folder { "folder" } else { "file" },
                resolved.display()
            ),
        ));
    }
    src.path = Some(resolved.display().to_string());
    Ok(())
}

fn check_rtp(
    c: &Checker,
    at: usize,
    f: &dyn Fn(&str) -> String,
    src: &mut SourceSpec,
    packet_ms: Option<f64>,
) -> Result<(), ScenarioError> {
    let Some(port) = src.port else {
        return Err(c.err(
            at,
            f("port"),
            "(missing)".into(),
            "is required for source kind rtp: the UDP port to receive on, e.g. port = 5004",
        ));
    };
    if port == 0 {
        return Err(c.err(at, f("port"), "0".into(), "must be a port (1 … 65535)"));
    }
    if let Some(b) = &src.bind
        && b.parse::<IpAddr>().is_err()
    {
        return Err(c.err(
            at,
            f("bind"),
            format!("{b:?}"),
            "must be an IP address, e.g. \"127.0.0.1\" or \"0.0.0.0\"",
        ));
    }
    let Some(pt) = src.payload_type else {
        return Err(c.err(
            at,
            f("payload_type"),
            "(missing)".into(),
            "is required for source kind rtp: 10 (L16 44.1 kHz stereo), 11 (L16 44.1 kHz mono) or 96–127 (dynamic)",
        ));
    };
    match pt {
        10 | 11 => {
            for (name, given) in [
                ("sample_rate_hz", src.sample_rate_hz.is_some()),
                ("channels", src.channels.is_some()),
            ] {
                if given {
                    return Err(c.err(
                        at,
                        f(name),
                        "(set)".into(),
                        &format!("payload type {pt} fixes it (RFC 3551): remove it"),
                    ));
                }
            }
        }
        96..=127 => {
            let rate = src.sample_rate_hz.unwrap_or(16_000);
            c.range(
                at,
                f("sample_rate_hz"),
                f64::from(rate),
                8_000.0,
                192_000.0,
                "a sample rate in Hz",
            )?;
            c.range(
                at,
                f("channels"),
                f64::from(src.channels.unwrap_or(1)),
                1.0,
                8.0,
                "a channel count",
            )?;
        }
        other => {
            return Err(c.err(
                at,
                f("payload_type"),
                other.to_string(),
                "is not an L16 payload type: use 10, 11 or 96–127",
            ));
        }
    }
    let rate = match pt {
        10 | 11 => 44_100,
        _ => src.sample_rate_hz.unwrap_or(16_000),
    };
    let ms = packet_ms.unwrap_or(20.0).round() as u64;
    if !(u64::from(rate) * ms).is_multiple_of(1000) {
        return Err(c.err(
            at,
            f("sample_rate_hz"),
            rate.to_string(),
            &format!("{ms} ms packets would not hold whole samples at this rate: change packet_ms"),
        ));
    }
    Ok(())
}
