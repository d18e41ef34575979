#!/usr/bin/env bash
# A real-model soak of mmsched as a service (docs/long-runs.md): `serve --models
# --scenario` on the shipped ar-glasses scenario with its microphone fed over RTP by ffmpeg
# (speech in a loop, throughout), OpenAI clients (the official `openai` package) asking for
# chat answers and transcriptions throughout, the report written every sample. It samples
# the server's RSS, open files and threads, the disk its trace and report take, and each
# class's on-time share, and fails when a slope after warm-up is above its goal:
#
#   scripts/soak.sh HOURS [OUT_DIR]      e.g. scripts/soak.sh 2, or scripts/soak.sh 0.1
#
# Writes OUT_DIR/samples.csv, OUT_DIR/soak.svg (the plot), OUT_DIR/verdict.json and the
# server's report (OUT_DIR/report). Samples every 60 s (runs shorter than an hour sample
# 60 times over the run, at least every 5 s). Settings, by environment:
#   MMSCHED_BIN            the binary (default: target/release/mmsched, else target/debug)
#   SOAK_WARMUP_S          samples before this are not in the slopes (default: a third
#                          of the run, 60 to 600 s: the engines still take a step of
#                          RSS up to nine minutes in, as each first meets an input size)
#   SOAK_RSS_SLOPE_MAX     MB per minute (default 0.1, the goal of issue #43)
#   SOAK_FD_SLOPE_MAX, SOAK_THREAD_SLOPE_MAX   per minute (default 0.05)
#   SOAK_TRACE_MIB         --trace-max-mib of the server (default 64)
#   SOAK_REPORT_MIB        what the report may take beside the trace (default 16)
#   SOAK_CHAT_EVERY_S, SOAK_ASR_EVERY_S   how often the clients ask (default 10 and 30)
#   SOAK_JUDGE             `all` (default) judges every goal; `short` (CI's few minutes)
#                          judges the server staying up, the clients being answered and the
#                          disk cap, and only prints the slopes and the on-time shares:
#                          minutes in, the engines are still warming up (RSS steps of 4 to
#                          16 MB) and one more keep-alive connection is a step of open files
# Uses only what scripts/setup.sh installs: ffmpeg, espeak-ng, curl, python3 and the
# `openai` virtual environment at $MMSCHED_HOME/venv-openai.
set -euo pipefail
cd "$(dirname "$0")/.."

hours="${1:?usage: scripts/soak.sh HOURS [OUT_DIR] (HOURS may be a fraction, e.g. 0.1)}"
out="${2:-soak-$(date -u +%Y%m%dT%H%M%SZ)}"
duration_s=$(python3 -c "import sys; h=float(sys.argv[1]); assert 0 < h <= 24*14; print(int(h*3600))" "$hours") \
  || { echo "soak: HOURS must be a number above 0 (at most two weeks), e.g. 2 or 0.1" >&2; exit 2; }
home="${MMSCHED_HOME:-$HOME/.cache/mmsched}"
venv="$home/venv-openai/bin/python"
bin="${MMSCHED_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x target/release/mmsched ]; then bin=target/release/mmsched; else bin=target/debug/mmsched; fi
fi
for need in ffmpeg espeak-ng curl python3; do
  command -v "$need" >/dev/null || { echo "soak: $need is missing: run scripts/setup.sh" >&2; exit 2; }
done
[ -x "$venv" ] || { echo "soak: no openai venv at $venv: run scripts/setup.sh" >&2; exit 2; }
[ -x "$bin" ] || { echo "soak: no binary at $bin: build it (cargo build --release -p mmsched) or set MMSCHED_BIN" >&2; exit 2; }

interval_s=$(( duration_s / 60 )); [ "$interval_s" -gt 60 ] && interval_s=60; [ "$interval_s" -lt 5 ] && interval_s=5
warmup_default=$(( duration_s / 3 )); [ "$warmup_default" -lt 60 ] && warmup_default=60; [ "$warmup_default" -gt 600 ] && warmup_default=600
warmup_s="${SOAK_WARMUP_S:-$warmup_default}"
trace_mib="${SOAK_TRACE_MIB:-64}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$out/work"
mkdir -p "$work"

# Free loopback ports for the server and the microphone.
read -r port rtp_port < <(python3 -c '
import socket
s = [socket.socket(socket.AF_INET, t) for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM)]
for x in s: x.bind(("127.0.0.1", 0))
print(s[0].getsockname()[1], s[1].getsockname()[1])')

