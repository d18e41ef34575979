#!/usr/bin/env bash
# Runs the Arm (aarch64) build of mmsched under qemu user-mode emulation and compares each
# result with the x86 build's result of the same command on the same input:
#   infer ocr    a sign rendered by ffmpeg (not by mmsched), the longest of the three: the
#                same lines
#   infer vad    the shipped speech clip: the same speech segments
#   infer asr    the shipped clip and an espeak-ng sentence, each encoded over its own
#                length (--span audio): word error rate 0
#   infer llm    greedy, 16 tokens: the same token ids
#   run          10 s of scenarios/emulation/arm-qemu.toml (signs, voice activity, a
#                prompt): the same text for every input both runs answered (what the
#                emulated run answers in time depends on its speed: kinds it did not
#                answer are printed as not compared)
# Both binaries read the same model cache ($MMSCHED_HOME): the Arm one takes ONNX Runtime's
# aarch64 library (lib/aarch64/), so both run the same default engines.
#   scripts/check-aarch64.sh [ARM_BINARY [X86_BINARY]]
# Defaults: target/aarch64-unknown-linux-gnu/release/mmsched (scripts/cross-aarch64.sh
# builds it) and target/debug/mmsched (the test build; its engines are the same optimised
# code as release). Prints each comparison and the emulated step's wall time (CI time, not
# a figure of any device); exits 1 on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir="${CARGO_TARGET_DIR:-target}"
arm="${1:-$target_dir/aarch64-unknown-linux-gnu/release/mmsched}"
x86="${2:-$target_dir/debug/mmsched}"
sysroot=/usr/aarch64-linux-gnu
for b in "$arm" "$x86"; do
  [[ -x "$b" ]] || { echo "check-aarch64: no binary at $b (scripts/cross-aarch64.sh, cargo build -p mmsched)" >&2; exit 1; }
done
command -v qemu-aarch64 >/dev/null || { echo "check-aarch64: qemu-aarch64 not found: run scripts/setup.sh" >&2; exit 1; }
file "$arm" | grep -q "ARM aarch64" || { echo "check-aarch64: $arm is not an aarch64 binary: $(file -b "$arm")" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The emulated processor is a Cortex-A76, the big core of RK3588-class boards. qemu's
# default (`max`) also has SVE and SME, which it emulates 20x slower than NEON, and ONNX
# Runtime takes them when present.
# qemu 7.2 (Debian 12) hands an Arm process the host's /proc/cpuinfo; ONNX Runtime's CPU
# detection (the cpuinfo library) finds no Arm core in it and dereferences NULL. qemu 8.2
# and later describe the emulated cores there themselves; for 7.2, the root given with -L
# (the Arm sysroot's libraries, which qemu looks in first for every absolute path) holds
# such a /proc/cpuinfo: one Cortex-A76 (MIDR 0x414fd0b1, qemu's) per host core.
root="$work/qemu-root"
mkdir -p "$root/proc"
ln -s "$sysroot/lib" "$root/lib"
for ((i = 0; i < $(nproc); i++)); do
  printf 'processor\t: %d\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n\n' "$i"
done >"$root/proc/cpuinfo"
emulated() { qemu-aarch64 -cpu cortex-a76 -L "$root" "$arm" "$@"; }
# The Arm binary's ONNX Runtime library, next to the x86 one (already there: no download).
"$x86" models fetch --arch aarch64 --only onnxruntime --json >/dev/null

failed=0
# compare KIND NAME -- ARGS…: runs `mmsched ARGS… ` on both builds, then compares.
compare() {
  local kind="$1" name="$2"
  shift 3
  "$x86" "$@" >"$work/$name.x86" 2>"$work/$name.x86.err" \
    || { echo "FAILED    x86 $*"; cat "$work/$name.x86.err" >&2; failed=1; return; }
  local t0=$SECONDS
  emulated "$@" >"$work/$name.arm" 2>"$work/$name.arm.err" \
    || { echo "FAILED    arm $*"; cat "$work/$name.arm.err" >&2; failed=1; return; }
  local took=$((SECONDS - t0))
  python3 scripts/compare_arches.py "$kind" "$work/$name.x86" "$work/$name.arm" || failed=1
  echo "          ($name: ${took} s emulated)"
}

echo "check-aarch64: $(emulated --version) under $(qemu-aarch64 --version | head -n1)"
# Into scenarios/examples/signs/, where the emulation scenario's camera reads them too. One
# sign is read under emulation (45 s or more each): the one with the most characters. The
# three share the detector and the recogniser, so a second sign would test the same code.
sign="" text=""
while IFS=$'\t' read -r png words; do
  if ((${#words} > ${#text})); then sign="$png" text="$words"; fi
done < <(scenarios/examples/render-signs.sh)
echo "          sign: $text"
compare ocr "ocr-$(basename "$sign" .png)" -- infer ocr --image "$sign" --json

clip="${MMSCHED_HOME:-$HOME/.cache/mmsched}/testdata/beckett.wav"
[[ -f "$clip" ]] || { echo "check-aarch64: $clip is missing: run mmsched models fetch" >&2; exit 1; }
compare vad vad-beckett -- infer vad --wav "$clip" --json
# Whisper's encoder over its whole 30 s window (the default) takes minutes under emulation;
# --span audio encodes the clip's own length (10 s) and gives the same transcript on x86.
compare asr asr-beckett -- infer asr --wav "$clip" --span audio --json
# A second speaker: a sentence spoken by espeak-ng.
espeak-ng -s 150 -w "$work/sentence.wav" "The red train leaves from platform seven at noon."
compare asr asr-sentence -- infer asr --wav "$work/sentence.wav" --span audio --json
compare llm llm -- infer llm --prompt "The three primary colours are" --max-tokens 16 --json

# --no-platform: no real-time priority for emulated threads that run 10-40x longer than
# their native timing, on a machine they share.
run_args=(run --scenario scenarios/emulation/arm-qemu.toml --duration 10 --no-platform)
"$x86" "${run_args[@]}" --report "$work/report-x86" --results "$work/run.x86" >/dev/null 2>"$work/run.x86.err" \
  || { echo "FAILED    x86 run"; cat "$work/run.x86.err" >&2; failed=1; }
t0=$SECONDS
emulated "${run_args[@]}" --report "$work/report-arm" --results "$work/run.arm" >/dev/null 2>"$work/run.arm.err" \
  || { echo "FAILED    arm run"; cat "$work/run.arm.err" >&2; failed=1; }
if [[ -s "$work/run.x86" && -s "$work/run.arm" ]]; then
  python3 scripts/compare_arches.py run "$work/run.x86" "$work/run.arm" || failed=1
fi
echo "          (run: $((SECONDS - t0)) s emulated)"

if [[ $failed -ne 0 ]]; then
  echo "check-aarch64: the Arm build differs from the x86 build (see above)" >&2
  exit 1
fi
echo "check-aarch64: the Arm build's results equal the x86 build's"
