#!/usr/bin/env bash
# usage: [T=1 N=10 R=20] bench/ab/envab.sh LIB.so INPUT.npy "VAR=a" "VAR=b" [INPUT_NAME]
# One built library under two environments (a runtime override being
# tried, say): alternating processes, order swapped every pair.
source "$(dirname "$0")/common.sh"
LIB=$1; IN=$2; A=$3; B=$4; NAME=${5:-data}
[ -f "$LIB" ] && [ -f "$IN" ] && [ -n "$B" ] || { echo "usage: envab.sh LIB.so INPUT.npy VAR=a VAR=b [INPUT_NAME]" >&2; exit 2; }
la() { env $A "$TEMPER" run "$LIB" --input "$NAME=$IN" --threads $T --repeat $R | latency; }
lb() { env $B "$TEMPER" run "$LIB" --input "$NAME=$IN" --threads $T --repeat $R | latency; }
alternate la lb