# The shipped ar-glasses scenario, its microphone over RTP on that port.
python3 - "$rtp_port" scenarios/ar-glasses.toml "$work/soak.toml" <<'EOF'
import sys
port, src, dst = sys.argv[1:]
out, in_mic = [], False
for line in open(src):
    if line.startswith("[["):
        in_mic = False
    if line.strip() == 'name = "mic"':
        in_mic = True
    if in_mic and line.startswith("jitter"):
        # The network's delay is real over RTP: no simulated jitter.
        line = f'source = {{ kind = "rtp", port = {port}, payload_type = 97, sample_rate_hz = 16000 }}\n'
    out.append(line)
text = "".join(out)
assert "kind = \"rtp\"" in text, "the ar-glasses microphone stream was not found"
open(dst, "w").write(text.replace('name = "ar-glasses"', 'name = "ar-glasses-rtp-soak"'))
EOF

# Speech with pauses, looped by the sender for the whole run.
espeak-ng -v en-us -s 150 -w "$work/a.wav" "The red train leaves from platform seven at noon."
espeak-ng -v en-us -s 150 -w "$work/b.wav" "Please turn left at the next corner and stop."
ffmpeg -hide_banner -loglevel error -y -i "$work/a.wav" -i "$work/b.wav" \
  -filter_complex "[0:a]apad=pad_dur=3[a];[1:a]apad=pad_dur=4[b];[a][b]concat=n=2:v=0:a=1" \
  -ar 16000 -ac 1 "$work/speech.wav"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

"$bin" serve --models --scenario "$work/soak.toml" --addr "127.0.0.1:$port" \
  --report "$out/report" --report-every "$interval_s" --trace-max-mib "$trace_mib" \
  >"$work/serve.out" 2>"$work/serve.err" &
server=$!
pids+=("$server")
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/api/v1/status" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.err" >&2; echo "soak: the server stopped" >&2; exit 1; }
  sleep 1
done
curl -sf "http://127.0.0.1:$port/api/v1/status" >/dev/null || { echo "soak: the server did not come up" >&2; exit 1; }
echo "soak: serving on 127.0.0.1:$port, microphone on udp $rtp_port, $duration_s s, a sample every $interval_s s, warm-up $warmup_s s; out $out"

ffmpeg -hide_banner -loglevel error -re -stream_loop -1 -i "$work/speech.wav" \
  -ar 16000 -ac 1 -acodec pcm_s16be -payload_type 97 -f rtp "rtp://127.0.0.1:$rtp_port" \
  >/dev/null 2>"$work/ffmpeg.err" &
pids+=($!)

cat >"$work/clients.py" <<'EOF'
import sys, time, threading, openai
base, wav, chat_every, asr_every, until = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
c = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
counts = {"chat": [0, 0, 0], "asr": [0, 0, 0]}
def loop(name, every, ask):
    while time.time() < until:
        t0 = time.time()
        try:
            ask()
            counts[name][0] += 1
        except openai.APIStatusError as e:
            # 503 + Retry-After: the class cap or a deadline the server cannot make.
            counts[name][2 if e.status_code == 503 else 1] += 1
        except Exception:
            counts[name][1] += 1
        time.sleep(max(0.0, every - (time.time() - t0)))
def chat():
    s = c.chat.completions.create(model="gemma-3-270m", stream=True, max_tokens=12,
        messages=[{"role": "user", "content": "Name one colour."}])
    for _ in s:
        pass
def asr():
    with open(wav, "rb") as f:
        c.audio.transcriptions.create(model="whisper-tiny.en", file=f)
ts = [threading.Thread(target=loop, args=a) for a in (("chat", chat_every, chat), ("asr", asr_every, asr))]
for t in ts: t.start()
for t in ts: t.join()
print("clients: chat ok/failed/refused %d/%d/%d, transcriptions ok/failed/refused %d/%d/%d"
      % (*counts["chat"], *counts["asr"]))
# A refusal (503) is an answer; no answer at all of a kind is a failure.
for name, (ok, _, refused) in counts.items():
    if ok + refused == 0:
        sys.exit("clients: no %s request was answered" % name)
EOF
until=$(( $(date +%s) + duration_s ))
"$venv" "$work/clients.py" "http://127.0.0.1:$port" "$work/a.wav" \
  "${SOAK_CHAT_EVERY_S:-10}" "${SOAK_ASR_EVERY_S:-30}" "$until" >"$work/clients.out" 2>&1 &
clients=$!
pids+=("$clients")

