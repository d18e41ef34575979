//! Number hygiene: non-finite values never reach an output file or a table.
//!
//! The runtime computes percentiles of possibly empty sets, so NaN can legitimately appear
//! in a [`crate::RunSummary`]. JSON has no NaN: `serde_json` writes it as `null`, and
//! [`de_f64`] reads `null` back as NaN so a written `summary.json` always parses again.
//! Tables print non-finite values as a dash; SVG code skips them.

use serde::{Deserialize, Deserializer};

/// Text printed in tables where a value is undefined (NaN or infinite).
pub const MISSING: &str = "—";

/// Reads an `f64` that may have been written as `null` (a non-finite value) as NaN.
pub(crate) fn de_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// `value` with `decimals` digits after the point, or [`MISSING`] when not finite.
pub fn fixed(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        MISSING.to_string()
    }
}

/// A latency in milliseconds with precision that suits its size (3 significant digits for
/// small values, whole milliseconds from 100 ms on), or [`MISSING`].
pub fn ms(value: f64) -> String {
    let magnitude = value.abs();
    let decimals = if magnitude >= 100.0 {
        0
    } else if magnitude >= 10.0 {
        1
    } else {
        2
    };
    fixed(value, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_values_print_as_a_dash() {
        assert_eq!(fixed(f64::NAN, 2), MISSING);
        assert_eq!(ms(f64::INFINITY), MISSING);
        assert_eq!(ms(f64::NEG_INFINITY), MISSING);
    }

    #[test]
    fn milliseconds_keep_about_three_significant_digits() {
        assert_eq!(ms(1.2345), "1.23");
        assert_eq!(ms(45.26), "45.3");
        assert_eq!(ms(870.4), "870");
    }

    #[test]
    fn null_reads_back_as_nan() {
        #[derive(Deserialize)]
        struct Probe {
            #[serde(deserialize_with = "de_f64")]
            v: f64,
        }
        let probe: Probe = serde_json::from_str(r#"{"v": null}"#).expect("valid JSON");
        assert!(probe.v.is_nan());
        let probe: Probe = serde_json::from_str(r#"{"v": 2.5}"#).expect("valid JSON");
        assert_eq!(probe.v, 2.5);
    }
}
