//! Checks a [`ScenarioSpec`] once and turns it into a [`Scenario`].

use mmsched_core::text::number;
use std::collections::HashSet;

use crate::{
    Episode, EpisodeKind, SCENARIO_VERSION, Scenario, ScenarioError, ScenarioSpec, Stream,
    StreamKind, line_of,
};

/// The line of `field` (a dotted path) in the entry that starts at `offset`: the first line
/// of that entry whose key is one of the path's segments (last first), else the entry's line.
fn field_line(text: &str, offset: usize, field: &str) -> usize {
    let offset = offset.min(text.len());
    let entry_line = line_of(text, offset);
    let segments: Vec<&str> = field
        .split('.')
        .map(|s| s.split('[').next().unwrap_or(s))
        .collect();
    let body: Vec<&str> = text[offset..].lines().collect();
    for key in segments.iter().rev() {
        for (k, l) in body.iter().enumerate() {
            let t = l.trim_start();
            if k > 0 && t.starts_with('[') {
                break;
            }
            if let Some(rest) = t.strip_prefix(key)
                && rest.trim_start().starts_with('=')
            {
                return entry_line + k;
            }
        }
    }
    entry_line
}

pub(crate) struct Checker<'a> {
    text: &'a str,
    source: &'a str,
}

impl Checker<'_> {
    pub(crate) fn err(
        &self,
        offset: usize,
        field: String,
        value: String,
        reason: &str,
    ) -> ScenarioError {
        ScenarioError::Invalid {
            source_name: self.source.to_string(),
            line: field_line(self.text, offset, &field),
            field,
            value,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn range(
        &self,
        offset: usize,
        field: String,
        v: f64,
        lo: f64,
        hi: f64,
        what: &str,
    ) -> Result<(), ScenarioError> {
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(self.err(
                offset,
                field,
                number(v),
                &format!("must be {what} ({} … {})", number(lo), number(hi)),
            ))
        }
    }

    fn opt_range(
        &self,
        offset: usize,
        field: String,
        v: Option<f64>,
        lo: f64,
        hi: f64,
        what: &str,
    ) -> Result<(), ScenarioError> {
        v.map_or(Ok(()), |v| self.range(offset, field, v, lo, hi, what))
    }

    fn need<T>(
        &self,
        offset: usize,
        field: String,
        v: &Option<T>,
        kind: &str,
    ) -> Result<(), ScenarioError> {
        if v.is_some() {
            Ok(())
        } else {
            Err(self.err(
                offset,
                field,
                "(missing)".into(),
                &format!("is required for {kind}"),
            ))
        }
    }

    fn forbid<T: std::fmt::Debug>(
        &self,
        offset: usize,
        field: String,
        v: &Option<T>,
        allowed: &str,
    ) -> Result<(), ScenarioError> {
        match v {
            None => Ok(()),
            Some(v) => Err(self.err(
                offset,
                field,
                format!("{v:?}"),
                &format!("applies to {allowed} only"),
            )),
        }
    }
}

