#!/bin/bash
# Side-by-side recording times of two rr-lite builds, interleaved (the machines
# are shared and noisy: compare rounds, not single runs).
#
#   scripts/record-ab.sh BEFORE_RR_LITE AFTER_RR_LITE [WORKDIR]
#   env WL="fft 17 4 2|nbody 500 4 4" ROUNDS="1 2 3"
#
# Each build compiles benches/workloads with its own `rr-lite cc` (the binary
# links that build's runtime), then every round records every workload with
# both builds, one after the other. Prints "round R before|after WORKLOAD ms".
set -euo pipefail
before=${1:?usage: $0 BEFORE_RR_LITE AFTER_RR_LITE [WORKDIR]}
after=${2:?usage: $0 BEFORE_RR_LITE AFTER_RR_LITE [WORKDIR]}
work=${3:-$(mktemp -d)}
src=$(cd "$(dirname "$0")/../benches/workloads" && pwd)
IFS='|' read -ra workloads <<< "${WL:-nbody 500 4 4}"
for side in before after; do
  rr=${!side}
  mkdir -p "$work/$side"
  for w in "${workloads[@]}"; do
    prog=${w%% *}
    [ -x "$work/$side/$prog" ] || "$rr" cc -O2 -o "$work/$side/$prog" "$src/$prog.c" -lm
  done
done
for round in ${ROUNDS:-1 2 3}; do
  for w in "${workloads[@]}"; do
    for side in before after; do
      rr=${!side}
      read -ra args <<< "$w"
      rm -rf "$work/$side/trace"
      start=$(date +%s%N)
      (cd "$work/$side" && "$rr" record -q -o trace "./${args[0]}" "${args[@]:1}" > /dev/null 2>&1)
      end=$(date +%s%N)
      echo "round $round $side $w $(( (end - start) / 1000000 ))"
    done
  done
done
