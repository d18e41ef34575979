//! The MCU demo: three tasks under the mmsched kernel on QEMU's RISC-V `virt` board.
//!
//! - **sensor** (priority 25): an IMU sample every 5 ms (200 Hz);
//! - **audio** (priority 20): an audio frame every 20 ms;
//! - **ldti** (priority 10): twice (at 23 ms and 73 ms) evaluates the LDTI health index on
//!   what the sensor task measured, re-evaluating it back to back for 4 ms as a CPU-bound
//!   stretch, so the log shows the sensor task preempting it. The first window calibrates
//!   the latency reference L₀ (the wake-up latency of the highest level on this board).
//!
//! The audio and ldti tasks book their time in a slot book (1 ms slots, the S1 state machine
//! with first-fit reservation): each audio frame reserves the two slots of the next frame, and
//! activates and releases them when it runs; each ldti window reserves four slots when it
//! starts, first fit after the slots already held.
//!
//! Every line of the log is deterministic: tasks print their *planned* times (the kernel
//! wakes them at exactly those ticks), and QEMU runs with `-icount`, which makes the timer a
//! function of the instructions executed. Lines starting with `#` carry measured
//! instruction counts; the log check skips them. At 100 ms the ldti task prints the kernel's
//! counters, checks that exactly one timer interrupt fired per distinct wake-up instant (no
//! idle ticks: the kernel is tickless), measures one context switch, and ends the run
//! through the test device.
//!
//! The context switch is measured with `minstret`, which under `-icount shift=0` counts
//! instructions exactly: the ldti task starts a probe task at its own level and the two
//! yield to each other; in the steady state (both parked in `yield`), the ldti task reads
//! the counter and yields, and the probe reads it when it resumes. The difference covers
//! the call into the yield wrapper, `ecall`, the register save, the kernel's decision, the
//! restore, `mret` and the return (plus the two counter reads).
#![no_std]
#![no_main]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use mmsched_core::Modality;
use mmsched_core::ldti::LdtiInputs;
use mmsched_kernel::Priority;
use mmsched_kernel::health::HealthMonitor;
use mmsched_kernel::platform::riscv::{self as mcu, TICKS_PER_MILLI};
use mmsched_kernel::slots::{Reservation, SlotBook};

#[global_allocator]
static NO_HEAP: mcu::NoHeap = mcu::NoHeap;

mmsched_kernel::mcu_entry!(main);

const SENSOR_PERIOD_TICKS: u32 = 5 * TICKS_PER_MILLI;
const AUDIO_PERIOD_TICKS: u32 = 20 * TICKS_PER_MILLI;
const LDTI_PHASE_TICKS: u32 = 23 * TICKS_PER_MILLI;
const LDTI_PERIOD_TICKS: u32 = 50 * TICKS_PER_MILLI;
const LDTI_WINDOWS: u32 = 2;
const LDTI_BUSY_TICKS: u32 = 4 * TICKS_PER_MILLI;
const RUN_TICKS: u32 = 100 * TICKS_PER_MILLI;
const NANOS_PER_TICK: u64 = 100;

/// Slot length: 1 ms.
const SLOT_TICKS: u32 = TICKS_PER_MILLI;
/// The booking window: 32 slots ahead.
const SLOT_WINDOW: usize = 32;
const AUDIO_SLOTS: u32 = 2;
const LDTI_SLOTS: u32 = 4;

/// The MCU's own slot book.
static SLOTS: mcu::IrqMutex<SlotBook<SLOT_WINDOW>> = mcu::IrqMutex::new(SlotBook::new(0));

/// Tick at which the schedule starts (planned time 0).
static START_TICKS: AtomicU32 = AtomicU32::new(0);
/// Largest wake-up latency of the sensor task since the last LDTI window, in ticks.
static MAX_WAKE_LATENCY_TICKS: AtomicU32 = AtomicU32::new(0);
static SENSOR_SAMPLES: AtomicU32 = AtomicU32::new(0);
/// `minstret` just before a measured call into the kernel.
static MARK_INSTRET: AtomicU32 = AtomicU32::new(0);
/// Instructions from the sensor task's sleep call to the audio task running.
static SLEEP_SWITCH_INSTRUCTIONS: AtomicU32 = AtomicU32::new(0);

macro_rules! log {
    ($($arg:tt)*) => { mcu::log(format_args!($($arg)*)) };
}

