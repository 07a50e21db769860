#!/usr/bin/env bash
# usage: [T=1 N=10 R=20] bench/ab/binab.sh OLD_TEMPER NEW_TEMPER MODEL [run options]
# Two compilers side by side: `temper run MODEL --no-pretuned` (compiled in
# memory) with each binary, alternating (order swapped every pair).
source "$(dirname "$0")/common.sh"
A=$1; B=$2; M=$3; shift 3; EXTRA=("$@")
[ -x "$A" ] && [ -x "$B" ] && [ -f "$M" ] || { echo "usage: binab.sh OLD_TEMPER NEW_TEMPER MODEL [run options]" >&2; exit 2; }
la() { "$A" run "$M" --no-pretuned --threads $T --repeat $R "${EXTRA[@]}" | latency; }
lb() { "$B" run "$M" --no-pretuned --threads $T --repeat $R "${EXTRA[@]}" | latency; }
alternate la lb
