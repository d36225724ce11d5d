#!/usr/bin/env python3
"""Turns the results of `cargo bench` into the Markdown tables of SPEC section 4.

Reads, under the cargo target directory (--target, else $CARGO_TARGET_DIR,
else ./target next to this repository):
  criterion/**/new/{benchmark,estimates}.json   criterion's estimates
  tmp/replay_speed/results.json                 written by the replay_speed bench:
                                                cases, `rr-lite info/split --json`,
                                                perf-event counters, machine, failures
and prints Markdown on stdout. Times are criterion's median estimates of one
whole process run (spawn included) unless said otherwise.

    cargo bench --bench replay_speed          # ~45 min on 2 cores (REPLAY_SPEED_SERIES=stages: ~35)
    cargo bench --bench split_throughput      # optional: the splitter rows
    python3 benches/report.py [--target DIR]
"""

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def load_criterion(target):
    """{(group_id, function_id or None, value_str or None): (median_ns, throughput)}"""
    out = {}
    root = target / "criterion"
    for bench in root.glob("**/new/benchmark.json"):
        est_path = bench.parent / "estimates.json"
        if not est_path.exists():
            continue
        b = json.loads(bench.read_text())
        e = json.loads(est_path.read_text())
        key = (b.get("group_id"), b.get("function_id"), b.get("value_str"))
        out[key] = (e["median"]["point_estimate"], b.get("throughput"))
    return out


def fmt_ms(ns):
    return "n/a" if ns is None else f"{ns / 1e6:.1f}"


def fmt_ratio(x, goal=None):
    if x is None:
        return "n/a"
    s = f"{x:.2f}"
    if goal is not None:
        s += " ok" if x <= goal else " MISS"
    return s


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


class Results:
    def __init__(self, target):
        path = target / "tmp" / "replay_speed" / "results.json"
        if not path.exists():
            sys.exit(f"report: {path} is missing: run `cargo bench --bench replay_speed` first")
        self.data = json.loads(path.read_text())
        self.crit = load_criterion(target)
        self.cases = self.data["cases"]

    def time(self, case, mode):
        # A mode whose warm-up failed in this run was not measured: criterion's
        # directory may still hold an older run's estimate, which must not show.
        if mode not in case.get("ok_modes", []):
            return None
        v = self.crit.get((case["group"], None, mode))
        return None if v is None else v[0]

    def time_any(self, case, mode):
        """criterion's median, else the counted runs' mean wall time (the costly
        stages of the `stages` series have only those)."""
        t = self.time(case, mode)
        if t is not None or mode not in case.get("ok_modes", []):
            return t
        v = case["counters"].get(mode)
        return None if v is None else v["wall_s"] * 1e9

    def series(self, name):
        return [c for c in self.cases if name in c["series"]]


def events(case):
    return case["info"]["events"]


def sync_points(case):
    return sum(case["split"].get("sync_points_per_thread", []))


def main_table(r):
    print("## Cost and gain per workload (4 threads)\n")
    print(
        "| workload | args | events | native ms | instrumented ms | record ms | parallel ms "
        "| sequential ms | parallel / instrumented (<= 1.25) | sequential / parallel "
        "| record / native (<= 15) | log bytes / event (<= 8) | split M entries/s "
        "| split bytes / granule (<= 200) |"
    )
    print("|" + "---|" * 14)
    for c in r.series("main"):
        t = {m: r.time(c, m) for m in ("native", "instrumented", "record", "parallel", "sequential")}
        info, split = c["info"], c["split"]
        bpe = info["log_bytes"] / info["events"] if info["events"] else None
        print(
            f"| {c['workload']} | {' '.join(map(str, c['args']))} | {events(c)} "
            f"| {fmt_ms(t['native'])} | {fmt_ms(t['instrumented'])} | {fmt_ms(t['record'])} "
            f"| {fmt_ms(t['parallel'])} | {fmt_ms(t['sequential'])} "
            f"| {fmt_ratio(ratio(t['parallel'], t['instrumented']), 1.25)} "
            f"| {fmt_ratio(ratio(t['sequential'], t['parallel']))} "
            f"| {fmt_ratio(ratio(t['record'], t['native']), 15)} "
            f"| {fmt_ratio(bpe, 8)} "
            f"| {split['entries_per_second'] / 1e6:.1f} "
            f"| {fmt_ratio(split.get('state_bytes_per_granule'), 200)} |"
        )
    print()


