//! `mmsched kernel-size`: ROM and RAM of the MCU kernel per section and per component, read
//! from the linked demo firmware, and the instruction count of a context switch.
//!
//! ROM is what a flash image holds (`.text`, `.rodata`, `.data` initialisers); RAM is
//! `.data`, `.bss` and the boot stack. Code is attributed to components by the module path
//! in each symbol's mangled name (`mmsched_kernel::ready::…` is the ready queue), so the
//! attribution follows the source layout rather than addresses. The kernel functions that
//! form each component are `#[inline(never)]`, so link-time optimisation cannot fold them
//! into another component. RAM inside the single kernel `static` is split with the layout
//! record the platform leaves in the non-loaded `.mmk_layout` section.
//!
//! The context switch and the interrupt-to-task wake-up are measured by the firmware itself
//! (`minstret` under QEMU `-icount`, which counts instructions exactly) and read from the
//! QEMU log that `firmware/mcu-demo/run-qemu.sh` writes; the static figures (straight-line
//! trap entry and exit, and the size of the kernel's decision functions) come from the ELF.

mod elf;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;

use elf::{Elf, SHF_ALLOC, SHF_WRITE, SHT_NOBITS, Symbol, count_instructions, path_words};

const DEFAULT_ELF: &str = "firmware/mcu-demo/target/riscv32imac-unknown-none-elf/release/mcu-demo";
const DEFAULT_LOG: &str = "firmware/mcu-demo/target/qemu.log";
const ROM_GOAL_BYTES: u64 = 4096;
const SWITCH_GOAL_INSTRUCTIONS: u64 = 100;
const IRQ_WAKE_GOAL_INSTRUCTIONS: u64 = 150;
const LAYOUT_MAGIC: u32 = 0x314b_4d4d;

#[derive(Debug, Args)]
pub struct KernelSizeArgs {
    /// The linked firmware ELF (riscv32, with symbols).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_ELF)]
    elf: PathBuf,
    /// The QEMU log of a demo run, for the measured context switch, interrupt wake-up and
    /// timer interrupts
    /// [default: firmware/mcu-demo/target/qemu.log, skipped if absent].
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Print the figures as JSON (sizes in bytes, counts in instructions / interrupts).
    #[arg(long)]
    json: bool,
}

/// The components, in table order: (key, part of the kernel figure, description).
const COMPONENTS: [(&str, bool, &str); 13] = [
    ("tcb", true, "task control blocks and SCHED_FIFO rules"),
    ("ready_queue", true, "bitmap-indexed ready queue"),
    ("timer_queue", true, "tickless timer queue"),
    (
        "arch_glue",
        true,
        "start-up, trap entry, context switch, timer, UART",
    ),
    (
        "irq",
        true,
        "device interrupts: PLIC claim, handler table, wake-up path",
    ),
    ("lock", true, "priority-ceiling locks (Resource)"),
    ("queue", true, "interrupt-to-task SPSC queue"),
    ("slots", false, "fixed-capacity slot booking"),
    ("ldti", false, "LDTI hook and mmsched-core index math"),
    (
        "soft_float",
        false,
        "compiler runtime (soft-float f64 for the LDTI)",
    ),
    ("formatting", false, "core::fmt for the UART log"),
    ("demo_tasks", false, "the demo's tasks and statics"),
    (
        "other",
        false,
        "everything else (unnamed constants, boot/idle stack)",
    ),
];

/// Which component a symbol belongs to, from its name.
fn classify(name: &str) -> &'static str {
    match name {
        "_start" | "_mmk_trap" | "_mmk_trap_irq" | "mmk_trap_rust" | "mmk_yield_rust" => {
            return "arch_glue";
        }
        "mmk_irq_begin" | "mmk_irq_end" => return "irq",
        "mmk_main" => return "demo_tasks",
        _ => {}
    }
    if !name.starts_with("_ZN") && !name.starts_with("_R") {
        return if name.starts_with("__") {
            "soft_float"
        } else {
            "other"
        };
    }
    let words = path_words(name);
    let crates = [
        "mmsched_kernel",
        "mmsched_core",
        "mcu_demo",
        "compiler_builtins",
        "libm",
        "core",
        "alloc",
    ];
    let Some(i) = words.iter().position(|w| crates.contains(&w.as_str())) else {
        return "other";
    };
    let module = words.get(i + 1).map(String::as_str).unwrap_or("");
    match words[i].as_str() {
        "mmsched_kernel" => match module {
            "ready" => "ready_queue",
            "timer" => "timer_queue",
            "lock" => "lock",
            "queue" => "queue",
            "platform" => match words.get(i + 3).map(String::as_str) {
                Some("resource") => "lock",
                Some("irq") => "irq",
                _ => "arch_glue",
            },
            "slots" => "slots",
            "health" => "ldti",
            _ => "tcb",
        },
        "mmsched_core" => "ldti",
        "mcu_demo" => "demo_tasks",
        "compiler_builtins" | "libm" => "soft_float",
        "core" if module == "fmt" => "formatting",
        _ => "other",
    }
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
struct Usage {
    rom_bytes: u64,
    ram_bytes: u64,
}

