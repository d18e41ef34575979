#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each), starting from the seed
# corpus in fuzz/corpus/<target>/. New inputs that reach new code are added there; commit
# the small ones that found a bug, with the fix.
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh policy_http_body
#
# cargo-fuzz needs nightly compiler flags (sanitizers); the stable toolchain accepts them
# with RUSTC_BOOTSTRAP=1. cargo-fuzz itself is installed from crates.io when missing.
# Every `cargo test --workspace` replays the seed corpora (crates/*/tests/fuzz_corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(policy_parse policy_http_body scenario_toml mmtrace_read wav_decode image_decode proc_signals v2_infer_request)
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
cd fuzz
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "== fuzz $t for ${seconds} s"
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536
done
echo "fuzz: ${#targets[@]} targets ran ${seconds} s each without a crash"