STAGE_MODES = ("native", "instrumented", "record", "split", "first_replay", "parallel", "sequential")


def fmt_goal(x, goal, at_least=False):
    if x is None:
        return "n/a"
    ok = x >= goal if at_least else x <= goal
    return f"{x:.2f}" + ("" if ok else " miss")


def stages_table(r):
    cases = r.series("stages")
    if not cases:
        return
    print("## Every stage at real sizes (4 threads)\n")
    print(
        "Native, instrumented and the later replays: criterion medians; record, split and the "
        "first replay (no plans yet: split and plan building included) take seconds here, so "
        "they are the mean of the counted runs. Goals from the issue \"Fast at real sizes\"; "
        "\"miss\" marks a figure that misses it.\n"
    )
    print(
        "| workload | args | events | native ms | instrumented / native | record / instrumented (<= 3) "
        "| split s | split M entries/s (>= 20) | split bytes / granule (<= 200) "
        "| first replay / instrumented (<= 1.5) | first replay / record (< 1) "
        "| later replay / instrumented (<= 1.10) | sequential / parallel | log bytes / event (<= 4) |"
    )
    print("|" + "---|" * 14)
    for c in cases:
        t = {m: r.time_any(c, m) for m in STAGE_MODES}
        info, split = c["info"], c["split"]
        n = info["events"]
        eps = None if not t["split"] else n / (t["split"] / 1e9) / 1e6
        split_s = "n/a" if t["split"] is None else f"{t['split'] / 1e9:.2f}"
        print(
            f"| {c['workload']} | {' '.join(map(str, c['args']))} | {n / 1e6:.1f} M "
            f"| {fmt_ms(t['native'])} | {fmt_ratio(ratio(t['instrumented'], t['native']))} "
            f"| {fmt_goal(ratio(t['record'], t['instrumented']), 3)} "
            f"| {split_s} "
            f"| {fmt_goal(eps, 20, at_least=True)} "
            f"| {fmt_goal(split.get('state_bytes_per_granule'), 200)} "
            f"| {fmt_goal(ratio(t['first_replay'], t['instrumented']), 1.5)} "
            f"| {fmt_goal(ratio(t['first_replay'], t['record']), 1)} "
            f"| {fmt_goal(ratio(t['parallel'], t['instrumented']), 1.10)} "
            f"| {fmt_ratio(ratio(t['sequential'], t['parallel']))} "
            f"| {fmt_goal(info['log_bytes'] / n if n else None, 4)} |"
        )
    print()
    print("Peak resident memory of the largest process of each stage, and where the time goes "
          "(perf-event software counters over the whole process tree, mean of the counted runs):\n")
    print("| workload | stage | wall ms | task clock ms | CPU | context switches | peak MB |")
    print("|---|---|---|---|---|---|---|")
    for c in cases:
        for mode in STAGE_MODES:
            v = c["counters"].get(mode)
            if v is None:
                continue
            cpu = v["task_clock_s"] / v["wall_s"] if v["wall_s"] else 0
            peak = v.get("peak_rss_kb")
            print(
                f"| {c['workload']} | {mode} | {v['wall_s'] * 1e3:.0f} | {v['task_clock_s'] * 1e3:.0f} "
                f"| {cpu:.2f} | {v['context_switches']:.0f} | {'n/a' if peak is None else f'{peak / 1024:.0f}'} |"
            )
    print()


