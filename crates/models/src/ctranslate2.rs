//! A reader for CTranslate2 `model.bin` files (format version 6).
//!
//! Layout, all little-endian: u32 version; the spec name (u16 length including a trailing
//! NUL, then bytes); u32 revision; u32 variable count; per variable: name, u8 rank,
//! rank × u32 dims, u8 dtype, u32 byte count, raw bytes; then u32 alias count and
//! (alias, target) name pairs.

use std::collections::BTreeMap;

/// Element type of a CTranslate2 variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ct2Dtype {
    /// 32-bit float.
    F32,
    /// 8-bit integer (quantised weights, flags).
    I8,
    /// 16-bit integer.
    I16,
    /// 32-bit integer.
    I32,
    /// IEEE half float.
    F16,
    /// bfloat16.
    Bf16,
}

impl Ct2Dtype {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::Bf16,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }
}

/// One named tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Ct2Variable {
    /// Shape (empty for scalars).
    pub dims: Vec<usize>,
    /// Element type.
    pub dtype: Ct2Dtype,
    /// Raw little-endian bytes.
    pub data: Vec<u8>,
}

/// A parsed `model.bin`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ct2Model {
    /// Format version.
    pub version: u32,
    /// Model spec name, e.g. `WhisperSpec`.
    pub spec: String,
    /// Spec revision.
    pub revision: u32,
    /// Variables by name.
    pub variables: BTreeMap<String, Ct2Variable>,
    /// Alias name → target variable name.
    pub aliases: BTreeMap<String, String>,
}

/// Why a `model.bin` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ct2Error {
    /// The file ends inside a record.
    #[error("model.bin is truncated at byte {offset} (reading {what})")]
    Truncated {
        /// Where reading stopped.
        offset: usize,
        /// What was being read.
        what: &'static str,
    },
    /// A format this reader does not know.
    #[error("unsupported CTranslate2 model.bin: {0}")]
    Unsupported(String),
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Ct2Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(Ct2Error::Truncated {
                offset: self.pos,
                what,
            }),
        }
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, Ct2Error> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, Ct2Error> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, Ct2Error> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn name(&mut self, what: &'static str) -> Result<String, Ct2Error> {
        let len = usize::from(self.u16(what)?);
        let raw = self.take(len, what)?;
        let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
        String::from_utf8(raw.to_vec())
            .map_err(|_| Ct2Error::Unsupported(format!("{what} is not UTF-8")))
    }
}

/// Parses a whole `model.bin`.
pub fn read(bytes: &[u8]) -> Result<Ct2Model, Ct2Error> {
    let mut c = Cursor { bytes, pos: 0 };
    let version = c.u32("version")?;
    if !(5..=6).contains(&version) {
        return Err(Ct2Error::Unsupported(format!(
            "format version {version} (this reader knows 5 and 6)"
        )));
    }
    let spec = c.name("spec name")?;
    let revision = c.u32("revision")?;
    let count = c.u32("variable count")?;
    let mut variables = BTreeMap::new();
    for _ in 0..count {
        let name = c.name("variable name")?;
        let rank = c.u8("rank")?;
        let mut dims = Vec::with_capacity(usize::from(rank));
        for _ in 0..rank {
            dims.push(c.u32("dimension")? as usize);
        }
        let code = c.u8("dtype")?;
        let dtype = Ct2Dtype::from_code(code)
            .ok_or_else(|| Ct2Error::Unsupported(format!("dtype code {code} of {name}")))?;
        let nbytes = c.u32("byte count")? as usize;
        let elems: usize = dims.iter().product();
        if elems * dtype.size() != nbytes {
            return Err(Ct2Error::Unsupported(format!(
                "{name}: {nbytes} bytes do not match shape {dims:?} of {dtype:?}"
            )));
        }
        let data = c.take(nbytes, "variable data")?.to_vec();
        variables.insert(name, Ct2Variable { dims, dtype, data });
    }
    let mut aliases = BTreeMap::new();
    if c.pos < bytes.len() {
        let n = c.u32("alias count")?;
        for _ in 0..n {
            let alias = c.name("alias")?;
            let target = c.name("alias target")?;
            aliases.insert(alias, target);
        }
    }
    Ok(Ct2Model {
        version,
        spec,
        revision,
        variables,
        aliases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&((s.len() + 1) as u16).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }

    fn tiny() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&6u32.to_le_bytes());
        name(&mut b, "TestSpec");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        name(&mut b, "w");
        b.push(2);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.push(0);
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&1.0f32.to_le_bytes());
        b.extend_from_slice(&2.0f32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        name(&mut b, "alias");
        name(&mut b, "w");
        b
    }

    #[test]
    fn reads_a_small_file() {
        let m = read(&tiny()).expect("parse");
        assert_eq!(m.spec, "TestSpec");
        assert_eq!(m.variables["w"].dims, vec![1, 2]);
        assert_eq!(m.aliases["alias"], "w");
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = tiny();
        // The alias table is optional, so only cuts before it must fail.
        let alias_start = b.len() - (4 + 2 + 6 + 2 + 2);
        for cut in 0..alias_start {
            assert!(read(&b[..cut]).is_err(), "cut at {cut}");
        }
    }
}