#[derive(Debug, Serialize)]
struct SectionRow {
    name: String,
    rom_bytes: u64,
    ram_bytes: u64,
}

#[derive(Debug, Default, Serialize)]
struct SwitchStatic {
    /// Instructions of `_mmk_trap`: the trap entry and exit of a syscall (save and restore
    /// of `s0`, `s1` and `mepc`, the yield fast path or the general call, `mret`); a yield
    /// runs about half of them. Interrupts additionally run parts of `_mmk_trap_irq` (every
    /// other register).
    trap_entry_exit_instructions: u64,
    /// Size in instructions of the yield fast path in Rust: `mmk_yield_rust` and
    /// `Kernel::yield_switch` (loop-free; its rare general case calls `schedule`).
    yield_path_instructions: u64,
    /// Instructions of `_mmk_trap_irq` (size).
    trap_interrupt_extra_instructions: u64,
    /// Size in instructions of the Rust trap handler (not all run on one path).
    trap_handler_instructions: u64,
    /// Size in instructions of `Kernel::schedule` (loop-free).
    schedule_instructions: u64,
    /// Size in instructions of `ReadyQueue::pop_highest` (loop-free).
    pop_highest_instructions: u64,
}

#[derive(Debug, Default, Serialize)]
struct Report {
    elf: String,
    rom_bytes_total: u64,
    ram_bytes_total: u64,
    rom_bytes_kernel: u64,
    ram_bytes_kernel: u64,
    rom_goal_bytes_kernel: u64,
    sections: Vec<SectionRow>,
    components: BTreeMap<&'static str, Usage>,
    task_capacity: Option<u32>,
    context_switch_instructions: Option<u64>,
    context_switch_goal_instructions: u64,
    context_switch_static: SwitchStatic,
    /// Interrupt to task wake-up, measured: from the interrupted instruction to the woken
    /// task running, through a device interrupt whose handler only notifies the task.
    irq_wake_instructions: Option<u64>,
    irq_wake_goal_instructions: u64,
    /// The same with the demo's UART receive handler (reads the byte, queues it).
    irq_rx_wake_instructions: Option<u64>,
    /// ROM of the priority-ceiling locks (kernel rules and platform entry/exit).
    lock_rom_bytes: u64,
    /// Instructions of one uncontended lock and unlock, measured.
    lock_uncontended_instructions: Option<u64>,
    /// ROM of the interrupt-to-task queue (its instantiations in the firmware).
    queue_rom_bytes: u64,
    timer_interrupts: Option<u64>,
    idle_tick_interrupts: Option<u64>,
    log: Option<String>,
}

fn add_rom(c: &mut BTreeMap<&'static str, Usage>, key: &'static str, bytes: u64) {
    c.entry(key).or_default().rom_bytes += bytes;
}

fn add_ram(c: &mut BTreeMap<&'static str, Usage>, key: &'static str, bytes: u64) {
    c.entry(key).or_default().ram_bytes += bytes;
}

fn instructions_of(elf: &Elf, pred: impl Fn(&[String], &Symbol) -> bool) -> u64 {
    elf.symbols
        .iter()
        .find(|s| pred(&path_words(&s.name), s))
        .and_then(|s| elf.symbol_bytes(s))
        .map_or(0, |b| count_instructions(b) as u64)
}

fn has(words: &[String], a: &str, b: &str) -> bool {
    words.windows(2).any(|w| w[0] == a && w[1] == b)
        || (words.iter().any(|w| w == a) && words.iter().any(|w| w == b))
}