def counters_table(r):
    print("## Where the time goes: perf-event software counters\n")
    src = {v["source"] for c in r.cases for v in c["counters"].values()}
    runs = {v["runs"] for c in r.cases for v in c["counters"].values()}
    print(
        f"Mean of {', '.join(map(str, sorted(runs)))} extra runs per mode, counted over the whole "
        f"process tree ({'; '.join(sorted(src))}). CPU = task clock / wall: above 1 the threads "
        "run (or spin) in parallel, below 1 they wait.\n"
    )
    print("| workload | mode | wall ms | task clock ms | CPU | context switches | migrations |")
    print("|---|---|---|---|---|---|---|")
    for c in r.series("main"):
        for mode in ("native", "instrumented", "record", "parallel", "sequential"):
            v = c["counters"].get(mode)
            if v is None:
                continue
            cpu = v["task_clock_s"] / v["wall_s"] if v["wall_s"] else 0
            print(
                f"| {c['workload']} | {mode} | {v['wall_s'] * 1e3:.1f} | {v['task_clock_s'] * 1e3:.1f} "
                f"| {cpu:.2f} | {v['context_switches']:.0f} | {v['cpu_migrations']:.0f} |"
            )
    print()


def scaling_table(r, series, title, key_name, key):
    cases = sorted(r.series(series), key=key)
    if not cases:
        return
    print(f"## {title}\n")
    print(
        f"| {key_name} | args | events | sync points | waits | instrumented ms | parallel ms "
        "| sequential ms | parallel / instrumented | sequential / parallel "
        "| ns per kept wait (parallel - instrumented) | parallel ctx switches | parallel CPU |"
    )
    print("|" + "---|" * 13)
    for c in cases:
        ti, tp, ts = (r.time(c, m) for m in ("instrumented", "parallel", "sequential"))
        pc = c["counters"].get("parallel")
        sw = f"{pc['context_switches']:.0f}" if pc else "n/a"
        cpu = f"{pc['task_clock_s'] / pc['wall_s']:.2f}" if pc and pc["wall_s"] else "n/a"
        waits = c["split"].get("waits", 0)
        per_wait = f"{(tp - ti) / waits:.0f}" if waits and tp is not None and ti is not None else "n/a"
        print(
            f"| {key(c)} | {' '.join(map(str, c['args']))} | {events(c)} | {sync_points(c)} "
            f"| {waits} | {fmt_ms(ti)} | {fmt_ms(tp)} | {fmt_ms(ts)} "
            f"| {fmt_ratio(ratio(tp, ti))} | {fmt_ratio(ratio(ts, tp))} | {per_wait} | {sw} | {cpu} |"
        )
    print()


def open_table(r, series, title, columns):
    """The cases of `series`, once the table's title and header are printed
    (nothing printed if the run has none)."""
    cases = r.series(series)
    if cases:
        print(f"## {title}\n")
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
    return cases


def handover_table(r):
    cases = open_table(
        r,
        "handover",
        "The cost of one dependency (two threads taking turns at almost every event)",
        ["workload", "args", "quantum", "events", "waits", "instrumented ms", "spread ms",
         "one CPU ms", "ns per wait, spread (<= 300)", "ns per wait, one CPU (<= 5000)"],
    )
    for c in cases:
        ti, ts, to = (r.time(c, m) for m in ("instrumented", "parallel_spread", "parallel_one_cpu"))
        waits = c["split"].get("waits", 0)

        def per_wait(t):
            return f"{(t - ti) / waits:.0f}" if waits and t is not None and ti is not None else "n/a"

        print(
            f"| {c['workload']} | {' '.join(map(str, c['args']))} | {c.get('quantum')} | {events(c)} "
            f"| {waits} | {fmt_ms(ti)} | {fmt_ms(ts)} | {fmt_ms(to)} | {per_wait(ts)} | {per_wait(to)} |"
        )
    if cases:
        print()


