#!/usr/bin/env bash
# benches/capture/run.sh [RUNS] [SEEDS]: how many runs each way of running
# takes to hit the bug of each program in this directory and of
# tests/c/chaos_order_violation.c (order violation,
# atomicity violation, lost wakeup, lock-order deadlock, two-variable
# reorder): native, plain `rr-lite record`, `--chaos=random` and
# `--chaos=pct` (median over SEEDS seeds, each with --until-failure=RUNS),
# then the cost of a recorded run of a bug-free workload (locked_counter.c)
# under each strategy against plain recording, measured side by side.
# Prints a Markdown table. ">N" means no failure in N runs.
set -euo pipefail
RUNS=${1:-50}
SEEDS=${2:-5}
HANG=2           # seconds: a run still going is a hang (lost wakeup, deadlock)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rr=${RR_LITE:-$root/target/release/rr-lite}
[ -x "$rr" ] || (cd "$root" && cargo build --release -q)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RR_LITE_TRACE_DIR=$work/traces
bugs="order_violation atomicity lost_wakeup lock_order reorder"
# The order violation is also the end-to-end test's (tests/chaos.rs).
for p in $bugs locked_counter; do
    src=$here/$p.c
    [ "$p" = order_violation ] && src=$root/tests/c/chaos_order_violation.c
    "$rr" cc -O1 -pthread "$src" -o "$work/$p"
done

# Runs of the uninstrumented-speed binary (the runtime is inert without
# rr-lite record) until one fails.
native() {
    local k
    for k in $(seq 1 "$RUNS"); do
        if ! timeout -s KILL "$HANG" "$work/$1" >/dev/null 2>&1; then echo "$k"; return; fi
    done
    echo ">$RUNS"
}

# Runs `rr-lite record --until-failure` takes, or >RUNS.
recorded() {
    local p=$1; shift
    local out
    out=$("$rr" record --until-failure="$RUNS" --timeout "$HANG" "$@" "$work/$p" 2>&1 >/dev/null || true)
    rm -rf "$RR_LITE_TRACE_DIR"
    local k
    k=$(printf '%s\n' "$out" | sed -n 's/.*caught after \([0-9]*\) run.*/\1/p')
    echo "${k:->$RUNS}"
}

# Median of the seeds' counts (a miss counts as RUNS+1).
median_over_seeds() {
    local p=$1 strategy=$2 s vals=()
    for s in $(seq 1 "$SEEDS"); do
        local k
        k=$(recorded "$p" --chaos="$strategy" --seed "$((s * 1000))")
        vals+=("${k/>$RUNS/$((RUNS + 1))}")
    done
    local m
    m=$(printf '%s\n' "${vals[@]}" | sort -n | sed -n "$(((SEEDS + 1) / 2))p")
    [ "$m" -gt "$RUNS" ] && echo ">$RUNS" || echo "$m"
}

echo "| program | native | record | --chaos=random | --chaos=pct |"
echo "|---|---|---|---|---|"
for p in $bugs; do
    echo "| $p | $(native "$p") | $(recorded "$p") | $(median_over_seeds "$p" random) | $(median_over_seeds "$p" pct) |"
done

# Cost per run: wall time of COST_RUNS recordings of the workload, each
# mode in turn within every round so that noise hits them alike.
COST_RUNS=${COST_RUNS:-5}
declare -A total=([plain]=0 [random]=0 [pct]=0)
for r in $(seq 1 "$COST_RUNS"); do
    for mode in plain random pct; do
        flags=()
        [ "$mode" != plain ] && flags=(--chaos="$mode" --seed "$r")
        start=$(date +%s%N)
        "$rr" record -q "${flags[@]}" -o "$work/cost-$mode-$r" "$work/locked_counter" >/dev/null
        total[$mode]=$((total[$mode] + $(date +%s%N) - start))
        rm -rf "$work/cost-$mode-$r"
    done
done
start=$(date +%s%N)
for r in $(seq 1 "$COST_RUNS"); do "$work/locked_counter" >/dev/null; done
native_ns=$(($(date +%s%N) - start))
echo
echo "| workload (locked_counter, $COST_RUNS runs each) | native | record | --chaos=random | --chaos=pct |"
echo "|---|---|---|---|---|"
awk -v n="$native_ns" -v p="${total[plain]}" -v r="${total[random]}" -v c="${total[pct]}" -v k="$COST_RUNS" 'BEGIN {
    printf "| ms per run | %.0f | %.0f | %.0f | %.0f |\n", n/k/1e6, p/k/1e6, r/k/1e6, c/k/1e6;
    printf "| against plain record | %.2fx | 1.00x | %.2fx | %.2fx |\n", n/p, r/p, c/p }'
