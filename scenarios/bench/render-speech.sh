#!/usr/bin/env bash
# Renders the microphone of scenarios/bench/one-worker-wav.toml: one sentence spoken by
# espeak-ng (an independent synthesiser, so transcripts are scored against words mmsched did
# not produce), padded with silence to 6 s, 16 kHz mono WAV; looped by the scenario, that is
# two utterances every 12 s. Usage:
#   scenarios/bench/render-speech.sh [OUT_WAV]   (default: scenarios/bench/speech.wav)
set -euo pipefail
out="${1:-$(dirname "$0")/speech.wav}"
sentence="the north gate closes at noon today"
for tool in espeak-ng sox; do
  command -v "$tool" >/dev/null || { echo "render-speech: install $tool (scripts/setup.sh does)" >&2; exit 1; }
done
tmp="$(mktemp --suffix .wav)"
trap 'rm -f "$tmp"' EXIT
espeak-ng -s 150 -w "$tmp" "$sentence"
# Half a second of silence before the words, then silence up to 6 s in all.
after=$(awk -v d="$(soxi -D "$tmp")" 'BEGIN { a = 5.5 - d; if (a < 0.5) { print "too long" > "/dev/stderr"; exit 1 } printf "%.3f", a }')
sox "$tmp" -r 16000 -c 1 -b 16 "$out" pad 0.5 "$after"
echo "render-speech: '$sentence' in $out ($(soxi -D "$out") s)"
