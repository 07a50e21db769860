#!/usr/bin/env bash
# usage: [T=1 N=10 R=20] bench/ab/libab.sh A.so B.so INPUT.npy [INPUT_NAME]
# Two built libraries side by side: `temper run` of each, alternating
# processes (order swapped every pair); the medians, and B/A per pair.
source "$(dirname "$0")/common.sh"
A=$1; B=$2; IN=$3; NAME=${4:-data}
[ -f "$A" ] && [ -f "$B" ] && [ -f "$IN" ] || { echo "usage: libab.sh A.so B.so INPUT.npy [INPUT_NAME]" >&2; exit 2; }
la() { "$TEMPER" run "$A" --input "$NAME=$IN" --threads $T --repeat $R | latency; }
lb() { "$TEMPER" run "$B" --input "$NAME=$IN" --threads $T --repeat $R | latency; }
alternate la lb