def recording_table(r, cases, title, how_header, how):
    """One row per case: how it was recorded (`how(case)`), its waits and
    the times of its recording and replays against the instrumented run."""
    if not cases:
        return
    print(f"## {title}\n")
    print(
        f"| workload | args | {how_header} | events | waits | instrumented ms | record ms "
        "| parallel ms | sequential ms | record / instrumented | parallel / instrumented "
        "| sequential / parallel |"
    )
    print("|" + "---|" * 12)
    for c in cases:
        # (A case shared with the `stages` series has counted record runs only.)
        ti, tr, tp, ts = (r.time_any(c, m) for m in ("instrumented", "record", "parallel", "sequential"))
        print(
            f"| {c['workload']} | {' '.join(map(str, c['args']))} | {how(c)} "
            f"| {events(c)} | {c['split'].get('waits', 0)} | {fmt_ms(ti)} | {fmt_ms(tr)} "
            f"| {fmt_ms(tp)} | {fmt_ms(ts)} | {fmt_ratio(ratio(tr, ti))} "
            f"| {fmt_ratio(ratio(tp, ti))} | {fmt_ratio(ratio(ts, tp))} |"
        )
    print()


def quantum_table(r):
    cases = sorted(r.series("quantum"), key=lambda c: (c["workload"], c.get("quantum") is None))
    title = "The recording quantum (`record --quantum 0` against record's default)"
    how = lambda c: "default" if c.get("quantum") is None else c.get("quantum")  # noqa: E731
    recording_table(r, cases, title, "quantum", how)


def serial_table(r):
    cases = sorted(r.series("serial"), key=lambda c: (c["workload"], bool(c.get("serial"))))
    title = "Serial recording (`record --serialize` against record's default)"
    how = lambda c: "serial" if c.get("serial") else "default"  # noqa: E731
    recording_table(r, cases, title, "recorded", how)


def size_table(r):
    cases = sorted(r.series("size"), key=events)
    if len(cases) < 2:
        return
    print("## Fixed cost and cost per event (private_merge at two sizes)\n")
    print("| args | events | native ms | instrumented ms | parallel ms | parallel / instrumented |")
    print("|---|---|---|---|---|---|")
    for c in cases:
        tn, ti, tp = (r.time(c, m) for m in ("native", "instrumented", "parallel"))
        print(
            f"| {' '.join(map(str, c['args']))} | {events(c)} | {fmt_ms(tn)} | {fmt_ms(ti)} "
            f"| {fmt_ms(tp)} | {fmt_ratio(ratio(tp, ti))} |"
        )
    a, b = cases[0], cases[-1]
    de = events(b) - events(a)
    d = {}
    for m in ("native", "instrumented", "parallel"):
        ta, tb = r.time(a, m), r.time(b, m)
        d[m] = None if ta is None or tb is None else (tb - ta) / de
    if all(v is not None for v in d.values()):
        fixed = r.time(a, "parallel") - d["parallel"] * events(a) - (
            r.time(a, "instrumented") - d["instrumented"] * events(a)
        )
        print(
            f"\nMarginal cost per recorded event between the two sizes: native {d['native']:.1f} ns, "
            f"instrumented {d['instrumented']:.1f} ns, parallel replay {d['parallel']:.1f} ns "
            f"(marginal parallel / instrumented = {fmt_ratio(ratio(d['parallel'], d['instrumented']))}); "
            f"fixed cost of a replay over the instrumented run: {fixed / 1e6:.1f} ms."
        )
    print()


