#!/usr/bin/env bash
# Builds both Debian packages with scripts/package-deb.sh and checks them:
#   arm64: from the cross-built release binary (scripts/cross-aarch64.sh); its binary is an
#          aarch64 executable that prints its version under qemu.
#   amd64: installed with dpkg -i on this machine (as root): `mmsched --version`,
#          `systemd-analyze verify` on the unit, the service's user and state directory,
#          the service's binary running as that user; then purged (user and directory go).
# The amd64 package is built from AMD64_BIN (default target/debug/mmsched, the test build:
# CI has no time for a second release build; `scripts/package-deb.sh amd64` alone builds the
# release binary). Exits non-zero on any problem.
#   scripts/check-deb.sh [AMD64_BIN]
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir="${CARGO_TARGET_DIR:-target}"
amd64_bin="${1:-$target_dir/debug/mmsched}"
arm64_bin="$target_dir/aarch64-unknown-linux-gnu/release/mmsched"
[[ "$(id -u)" -eq 0 ]] || { echo "check-deb: run as root (it installs the package)" >&2; exit 1; }
fail() { echo "check-deb: $*" >&2; exit 1; }

arm_deb="$(scripts/package-deb.sh arm64 "$arm64_bin")"
amd_deb="$(scripts/package-deb.sh amd64 "$amd64_bin")"
for deb in "$arm_deb" "$amd_deb"; do
  echo "check-deb: $deb $(du -h "$deb" | cut -f1), installed $(dpkg-deb -f "$deb" Installed-Size) KiB, Depends: $(dpkg-deb -f "$deb" Depends)"
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$arm_deb" "$work/arm64"
file -b "$work/arm64/usr/bin/mmsched" | grep -q "ARM aarch64" || fail "the arm64 package's binary is not aarch64"
echo "check-deb: arm64 package's binary: $(qemu-aarch64 -cpu cortex-a76 -L /usr/aarch64-linux-gnu "$work/arm64/usr/bin/mmsched" --version)"

dpkg -i "$amd_deb"
trap 'dpkg --purge mmsched >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
version="$(/usr/bin/mmsched --version)"
[[ "$version" == "mmsched $(dpkg-deb -f "$amd_deb" Version)" ]] || fail "mmsched --version says '$version'"
echo "check-deb: installed: $version"
systemd-analyze verify /lib/systemd/system/mmsched.service
echo "check-deb: systemd-analyze verify: no complaints"
getent passwd mmsched >/dev/null || fail "the package made no mmsched user"
[[ "$(stat -c %U /var/lib/mmsched)" == mmsched ]] || fail "/var/lib/mmsched is not the mmsched user's"
# The service's user reads its policy and lists its (empty) cache.
runuser -u mmsched -- env MMSCHED_HOME=/var/lib/mmsched /usr/bin/mmsched policy check /etc/mmsched/policy.toml
runuser -u mmsched -- env MMSCHED_HOME=/var/lib/mmsched /usr/bin/mmsched models list --no-verify >/dev/null
dpkg --purge mmsched
[[ ! -e /usr/bin/mmsched && ! -e /var/lib/mmsched ]] || fail "purge left the binary or /var/lib/mmsched"
! getent passwd mmsched >/dev/null || fail "purge left the mmsched user"
echo "check-deb: both packages built; the amd64 one installs, runs and purges cleanly"
