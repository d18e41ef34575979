//! W3C / OpenTelemetry trace and span identifiers, and a lock-free generator for them.
//!
//! A trace id is 128 bits written as 32 lowercase hex digits, a span id 64 bits as 16; the
//! all-zero value is invalid in both (W3C trace context). Ids come from a counter mixed with
//! SplitMix64, seeded once — from a fixed seed for reproducible traces, or from the OS
//! hasher keys — so generating one never reads a clock and never takes a lock.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

// Plain std atomics: the id counter is a single fetch_add, not part of the loom-checked ring.
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a string is not a valid trace or span id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The string does not have the required number of hex digits.
    #[error("expected {expected} lowercase hex digits, got {got} characters")]
    Length {
        /// Required digits (32 for a trace id, 16 for a span id).
        expected: usize,
        /// Characters found.
        got: usize,
    },
    /// A character is not `0-9` or `a-f`.
    #[error("character {ch:?} at position {pos} is not a lowercase hex digit (0-9, a-f)")]
    Digit {
        /// The offending character.
        ch: char,
        /// Its position in the string.
        pos: usize,
    },
    /// The all-zero id, which W3C trace context reserves as invalid.
    #[error("the all-zero id is invalid (W3C trace context)")]
    Zero,
}

fn parse_hex<const N: usize>(s: &str) -> Result<[u8; N], IdError> {
    if s.len() != 2 * N {
        return Err(IdError::Length {
            expected: 2 * N,
            got: s.chars().count(),
        });
    }
    let mut out = [0u8; N];
    for (pos, ch) in s.chars().enumerate() {
        let v = match ch {
            '0'..='9' => ch as u8 - b'0',
            'a'..='f' => ch as u8 - b'a' + 10,
            _ => return Err(IdError::Digit { ch, pos }),
        };
        out[pos / 2] |= if pos % 2 == 0 { v << 4 } else { v };
    }
    if out.iter().all(|b| *b == 0) {
        return Err(IdError::Zero);
    }
    Ok(out)
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

macro_rules! id_type {
    ($name:ident, $n:literal, $digits:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name([u8; $n]);

        impl $name {
            /// The id from its big-endian bytes; `None` for the invalid all-zero id.
            pub fn from_bytes(bytes: [u8; $n]) -> Option<Self> {
                if bytes.iter().all(|b| *b == 0) {
                    None
                } else {
                    Some(Self(bytes))
                }
            }

            /// The big-endian bytes.
            pub fn to_bytes(self) -> [u8; $n] {
                self.0
            }

            /// Lowercase hex, as written in traces.
            pub fn to_hex(self) -> String {
                self.to_string()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write_hex(f, &self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "("))?;
                write_hex(f, &self.0)?;
                f.write_str(")")
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                parse_hex::<$n>(s).map(Self)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = Cow::<'de, str>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({
                    "type": "string",
                    "pattern": concat!("^[0-9a-f]{", $digits, "}$"),
                    "description": $doc,
                })
            }
        }
    };
}

id_type!(
    TraceId,
    16,
    "32",
    "A 128-bit trace id: 32 lowercase hex digits, not all zero (W3C trace context)."
);
id_type!(
    SpanId,
    8,
    "16",
    "A 64-bit span id: 16 lowercase hex digits, not all zero (W3C trace context)."
);

impl TraceId {
    /// The id from two 64-bit halves (high first); zero halves are allowed if not both.
    pub fn from_u64s(hi: u64, lo: u64) -> Option<Self> {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi.to_be_bytes());
        b[8..].copy_from_slice(&lo.to_be_bytes());
        Self::from_bytes(b)
    }

    /// The two 64-bit halves (high first).
    pub fn to_u64s(self) -> (u64, u64) {
        let mut hi = [0u8; 8];
        let mut lo = [0u8; 8];
        hi.copy_from_slice(&self.0[..8]);
        lo.copy_from_slice(&self.0[8..]);
        (u64::from_be_bytes(hi), u64::from_be_bytes(lo))
    }
}

impl SpanId {
    /// The id from a 64-bit value; `None` for zero.
    pub fn from_u64(v: u64) -> Option<Self> {
        Self::from_bytes(v.to_be_bytes())
    }

    /// The 64-bit value.
    pub fn to_u64(self) -> u64 {
        u64::from_be_bytes(self.0)
    }
}

/// SplitMix64's output function: a bijection on `u64` with good avalanche.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// A thread-safe, lock-free generator of trace and span ids.
///
/// Each call takes one `fetch_add` on a shared counter and mixes it: ids are distinct for
/// 2⁶⁴ calls per generator (the mix is a bijection), never zero, and reproducible from a seed.
#[derive(Debug)]
pub struct IdGen {
    seed: u64,
    counter: AtomicU64,
}

impl IdGen {
    /// A generator whose sequence is fixed by `seed` (reproducible traces and tests).
    pub fn from_seed(seed: u64) -> Self {
        Self {
            seed: mix(seed ^ GOLDEN),
            counter: AtomicU64::new(0),
        }
    }

    /// A generator seeded from the process's random hasher keys (no clock is read).
    pub fn from_entropy() -> Self {
        use std::hash::BuildHasher;
        let seed =
            std::collections::hash_map::RandomState::new().hash_one(0x006d_6d73_6368_6564_u64);
        Self::from_seed(seed)
    }

    fn next_u64(&self) -> u64 {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        loop_nonzero(mix(self.seed.wrapping_add(n.wrapping_mul(GOLDEN))))
    }

    /// A fresh span id.
    pub fn span_id(&self) -> SpanId {
        SpanId::from_u64(self.next_u64()).expect("loop_nonzero never returns zero")
    }

    /// A fresh trace id.
    pub fn trace_id(&self) -> TraceId {
        let hi = self.next_u64();
        let lo = self.next_u64();
        TraceId::from_u64s(hi, lo).expect("halves are nonzero")
    }
}

/// Maps the single zero output to a fixed nonzero value (zero ids are invalid).
fn loop_nonzero(v: u64) -> u64 {
    if v == 0 { GOLDEN } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_errors_name_the_problem() {
        assert!(matches!(
            "abc".parse::<SpanId>(),
            Err(IdError::Length {
                expected: 16,
                got: 3
            })
        ));
        assert!(matches!(
            "00000000000000A1".parse::<SpanId>(),
            Err(IdError::Digit { ch: 'A', pos: 14 })
        ));
        assert_eq!("0000000000000000".parse::<SpanId>(), Err(IdError::Zero));
    }

    #[test]
    fn seeded_generators_repeat_and_differ() {
        let a = IdGen::from_seed(7);
        let b = IdGen::from_seed(7);
        let c = IdGen::from_seed(8);
        let (ta, tb, tc) = (a.trace_id(), b.trace_id(), c.trace_id());
        assert_eq!(ta, tb);
        assert_ne!(ta, tc);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            assert!(seen.insert(a.span_id()));
        }
    }

    proptest! {
        #[test]
        fn hex_round_trips(hi in any::<u64>(), lo in 1u64..) {
            let t = TraceId::from_u64s(hi, lo).expect("lo is nonzero");
            let s = t.to_hex();
            prop_assert_eq!(s.len(), 32);
            prop_assert_eq!(s.parse::<TraceId>(), Ok(t));
            prop_assert_eq!(t.to_u64s(), (hi, lo));
            let sp = SpanId::from_u64(lo).expect("nonzero");
            prop_assert_eq!(sp.to_hex().parse::<SpanId>(), Ok(sp));
        }
    }
}