def splitter_table(r):
    rows = []
    for (group, func, value), (ns, thr) in sorted(r.crit.items()):
        if not group or not group.startswith("split_throughput/"):
            continue
        elems = (thr or {}).get("Elements")
        rows.append((group, func, value, ns, elems))
    print("## Splitter\n")
    main = r.series("main")
    if main:
        eps = [c["split"]["entries_per_second"] for c in main]
        print(
            "`rr-lite split --json` on the recorded workloads (trace reading included): "
            + ", ".join(f"{c['workload']} {c['split']['entries_per_second'] / 1e6:.1f}" for c in main)
            + f" M entries/s (best {max(eps) / 1e6:.1f}).\n"
        )
    if not rows:
        print("(no split_throughput results: run `cargo bench --bench split_throughput`)\n")
        return
    print("`split_throughput` bench (analysis only, logs in memory, one core; goal indexed >= 20 M entries/s):\n")
    print("| group | benchmark | entries | median ms | M entries/s |")
    print("|---|---|---|---|---|")
    by = {}
    for group, func, value, ns, elems in rows:
        meps = elems / ns * 1e3 if elems else None
        by[(group, func, value)] = ns
        print(
            f"| {group.split('/', 1)[1]} | {func}/{value} | {elems} | {ns / 1e6:.1f} "
            f"| {'n/a' if meps is None else f'{meps:.1f}'} |"
        )
    speedups = []
    for (group, func, value), ns in by.items():
        if group.endswith("worklist_vs_indexed_1M") and func == "worklist":
            idx = by.get((group, "indexed", value))
            if idx:
                speedups.append(f"{value}: {ns / idx:.1f}x")
    if speedups:
        print(f"\nIndexed vs worklist speed-up at 1 M entries: {', '.join(speedups)}.")
    print()


def header(r):
    d = r.data
    m = d["machine"]
    print("# rr-lite benchmarks\n")
    print(
        f"Machine: {m.get('cpu')}, {m.get('cpus')} CPUs, Linux {m.get('kernel')}; {m.get('cc')}. "
        f"Load average at start: {m.get('loadavg_start')}, at end: {m.get('loadavg_end')}.\n"
    )
    print(
        "Produced by `cargo bench --bench replay_speed` (+ `cargo bench --bench split_throughput`) "
        "then `python3 benches/report.py`. Times: criterion medians of whole process runs.\n"
    )
    if not d.get("finished"):
        print("**The replay_speed run did not finish: criterion numbers may be missing or stale.**\n")


def failures(r):
    fs = r.data.get("failures", [])
    if not fs:
        return
    print("## Failures\n")
    seen = set()
    for f in fs:
        key = (f["case"], f["mode"], f["status"])
        if key in seen:
            continue
        seen.add(key)
        n = sum(1 for g in fs if (g["case"], g["mode"], g["status"]) == key)
        print(f"- {f['case']} {f['mode']} ({n} run(s)): `{f['command']}` -> {f['status']}")
        err = f["stderr"].strip()
        if err:
            print("  ```")
            for line in err.splitlines()[:12]:
                print(f"  {line}")
            print("  ```")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", type=Path, help="cargo target directory")
    args = ap.parse_args()
    target = args.target or Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    r = Results(target)
    header(r)
    stages_table(r)
    main_table(r)
    counters_table(r)
    scaling_table(r, "threads", "Parallel replay against thread count (racy_share, same total work, 10 % shared)",
                  "threads", lambda c: c["args"][1])
    scaling_table(r, "index_threads", "Cost per kept wait against thread count (shared_index: every "
                  "append depends on another thread's; same total work, 2 cores)",
                  "threads", lambda c: c["args"][1])
    scaling_table(r, "sharing", "Parallel replay against sharing ratio (racy_share, 4 threads)",
                  "shared per mille", lambda c: c["args"][2])
    scaling_table(r, "sharing_real", "Parallel replay against sharing ratio at a real size "
                  "(racy_share, 32 M updates, 4 threads, 2 cores)",
                  "shared per mille", lambda c: c["args"][2])
    quantum_table(r)
    serial_table(r)
    handover_table(r)
    size_table(r)
    splitter_table(r)
    failures(r)


if __name__ == "__main__":
    main()
