#!/usr/bin/env bash
# A real RTP sender and a real receiver on a real link, for `mmsched sim jitter`'s real
# rows: ffmpeg sends speech (espeak-ng) as RTP L16, 20 ms packets, from one network
# namespace to `mmsched run --record-rtp` in another, over a veth pair.
#
#   clean   the bare veth pair: what the sender's pacing and the two hosts add.
#   shaped  the sender's end of the pair is a 1 Mbit/s bottleneck (tbf, at most 60 ms
#           queued) shared with bursts of UDP cross traffic at 1.3 Mbit/s (0.2-0.8 s on,
#           1-4 s off, seeded): the RTP packets queue behind them, and are dropped when the
#           queue is full, as on a congested uplink.
#
# Delay comes from real queues, not from an emulator: this kernel has no sch_netem
# (CONFIG_NET_SCH_NETEM is not set), so `tc qdisc … netem` is refused.
#
# Usage: scripts/real-link.sh OUT.csv SECONDS clean|shaped [SEED]
# Needs root, iproute2, ffmpeg, espeak-ng, sox and python3 (scripts/setup.sh installs them);
# the mmsched binary is $MMSCHED_BIN (default target/debug/mmsched). Exits 77 (skipped)
# when network namespaces cannot be made here.
set -euo pipefail

out=${1:?usage: scripts/real-link.sh OUT.csv SECONDS clean|shaped [SEED]}
secs=${2:?seconds of audio to send}
mode=${3:?clean or shaped}
seed=${4:-1}
bin=${MMSCHED_BIN:-target/debug/mmsched}
case $mode in clean|shaped) ;; *) echo "mode must be clean or shaped, got $mode" >&2; exit 2 ;; esac
for tool in ip tc ffmpeg espeak-ng sox python3; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed: run scripts/setup.sh" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "no mmsched binary at $bin: build it or set MMSCHED_BIN" >&2; exit 1; }

tag=mms$$
tx=$tag-tx
rx=$tag-rx
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  ip netns del "$tx" 2>/dev/null || true
  ip netns del "$rx" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! ip netns add "$tx" 2>"$work/netns.err"; then
  echo "skipped: cannot create a network namespace here: $(cat "$work/netns.err")" >&2
  exit 77
fi
ip netns add "$rx"
ip link add "$tag-a" type veth peer name "$tag-b"
ip link set "$tag-a" netns "$tx"
ip link set "$tag-b" netns "$rx"
ip -n "$tx" addr add 10.34.0.1/24 dev "$tag-a"
ip -n "$rx" addr add 10.34.0.2/24 dev "$tag-b"
for ns in "$tx" "$rx"; do ip -n "$ns" link set lo up; done
ip -n "$tx" link set "$tag-a" up
ip -n "$rx" link set "$tag-b" up
if [ "$mode" = shaped ]; then
  ip netns exec "$tx" tc qdisc add dev "$tag-a" root tbf rate 1mbit burst 4kb latency 60ms
fi

# Speech to send: a few sentences, repeated for long enough (the sender stops after
# SECONDS).
espeak-ng -v en-us -s 150 -w "$work/clip.wav" \
  "The red train leaves from platform seven. Please check the pressure gauge on the left. \
   Turn right at the next junction and stop by the blue door. The inspection is complete."
sox "$work/clip.wav" "$work/speech.wav" repeat $((secs / 10 + 1))

cat > "$work/rtp-link.toml" <<EOF
name = "rtp-link"
description = "An RTP microphone across a real link"
duration_s = $((secs + 30))

[[models]]
name = "vad"
kind = "vad"

[[streams]]
name = "mic"
kind = "audio"
models = ["vad"]
packet_ms = 20
sla_ms = 8000
importance = 0.8
source = { kind = "rtp", bind = "10.34.0.2", port = 5004, payload_type = 97, sample_rate_hz = 16000 }
EOF

ip netns exec "$rx" "$bin" run --no-platform --scenario "$work/rtp-link.toml" \
  --record-rtp "$out" --report "$work/report" >"$work/run.out" 2>"$work/run.err" &
run_pid=$!
pids+=("$run_pid")
# Send once the receiver listens (after its model has loaded).
for _ in $(seq 600); do
  grep -q "receiving RTP" "$work/run.err" 2>/dev/null && break
  kill -0 "$run_pid" 2>/dev/null || { cat "$work/run.err" >&2; exit 1; }
  sleep 0.2
done
grep -q "receiving RTP" "$work/run.err" || { echo "the receiver did not start" >&2; cat "$work/run.err" >&2; exit 1; }

if [ "$mode" = shaped ]; then
  ip netns exec "$tx" python3 - "$secs" "$seed" <<'EOF' &
import random, socket, sys, time
secs, seed = float(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = bytes(1000)
rate = 1.3e6 / 8  # bytes per second while on
end = time.monotonic() + secs
while time.monotonic() < end:
    time.sleep(rng.uniform(1.0, 4.0))
    on, t0, sent = rng.uniform(0.2, 0.8), time.monotonic(), 0
    while time.monotonic() - t0 < on:
        try:
            sock.sendto(payload, ("10.34.0.2", 9))
        except OSError:
            pass  # the bottleneck's queue is full: the datagram is dropped
        sent += len(payload) + 28
        pause = t0 + sent / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
EOF
  pids+=("$!")
fi

ip netns exec "$tx" ffmpeg -hide_banner -loglevel error -re \
  -f lavfi -i "amovie=$work/speech.wav,aresample=16000,asetnsamples=n=320:p=0" -t "$secs" \
  -ac 1 -acodec pcm_s16be -payload_type 97 -f rtp "rtp://10.34.0.2:5004?pkt_size=652" >/dev/null

wait "$run_pid" || { cat "$work/run.err" >&2; exit 1; }
grep "record-rtp" "$work/run.out" "$work/run.err" || true
[ -s "$out" ] || { echo "no trace written to $out" >&2; exit 1; }
echo "real-link: $mode, $secs s: $(grep -c '^[0-9]' "$out") packets in $out"