# Samples: seconds since the start, RSS (MB), open files, threads, disk (MB: trace, report),
# and per class the since-start offered and on-time counts of the report just written.
csv="$out/samples.csv"
echo "t_s,rss_mb,fds,threads,trace_mb,disk_mb,vision_offered,vision_on_time,vad_offered,vad_on_time,asr_offered,asr_on_time,llm_offered,llm_on_time" >"$csv"
t0=$(date +%s)
while :; do
  now=$(date +%s)
  t=$(( now - t0 ))
  kill -0 "$server" 2>/dev/null || { tail -20 "$work/serve.err" >&2; echo "soak: the server stopped at $t s" >&2; exit 1; }
  rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$server/status")
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$server/status")
  fds=$(find "/proc/$server/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
  trace_b=$(find "$out/report" -maxdepth 1 -name 'trace*.mmtrace' -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}')
  disk_b=$(find "$out/report" -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}')
  counts=$(python3 - "$out/report/summary.json" <<'EOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    m = [s["vision"], s["vad"], s["asr"], s["llm"]]
    print(",".join("%d,%d" % (x.get("offered", 0), x.get("on_time", 0)) for x in m))
except Exception:
    print("0,0,0,0,0,0,0,0")
EOF
)
  echo "$t,$(awk -v k="$rss_kb" 'BEGIN {printf "%.2f", k/1024}'),$fds,$threads,$(awk -v b="$trace_b" 'BEGIN {printf "%.2f", b/1048576}'),$(awk -v b="$disk_b" 'BEGIN {printf "%.2f", b/1048576}'),$counts" >>"$csv"
  [ "$t" -ge "$duration_s" ] && break
  sleep $(( interval_s - ( $(date +%s) - now ) > 0 ? interval_s - ( $(date +%s) - now ) : 1 ))
done
clients_ok=1
wait "$clients" || clients_ok=0
cat "$work/clients.out"
kill -INT "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true

# Slopes, goals, the plot.
python3 - "$csv" "$out" "$warmup_s" "$trace_mib" "$clients_ok" "${SOAK_JUDGE:-all}" <<'EOF'
import csv, json, os, sys
path, out, warmup, trace_mib = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
clients_ok, judge = sys.argv[5] == "1", sys.argv[6]
if judge not in ("all", "short"):
    sys.exit(f"soak: SOAK_JUDGE must be `all` or `short`, not `{judge}`")
# What a short run only prints: slopes that warm-up still dominates, shares of few inputs.
printed_only = {"rss_mb", "fds", "threads", "shares"} if judge == "short" else set()
rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(open(path))]
env = lambda k, d: float(os.environ.get(k, d))
goals = {"rss_mb": env("SOAK_RSS_SLOPE_MAX", 0.1), "fds": env("SOAK_FD_SLOPE_MAX", 0.05),
         "threads": env("SOAK_THREAD_SLOPE_MAX", 0.05)}
after = [r for r in rows if r["t_s"] >= warmup]
def slope(key):
    """Least squares, per minute."""
    xs = [r["t_s"] / 60 for r in after]; ys = [r[key] for r in after]
    n = len(xs)
    if n < 3: return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")
failures, verdict = [], {"samples": len(rows), "after_warmup": len(after), "warmup_s": warmup,
                         "judged": judge, "slopes_per_min": {}}
if not clients_ok:
    failures.append("a client kind got no answer in the whole run (see clients: above)")
for key, goal in goals.items():
    s = slope(key)
    verdict["slopes_per_min"][key] = s
    if not (s <= goal) and key not in printed_only:
        failures.append(f"{key} grows {s:.4f} a minute after warm-up (goal at most {goal})")
cap = trace_mib + env("SOAK_REPORT_MIB", 16)
worst_trace = max((r["trace_mb"] for r in rows), default=0)
worst_disk = max((r["disk_mb"] for r in rows), default=0)
verdict.update(trace_mb_max=worst_trace, disk_mb_max=worst_disk, trace_cap_mib=trace_mib, disk_cap_mib=cap)
if worst_trace > trace_mib * 1.048576: failures.append(f"the trace took {worst_trace:.1f} MB, above its cap of {trace_mib} MiB")
if worst_disk > cap * 1.048576: failures.append(f"trace and report took {worst_disk:.1f} MB, above {cap} MiB")
# On-time shares per class and interval; the last window's share must be within the spread
# of the first window's intervals (windows of 10 minutes, or a third of the run if shorter).
span = min(600.0, (rows[-1]["t_s"] - warmup) / 3) if rows else 0
shares = {}
for cls in ("vision", "vad", "asr", "llm"):
    pts = []
    for a, b in zip(rows, rows[1:]):
        do = b[f"{cls}_offered"] - a[f"{cls}_offered"]; dt = b[f"{cls}_on_time"] - a[f"{cls}_on_time"]
        if do > 0: pts.append((b["t_s"], dt / do, do, dt))
    shares[cls] = pts
    first = [p for p in pts if warmup <= p[0] < warmup + span]
    last = [p for p in pts if p[0] > rows[-1]["t_s"] - span]
    off_f, off_l = sum(p[2] for p in first), sum(p[2] for p in last)
    if off_f < 20 or off_l < 20 or not first:
        verdict.setdefault("shares", {})[cls] = "too few inputs to compare"
        continue
    lo, hi = min(p[1] for p in first), max(p[1] for p in first)
    share_last = sum(p[3] for p in last) / off_l
    verdict.setdefault("shares", {})[cls] = {"first_spread": [lo, hi], "last": share_last}
    if not (lo - 0.02 <= share_last <= hi + 0.02) and "shares" not in printed_only:
        failures.append(f"{cls}: on-time share {share_last:.3f} in the last window, outside the first window's spread [{lo:.3f}, {hi:.3f}]")
