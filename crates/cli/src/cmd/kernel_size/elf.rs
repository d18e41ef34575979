//! A minimal reader for 32-bit little-endian ELF files: section headers and the symbol
//! table, which is all `kernel-size` needs (no dependency, no unsafe).

use anyhow::{Context, Result, bail};

/// `sh_type` of a symbol table.
const SHT_SYMTAB: u32 = 2;
/// `sh_type` of a section that occupies no file space (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// `sh_flags`: the section is loaded into memory.
pub const SHF_ALLOC: u32 = 2;
/// `sh_flags`: the section is writable.
pub const SHF_WRITE: u32 = 1;
/// `e_machine` of RISC-V.
const EM_RISCV: u16 = 243;

/// One section header.
#[derive(Debug, Clone)]
pub struct Section {
    pub name: String,
    pub kind: u32,
    pub flags: u32,
    pub addr: u32,
    pub offset: u32,
    pub size: u32,
}

/// One symbol-table entry with a size.
#[derive(Debug, Clone)]
pub struct Symbol {
    pub name: String,
    pub addr: u32,
    pub size: u32,
    /// Index of the section the symbol is defined in.
    pub section: usize,
}

/// A parsed ELF file.
#[derive(Debug)]
pub struct Elf {
    data: Vec<u8>,
    pub sections: Vec<Section>,
    pub symbols: Vec<Symbol>,
}

fn u16_at(d: &[u8], at: usize) -> Result<u16> {
    let b = d.get(at..at + 2).context("ELF file is truncated")?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(d: &[u8], at: usize) -> Result<u32> {
    let b = d.get(at..at + 4).context("ELF file is truncated")?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn str_at(d: &[u8], table: &Section, at: u32) -> String {
    let start = (table.offset + at) as usize;
    let end = (table.offset + table.size) as usize;
    let bytes = d.get(start..end.min(d.len())).unwrap_or(&[]);
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..len]).into_owned()
}

impl Elf {
    /// Parses a 32-bit little-endian RISC-V ELF file.
    pub fn parse(data: Vec<u8>) -> Result<Elf> {
        if data.get(0..4) != Some(b"\x7fELF") {
            bail!("not an ELF file (bad magic)");
        }
        if data.get(4) != Some(&1) || data.get(5) != Some(&1) {
            bail!("not a 32-bit little-endian ELF file; kernel-size reads riscv32 firmware");
        }
        let machine = u16_at(&data, 18)?;
        if machine != EM_RISCV {
            bail!("ELF machine is {machine}, not RISC-V ({EM_RISCV})");
        }
        let shoff = u32_at(&data, 32)? as usize;
        let shentsize = usize::from(u16_at(&data, 46)?);
        let shnum = usize::from(u16_at(&data, 48)?);
        let shstrndx = usize::from(u16_at(&data, 50)?);
        if shentsize < 40 {
            bail!("ELF section header size {shentsize} is too small");
        }
        let mut raw = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let h = shoff + i * shentsize;
            raw.push((
                u32_at(&data, h)?,
                Section {
                    name: String::new(),
                    kind: u32_at(&data, h + 4)?,
                    flags: u32_at(&data, h + 8)?,
                    addr: u32_at(&data, h + 12)?,
                    offset: u32_at(&data, h + 16)?,
                    size: u32_at(&data, h + 20)?,
                },
                u32_at(&data, h + 24)?,
            ));
        }
        let names = raw
            .get(shstrndx)
            .map(|r| r.1.clone())
            .context("ELF section-name table index is out of range")?;
        let mut sections = Vec::with_capacity(shnum);
        let mut symtab = None;
        for (name_off, mut s, link) in raw {
            s.name = str_at(&data, &names, name_off);
            if s.kind == SHT_SYMTAB {
                symtab = Some((s.clone(), link as usize));
            }
            sections.push(s);
        }
        let (symtab, strndx) = symtab
            .context("the ELF file has no symbol table; build without stripping (strip = false)")?;
        let strtab = sections
            .get(strndx)
            .cloned()
            .context("ELF symbol-name table index is out of range")?;
        let mut symbols = Vec::new();
        let count = symtab.size as usize / 16;
        for i in 1..count {
            let e = symtab.offset as usize + i * 16;
            let size = u32_at(&data, e + 8)?;
            let section = usize::from(u16_at(&data, e + 14)?);
            if size == 0 || section == 0 || section >= sections.len() {
                continue;
            }
            symbols.push(Symbol {
                name: str_at(&data, &strtab, u32_at(&data, e)?),
                addr: u32_at(&data, e + 4)?,
                size,
                section,
            });
        }
        Ok(Elf {
            data,
            sections,
            symbols,
        })
    }

    /// The bytes of a symbol, when its section has file contents.
    pub fn symbol_bytes(&self, sym: &Symbol) -> Option<&[u8]> {
        let s = self.sections.get(sym.section)?;
        if s.kind == SHT_NOBITS {
            return None;
        }
        let start = (s.offset + sym.addr.checked_sub(s.addr)?) as usize;
        self.data.get(start..start + sym.size as usize)
    }

    /// The contents of the named section.
    pub fn section_bytes(&self, name: &str) -> Option<&[u8]> {
        let s = self.sections.iter().find(|s| s.name == name)?;
        self.data
            .get(s.offset as usize..(s.offset + s.size) as usize)
    }
}