/// Figures the demo printed.
#[derive(Debug, Default, PartialEq, Eq)]
struct LogFigures {
    switch: Option<u64>,
    timer: Option<u64>,
    idle: Option<u64>,
    irq_wake: Option<u64>,
    irq_rx_wake: Option<u64>,
    lock: Option<u64>,
}

fn read_log(path: &Path) -> Result<LogFigures> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the QEMU log {}", path.display()))?;
    Ok(parse_log(&text))
}

fn parse_log(text: &str) -> LogFigures {
    let number_after = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let mut f = LogFigures::default();
    for line in text.lines() {
        if line.starts_with("# context switch (") {
            f.switch = number_after(line, "):");
        }
        if line.starts_with("# interrupt to task wake-up (doorbell") {
            f.irq_wake = number_after(line, "): max");
        }
        if line.starts_with("# interrupt to task wake-up (received byte") {
            f.irq_rx_wake = number_after(line, "): max");
        }
        if line.starts_with("# lock + unlock, uncontended:") {
            f.lock = number_after(line, "uncontended:");
        }
        if line.starts_with("summary:") {
            f.timer = number_after(line, "timer interrupts");
            f.idle = number_after(line, "idle tick interrupts");
        }
    }
    f
}

/// The allocated sections with their ROM and RAM bytes, and the totals of each.
fn section_rows(elf: &Elf) -> (Vec<SectionRow>, u64, u64) {
    let mut sections = Vec::new();
    let (mut rom_total, mut ram_total) = (0, 0);
    for s in &elf.sections {
        if s.flags & SHF_ALLOC == 0 || s.size == 0 {
            continue;
        }
        let size = u64::from(s.size);
        let rom = if s.kind == SHT_NOBITS { 0 } else { size };
        let ram = if s.flags & SHF_WRITE != 0 { size } else { 0 };
        rom_total += rom;
        ram_total += ram;
        sections.push(SectionRow {
            name: s.name.clone(),
            rom_bytes: rom,
            ram_bytes: ram,
        });
    }
    (sections, rom_total, ram_total)
}

/// Instruction counts of the context-switch paths, read from the code.
fn switch_static(elf: &Elf) -> SwitchStatic {
    SwitchStatic {
        trap_entry_exit_instructions: instructions_of(elf, |_, s| s.name == "_mmk_trap"),
        trap_interrupt_extra_instructions: instructions_of(elf, |_, s| s.name == "_mmk_trap_irq"),
        yield_path_instructions: instructions_of(elf, |_, s| s.name == "mmk_yield_rust")
            + instructions_of(elf, |w, _| has(w, "Kernel", "yield_switch")),
        trap_handler_instructions: instructions_of(elf, |_, s| s.name == "mmk_trap_rust"),
        schedule_instructions: instructions_of(elf, |w, _| has(w, "Kernel", "schedule")),
        pop_highest_instructions: instructions_of(elf, |w, _| has(w, "ReadyQueue", "pop_highest")),
    }
}

