#!/usr/bin/env bash
# Renders the frames of scenarios/bench/many-lines.toml: 24 signs of 3 to 5 lines each (PNG,
# 640×360, dark text on white, DejaVu Sans), with ffmpeg's drawtext filter — an independent
# renderer, so the OCR output is scored against text mmsched did not draw — and a
# truth.json giving each file's lines. Usage:
#   scenarios/bench/render-many-lines.sh [OUT_DIR]   (default: scenarios/bench/many-lines)
set -euo pipefail
out="${1:-$(dirname "$0")/many-lines}"
font="${FONT:-/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf}"
command -v ffmpeg >/dev/null || { echo "render-many-lines: install ffmpeg (scripts/setup.sh does)" >&2; exit 1; }
[ -f "$font" ] || { echo "render-many-lines: no font at $font: install fonts-dejavu-core (scripts/setup.sh does)" >&2; exit 1; }
mkdir -p "$out"
# One sign per line of this list; lines of a sign separated by '|'.
signs=(
  "EXIT 12|NORTH STATION|TRAINS EVERY 5 MIN"
  "GATE B7|CLOSES 14:35|BOARDING NOW|FLIGHT LX 318"
  "PLATFORM 3|AIRPORT EXPRESS|NEXT 09:42|STANDING ROOM ONLY|MIND THE GAP"
  "CAUTION|WET FLOOR|USE HANDRAIL"
  "VALVE V-204|PRESSURE 3.2 BAR|TEMP 61 C|CHECK WEEKLY"
  "ROOM 118|MEETING 10:00|PROJECT ORION|LEVEL 1|EAST WING"
  "SPEED LIMIT 50|SCHOOL ZONE|CAMERAS IN USE"
  "INSPECT WELD 7A|PIPE 14 NORTH|LAST CHECK MAY 3|OK TO RUN"
  "PARKING P2|LEVEL MINUS 1|EXIT LEFT|PAY AT MACHINE|OPEN 24 HOURS"
  "DOCK 4|FORKLIFT ONLY|MAX LOAD 2 T"
  "PUMP 9|FLOW 40 LPM|SERIAL 88213|SERVICE DUE JUNE"
  "HALL C|STANDS 12 TO 40|CAFE UPSTAIRS|TOILETS RIGHT|INFO DESK"
  "NO ENTRY|AUTHORISED STAFF|BADGE REQUIRED"
  "BUS 42|CITY CENTRE|VIA MARKET ST|EVERY 10 MIN"
  "FIRE DOOR|KEEP CLOSED|ALARM FITTED|ESCAPE ROUTE|DO NOT BLOCK"
  "TANK T3|DIESEL|CAPACITY 5000 L"
  "LIFT 2|FLOORS 1 TO 9|OUT OF ORDER|USE LIFT 1"
  "ZONE 5|HARD HAT AREA|EAR PROTECTION|HIGH VOLTAGE|KEEP OUT"
  "CHECK IN|DESKS 20 TO 35|BAGS 23 KG"
  "LINE 6|HEADING WEST|4 MIN|8 MIN"
  "BOILER ROOM|GAS SHUT OFF|INSIDE LEFT|TEST MONTHLY|CALL 5521"
  "CARGO 7|FRAGILE|THIS SIDE UP"
  "TICKETS|SINGLE 2.80|RETURN 5.00|DAY PASS 7.50"
  "AISLE 14|PAINT|TOOLS|GARDEN|LIGHTING"
)
truth="{"
sep=""
n=0
for sign in "${signs[@]}"; do
  n=$((n + 1))
  file="$(printf '%02d' "$n").png"
  IFS='|' read -r -a lines <<<"$sign"
  count=${#lines[@]}
  size=$((count >= 5 ? 40 : 46))
  step=$((360 / (count + 1)))
  filters=()
  for i in "${!lines[@]}"; do
    y=$(((i + 1) * step - size / 2))
    # drawtext separates its options with ':', so a colon in the text is escaped.
    text="${lines[$i]//:/\\:}"
    filters+=("drawtext=fontfile=$font:text='$text':fontsize=$size:fontcolor=black:x=(w-tw)/2:y=$y")
  done
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i "color=c=white:s=640x360" \
    -vf "$(IFS=,; echo "${filters[*]}")" -frames:v 1 "$out/$file"
  json_lines=$(printf '"%s",' "${lines[@]}")
  truth+="$sep\"$file\": [${json_lines%,}]"
  sep=","
done
truth+="}"
echo "$truth" >"$out/truth.json"
echo "render-many-lines: $n frames and truth.json in $out"