/// Prints a planned time, relative to the start, as `[  12.345 ms]`.
struct Ms(u32);

impl core::fmt::Display for Ms {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let micros = self.0 / (TICKS_PER_MILLI / 1000);
        write!(f, "[{:4}.{:03} ms]", micros / 1000, micros % 1000)
    }
}

fn start() -> u32 {
    START_TICKS.load(Ordering::Relaxed)
}

/// Sleeps until `offset_ticks` after the start and returns the wake-up latency in ticks.
fn sleep_until_offset(offset_ticks: u32) -> u32 {
    let at = start().wrapping_add(offset_ticks);
    if let Err(e) = mcu::sleep_until(at) {
        log!("sleep refused: {e}");
        mcu::exit(3);
    }
    mcu::now_ticks().wrapping_sub(at)
}

fn record_latency(ticks: u32) {
    MAX_WAKE_LATENCY_TICKS.fetch_max(ticks, Ordering::Relaxed);
}

fn sensor() -> ! {
    let mut k: u32 = 0;
    loop {
        log!("{} sensor  sample {k}", Ms(k * SENSOR_PERIOD_TICKS));
        SENSOR_SAMPLES.fetch_add(1, Ordering::Relaxed);
        k += 1;
        MARK_INSTRET.store(mcu::instructions_retired(), Ordering::Relaxed);
        record_latency(sleep_until_offset(k * SENSOR_PERIOD_TICKS));
    }
}

/// Books `len` slots first-fit from `earliest_slot` (moving the window to `now_slot`).
fn book(modality: Modality, now_slot: u32, earliest_slot: u32, len: u32) -> Option<Reservation> {
    SLOTS.lock(|b| {
        b.advance_to(now_slot);
        match b.reserve(modality, earliest_slot, len) {
            Ok(r) => Some(r),
            Err(e) => {
                log!("slot booking refused: {e}");
                None
            }
        }
    })
}

/// Fires the booked slot `slot` (RESERVED → ACTIVE); `false` when it was not booked.
fn activate(slot: u32) -> bool {
    SLOTS.lock(|b| {
        b.advance_to(slot);
        b.activate(slot).is_ok()
    })
}

fn release(r: &Reservation) {
    SLOTS.lock(|b| {
        if let Err(e) = b.release(r) {
            log!("slot release refused: {e}");
        }
    });
}

fn audio() -> ! {
    let mut k: u32 = 0;
    let frame_slots = AUDIO_PERIOD_TICKS / SLOT_TICKS;
    let mut booked = book(Modality::Audio, 0, 0, AUDIO_SLOTS);
    loop {
        let planned = k * AUDIO_PERIOD_TICKS;
        let slot = planned / SLOT_TICKS;
        let state = match booked {
            Some(r) if r.start_slot == slot && activate(slot) => "active",
            _ => "not booked",
        };
        log!("{} audio   frame {k}, slot {slot} {state}", Ms(planned));
        if let Some(r) = booked.take() {
            release(&r);
        }
        // A standing reservation: book the next frame's slots now.
        booked = book(Modality::Audio, slot, slot + frame_slots, AUDIO_SLOTS);
        k += 1;
        sleep_until_offset(k * AUDIO_PERIOD_TICKS);
        // The sensor task woke at the same instant, ran first (higher level) and went back
        // to sleep: the audio task runs right after that switch.
        let switch = mcu::instructions_retired().wrapping_sub(MARK_INSTRET.load(Ordering::Relaxed));
        SLEEP_SWITCH_INSTRUCTIONS.store(switch, Ordering::Relaxed);
    }
}