fn analyse(elf_path: &Path, log: Option<&Path>) -> Result<Report> {
    let bytes = std::fs::read(elf_path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read the firmware ELF {} ({e}); build it first with \
             `firmware/mcu-demo/run-qemu.sh` (or `cd firmware/mcu-demo && cargo build --release`), \
             or pass --elf",
            elf_path.display()
        )
    })?;
    let elf = Elf::parse(bytes).with_context(|| format!("reading {}", elf_path.display()))?;

    let (sections, rom_total, ram_total) = section_rows(&elf);

    let mut components: BTreeMap<&'static str, Usage> =
        COMPONENTS.iter().map(|c| (c.0, Usage::default())).collect();
    // Aliases (e.g. `__adddf3` and its mangled name) share an address: count each once,
    // under the most specific name.
    let mut by_addr: BTreeMap<(usize, u32), (&'static str, &Symbol)> = BTreeMap::new();
    for s in &elf.symbols {
        let sec = &elf.sections[s.section];
        if sec.flags & SHF_ALLOC == 0 {
            continue;
        }
        let c = classify(&s.name);
        by_addr
            .entry((s.section, s.addr))
            .and_modify(|e| {
                if e.0 == "other" || (e.0 == "soft_float" && c != "other") {
                    *e = (c, s);
                }
            })
            .or_insert((c, s));
    }
    let mut kernel_state = None;
    let mut attributed_rom = 0;
    let mut attributed_ram = 0;
    for (c, s) in by_addr.values() {
        let sec = &elf.sections[s.section];
        let size = u64::from(s.size);
        let words = path_words(&s.name);
        if sec.flags & SHF_WRITE != 0 {
            if words.iter().any(|w| w == "STATE") && *c == "arch_glue" {
                // Split below with the layout record.
                kernel_state = Some(size);
            } else {
                let key = if words.iter().any(|w| w == "STACKS") {
                    "demo_tasks"
                } else {
                    c
                };
                add_ram(&mut components, key, size);
                attributed_ram += size;
            }
        }
        if sec.kind != SHT_NOBITS {
            add_rom(&mut components, c, size);
            attributed_rom += size;
        }
    }
    add_rom(
        &mut components,
        "other",
        rom_total.saturating_sub(attributed_rom),
    );

    // Split the kernel state with the layout record.
    let mut task_capacity = None;
    if let Some(layout) = elf.section_bytes(".mmk_layout") {
        let w: Vec<u32> = layout
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if w.len() >= 7 && w[0] == LAYOUT_MAGIC {
            let (kernel, tcbs, ready, timer, global) = (w[1], w[2], w[3], w[4], w[5]);
            // TCBs plus the kernel's own bookkeeping (current task, counters, padding).
            let tcb = kernel.saturating_sub(ready + timer).max(tcbs);
            add_ram(&mut components, "tcb", u64::from(tcb));
            add_ram(&mut components, "ready_queue", u64::from(ready));
            add_ram(&mut components, "timer_queue", u64::from(timer));
            add_ram(
                &mut components,
                "arch_glue",
                u64::from(global.saturating_sub(kernel)),
            );
            task_capacity = Some(w[6]);
            attributed_ram += u64::from(global);
        }
    } else if let Some(size) = kernel_state {
        add_ram(&mut components, "arch_glue", size);
        attributed_ram += size;
    }
    add_ram(
        &mut components,
        "other",
        ram_total.saturating_sub(attributed_ram),
    );

    let kernel_keys: Vec<&str> = COMPONENTS.iter().filter(|c| c.1).map(|c| c.0).collect();
    let rom_kernel = kernel_keys.iter().map(|k| components[k].rom_bytes).sum();
    let ram_kernel = kernel_keys.iter().map(|k| components[k].ram_bytes).sum();

    let switch_static = switch_static(&elf);

    let log_path = match log {
        Some(p) => Some(p.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_LOG)).filter(|p| p.exists()),
    };
    let lock_rom_bytes = components["lock"].rom_bytes;
    let queue_rom_bytes = components["queue"].rom_bytes;
    let figures = match &log_path {
        Some(p) => read_log(p)?,
        None => LogFigures::default(),
    };

    Ok(Report {
        elf: elf_path.display().to_string(),
        rom_bytes_total: rom_total,
        ram_bytes_total: ram_total,
        rom_bytes_kernel: rom_kernel,
        ram_bytes_kernel: ram_kernel,
        rom_goal_bytes_kernel: ROM_GOAL_BYTES,
        sections,
        components,
        task_capacity,
        context_switch_instructions: figures.switch,
        context_switch_goal_instructions: SWITCH_GOAL_INSTRUCTIONS,
        context_switch_static: switch_static,
        irq_wake_instructions: figures.irq_wake,
        irq_wake_goal_instructions: IRQ_WAKE_GOAL_INSTRUCTIONS,
        irq_rx_wake_instructions: figures.irq_rx_wake,
        lock_rom_bytes,
        lock_uncontended_instructions: figures.lock,
        queue_rom_bytes,
        timer_interrupts: figures.timer,
        idle_tick_interrupts: figures.idle,
        log: log_path.map(|p| p.display().to_string()),
    })
}