fn check_stream(
    c: &Checker,
    i: usize,
    at: usize,
    s: &Stream,
    models: &HashSet<&str>,
) -> Result<(), ScenarioError> {
    let f = |name: &str| format!("streams[{i}].{name}");
    let kind = format!("{} streams", s.kind.as_str());
    let rate = |field: &str, v: &Option<f64>, owner: StreamKind, lo: f64, hi: f64, what: &str| {
        if s.kind == owner {
            c.need(at, f(field), v, &kind)?;
            c.opt_range(at, f(field), *v, lo, hi, what)
        } else {
            c.forbid(at, f(field), v, &format!("{} streams", owner.as_str()))
        }
    };
    rate(
        "fps",
        &s.fps,
        StreamKind::Camera,
        0.1,
        240.0,
        "frames per second",
    )?;
    rate(
        "packet_ms",
        &s.packet_ms,
        StreamKind::Audio,
        10.0,
        60.0,
        "a packet length in ms",
    )?;
    rate(
        "rate_hz",
        &s.rate_hz,
        StreamKind::Imu,
        1.0,
        4000.0,
        "a sample rate in Hz",
    )?;
    rate(
        "requests_per_min",
        &s.requests_per_min,
        StreamKind::Text,
        0.01,
        600.0,
        "requests per minute",
    )?;
    if s.kind != StreamKind::Text {
        c.forbid(
            at,
            f("tokens_per_request"),
            &s.tokens_per_request,
            "text streams",
        )?;
    } else if let Some(t) = s.tokens_per_request {
        c.range(
            at,
            f("tokens_per_request"),
            f64::from(t),
            1.0,
            4096.0,
            "a token count",
        )?;
    }
    c.range(
        at,
        f("sla_ms"),
        s.sla_ms,
        0.1,
        600_000.0,
        "a deadline in ms",
    )?;
    c.range(
        at,
        f("importance"),
        s.importance,
        0.0,
        1.0,
        "an importance between 0 and 1",
    )?;
    c.range(
        at,
        f("clock_offset_ms"),
        s.clock_offset_ms,
        -1e9,
        1e9,
        "an offset in ms",
    )?;
    c.range(
        at,
        f("clock_drift_ppm"),
        s.clock_drift_ppm,
        -1000.0,
        1000.0,
        "a drift in ppm",
    )?;
    c.range(
        at,
        f("latency_ms"),
        s.latency_ms,
        0.0,
        10_000.0,
        "a latency in ms",
    )?;
    if let Some(noise) = s.stamp_noise_ms {
        c.range(
            at,
            f("stamp_noise_ms"),
            noise,
            0.0,
            1_000.0,
            "a standard deviation in ms",
        )?;
    }
    c.range(at, f("loss_pct"), s.loss_pct, 0.0, 100.0, "a percentage")?;
    if let Some(j) = &s.jitter {
        stream_jitter(c, at, &f, j)?;
    }
    stream_models(c, at, &f, s, models)?;
    Ok(())
}

/// A stream's jitter: a Gamma shape, and exactly one of its scale or its P99.
fn stream_jitter(
    c: &Checker,
    at: usize,
    f: &dyn Fn(&str) -> String,
    j: &crate::model::JitterSettings,
) -> Result<(), ScenarioError> {
    c.range(at, f("jitter.shape"), j.shape, 0.1, 100.0, "a Gamma shape")?;
    match (j.scale_ms, j.p99_ms) {
        (Some(_), Some(_)) | (None, None) => {
            let shown = |v: Option<f64>| v.map_or_else(|| "(missing)".to_string(), number);
            return Err(c.err(
                at,
                f("jitter"),
                format!(
                    "scale_ms = {}, p99_ms = {}",
                    shown(j.scale_ms),
                    shown(j.p99_ms)
                ),
                "give exactly one of scale_ms or p99_ms",
            ));
        }
        (Some(v), None) => c.range(
            at,
            f("jitter.scale_ms"),
            v,
            0.0,
            10_000.0,
            "a Gamma scale in ms",
        )?,
        (None, Some(v)) => c.range(at, f("jitter.p99_ms"), v, 0.0, 60_000.0, "a P99 in ms")?,
    }
    Ok(())
}

