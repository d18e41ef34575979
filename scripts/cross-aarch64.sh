#!/usr/bin/env bash
# Builds mmsched in release for 64-bit Arm Linux (aarch64-unknown-linux-gnu) on an x86_64
# Debian machine, with Debian's cross toolchain and the Rust target from rustup (both
# installed by scripts/setup.sh). llama.cpp and ggml are cross-compiled by their own build
# script through CMake (the cmake crate names the target system and the cross compilers);
# bindgen parses their headers against the Arm sysroot and rustc links with the cross gcc
# (both set in .cargo/config.toml). Writes target/aarch64-unknown-linux-gnu/release/mmsched.
#   scripts/cross-aarch64.sh [extra cargo build arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
sysroot=/usr/aarch64-linux-gnu
missing=()
for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ cmake; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[[ -f "$sysroot/include/stdio.h" ]] || missing+=("the arm64 sysroot ($sysroot)")
rustup target list --installed | grep -qx "$target" || missing+=("the Rust target $target")
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "cross-aarch64: missing ${missing[*]}: run scripts/setup.sh" >&2
  exit 1
fi

# Only the binary's crates, in the release profile. Without debug line tables by default:
# they made the binary 5.5 times as large (the package strips them anyway) and its link
# slower; CARGO_PROFILE_RELEASE_DEBUG=line-tables-only keeps them for readable backtraces
# on a board. llama.cpp's C++ is built as CMake's Release either way (Cargo.toml).
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-false}"
cargo build --release -p mmsched --target "$target" "$@"
bin="${CARGO_TARGET_DIR:-target}/$target/release/mmsched"
file "$bin"
echo "cross-aarch64: $(du -h "$bin" | cut -f1) $bin"
