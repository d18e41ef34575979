//! Jitter injection (S6): seeded Gamma-distributed extra delay, calibration of the scale to
//! a target P99, and replay of packet-arrival traces captured in the field.
//!
//! The extra delay is added to each packet's arrival *before the receive queue* (the
//! playout buffer), so only arrival and decode timing are disturbed. The runtime uses the
//! same [`JitterInjector`] on its microphone packets.
//!
//! ## Packet-arrival trace format
//!
//! CSV, one packet per line, with a header line `seq,send_ms,arrival_ms`:
//!
//! ```text
//! seq,send_ms,arrival_ms
//! 0,0.0,31.2
//! 1,20.0,52.9
//! 2,40.0,
//! ```
//!
//! `seq` is the packet's sequence number (unsigned integer), `send_ms` the sender's
//! timestamp and `arrival_ms` the receiver's arrival time, both in milliseconds (decimals
//! allowed, any common origin). An empty `arrival_ms` marks a lost packet. Lines may come in
//! any order; blank lines and lines starting with `#` are ignored.
//!
//! NDJSON is also accepted (a file whose first non-blank character is `{`): one object per
//! line, `{"seq": 0, "send_ms": 0.0, "arrival_ms": 31.2}`, with `"arrival_ms": null` for a
//! lost packet.

use std::path::Path;

use rand::Rng;
use rand_distr::{Distribution, Gamma};
use serde::Deserialize;

/// Gamma shape k of the reference jitter model.
pub const DEFAULT_SHAPE: f64 = 2.0;
/// Gamma scale θ of the reference jitter model, in milliseconds.
pub const DEFAULT_SCALE_MS: f64 = 8.0;

/// Errors of the jitter module.
#[derive(Debug, thiserror::Error)]
pub enum JitterError {
    /// Shape or scale out of range.
    #[error(
        "invalid Gamma jitter parameters k = {shape}, θ = {scale_ms} ms: both must be finite and > 0 (θ may be 0 for no jitter)"
    )]
    Parameters {
        /// Shape k.
        shape: f64,
        /// Scale θ in ms.
        scale_ms: f64,
    },
    /// The trace file could not be read.
    #[error("cannot read packet trace {path}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of the trace is malformed.
    #[error(
        "packet trace line {line}: {reason} (expected `seq,send_ms,arrival_ms`, e.g. `12,240.0,268.5`, or NDJSON {{\"seq\":12,\"send_ms\":240.0,\"arrival_ms\":268.5}})"
    )]
    Trace {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The trace has no packets.
    #[error("packet trace {path} holds no packets")]
    EmptyTrace {
        /// The file.
        path: String,
    },
}

/// Seeded Gamma(k, θ) extra delay, in nanoseconds. θ = 0 means no jitter at all.
#[derive(Debug, Clone, Copy)]
pub struct GammaJitter {
    shape: f64,
    scale_ms: f64,
    dist: Option<Gamma<f64>>,
}

impl GammaJitter {
    /// Gamma jitter with shape `shape` and scale `scale_ms` (milliseconds).
    pub fn new(shape: f64, scale_ms: f64) -> Result<Self, JitterError> {
        let bad = || JitterError::Parameters { shape, scale_ms };
        if !(shape.is_finite() && shape > 0.0 && scale_ms.is_finite() && scale_ms >= 0.0) {
            return Err(bad());
        }
        let dist = if scale_ms == 0.0 {
            None
        } else {
            Some(Gamma::new(shape, scale_ms).map_err(|_| bad())?)
        };
        Ok(Self {
            shape,
            scale_ms,
            dist,
        })
    }

    /// The reference model: k = 2, θ = 8 ms (mean 16 ms, P99 ≈ 53.1 ms).
    pub fn reference() -> Self {
        Self::new(DEFAULT_SHAPE, DEFAULT_SCALE_MS).expect("reference parameters are valid")
    }

    /// Gamma jitter of shape `shape` whose P99 is `p99_ms` (see [`calibrate_scale_ms`]).
    pub fn with_p99(shape: f64, p99_ms: f64) -> Result<Self, JitterError> {
        Self::new(shape, calibrate_scale_ms(shape, p99_ms, 0.99)?)
    }

    /// Shape k.
    pub fn shape(&self) -> f64 {
        self.shape
    }

    /// Scale θ in milliseconds.
    pub fn scale_ms(&self) -> f64 {
        self.scale_ms
    }

    /// The theoretical `q` quantile, in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        self.scale_ms * gamma_quantile_unit(self.shape, q)
    }

    /// One extra delay, in milliseconds.
    pub fn sample_ms<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.dist.map_or(0.0, |d| d.sample(rng))
    }

    /// One extra delay, in nanoseconds.
    pub fn sample_nanos<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        (self.sample_ms(rng) * 1e6).round() as u64
    }
}

