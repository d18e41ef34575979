#!/usr/bin/env bash
# Builds the MCU demo (release: opt-level "z", LTO), runs it on QEMU's RISC-V `virt` board
# and compares its UART log with expected.log. Exits non-zero on a build failure, a
# timeout, a failing exit code from the firmware, or any difference in the log.
#
# Needs: the Rust target riscv32imac-unknown-none-elf and qemu-system-riscv32 (Debian
# package qemu-system-misc). Options: --update rewrites expected.log from this run.
#
# The log is deterministic because QEMU runs with -icount shift=0,sleep=off: one instruction
# is one nanosecond of virtual time and idle time is skipped, so the machine timer depends
# only on the instructions executed. Lines starting with '#' carry measured instruction
# counts; they are shown but not compared.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
timeout_secs="${MCU_DEMO_TIMEOUT_SECS:-60}"
elf=target/riscv32imac-unknown-none-elf/release/mcu-demo
log=target/qemu.log

command -v qemu-system-riscv32 >/dev/null || {
    echo "error: qemu-system-riscv32 not found; install the Debian package qemu-system-misc" >&2
    exit 2
}

cargo build --release --quiet

set +e
timeout "$timeout_secs" qemu-system-riscv32 \
    -machine virt -bios none -kernel "$elf" \
    -display none -serial stdio -monitor none \
    -icount shift=0,sleep=off >"$log"
status=$?
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

if [ "${1:-}" = "--update" ]; then
    grep -v '^#' "$log" >expected.log
    echo "expected.log updated"
    exit 0
fi
if ! diff -u expected.log <(grep -v '^#' "$log"); then
    echo "error: the UART log differs from expected.log (above)" >&2
    exit 1
fi
echo "mcu-demo: log matches expected.log"
