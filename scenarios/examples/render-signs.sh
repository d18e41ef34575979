#!/usr/bin/env bash
# Renders a few sign images (PNG, 640×360, dark text on white, DejaVu Sans) for the
# signs-folder example, with ffmpeg's drawtext filter: an independent renderer, so the OCR
# output can be checked against text that mmsched did not draw. Usage:
#   scenarios/examples/render-signs.sh [OUT_DIR]     (default: scenarios/examples/signs)
# Prints one line per image: FILE<TAB>TEXT.
set -euo pipefail
out="${1:-$(dirname "$0")/signs}"
font="${FONT:-/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf}"
command -v ffmpeg >/dev/null || { echo "render-signs: install ffmpeg (scripts/setup.sh does)" >&2; exit 1; }
[ -f "$font" ] || { echo "render-signs: no font at $font: install fonts-dejavu-core (scripts/setup.sh does)" >&2; exit 1; }
mkdir -p "$out"
n=0
for text in "EXIT 12" "PLATFORM 3" "GATE B7"; do
  n=$((n + 1))
  file="$out/$(printf '%02d' "$n").png"
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i "color=c=white:s=640x360" \
    -vf "drawtext=fontfile=$font:text='$text':fontsize=72:fontcolor=black:x=(w-tw)/2:y=(h-th)/2" \
    -frames:v 1 "$file"
  printf '%s\t%s\n' "$file" "$text"
done
