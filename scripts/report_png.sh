#!/usr/bin/env bash
# report_png.sh DB MODEL OUT.png [HEIGHT] [report options...]: writes the
# tuning report of MODEL from DB and renders it with Debian's headless
# Chromium into a 1280-pixel-wide PNG of HEIGHT pixels (default 2400) —
# what a person opening the page sees. Installs chromium if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: scripts/report_png.sh DB MODEL OUT.png [HEIGHT] [--measure ...]" >&2; exit 2; }
db=$1 model=$2 out=$3
shift 3
height=2400
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then height=$1; shift; fi
if ! command -v chromium >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
html=$(mktemp /tmp/temper-report.XXXXXX.html)
trap 'rm -f "$html"' EXIT
build/temper report "$db" "$model" -o "$html" "$@"
xmllint --noout "$html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,"$height" --screenshot="$out" "file://$html" \
  >/dev/null 2>&1
test -s "$out" && echo "rendered $out (1280x$height)"