fn ldti() -> ! {
    let monitor = HealthMonitor::default();
    let mut samples_before = 0;
    let mut latency_ref_nanos = 0;
    for w in 0..LDTI_WINDOWS {
        let planned = LDTI_PHASE_TICKS + w * LDTI_PERIOD_TICKS;
        sleep_until_offset(planned);
        let slot = planned / SLOT_TICKS;
        let slots = book(Modality::Log, slot, slot, LDTI_SLOTS);
        match slots {
            Some(r) => log!(
                "{} ldti    window {w} begins, slots {}..{} reserved",
                Ms(planned),
                r.start_slot,
                r.start_slot + r.len
            ),
            None => log!("{} ldti    window {w} begins without slots", Ms(planned)),
        }
        let samples = SENSOR_SAMPLES.load(Ordering::Relaxed);
        let expected = if w == 0 {
            planned / SENSOR_PERIOD_TICKS + 1
        } else {
            LDTI_PERIOD_TICKS / SENSOR_PERIOD_TICKS
        };
        let latency_nanos =
            u64::from(MAX_WAKE_LATENCY_TICKS.swap(0, Ordering::Relaxed)) * NANOS_PER_TICK;
        if w == 0 {
            latency_ref_nanos = latency_nanos;
        }
        let inputs = LdtiInputs {
            latency_p99_nanos: latency_nanos,
            latency_ref_nanos,
            // One oscillator drives both the core and the timer on this board.
            drift_ppm: 0.0,
            throughput: f64::from(samples - samples_before),
            throughput_max: f64::from(expected),
        };
        samples_before = samples;
        // Rolling re-evaluation for a CPU-bound stretch (preempted by the sensor task).
        let end = mcu::now_ticks().wrapping_add(LDTI_BUSY_TICKS);
        let mut evaluations: u32 = 0;
        let mut health = monitor.evaluate(&inputs);
        let mut instructions = 0;
        while mmsched_kernel::timer::tick_before(mcu::now_ticks(), end) {
            let before = mcu::instructions_retired();
            health = black_box(monitor.evaluate(black_box(&inputs)));
            instructions = mcu::instructions_retired().wrapping_sub(before);
            evaluations += 1;
        }
        log!(
            "{} ldti    window {w} ends: ldti={} milli, level={}, action={:?}",
            Ms(planned),
            health.ldti_milli(),
            health.level.as_str(),
            health.action
        );
        log!("# ldti: {evaluations} evaluations in the window, {instructions} instructions each");
        if let Some(r) = slots {
            release(&r);
        }
    }
    sleep_until_offset(RUN_TICKS);
    // Measure a context switch: a probe task at this level, then a yield to it.
    let level = Priority::new(10).unwrap_or(Priority::MIN);
    if let Err(e) = mcu::spawn(level, probe) {
        log!("spawn failed: {e}");
        mcu::exit(3);
    }
    mcu::yield_now(); // the probe starts, and yields back
    MARK_INSTRET.store(mcu::instructions_retired(), Ordering::Relaxed);
    mcu::yield_now();
    log!("ldti task resumed after the probe: FAIL");
    mcu::exit(1)
}

fn probe() -> ! {
    mcu::yield_now();
    let switch = mcu::instructions_retired().wrapping_sub(MARK_INSTRET.load(Ordering::Relaxed));
    log!("# context switch (yield to a task of the same level): {switch} instructions");
    summary()
}

fn summary() -> ! {
    let stats = mcu::stats();
    // Distinct wake-up instants in (0, 100 ms]: every 5 ms (the 20 ms audio instants and
    // the final 100 ms coincide with them) plus the two ldti windows at 23 and 73 ms.
    let instants = RUN_TICKS / SENSOR_PERIOD_TICKS + LDTI_WINDOWS;
    log!(
        "summary: timer interrupts {}, distinct wake-up instants {instants}, idle tick interrupts {}",
        stats.timer_interrupts,
        stats.idle_tick_interrupts
    );
    log!("# context switches {}", stats.context_switches);
    log!(
        "# sleep call to next task running: {} instructions",
        SLEEP_SWITCH_INSTRUCTIONS.load(Ordering::Relaxed)
    );
    if stats.timer_interrupts == instants && stats.idle_tick_interrupts == 0 {
        log!("PASS");
        mcu::exit(0)
    }
    log!("FAIL: expected one timer interrupt per wake-up instant and no idle ticks");
    mcu::exit(1)
}

fn main() -> ! {
    log!("mmsched mcu-demo: sensor 5 ms (prio 25), audio 20 ms (prio 20), ldti (prio 10)");
    START_TICKS.store(mcu::now_ticks(), Ordering::Relaxed);
    let tasks: [(u8, fn() -> !); 3] = [(25, sensor), (20, audio), (10, ldti)];
    for (level, entry) in tasks {
        let prio = Priority::new(level).unwrap_or(Priority::MIN);
        if let Err(e) = mcu::spawn(prio, entry) {
            log!("spawn failed: {e}");
            mcu::exit(3);
        }
    }
    mcu::start()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    log!("panic: {}", info.message());
    mcu::exit(4)
}
