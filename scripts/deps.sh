#!/usr/bin/env bash
# Installs the Debian packages the build needs when they are missing (only as root; otherwise it
# says what to install). Usage: scripts/deps.sh [build|plot|peers]...
set -u
want=(cmake gcc make pkg-config libdlpack-dev libsqlite3-dev)
for extra in "$@"; do
  case "$extra" in
    build) ;;
    plot) want+=(gnuplot-nox) ;;
    peers) want+=(libopenblas-dev libblis-dev libdnnl-dev libxsmm-dev) ;;
    *) echo "deps.sh: unknown group '$extra' (build, plot, peers)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "deps.sh: missing Debian packages: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq >/dev/null 2>&1
  apt-get install -y -qq "${missing[@]}" >/dev/null || { echo "deps.sh: apt-get install ${missing[*]} failed" >&2; exit 1; }
fi