/// Counts RISC-V instructions in a code block by their encoded lengths: an instruction
/// whose low two bits are `11` is 4 bytes long, any other is a 2-byte compressed one.
pub fn count_instructions(code: &[u8]) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < code.len() {
        i += if code[i] & 0b11 == 0b11 { 4 } else { 2 };
        n += 1;
    }
    n
}

/// The identifiers of a mangled Rust symbol (legacy `_ZN…E` or v0 `_R…`), split into path
/// words, e.g. `mmsched_kernel`, `ready`, `ReadyQueue`, `pop_highest`.
pub fn path_words(mangled: &str) -> Vec<String> {
    let b = mangled.as_bytes();
    let v0 = mangled.starts_with("_R");
    let mut words = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit()) {
            let mut j = i;
            let mut n = 0usize;
            while j < b.len() && b[j].is_ascii_digit() {
                n = n
                    .saturating_mul(10)
                    .saturating_add(usize::from(b[j] - b'0'));
                j += 1;
            }
            // v0 separates an identifier that starts with a digit or `_` with one `_`.
            if v0 && j < b.len() && b[j] == b'_' && n > 0 && j + 1 + n <= b.len() {
                j += 1;
            }
            if n > 0 && j + n <= b.len() {
                let ident = &mangled[j..j + n];
                for w in ident
                    .replace("..", " ")
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                {
                    if !w.is_empty() {
                        words.push(w.to_string());
                    }
                }
                i = j + n;
                continue;
            }
        }
        i += 1;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_lengths() {
        // c.addi (2 bytes), addi (4 bytes), c.mv (2 bytes)
        assert_eq!(
            count_instructions(&[0x01, 0x11, 0x13, 0x05, 0x05, 0x00, 0x2a, 0x85]),
            3
        );
    }

    #[test]
    fn words_of_legacy_and_v0_symbols() {
        let legacy =
            "_ZN14mmsched_kernel5ready19ReadyQueue$LT$_$GT$11pop_highest17h7e6a2fde0b9561a9E";
        let w = path_words(legacy);
        assert_eq!(w[..3], ["mmsched_kernel", "ready", "ReadyQueue"]);
        let imp = "_ZN97_$LT$mmsched_kernel..platform..riscv..MachineTimer$u20$as$u20$mmsched_kernel..platform..Timer$GT$9set_alarm17he1e91329c47f78f3E";
        let w = path_words(imp);
        let at = w.iter().position(|x| x == "mmsched_kernel").unwrap();
        assert_eq!(w[at + 1], "platform");
        let v0 = "_RNvNtNtCsheXoZokrRQM_17compiler_builtins5float3add8___adddf3";
        let w = path_words(v0);
        assert!(w.contains(&"compiler_builtins".to_string()));
        assert_eq!(w.last().map(String::as_str), Some("__adddf3"));
        let entry = "_ZN8mcu_demo10__mmk_main17h0123456789abcdefE";
        assert_eq!(path_words(entry)[..2], ["mcu_demo", "__mmk_main"]);
    }
}
