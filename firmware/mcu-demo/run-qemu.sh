#!/usr/bin/env bash
# Builds the MCU demo (release: opt-level "z", LTO), runs it on QEMU's RISC-V `virt` board
# with uart-input.txt typed into its UART, and compares its UART log with expected.log.
# Exits non-zero on a build failure, a timeout, a failing exit code from the firmware, or
# any difference in the log.
#
# Needs: the Rust target riscv32imac-unknown-none-elf and qemu-system-riscv32 (Debian
# package qemu-system-misc). The firmware's priorities, slots and LDTI settings come from
# policies/default.toml (or the file in MMSCHED_MCU_POLICY) at build time.
#
# expected.log is written by hand from the schedule the demo must follow (see the comments
# in src/main.rs); this script never writes it. The log is deterministic because QEMU runs
# with -icount shift=0,sleep=off: one instruction is one nanosecond of virtual time and idle
# time is skipped, so the machine timer depends only on the instructions executed. The UART
# bytes arrive at host-dependent instants, so the part of the demo that receives them prints
# no times. Lines starting with '#' carry measured instruction counts; they are shown but
# not compared.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
timeout_secs="${MCU_DEMO_TIMEOUT_SECS:-120}"
elf=target/riscv32imac-unknown-none-elf/release/mcu-demo
log=target/qemu.log

if [ "$#" -gt 0 ]; then
    echo "error: run-qemu.sh takes no arguments (expected.log is written by hand, not from a run)" >&2
    exit 2
fi
command -v qemu-system-riscv32 >/dev/null || {
    echo "error: qemu-system-riscv32 not found; install the Debian package qemu-system-misc" >&2
    exit 2
}

cargo build --release --quiet

# The UART's input: QEMU reads it from a FIFO. Once the firmware says its receive interrupt
# is on, the first line of uart-input.txt is typed one byte every 50 ms (so the receiving
# task is waiting for each), then the rest at once (a burst its queue cannot hold).
fifo=target/uart-input.fifo
rm -f "$fifo"
mkfifo "$fifo"
set +e
timeout "$timeout_secs" qemu-system-riscv32 \
    -machine virt -bios none -kernel "$elf" \
    -display none -serial stdio -monitor none \
    -icount shift=0,sleep=off <"$fifo" >"$log" &
qemu=$!
# If QEMU stops early, writing to the FIFO fails instead of killing this script, which
# then reports QEMU's status and log.
trap '' PIPE
exec 3>"$fifo"
for _ in $(seq 600); do
    grep -q '^uart    receive interrupt on' "$log" 2>/dev/null && break
    kill -0 "$qemu" 2>/dev/null || break
    sleep 0.1
done
first_line="$(head -n 1 uart-input.txt)"
for ((i = 0; i < ${#first_line}; i++)); do
    printf '%s' "${first_line:i:1}" >&3 2>/dev/null || break
    sleep 0.05
done
printf '\n' >&3 2>/dev/null
tail -n +2 uart-input.txt >&3 2>/dev/null
exec 3>&-
wait "$qemu"
status=$?
rm -f "$fifo"
set -e
cat "$log"
if [ "$status" -eq 124 ]; then
    echo "error: QEMU did not finish within ${timeout_secs} s" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "error: the firmware exited with status $status" >&2
    exit 1
fi
if ! diff -u <(grep -v '^#' expected.log) <(grep -v '^#' "$log"); then
    echo "error: the UART log differs from expected.log (above)" >&2
    exit 1
fi
echo "mcu-demo: log matches expected.log"