/// Every model a stream names is one of the scenario's.
fn stream_models(
    c: &Checker,
    at: usize,
    f: &dyn Fn(&str) -> String,
    s: &Stream,
    models: &HashSet<&str>,
) -> Result<(), ScenarioError> {
    for (k, m) in s.models.iter().enumerate() {
        if !models.contains(m.as_str()) {
            let mut known: Vec<&str> = models.iter().copied().collect();
            known.sort_unstable();
            return Err(c.err(
                at,
                f(&format!("models[{k}]")),
                format!("{m:?}"),
                &format!(
                    "is not a model of this scenario (defined: {})",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn check_episode(
    c: &Checker,
    i: usize,
    at: usize,
    e: &Episode,
    streams: &HashSet<&str>,
) -> Result<(), ScenarioError> {
    let f = |name: &str| format!("episodes[{i}].{name}");
    let kind = format!("{} episodes", e.kind.as_str());
    c.range(at, f("start_s"), e.start_s, 0.0, 1e9, "a time in seconds")?;
    if let Some(end) = e.end_s
        && !(end.is_finite() && end > e.start_s)
    {
        return Err(c.err(at, f("end_s"), end.to_string(), "must be after start_s"));
    }
    if let Some(s) = &e.stream
        && !streams.contains(s.as_str())
    {
        let mut known: Vec<&str> = streams.iter().copied().collect();
        known.sort_unstable();
        return Err(c.err(
            at,
            f("stream"),
            format!("{s:?}"),
            &format!(
                "is not a stream of this scenario (defined: {})",
                known.join(", ")
            ),
        ));
    }
    use EpisodeKind as K;
    // Which optional fields each kind takes, so a misplaced field is reported, not ignored.
    let own: &[&str] = match e.kind {
        K::Blur | K::Dark => &["fraction"],
        K::Jitter => &["p99_ms", "burst_every_ms", "burst_ms"],
        K::Temperature => &["temp_min_c", "temp_max_c", "cycle_h", "drift_ppm_per_c"],
        K::PacketLoss => &["loss_pct"],
        K::WifiSwitching => &["switches_per_min", "outage_ms", "loss_pct"],
        K::LoadSpike => &["every_ms", "spike_ms", "load_pct"],
        K::Vibration => &["amplitude_g"],
    };
    let fields: [(&str, Option<f64>); 15] = [
        ("fraction", e.fraction),
        ("p99_ms", e.p99_ms),
        ("burst_every_ms", e.burst_every_ms),
        ("burst_ms", e.burst_ms),
        ("loss_pct", e.loss_pct),
        ("switches_per_min", e.switches_per_min),
        ("outage_ms", e.outage_ms),
        ("every_ms", e.every_ms),
        ("spike_ms", e.spike_ms),
        ("load_pct", e.load_pct),
        ("temp_min_c", e.temp_min_c),
        ("temp_max_c", e.temp_max_c),
        ("cycle_h", e.cycle_h),
        ("drift_ppm_per_c", e.drift_ppm_per_c),
        ("amplitude_g", e.amplitude_g),
    ];
    for (name, v) in fields {
        if let Some(v) = v
            && !own.contains(&name)
        {
            return Err(c.err(
                at,
                f(name),
                v.to_string(),
                &format!("does not apply to {kind} (they take: {})", own.join(", ")),
            ));
        }
    }
    match e.kind {
        K::Blur | K::Dark | K::Jitter | K::PacketLoss => {
            c.need(at, f("stream"), &e.stream, &kind)?
        }
        _ => {}
    }
    episode_ranges(c, at, &f, e)?;
    episode_needs(c, at, &f, &kind, e)?;
    Ok(())
}

/// Each of an episode's numbers, when given, within its range.
fn episode_ranges(
    c: &Checker,
    at: usize,
    f: &dyn Fn(&str) -> String,
    e: &Episode,
) -> Result<(), ScenarioError> {
    c.opt_range(
        at,
        f("fraction"),
        e.fraction,
        0.0,
        1.0,
        "a share between 0 and 1",
    )?;
    c.opt_range(at, f("p99_ms"), e.p99_ms, 0.0, 60_000.0, "a P99 in ms")?;
    c.opt_range(
        at,
        f("burst_every_ms"),
        e.burst_every_ms,
        1.0,
        1e9,
        "a period in ms",
    )?;
    c.opt_range(at, f("burst_ms"), e.burst_ms, 0.1, 1e9, "a length in ms")?;
    c.opt_range(at, f("loss_pct"), e.loss_pct, 0.0, 100.0, "a percentage")?;
    c.opt_range(
        at,
        f("switches_per_min"),
        e.switches_per_min,
        0.0,
        600.0,
        "switches per minute",
    )?;
    c.opt_range(
        at,
        f("outage_ms"),
        e.outage_ms,
        0.0,
        60_000.0,
        "a length in ms",
    )?;
    c.opt_range(at, f("every_ms"), e.every_ms, 1.0, 1e9, "a period in ms")?;
    c.opt_range(at, f("spike_ms"), e.spike_ms, 0.1, 1e9, "a length in ms")?;
    c.opt_range(
        at,
        f("load_pct"),
        e.load_pct,
        0.0,
        100.0,
        "a percentage of one core",
    )?;
    c.opt_range(
        at,
        f("temp_min_c"),
        e.temp_min_c,
        -60.0,
        150.0,
        "a temperature in °C",
    )?;
    c.opt_range(
        at,
        f("temp_max_c"),
        e.temp_max_c,
        -60.0,
        150.0,
        "a temperature in °C",
    )?;
    c.opt_range(
        at,
        f("cycle_h"),
        e.cycle_h,
        0.01,
        1000.0,
        "a cycle length in hours",
    )?;
    c.opt_range(
        at,
        f("drift_ppm_per_c"),
        e.drift_ppm_per_c,
        -100.0,
        100.0,
        "ppm per °C",
    )?;
    c.opt_range(
        at,
        f("amplitude_g"),
        e.amplitude_g,
        0.0,
        50.0,
        "an acceleration in g",
    )?;
    Ok(())
}

/// The fields an episode of each kind cannot do without, and how they go together.
fn episode_needs(
    c: &Checker,
    at: usize,
    f: &dyn Fn(&str) -> String,
    kind: &str,
    e: &Episode,
) -> Result<(), ScenarioError> {
    use EpisodeKind as K;
    match e.kind {
        K::Jitter => {
            c.need(at, f("p99_ms"), &e.p99_ms, kind)?;
            if e.burst_every_ms.is_some() != e.burst_ms.is_some() {
                return Err(c.err(
                    at,
                    f("burst_ms"),
                    e.burst_ms.map_or("(missing)".into(), |v| v.to_string()),
                    "burst_every_ms and burst_ms go together",
                ));
            }
        }
        K::Temperature => {
            c.need(at, f("temp_min_c"), &e.temp_min_c, kind)?;
            c.need(at, f("temp_max_c"), &e.temp_max_c, kind)?;
            c.need(at, f("cycle_h"), &e.cycle_h, kind)?;
            if e.temp_min_c > e.temp_max_c {
                return Err(c.err(
                    at,
                    f("temp_min_c"),
                    format!("{}", e.temp_min_c.unwrap_or_default()),
                    "must not exceed temp_max_c",
                ));
            }
        }
        K::PacketLoss => c.need(at, f("loss_pct"), &e.loss_pct, kind)?,
        K::WifiSwitching => c.need(at, f("switches_per_min"), &e.switches_per_min, kind)?,
        K::LoadSpike => {
            c.need(at, f("every_ms"), &e.every_ms, kind)?;
            c.need(at, f("spike_ms"), &e.spike_ms, kind)?;
            c.need(at, f("load_pct"), &e.load_pct, kind)?;
        }
        K::Vibration => c.need(at, f("amplitude_g"), &e.amplitude_g, kind)?,
        K::Blur | K::Dark => {}
    }
    Ok(())
}

pub(crate) fn check(
    mut spec: ScenarioSpec,
    text: &str,
    source: &str,
    base_dir: Option<&std::path::Path>,
) -> Result<Scenario, ScenarioError> {
    let c = Checker { text, source };
    if let Some(v) = spec.version
        && v != SCENARIO_VERSION
    {
        return Err(c.err(
            text.find("version").unwrap_or(0),
            "version".into(),
            v.to_string(),
            "must be 1",
        ));
    }
    if spec.name.trim().is_empty() {
        return Err(c.err(
            text.find("name").unwrap_or(0),
            "name".into(),
            "\"\"".into(),
            "must not be empty",
        ));
    }
    let duration_s = spec.duration_s.unwrap_or(60.0);
    c.range(
        text.find("duration_s").unwrap_or(0),
        "duration_s".into(),
        duration_s,
        0.1,
        1e7,
        "a duration in seconds",
    )?;
    let d = &spec.device;
    let dev_at = text.find("[device]").unwrap_or(0);
    if let Some(w) = d.workers {
        c.range(
            dev_at,
            "device.workers".into(),
            f64::from(w),
            1.0,
            256.0,
            "a worker count",
        )?;
    }
    c.opt_range(
        dev_at,
        "device.background_load_pct".into(),
        d.background_load_pct,
        0.0,
        100.0,
        "a percentage of one core",
    )?;
    c.opt_range(
        dev_at,
        "device.wear_pct_per_hour".into(),
        d.wear_pct_per_hour,
        0.0,
        100.0,
        "percent per hour",
    )?;
    let b = &spec.battery;
    let bat_at = text.find("[battery]").unwrap_or(0);
    c.range(
        bat_at,
        "battery.start_pct".into(),
        b.start_pct,
        0.0,
        100.0,
        "a percentage",
    )?;
    c.range(
        bat_at,
        "battery.drain_pct_per_hour".into(),
        b.drain_pct_per_hour,
        0.0,
        100.0,
        "percent per hour",
    )?;

    let mut model_names = HashSet::new();
    for (i, m) in spec.models.iter().enumerate() {
        let at = m.span().start;
        let m = m.get_ref();
        if !model_names.insert(m.name.as_str()) {
            return Err(c.err(
                at,
                format!("models[{i}].name"),
                format!("{:?}", m.name),
                "is used twice: model names must be unique",
            ));
        }
        c.opt_range(
            at,
            format!("models[{i}].cost_ms"),
            m.cost_ms,
            0.001,
            600_000.0,
            "a cost in ms",
        )?;
        own_model_feeders(&c, at, i, m, &spec)?;
        own_model_rungs(&c, at, i, m)?;
    }
    let mut stream_names = HashSet::new();
    for (i, s) in spec.streams.iter().enumerate() {
        let at = s.span().start;
        if !stream_names.insert(s.get_ref().name.as_str()) {
            return Err(c.err(
                at,
                format!("streams[{i}].name"),
                format!("{:?}", s.get_ref().name),
                "is used twice: stream names must be unique",
            ));
        }
        check_stream(&c, i, at, s.get_ref(), &model_names)?;
    }
    for (i, e) in spec.episodes.iter().enumerate() {
        check_episode(&c, i, e.span().start, e.get_ref(), &stream_names)?;
    }
    for (i, s) in spec.streams.iter_mut().enumerate() {
        let at = s.span().start;
        crate::source_check::check_source(&c, i, at, s.get_mut(), base_dir)?;
    }
    Ok(Scenario {
        description: spec.description.unwrap_or_default(),
        duration_s,
        seed: spec.seed.unwrap_or(1),
        device: spec.device,
        battery: spec.battery,
        models: spec.models.into_iter().map(|m| m.into_inner()).collect(),
        streams: spec.streams.into_iter().map(|s| s.into_inner()).collect(),
        episodes: spec.episodes.into_iter().map(|e| e.into_inner()).collect(),
        name: spec.name,
    })
}

/// A model of your own's rungs: well-formed names (the policy's rule), each once, at most
/// [`MAX_OWN_RUNGS`], costs in range.
fn own_model_rungs(
    c: &Checker<'_>,
    at: usize,
    i: usize,
    m: &crate::Model,
) -> Result<(), ScenarioError> {
    use mmsched_core::rungs::{MAX_OWN_RUNGS, MAX_RUNG_NAME_CHARS, is_rung_name};
    if m.rungs.len() > MAX_OWN_RUNGS {
        return Err(c.err(
            at,
            format!("models[{i}].rungs"),
            format!("{} rungs", m.rungs.len()),
            &format!("is too many: keep at most {MAX_OWN_RUNGS}, the ones worth choosing between"),
        ));
    }
    for (j, r) in m.rungs.iter().enumerate() {
        let field = format!("models[{i}].rungs[{j}].name");
        if !is_rung_name(&r.name) {
            return Err(c.err(
                at,
                field,
                format!("{:?}", r.name),
                &format!("must be 1 to {MAX_RUNG_NAME_CHARS} letters, digits, `-`, `_` or `.`"),
            ));
        }
        if m.rungs[..j].iter().any(|o| o.name == r.name) {
            return Err(c.err(
                at,
                field,
                format!("{:?}", r.name),
                "is used twice: give each rung its own name",
            ));
        }
        c.opt_range(
            at,
            format!("models[{i}].rungs[{j}].cost_ms"),
            r.cost_ms,
            0.001,
            600_000.0,
            "a cost in ms",
        )?;
    }
    Ok(())
}

/// A model of your own is fed a camera's frames (its image input): no other stream may list
/// it.
fn own_model_feeders(
    c: &Checker<'_>,
    at: usize,
    i: usize,
    m: &crate::Model,
    spec: &ScenarioSpec,
) -> Result<(), ScenarioError> {
    if m.kind != crate::ModelKind::Onnx {
        return Ok(());
    }
    let feeder = spec
        .streams
        .iter()
        .map(|s| s.get_ref())
        .find(|s| s.kind != crate::StreamKind::Camera && s.models.contains(&m.name));
    match feeder {
        Some(s) => Err(c.err(
            at,
            format!("models[{i}].name"),
            format!("{:?}", m.name),
            &format!(
                "is a model of your own, fed the frames of a camera stream; the {} stream `{}` cannot feed it",
                s.kind.as_str(),
                s.name
            ),
        )),
        None => Ok(()),
    }
}
