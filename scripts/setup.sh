#!/usr/bin/env bash
# Installs every Debian package ampc needs (idempotent, non-interactive).
#
#   scripts/setup.sh                      scripts/packages.txt: building, testing, training
#   scripts/setup.sh packages-bench.txt   and also what another job needs (a list in scripts/:
#                                         packages-bench.txt for bench/, packages-fuzz.txt for fuzz/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lists=("$here/packages.txt")
for extra in "$@"; do
  [ -f "$here/$extra" ] || { echo "setup: no package list scripts/$extra" >&2; exit 2; }
  lists+=("$here/$extra")
done
mapfile -t wanted < <(cat "${lists[@]}" | grep -vE '^\s*(#|$)')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "setup: all ${#wanted[@]} packages present"; exit 0; fi
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