fn print_table(r: &Report) {
    outln!("MCU kernel size — {}", r.elf);
    outln!();
    outln!("{:<12} {:>10} {:>10}", "section", "ROM bytes", "RAM bytes");
    for s in &r.sections {
        outln!("{:<12} {:>10} {:>10}", s.name, s.rom_bytes, s.ram_bytes);
    }
    outln!(
        "{:<12} {:>10} {:>10}",
        "total",
        r.rom_bytes_total,
        r.ram_bytes_total
    );
    outln!();
    outln!(
        "{:<12} {:>10} {:>10}  what",
        "component",
        "ROM bytes",
        "RAM bytes"
    );
    for (key, kernel, what) in COMPONENTS {
        let u = r.components[key];
        let mark = if kernel { "kernel: " } else { "" };
        outln!(
            "{key:<12} {:>10} {:>10}  {mark}{what}",
            u.rom_bytes,
            u.ram_bytes
        );
    }
    let verdict = if r.rom_bytes_kernel <= r.rom_goal_bytes_kernel {
        "within"
    } else {
        "over"
    };
    outln!(
        "{:<12} {:>10} {:>10}  scheduler, timer, arch glue, interrupts, locks, queue ({verdict} the {} B goal)",
        "kernel",
        r.rom_bytes_kernel,
        r.ram_bytes_kernel,
        r.rom_goal_bytes_kernel
    );
    outln!(
        "  of which: locks {} B, interrupt-to-task queue {} B (its instantiations)",
        r.lock_rom_bytes,
        r.queue_rom_bytes
    );
    if let Some(n) = r.task_capacity {
        outln!("(kernel RAM for a capacity of {n} tasks; task stacks are counted in demo_tasks)");
    }
    outln!();
    let s = &r.context_switch_static;
    match r.context_switch_instructions {
        Some(n) => outln!(
            "context switch: {n} instructions, measured in QEMU (yield to a task of the same level; goal ≤ {})",
            r.context_switch_goal_instructions
        ),
        None => outln!(
            "context switch: not measured (run firmware/mcu-demo/run-qemu.sh, or pass --log)"
        ),
    }
    outln!(
        "  static: syscall trap entry + exit {} instructions (interrupts add up to {}); in \
         size: yield fast path {}, trap handler {}, Kernel::schedule {}, \
         ReadyQueue::pop_highest {}",
        s.trap_entry_exit_instructions,
        s.trap_interrupt_extra_instructions,
        s.yield_path_instructions,
        s.trap_handler_instructions,
        s.schedule_instructions,
        s.pop_highest_instructions
    );
    let verdict = |n: u64, goal: u64| if n <= goal { "within" } else { "OVER" };
    match r.irq_wake_instructions {
        Some(n) => outln!(
            "interrupt to task wake-up: {n} instructions, measured in QEMU (device interrupt whose handler only notifies; {} the goal of ≤ {})",
            verdict(n, r.irq_wake_goal_instructions),
            r.irq_wake_goal_instructions
        ),
        None => outln!("interrupt to task wake-up: not measured (no QEMU log)"),
    }
    if let Some(n) = r.irq_rx_wake_instructions {
        outln!(
            "  with the demo's UART receive handler (reads the byte, queues it): {n} instructions"
        );
    }
    if let Some(n) = r.lock_uncontended_instructions {
        outln!("lock + unlock, uncontended: {n} instructions (no kernel entry)");
    }
    match (r.timer_interrupts, r.idle_tick_interrupts) {
        (Some(t), Some(i)) => {
            outln!("timer interrupts in the demo run: {t}, of which idle ticks: {i} (tickless)")
        }
        _ => outln!("timer interrupts: not measured (no QEMU log)"),
    }
}

