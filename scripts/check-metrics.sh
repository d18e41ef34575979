#!/usr/bin/env bash
# Starts `mmsched serve` on a free port, scrapes /metrics in both formats and checks them:
#   - the classic Prometheus text format with `promtool check metrics` (Debian: prometheus);
#   - the OpenMetrics format (with exemplars) with the reference OpenMetrics parser of the
#     Python client (Debian: python3-prometheus-client).
# Usage: scripts/check-metrics.sh [path/to/mmsched]   (default: target/debug/mmsched, built
# if missing). Exits non-zero on any problem.
set -euo pipefail

cd "$(dirname "$0")/.."
bin="${1:-${MMSCHED_BIN:-target/debug/mmsched}}"
if [[ ! -x "$bin" ]]; then
    cargo build -q -p mmsched
    bin=target/debug/mmsched
fi
command -v promtool >/dev/null || { echo "promtool not found: apt-get install -y prometheus" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl not found: apt-get install -y curl" >&2; exit 1; }
py=/usr/bin/python3
"$py" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
    { echo "the OpenMetrics parser is missing: apt-get install -y python3-prometheus-client" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$bin" serve --addr 127.0.0.1:0 --json >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
addr=""
for _ in $(seq 1 100); do
    if [[ -s "$work/serve.out" ]]; then
        addr="$("$py" -c 'import json,sys; print(json.loads(sys.stdin.readline())["addr"])' <"$work/serve.out")"
        break
    fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$addr" ]] || { echo "mmsched serve did not start within 10 s" >&2; cat "$work/serve.err" >&2; exit 1; }

curl -fsS "http://$addr/metrics" >"$work/metrics.prom"
curl -fsS -H 'Accept: application/openmetrics-text; version=1.0.0' "http://$addr/metrics" >"$work/metrics.om"

samples="$(grep -vc '^#' "$work/metrics.prom" || true)"
if [[ "$samples" -eq 0 ]]; then
    echo "the metrics dump has no samples" >&2
    exit 1
fi
promtool check metrics <"$work/metrics.prom"
echo "promtool check metrics: ok ($samples samples)"

"$py" - "$work/metrics.om" <<'PY'
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
if not text.endswith("# EOF\n"):
    sys.exit("OpenMetrics output must end with '# EOF'")
families = list(text_string_to_metric_families(text))
n = sum(len(f.samples) for f in families)
print(f"OpenMetrics parser: ok ({len(families)} families, {n} samples)")
PY