verdict["failures"] = failures
json.dump(verdict, open(os.path.join(out, "verdict.json"), "w"), indent=2)

# The plot: four panels, minutes on x.
W, H, L, R, T, B = 900, 220, 70, 20, 30, 35
def panel(i, title, series, unit):
    y0 = i * (H + 10)
    xs = [r["t_s"] / 60 for r in rows] or [0, 1]
    x1 = max(xs[-1], 1e-9)
    vals = [v for _, pts, _ in series for _, v in pts]
    lo, hi = (min(vals), max(vals)) if vals else (0, 1)
    if hi - lo < 1e-9: lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.08; lo -= pad; hi += pad
    X = lambda x: L + (W - L - R) * x / x1
    Y = lambda y: y0 + T + (H - T - B) * (1 - (y - lo) / (hi - lo))
    g = [f'<text x="{L}" y="{y0 + 18}" font-size="14" font-weight="bold">{title}</text>',
         f'<rect x="{L}" y="{y0 + T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        g.append(f'<text x="{L - 6}" y="{Y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:.4g}</text>')
        m = x1 * k / 4
        g.append(f'<text x="{X(m):.1f}" y="{y0 + H - B + 15}" font-size="11" text-anchor="middle">{m:.3g} min</text>')
    if warmup / 60 <= x1:
        g.append(f'<line x1="{X(warmup / 60):.1f}" x2="{X(warmup / 60):.1f}" y1="{y0 + T}" y2="{y0 + H - B}" stroke="#bbb" stroke-dasharray="4 3"/>')
    for j, (name, pts, color) in enumerate(series):
        d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
        g.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        g.append(f'<text x="{W - R - 8}" y="{y0 + T + 14 + 13 * j}" font-size="11" text-anchor="end" fill="{color}">{name}</text>')
    g.append(f'<text x="12" y="{y0 + T + (H - T - B) / 2}" font-size="11" transform="rotate(-90 12 {y0 + T + (H - T - B) / 2})" text-anchor="middle">{unit}</text>')
    return "\n".join(g)
m = lambda key: [(r["t_s"] / 60, r[key]) for r in rows]
sl = verdict["slopes_per_min"]
colors = {"vision": "#1f77b4", "vad": "#2ca02c", "asr": "#d62728", "llm": "#9467bd"}
panels = [
    ("Resident set (slope after warm-up %.3f MB/min)" % sl["rss_mb"], [("RSS", m("rss_mb"), "#1f77b4")], "MB"),
    ("Open files and threads (slopes %.3f, %.3f /min)" % (sl["fds"], sl["threads"]), [("open files", m("fds"), "#ff7f0e"), ("threads", m("threads"), "#2ca02c")], "count"),
    ("Disk: trace (cap %g MiB) and trace + report" % trace_mib, [("trace", m("trace_mb"), "#9467bd"), ("trace + report", m("disk_mb"), "#8c564b")], "MB"),
    ("On-time share per class, per sample interval", [(c, [(t / 60, s) for t, s, _, _ in shares[c]], colors[c]) for c in colors if shares[c]], "share"),
]
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{len(panels) * (H + 10)}" font-family="sans-serif">',
       f'<rect width="100%" height="100%" fill="white"/>']
svg += [panel(i, *p) for i, p in enumerate(panels)]
svg.append("</svg>")
open(os.path.join(out, "soak.svg"), "w").write("\n".join(svg))
print(json.dumps(verdict, indent=2))
if failures:
    print("soak: FAILED\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1)
print("soak: every goal met")
EOF