pub fn run(a: KernelSizeArgs) -> Result<ExitCode> {
    if let Some(p) = &a.log
        && !p.exists()
    {
        bail!(
            "the QEMU log {} does not exist; run firmware/mcu-demo/run-qemu.sh to write it",
            p.display()
        );
    }
    let report = analyse(&a.elf, a.log.as_deref())?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_follow_module_paths() {
        assert_eq!(
            classify(
                "_ZN14mmsched_kernel5ready19ReadyQueue$LT$_$GT$11pop_highest17h7e6a2fde0b9561a9E"
            ),
            "ready_queue"
        );
        assert_eq!(
            classify("_ZN14mmsched_kernel5timer19TimerQueue$LT$_$GT$6insert17ha1770ddd4048ba6fE"),
            "timer_queue"
        );
        assert_eq!(
            classify("_ZN14mmsched_kernel6kernel15Kernel$LT$_$GT$8schedule17h7b0cc7877af60e9cE"),
            "tcb"
        );
        assert_eq!(
            classify(
                "_ZN97_$LT$mmsched_kernel..platform..riscv..MachineTimer$u20$as$u20$mmsched_kernel..platform..Timer$GT$9set_alarm17he1e91329c47f78f3E"
            ),
            "arch_glue"
        );
        assert_eq!(classify("_mmk_trap"), "arch_glue");
        assert_eq!(classify("mmk_yield_rust"), "arch_glue");
        assert_eq!(
            classify("_RNvNtNtCsheXoZokrRQM_17compiler_builtins5float3add8___adddf3"),
            "soft_float"
        );
        assert_eq!(classify("__adddf3"), "soft_float");
        assert_eq!(
            classify("_RNvMsa_NtCscB4ypgrvJIh_4core3fmtNtB5_9Formatter3pad"),
            "formatting"
        );
        assert_eq!(
            classify("_ZN12mmsched_core4ldti8evaluate17h0123456789abcdefE"),
            "ldti"
        );
        assert_eq!(classify("memcpy"), "other");
    }

    #[test]
    fn missing_elf_says_how_to_build_it() {
        let err = analyse(Path::new("/nonexistent/mcu-demo"), None).unwrap_err();
        assert!(err.to_string().contains("run-qemu.sh"), "{err}");
    }

    #[test]
    fn log_figures_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("qemu.log");
        std::fs::write(
            &p,
            "# context switch (yield to a task of the same level): 87 instructions\n\
             # lock + unlock, uncontended: 94 instructions\n\
             # interrupt to task wake-up (doorbell, the handler only notifies): max 171 instructions, min 170\n\
             # interrupt to task wake-up (received byte, the handler queues it): max 197 instructions, min 196, 10 wake-ups measured\n\
             summary: timer interrupts 22, distinct wake-up instants 22, idle tick interrupts 0\n",
        )
        .unwrap();
        assert_eq!(
            read_log(&p).unwrap(),
            LogFigures {
                switch: Some(87),
                timer: Some(22),
                idle: Some(0),
                irq_wake: Some(171),
                irq_rx_wake: Some(197),
                lock: Some(94),
            }
        );
        assert_eq!(parse_log("no figures here\n"), LogFigures::default());
    }

    #[test]
    fn json_keys_are_the_documented_ones() {
        let v = serde_json::to_value(Report::default()).unwrap();
        for key in [
            "rom_bytes_total",
            "ram_bytes_total",
            "rom_bytes_kernel",
            "ram_bytes_kernel",
            "rom_goal_bytes_kernel",
            "sections",
            "components",
            "task_capacity",
            "context_switch_instructions",
            "context_switch_goal_instructions",
            "context_switch_static",
            "irq_wake_instructions",
            "irq_wake_goal_instructions",
            "irq_rx_wake_instructions",
            "lock_rom_bytes",
            "lock_uncontended_instructions",
            "queue_rom_bytes",
            "timer_interrupts",
            "idle_tick_interrupts",
        ] {
            assert!(v.get(key).is_some(), "missing key {key}");
        }
        let kernel: Vec<&str> = COMPONENTS.iter().filter(|c| c.1).map(|c| c.0).collect();
        assert_eq!(
            kernel,
            [
                "tcb",
                "ready_queue",
                "timer_queue",
                "arch_glue",
                "irq",
                "lock",
                "queue"
            ],
            "the kernel figure counts the scheduler, its glue, interrupts, locks and queues"
        );
    }

    #[test]
    fn locks_queues_and_interrupts_have_their_components() {
        assert_eq!(
            classify("_ZN14mmsched_kernel8platform5riscv8resource5enter17hbda7ca5274f17903E"),
            "lock"
        );
        assert_eq!(
            classify(
                "_ZN14mmsched_kernel4lock57_$LT$impl$u20$mmsched_kernel..kernel..Kernel$LT$_$GT$$GT$4lock17h9f6621acf6ba78b4E"
            ),
            "lock"
        );
        assert_eq!(
            classify("_ZN14mmsched_kernel5queue22SpscQueue$LT$S$C$_$GT$4push17h50821cbbe8fe3861E"),
            "queue"
        );
        assert_eq!(
            classify("_ZN14mmsched_kernel8platform5riscv3irq10enable_irq17h0123456789abcdefE"),
            "irq"
        );
        assert_eq!(classify("mmk_irq_begin"), "irq");
        assert_eq!(classify("mmk_irq_end"), "irq");
        assert_eq!(
            classify("_ZN14mmsched_kernel8platform5riscv5spawn17h8381556640ec3a59E"),
            "arch_glue"
        );
    }
}
