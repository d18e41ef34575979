#!/usr/bin/env bash
# mmsched's engines against the mainstream ones on this machine, measured in alternation:
# N pairs of `mmsched bench models --json` and `scripts/bench-mainstream.sh` (the side that
# runs first alternating), then per figure both sides' median (min–max) and the speed ratio
# of each pair as median (min–max). Not part of the test command; takes about 3 minutes a
# pair with every model (set-up of the mainstream engines not counted).
#
# Usage: scripts/bench-ratios.sh [--pairs N] [--only ocr,asr,llm] [--out DIR]
# The release binary is built first (`cargo build --release`) unless $MMSCHED_BIN names one.
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=3 only=ocr,asr,llm out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs="${2:?--pairs takes a number}"; shift 2 ;;
    --only) only="${2:?--only takes a list such as ocr,asr,llm}"; shift 2 ;;
    --out) out="${2:?--out takes a directory}"; shift 2 ;;
    *) echo "bench-ratios: unknown argument '$1' (usage: scripts/bench-ratios.sh [--pairs N] [--only ocr,asr,llm] [--out DIR])" >&2; exit 2 ;;
  esac
done
bin="${MMSCHED_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release -p mmsched >&2
  bin=target/release/mmsched
fi
[ -n "$out" ] || out=$(mktemp -d -t mmsched-ratios.XXXXXX)
exec python3 scripts/bench_ratios.py --pairs "$pairs" --only "$only" --mmsched "$bin" --out "$out"
