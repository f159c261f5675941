#!/usr/bin/env bash
# Install the system packages dfx's pictures use, where missing and installable: Graphviz (the
# `dot` layout of dag.svg/dag.png) and Chromium (the headless browser test of report.html).
# Usage: scripts/install_system_deps.sh graphviz [chromium]   (`make system-deps`; opt-in, never run by make test/demo)
# Idempotent and quiet: a present tool is skipped silently; without root or apt-get it says so in
# one line and exits 0 (dfx then lays out the DAG itself, and the browser tests are skipped).
set -uo pipefail

binary_of() {
  case "$1" in
    graphviz) echo dot ;;
    chromium) echo chromium ;;
    *) echo "$1" ;;
  esac
}

missing=()
for pkg in "$@"; do
  command -v "$(binary_of "$pkg")" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "skipping install of ${missing[*]}: needs root and apt-get (install them with your package manager)"
  exit 0
fi
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/dfx-apt.log 2>&1; then
  echo "could not install ${missing[*]} with apt-get (see /tmp/dfx-apt.log); continuing without"
fi
exit 0