/// The Gamma scale θ (ms) whose `q` quantile is `target_ms` for shape `shape`:
/// quantiles scale linearly with θ, so θ = target / Q(k, 1; q).
pub fn calibrate_scale_ms(shape: f64, target_ms: f64, q: f64) -> Result<f64, JitterError> {
    if !(shape.is_finite() && shape > 0.0 && target_ms.is_finite() && target_ms >= 0.0) {
        return Err(JitterError::Parameters {
            shape,
            scale_ms: f64::NAN,
        });
    }
    Ok(target_ms / gamma_quantile_unit(shape, q))
}

/// The `q` quantile of Gamma(k, 1), by bisection on the regularised lower incomplete gamma.
pub fn gamma_quantile_unit(shape: f64, q: f64) -> f64 {
    let q = q.clamp(0.0, 1.0 - 1e-15);
    let (mut lo, mut hi) = (0.0_f64, shape.max(1.0));
    while regularized_lower_gamma(shape, hi) < q {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if regularized_lower_gamma(shape, mid) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(k, x): the regularised lower incomplete gamma function (series for x < k + 1,
/// continued fraction otherwise; Numerical Recipes §6.2).
pub fn regularized_lower_gamma(k: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let ln_prefactor = k * x.ln() - x - ln_gamma(k);
    if x < k + 1.0 {
        let (mut term, mut sum, mut a) = (1.0 / k, 1.0 / k, k);
        for _ in 0..1000 {
            a += 1.0;
            term *= x / a;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (sum * ln_prefactor.exp()).clamp(0.0, 1.0)
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - k;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - k);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (1.0 - ln_prefactor.exp() * h).clamp(0.0, 1.0)
    }
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// One packet of a trace: sender time and (unless lost) arrival time, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRecord {
    /// Sequence number.
    pub seq: u64,
    /// Sender timestamp, in nanoseconds.
    pub send_nanos: i64,
    /// Arrival time, in nanoseconds; `None` if the packet was lost.
    pub arrival_nanos: Option<i64>,
}

/// Injects network behaviour into a packet stream: a fixed base delay, seeded Gamma jitter
/// and random loss. The same piece serves the simulator and the runtime's microphone path.
#[derive(Debug, Clone, Copy)]
pub struct JitterInjector {
    /// Constant one-way delay, in nanoseconds.
    pub base_delay_nanos: u64,
    /// Extra delay model.
    pub jitter: GammaJitter,
    /// Probability that a packet is lost, in [0, 1].
    pub loss_probability: f64,
}

impl JitterInjector {
    /// The arrival time of a packet sent at `send_nanos`, or `None` if it is lost.
    pub fn arrival<R: Rng + ?Sized>(&self, send_nanos: u64, rng: &mut R) -> Option<u64> {
        use rand::RngExt;
        let extra = self.jitter.sample_nanos(rng);
        if self.loss_probability > 0.0 && rng.random::<f64>() < self.loss_probability {
            return None;
        }
        Some(send_nanos + self.base_delay_nanos + extra)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRecord {
    seq: u64,
    send_ms: f64,
    arrival_ms: Option<f64>,
}

fn ms_to_nanos(v: f64, line: usize, field: &str) -> Result<i64, JitterError> {
    if !v.is_finite() || v.abs() > 9.0e12 {
        return Err(JitterError::Trace {
            line,
            reason: format!("{field} must be a finite number of milliseconds, got {v}"),
        });
    }
    Ok((v * 1e6).round() as i64)
}

/// Parses a packet-arrival trace (CSV or NDJSON, see the module docs), sorted by `seq`.
pub fn parse_trace(text: &str) -> Result<Vec<PacketRecord>, JitterError> {
    let ndjson = text.trim_start().starts_with('{');
    let mut out = Vec::new();
    let mut saw_header = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if ndjson {
            let r: JsonRecord = serde_json::from_str(l).map_err(|e| JitterError::Trace {
                line,
                reason: e.to_string(),
            })?;
            out.push(PacketRecord {
                seq: r.seq,
                send_nanos: ms_to_nanos(r.send_ms, line, "send_ms")?,
                arrival_nanos: r
                    .arrival_ms
                    .map(|a| ms_to_nanos(a, line, "arrival_ms"))
                    .transpose()?,
            });
            continue;
        }
        if !saw_header {
            saw_header = true;
            let header: Vec<&str> = l.split(',').map(str::trim).collect();
            if header == ["seq", "send_ms", "arrival_ms"] {
                continue;
            }
            return Err(JitterError::Trace {
                line,
                reason: format!(
                    "the first line must be the header `seq,send_ms,arrival_ms`, got `{l}`"
                ),
            });
        }
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        if fields.len() != 3 {
            return Err(JitterError::Trace {
                line,
                reason: format!("expected 3 comma-separated fields, got {}", fields.len()),
            });
        }
        let seq = fields[0].parse::<u64>().map_err(|_| JitterError::Trace {
            line,
            reason: format!("seq must be an unsigned integer, got `{}`", fields[0]),
        })?;
        let num = |s: &str, name: &str| {
            s.parse::<f64>().map_err(|_| JitterError::Trace {
                line,
                reason: format!("{name} must be a number of milliseconds, got `{s}`"),
            })
        };
        let send = ms_to_nanos(num(fields[1], "send_ms")?, line, "send_ms")?;
        let arrival = if fields[2].is_empty() {
            None
        } else {
            Some(ms_to_nanos(
                num(fields[2], "arrival_ms")?,
                line,
                "arrival_ms",
            )?)
        };
        out.push(PacketRecord {
            seq,
            send_nanos: send,
            arrival_nanos: arrival,
        });
    }
    out.sort_by_key(|r| r.seq);
    Ok(out)
}

/// Reads and parses a packet-arrival trace file.
pub fn load_trace(path: &Path) -> Result<Vec<PacketRecord>, JitterError> {
    let text = std::fs::read_to_string(path).map_err(|source| JitterError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let trace = parse_trace(&text)?;
    if trace.is_empty() {
        return Err(JitterError::EmptyTrace {
            path: path.display().to_string(),
        });
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream_rng;
    use crate::stats::{mean, quantile};

    #[test]
    fn gamma_sampler_matches_theory() {
        let j = GammaJitter::reference();
        let mut rng = stream_rng(42, 1);
        let mut v: Vec<f64> = (0..400_000).map(|_| j.sample_ms(&mut rng)).collect();
        let m = mean(&v);
        let p99 = quantile(&mut v, 0.99);
        // Theory: mean kθ = 16 ms; P99 of Gamma(2, 8) = 8 · 6.6384 = 53.1 ms.
        assert!((m - 16.0).abs() < 0.1, "mean {m}");
        assert!((p99 - 53.1).abs() < 0.6, "p99 {p99}");
        assert!((j.quantile_ms(0.99) - 53.107).abs() < 0.01);
    }

    #[test]
    fn calibration_hits_the_target_p99() {
        for target in [28.0, 42.0] {
            let j = GammaJitter::with_p99(2.0, target).expect("valid");
            assert!((j.quantile_ms(0.99) - target).abs() < 1e-6);
            let mut rng = stream_rng(7, target as u64);
            let mut v: Vec<f64> = (0..200_000).map(|_| j.sample_ms(&mut rng)).collect();
            let p99 = quantile(&mut v, 0.99);
            assert!((p99 - target).abs() < 0.03 * target, "{target}: {p99}");
        }
        // Closed form for k = 2: P(X > x) = e^(−x/θ)(1 + x/θ).
        let x = gamma_quantile_unit(2.0, 0.99);
        assert!(((-x).exp() * (1.0 + x) - 0.01).abs() < 1e-9);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(GammaJitter::new(0.0, 8.0).is_err());
        assert!(GammaJitter::new(2.0, -1.0).is_err());
        assert!(GammaJitter::new(2.0, f64::NAN).is_err());
        let none = GammaJitter::new(2.0, 0.0).expect("no jitter is valid");
        assert_eq!(none.sample_ms(&mut stream_rng(1, 1)), 0.0);
    }

    #[test]
    fn parses_csv_and_ndjson_traces() {
        let csv = "seq,send_ms,arrival_ms\n# comment\n1,20,52.5\n0,0,31.25\n2,40,\n";
        let t = parse_trace(csv).expect("valid CSV");
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].arrival_nanos, Some(31_250_000));
        assert_eq!(t[2].arrival_nanos, None);
        let nd = "{\"seq\":0,\"send_ms\":0,\"arrival_ms\":1.5}\n{\"seq\":1,\"send_ms\":20,\"arrival_ms\":null}\n";
        let t = parse_trace(nd).expect("valid NDJSON");
        assert_eq!(t[1].arrival_nanos, None);
    }

    #[test]
    fn bad_traces_name_the_line() {
        let err = parse_trace("seq,send_ms,arrival_ms\n0,0,1\nx,1,2\n").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        let err = parse_trace("0,0,1\n").unwrap_err();
        assert!(err.to_string().contains("header"), "{err}");
        let err = parse_trace("seq,send_ms,arrival_ms\n0,0\n").unwrap_err();
        assert!(err.to_string().contains("3 comma-separated"), "{err}");
        let err = parse_trace("{\"seq\":0,\"send\":1}\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
