#!/usr/bin/env bash
# Builds the Debian package of mmsched for one architecture with dpkg-deb: the release
# binary (debug info stripped), the systemd unit and maintainer scripts of packaging/deb/,
# the default policy and environment file in /etc/mmsched/.
#   scripts/package-deb.sh amd64|arm64 [BINARY]
# Without BINARY it builds the release binary first (amd64: `cargo build --release -p
# mmsched`; arm64: scripts/cross-aarch64.sh). Writes target/debian/mmsched_VERSION_ARCH.deb
# and prints its path. Depends: is read off the binary (its libraries and the newest glibc
# symbol version it uses).
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-}"
case "$arch" in
  amd64) triple=x86_64-unknown-linux-gnu; strip=strip ;;
  arm64) triple=aarch64-unknown-linux-gnu; strip=aarch64-linux-gnu-strip ;;
  *) echo "usage: scripts/package-deb.sh amd64|arm64 [BINARY]" >&2; exit 2 ;;
esac
target_dir="${CARGO_TARGET_DIR:-target}"
bin="${2:-}"
if [[ -z "$bin" ]]; then
  if [[ "$arch" == amd64 ]]; then
    cargo build --release -p mmsched
    bin="$target_dir/release/mmsched"
  else
    scripts/cross-aarch64.sh
    bin="$target_dir/$triple/release/mmsched"
  fi
fi
[[ -x "$bin" ]] || { echo "package-deb: no executable at $bin" >&2; exit 1; }
command -v "$strip" >/dev/null || { echo "package-deb: $strip not found: run scripts/setup.sh" >&2; exit 1; }
machine="$(readelf -h "$bin" | sed -n 's/^ *Machine: *//p')"
case "$arch:$machine" in
  amd64:*X86-64*|arm64:*AArch64*) ;;
  *) echo "package-deb: $bin is built for '$machine', not $arch" >&2; exit 1 ;;
esac

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[[ -n "$version" ]] || { echo "package-deb: no workspace version in Cargo.toml" >&2; exit 1; }

# Depends: from the libraries the binary needs and the newest glibc version it asks for.
needed="$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
glibc="$(readelf -V "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n1)"
depends="libc6 (>= ${glibc})"
for lib in $needed; do
  case "$lib" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    libgcc_s.so.1) depends+=", libgcc-s1" ;;
    libstdc++.so.6) depends+=", libstdc++6 (>= 12)" ;;
    *) echo "package-deb: no Debian package known for $lib (needed by $bin)" >&2; exit 1 ;;
  esac
done

out="$target_dir/debian"
root="$out/mmsched_${version}_${arch}"
rm -rf "$root"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" \
  "$root/etc/mmsched" "$root/usr/share/doc/mmsched"
"$strip" --strip-debug -o "$root/usr/bin/mmsched" "$bin"
chmod 0755 "$root/usr/bin/mmsched"
install -m 0644 packaging/deb/mmsched.service "$root/lib/systemd/system/mmsched.service"
install -m 0644 policies/default.toml "$root/etc/mmsched/policy.toml"
install -m 0644 packaging/deb/mmsched.env "$root/etc/mmsched/mmsched.env"
install -m 0644 packaging/deb/copyright packaging/deb/README.Debian "$root/usr/share/doc/mmsched/"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
printf '/etc/mmsched/policy.toml\n/etc/mmsched/mmsched.env\n' >"$root/DEBIAN/conffiles"
installed_kib="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$installed_kib/" \
  -e "s/@DEPENDS@/$depends/" packaging/deb/control.in >"$root/DEBIAN/control"

deb="$out/mmsched_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
rm -rf "$root"
echo "$deb"
