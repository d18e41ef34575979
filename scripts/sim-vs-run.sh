#!/usr/bin/env bash
# Compares the simulator's prediction (`mmsched sim run`) with a real run (`mmsched run`) of
# the same scenario and duration: on-time rate per modality (on-time results over inputs
# offered, so shed, dropped and unfinished work counts against it), in percent, and the
# difference in points. Exits non-zero when a modality differs by more than TOLERANCE.
#
# The simulator is the real run loop on simulated models (`sim run`), so the two differ only
# where the simulated models and lanes differ from the device. Inputs offered per class must
# agree too (the same sources on the same clocks): within 10 % or 3 inputs.
#
# Usage: scripts/sim-vs-run.sh [SCENARIO…]   (a name or a file; default: every shipped
#   scenario: ar-glasses car inspection scenarios/documents.toml)
# Environment: MMSCHED_BIN (default target/release/mmsched if built, else target/debug/mmsched;
#   CI runs the debug one), DURATION (default 60 s), OUT (default
#   sim-vs-run/), TOLERANCE (default 10 points), PROFILE (a profile file for both sides;
#   default: the usual choice, $MMSCHED_HOME/profile.json if measured, else the reference).
# Real runs are timing-sensitive: run this on a quiet machine. The load average at the
# start and end is printed with the table.
set -euo pipefail
default_bin=target/release/mmsched
[ -x "$default_bin" ] || default_bin=target/debug/mmsched
bin=${MMSCHED_BIN:-$default_bin}
duration=${DURATION:-60}
out=${OUT:-sim-vs-run}
tolerance=${TOLERANCE:-10}
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(ar-glasses car inspection scenarios/documents.toml)
profile_args=()
[ -n "${PROFILE:-}" ] && profile_args=(--profile "$PROFILE")
[ -x "$bin" ] || { echo "no $bin: build it with cargo build --release -p mmsched, or set MMSCHED_BIN" >&2; exit 2; }
echo "binary: $bin"
mkdir -p "$out"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
names=()
for s in "${scenarios[@]}"; do
    # A file's outputs are named after it without its folder and .toml.
    n=$(basename "$s" .toml)
    names+=("$n")
    "$bin" sim run --scenario "$s" --duration "$duration" "${profile_args[@]}" --json >"$out/$n.sim.json"
    "$bin" run --scenario "$s" --duration "$duration" "${profile_args[@]}" --json \
        --report "$out/$n-report" >"$out/$n.run.json" 2>"$out/$n.run.log"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$tolerance" "${names[@]}" <<'PY'
import json, sys
out, tol, scenarios = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
def on_time(m):
    offered = m.get("offered") or 0
    if not offered:
        return None
    return 100.0 * m["on_time"] / offered
worst = 0.0
offered_ok = True
print(f"{'scenario':<14} {'modality':<12} {'sim offered':>11} {'run offered':>11} {'sim on time':>12} {'run on time':>12} {'diff':>7}")
for s in scenarios:
    sim = json.load(open(f"{out}/{s}.sim.json"))
    run = json.load(open(f"{out}/{s}.run.json"))
    own = sorted(set(sim.get("models", {})) | set(run.get("models", {})))
    for k in ["vision", "vad", "asr", "llm"] + own:
        pick = lambda d: (d.get("models", {}).get(k) if k in own else d.get(k)) or {}
        a, b = pick(sim), pick(run)
        oa, ob = a.get("offered", 0), b.get("offered", 0)
        if abs(oa - ob) > max(3, 0.1 * ob):
            print(f"{s} {k}: {oa} inputs simulated, {ob} in the run: the sources differ")
            offered_ok = False
        pa, pb = on_time(a), on_time(b)
        if pa is None and pb is None:
            continue
        d = None if pa is None or pb is None else pa - pb
        if d is not None:
            worst = max(worst, abs(d))
        fmt = lambda v: "—" if v is None else f"{v:.1f} %"
        print(f"{s:<14} {k:<12} {a.get('offered', 0):>11} {b.get('offered', 0):>11} {fmt(pa):>12} {fmt(pb):>12} {'—' if d is None else f'{d:+.1f}':>7}")
    print(f"{'':<14} profile: {sim.get('profile')}")
    print(f"{'':<14} {sim.get('microphone')}")
print(f"largest difference: {worst:.1f} points (tolerance {tol:g})")
sys.exit(0 if worst <= tol and offered_ok else 1)
PY
