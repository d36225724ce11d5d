#!/usr/bin/env python3
"""Record and replay a suite of third-party pthread programs with rr-lite.

    scripts/third-party.sh CHECKOUT [--manifest FILE] [--recordings N] [--timeout S]
                           [--json FILE] [--tsv FILE] [--rr-lite BIN] [--only REGEX] ...

Builds every program of a checkout of third-party sources (given by path; nothing of
it is part of this repository) with `rr-lite cc` / `rr-lite c++`, records each one
several times, replays every recording in every mode (--parallel twice, --sequential,
--verify) and compares each replay's stdout, stderr (less the notes of the replay that
built the plans), exit status and the files the program left in its working directory
with the recording's. Prints a table (markdown),
the skipped programs with their reason, and a summary line; --json / --tsv write the
results for machines.

Which programs:
  * Discovery (on unless --no-discover): every C/C++ source file (.c .cc .cpp .cxx) under
    CHECKOUT that defines main() and creates threads (pthread_create or std::thread) is a
    single-file program, built alone:
        rr-lite cc|c++ -pthread -g -O0 -w -I<its dir> FILE -o BIN -lm
    Its arguments come from an `args: ...` comment in its first lines, if any (a
    convention of several benchmark suites); {NUMTHREADS} and {OUTFILE} in it become
    --threads and output.txt; an argument naming a file or directory beside the source
    is copied into the run directory. A program whose build fails is skipped, visibly,
    with the compiler's first error.
  * A manifest (--manifest FILE, INI syntax, kept with the checkout, not here) adds,
    overrides or skips programs. A section is named like a discovered program (its path
    under CHECKOUT without the extension) or is a glob over those names; keys:
        dir       source directory, relative to CHECKOUT (default: the section's dir)
        sources   source files relative to dir (generic build, as above)
        includes  include directories relative to dir
        cflags    extra compiler flags          libs   extra link flags
        build     shell command run in a scratch copy of dir instead of the generic
                  build; cc, gcc, c++, g++ (and $CC, $CXX) are rr-lite's wrappers there
        exe       the binary the build command makes, relative to the copy of dir
        args      program arguments ({NUMTHREADS}, {OUTFILE} substituted)
        inputs    files / directories (relative to dir) copied into the run directory
        setup     shell command run in the run directory after the copy, before every
                  record and replay (e.g. to shorten an input: head -c 40000 in > x)
        stdin     file (relative to dir) given as standard input (default /dev/null)
        timeout   per-run timeout in seconds for this program
        skip      a reason: the program is listed as skipped with it
    A section [discover] with `exclude = GLOB...` leaves files or directories out of the
    discovery, like --exclude.

Every run (record or replay) starts in a fresh run directory holding only the inputs, at
the same path (replay needs the recorded cwd). A run still going after --timeout seconds
gets SIGINT (like Ctrl-C; rr-lite records that ending), then SIGKILL. A recording that
had to be interrupted this way is still replayed if its trace is complete: the replay
must reproduce the same interruption.

Replay outcome kinds: EXACT; DIVERGED (exit 86, the divergence report); DEADLOCK (exit 87,
the watchdog); RR-ERROR (exit 1 with an rr-lite error where the recording did not exit
1); SILENT (rr-lite reported nothing but stdout, stderr, exit status or the files
differ); HANG (still running at the timeout). Recording kinds: OK, HUNG-INTERRUPTED
(timed out, interrupted, trace complete: replayed), HUNG (no usable trace), FAILED.

A recording that hung or failed is followed (once per program) by a run of the same
binary without rr-lite, to tell a program that hangs by itself from one that hangs only
when recorded. Exit status: 0 when every replay was exact and every recording usable,
2 otherwise, 1 on errors of this script.
"""

from __future__ import annotations

import argparse
import configparser
import datetime
import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

SRC_EXT = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++"}
MAIN_RE = re.compile(rb"(?m)^[\w \t\*]*\bmain[ \t]*\(")
THREAD_RE = re.compile(rb"pthread_create|std::thread")
ARGS_RE = re.compile(r"args:(.*)")
SKIP_DIRS = {".git", ".svn", "obj", "run", "node_modules", "__pycache__"}
# (label, replay flag); parallel runs --parallel-replays times per recording
MODES = [("parallel", "--parallel"), ("sequential", "--sequential"), ("verify", "--verify")]
OUTFILE = "output.txt"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- programs


@dataclass
class Program:
    name: str  # path under the checkout, without extension (or a manifest section)
    src_dir: Path
    lang: str = "c"
    sources: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    cflags: list[str] = field(default_factory=list)
    libs: list[str] = field(default_factory=list)
    build: str | None = None
    exe: str | None = None
    args: str = ""
    inputs: list[str] = field(default_factory=list)
    stdin: str | None = None
    setup: str | None = None
    timeout: float | None = None
    skip: str | None = None
    origin: str = "discovered"


def lang_of(sources: list[str]) -> str:
    return "c++" if any(SRC_EXT.get(Path(s).suffix) == "c++" for s in sources) else "c"


def excluded(rel: str, globs: list[str]) -> bool:
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatch(p, g) for g in globs for p in prefixes)


def args_comment(text: bytes) -> str:
    for line in text.decode("latin-1").splitlines()[:5]:
        m = ARGS_RE.search(line)
        if m and ("//" in line or "/*" in line or line.lstrip().startswith("#")):
            return m.group(1).replace("*/", "").strip()
    return ""


def discover(root: Path, globs: list[str], avoid: list[Path]) -> list[Program]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = sorted(
            n
            for n in dirnames
            if n not in SKIP_DIRS
            and not any((d / n).resolve() == a for a in avoid)
            and not excluded((d / n).relative_to(root).as_posix(), globs)
        )
        for fname in sorted(filenames):
            path = d / fname
            if path.suffix not in SRC_EXT or path.is_symlink():
                continue
            rel = path.relative_to(root).as_posix()
            if excluded(rel, globs):
                continue
            try:
                text = path.read_bytes()
            except OSError:
                continue
            if not (MAIN_RE.search(text) and THREAD_RE.search(text)):
                continue
            args = args_comment(text)
            inputs = [
                tok
                for tok in shlex.split(args.replace("{OUTFILE}", "").replace("{NUMTHREADS}", ""))
                if "/" not in tok.strip("/") and (d / tok).exists() and tok != fname
            ]
            found.append(
                Program(
                    name=rel[: -len(path.suffix)],
                    src_dir=d,
                    lang=SRC_EXT[path.suffix],
                    sources=[fname],
                    args=args,
                    inputs=inputs,
                )
            )
    return found


def split_list(value: str) -> list[str]:
    return shlex.split(value) if value else []


def apply_section(prog: Program, sec: configparser.SectionProxy, root: Path) -> None:
    if "dir" in sec:
        prog.src_dir = root / sec["dir"]
    for key in ("sources", "includes", "cflags", "libs", "inputs"):
        if key in sec:
            setattr(prog, key, split_list(sec[key]))
    if "sources" in sec:
        prog.lang = lang_of(prog.sources)
    for key in ("build", "exe", "args", "stdin", "setup", "skip"):
        if key in sec:
            setattr(prog, key, sec[key].strip())
    if "lang" in sec:
        prog.lang = sec["lang"].strip()
    if "timeout" in sec:
        prog.timeout = float(sec["timeout"])
    if "build" in sec or "sources" in sec:
        prog.origin = "manifest"


def load_programs(opts, root: Path, avoid: list[Path]) -> list[Program]:
    programs: dict[str, Program] = {}
    cfg = configparser.ConfigParser(interpolation=None, default_section="__defaults__")
    cfg.optionxform = str
    if opts.manifest:
        with open(opts.manifest, encoding="utf-8") as f:
            cfg.read_file(f)
    if not opts.no_discover:
        globs = opts.exclude + split_list(cfg.get("discover", "exclude", fallback=""))
        for p in discover(root, globs, avoid):
            programs[p.name] = p
    if opts.manifest:
        for name in cfg.sections():
            if name == "discover":
                continue
            sec = cfg[name]
            if any(ch in name for ch in "*?["):
                matches = [p for n, p in programs.items() if fnmatch.fnmatch(n, name)]
                for p in matches:
                    apply_section(p, sec, root)
                continue
            prog = programs.get(name)
            if prog is None:
                prog = Program(name=name, src_dir=root / sec.get("dir", str(Path(name).parent)), origin="manifest")
                programs[name] = prog
            apply_section(prog, sec, root)
    result = sorted(programs.values(), key=lambda p: p.name)
    if opts.only:
        rx = re.compile(opts.only)
        result = [p for p in result if rx.search(p.name)]
    return result


def display_names(programs: list[Program]) -> dict[str, str]:
    names = [p.name for p in programs]
    if len(names) < 2:
        return {n: n for n in names}
    parts = [n.split("/") for n in names]
    common = 0
    while all(len(p) > common + 1 and p[common] == parts[0][common] for p in parts):
        common += 1
    return {n: "/".join(n.split("/")[common:]) for n in names}


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


# --------------------------------------------------------------------------- processes


@dataclass
class RunResult:
    status: int | None  # exit status as rr-lite reports it (128+N for signal N)
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool
    killed: bool  # needed SIGKILL after the interruption
    files: dict[str, str]


def run_with_timeout(cmd, cwd, env, stdin_path, timeout, out_dir: Path, interrupt=signal.SIGINT) -> RunResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    so, se = out_dir / "stdout", out_dir / "stderr"
    start = time.monotonic()
    timed_out = killed = False
    with open(stdin_path or os.devnull, "rb") as fin, open(so, "wb") as fo, open(se, "wb") as fe:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=fin, stdout=fo, stderr=fe, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, interrupt)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                killed = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        except BaseException:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            raise
    seconds = time.monotonic() - start
    status = proc.returncode
    if status is not None and status < 0:
        status = 128 - status
    return RunResult(status, so.read_bytes(), se.read_bytes(), seconds, timed_out, killed, snapshot(Path(cwd)))


def snapshot(run_dir: Path) -> dict[str, str]:
    files = {}
    for dirpath, _dirs, filenames in os.walk(run_dir):
        for fname in filenames:
            p = Path(dirpath) / fname
            if p.is_file() and not p.is_symlink():
                files[p.relative_to(run_dir).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
    return files


def first_lines(data: bytes, n: int = 4) -> str:
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return " | ".join(lines[:n])


def rr_lite_report(got: bytes, recorded: bytes) -> bytes:
    """rr-lite's own report in a replay's stderr: from its first `rr-lite` line on."""
    m = re.search(rb"(?m)^rr-lite\b", got)
    if m:
        return got[m.start():]
    return got[len(recorded):] if got.startswith(recorded) else got


# What a replay that built the plans notes (false sharing, many waits): advice
# about speed, not part of the program's output.
PLANS_BUILT_NOTE = b"rr-lite: note: this replay built the trace's plans."


def without_plans_notes(stderr: bytes) -> bytes:
    """A replay's stderr less the notes of a replay that built the plans."""
    return b"".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(PLANS_BUILT_NOTE))


def first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else None
        y = lb[i] if i < len(lb) else None
        if x != y:
            show = lambda v: "<none>" if v is None else repr(v.decode("utf-8", "replace")[:80])  # noqa: E731
            return f"line {i + 1}: recorded {show(x)}, replayed {show(y)}"
    return "same lines, different bytes"


# --------------------------------------------------------------------------- the suite


class Suite:
    def __init__(self, opts, rr: Path, root: Path, scratch: Path):
        self.opts, self.rr, self.root, self.scratch = opts, rr, root, scratch
        self.env = dict(os.environ)
        self.env["RR_LITE_TRACE_DIR"] = str(scratch / "traces")
        self.build_env = self.make_build_env()

    def make_build_env(self) -> dict[str, str]:
        shim = self.scratch / "shim"
        shim.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.setdefault("RR_LITE_CC", shutil.which("cc") or "cc")
        env.setdefault("RR_LITE_CXX", shutil.which("c++") or "c++")
        for name, sub in (("cc", "cc"), ("gcc", "cc"), ("c++", "c++"), ("g++", "c++")):
            f = shim / name
            f.write_text(f'#!/bin/sh\nexec {shlex.quote(str(self.rr))} {sub} "$@"\n')
            f.chmod(0o755)
        env["PATH"] = f"{shim}:{env.get('PATH', '')}"
        env["CC"], env["CXX"] = str(shim / "cc"), str(shim / "c++")
        return env

    def subst(self, text: str) -> str:
        return text.replace("{NUMTHREADS}", str(self.opts.threads)).replace("{OUTFILE}", OUTFILE)

    # ---- build

    def build(self, prog: Program) -> tuple[Path | None, str, float]:
        bdir = self.scratch / "build" / slug(prog.name)
        shutil.rmtree(bdir, ignore_errors=True)
        bdir.mkdir(parents=True)
        logf = bdir / "build.log"
        start = time.monotonic()
        if not prog.src_dir.is_dir():
            return None, f"no directory {prog.src_dir.relative_to(self.root)}", 0.0
        if prog.build:
            work = bdir / "src"
            shutil.copytree(prog.src_dir, work, symlinks=True)
            cmd = ["bash", "-c", prog.build]
            cwd, exe = work, (work / prog.exe if prog.exe else None)
            if exe is None:
                return None, "manifest: `build` needs `exe`", 0.0
        else:
            if not prog.sources:
                return None, "no sources", 0.0
            exe = bdir / Path(prog.sources[0]).stem
            wrapper = "c++" if prog.lang == "c++" else "cc"
            cmd = [str(self.rr), wrapper, "-pthread", "-g", "-O0", "-w", f"-I{prog.src_dir}"]
            cmd += [f"-I{prog.src_dir / i}" for i in prog.includes]
            cmd += prog.cflags + [str(prog.src_dir / s) for s in prog.sources]
            cmd += ["-o", str(exe)] + prog.libs + ["-lm"]
            cwd = bdir
        with open(logf, "wb") as out:
            out.write(("$ " + shlex.join(cmd) + "\n").encode())
            out.flush()
            try:
                rc = subprocess.run(
                    cmd, cwd=cwd, env=self.build_env, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, timeout=self.opts.build_timeout, start_new_session=True,
                ).returncode
            except subprocess.TimeoutExpired:
                return None, f"build timed out after {self.opts.build_timeout:.0f}s", time.monotonic() - start
        secs = time.monotonic() - start
        if rc != 0 or not exe.is_file():
            text = logf.read_text("utf-8", "replace").splitlines()[1:]
            errs = [line for line in text if re.search(r"\berror:|undefined reference|No such file|not found", line)]
            errs += [line for line in text if re.search(r"\berror\b|Error ", line)]
            why = (errs or [line for line in text if line.strip()] or ["(no output)"])[0].strip()
            return None, f"build failed: {why[:160]}", secs
        return exe, "", secs

    # ---- runs

    def run_dir(self, prog: Program) -> Path:
        return self.scratch / "run" / slug(prog.name)

    def fresh_run_dir(self, prog: Program) -> Path:
        rd = self.run_dir(prog)
        shutil.rmtree(rd, ignore_errors=True)
        rd.mkdir(parents=True)
        for item in prog.inputs:
            src = prog.src_dir / item
            dst = rd / item
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True)
            elif src.exists():
                shutil.copy2(src, dst)
        if prog.setup:
            subprocess.run(["bash", "-c", prog.setup], cwd=rd, check=True, stdin=subprocess.DEVNULL)
        return rd

    def stdin_of(self, prog: Program) -> str | None:
        return str(prog.src_dir / prog.stdin) if prog.stdin else None

    def record(self, prog: Program, exe: Path, k: int) -> dict:
        trace = self.scratch / "traces" / f"{slug(prog.name)}-{k}"
        shutil.rmtree(trace, ignore_errors=True)
        rd = self.fresh_run_dir(prog)
        argv = [str(exe)] + shlex.split(self.subst(prog.args))
        cmd = [str(self.rr), "record", "-q", "-o", str(trace), "--"] + argv
        timeout = prog.timeout or self.opts.timeout
        r = run_with_timeout(cmd, rd, self.env, self.stdin_of(prog), timeout, self.scratch / "out" / "record")
        header = None
        try:
            header = json.loads((trace / "header.json").read_text())
        except (OSError, ValueError):
            pass
        rec = {
            "index": k, "trace": trace, "result": r, "status": r.status, "seconds": round(r.seconds, 3),
            "threads": header.get("threads") if header else None,
            "events": sum(header.get("entries", [])) if header else None,
            "ending": header.get("ending") if header else None,
            "problems": header.get("problems") if header else None,
        }
        if header is None:
            rec["kind"] = "HUNG" if r.timed_out else "FAILED"
            rec["detail"] = first_lines(r.stderr) or f"no header.json (exit {r.status})"
        elif not header.get("ok", False):
            rec["kind"] = "HUNG" if r.timed_out else "FAILED"
            rec["detail"] = "trace not ok: " + "; ".join(header.get("problems") or [])[:200]
        elif r.timed_out:
            rec["kind"] = "HUNG-INTERRUPTED"
            rec["detail"] = f"still running after {timeout:.0f}s, interrupted: exit {r.status}"
        else:
            rec["kind"] = "OK"
            rec["detail"] = ""
        return rec

    def native(self, prog: Program, exe: Path) -> str:
        """Once per program whose recording hung or failed: the same run without rr-lite."""
        rd = self.fresh_run_dir(prog)
        timeout = prog.timeout or self.opts.timeout
        r = run_with_timeout([str(exe)] + shlex.split(self.subst(prog.args)), rd, self.env, self.stdin_of(prog),
                             timeout, self.scratch / "out" / "native")
        if r.timed_out:
            return f"native run also hung ({timeout:.0f}s)"
        return f"native run exited {r.status} in {r.seconds:.1f}s"

    def replay(self, prog: Program, rec: dict, flag: str) -> dict:
        rd = self.fresh_run_dir(prog)
        cmd = [str(self.rr), "replay", flag, str(rec["trace"])]
        timeout = prog.timeout or self.opts.timeout
        r = run_with_timeout(cmd, rd, self.env, self.stdin_of(prog), timeout, self.scratch / "out" / "replay", signal.SIGTERM)
        want: RunResult = rec["result"]
        r = replace(r, stderr=without_plans_notes(r.stderr))
        same = r.status == want.status and r.stdout == want.stdout and r.stderr == want.stderr and r.files == want.files
        extra = rr_lite_report(r.stderr, want.stderr)
        if r.timed_out:
            kind, detail = "HANG", f"still running after {timeout:.0f}s"
        elif same:
            kind, detail = "EXACT", ""
        elif r.status == 86 and want.status != 86:
            kind, detail = "DIVERGED", first_lines(extra)
        elif r.status == 87 and want.status != 87:
            kind, detail = "DEADLOCK", first_lines(extra)
        elif r.status == 1 and want.status != 1 and b"rr-lite" in extra:
            kind, detail = "RR-ERROR", first_lines(extra)
        else:
            kind = "SILENT"
            diffs = []
            if r.status != want.status:
                diffs.append(f"exit {r.status}, recorded {want.status}")
            if r.stdout != want.stdout:
                diffs.append("stdout " + first_difference(want.stdout, r.stdout))
            if r.stderr != want.stderr:
                diffs.append("stderr " + first_difference(want.stderr, r.stderr))
            if r.files != want.files:
                changed = sorted(set(r.files.items()) ^ set(want.files.items()))
                diffs.append("files differ: " + ", ".join(sorted({f for f, _ in changed}))[:120])
            detail = "; ".join(diffs)
        return {"mode": flag.lstrip("-"), "kind": kind, "status": r.status, "expected": want.status,
                "seconds": round(r.seconds, 3), "detail": detail}

    def run_program(self, prog: Program) -> dict:
        res = {"name": prog.name, "origin": prog.origin, "dir": str(prog.src_dir.relative_to(self.root)),
               "args": self.subst(prog.args), "recordings": [], "skip": prog.skip}
        if prog.skip:
            return res
        exe, why, secs = self.build(prog)
        res["build_seconds"] = round(secs, 2)
        if exe is None:
            res["skip"] = why
            return res
        for k in range(self.opts.recordings):
            rec = self.record(prog, exe, k)
            rec["replays"] = []
            if rec["kind"] != "OK" and "native" not in res:
                res["native"] = self.native(prog, exe)
                rec["detail"] += f"; {res['native']}"
            if rec["kind"] in ("OK", "HUNG-INTERRUPTED"):
                for label, flag in MODES:
                    reps = self.opts.parallel_replays if label == "parallel" else 1
                    for _ in range(reps):
                        rec["replays"].append(self.replay(prog, rec, flag))
            if not self.opts.keep:
                shutil.rmtree(rec["trace"], ignore_errors=True)
            res["recordings"].append(rec)
            bad = [f"{r['mode']}:{r['kind']}" for r in rec["replays"] if r["kind"] != "EXACT"]
            log(f"    recording {k}: {rec['kind']} exit {rec['status']} "
                f"({rec['threads']} threads, {rec['events']} events, {rec['seconds']:.2f}s)"
                f"{' ' + rec['detail'] if rec['detail'] else ''}; replays "
                f"{len(rec['replays']) - len(bad)}/{len(rec['replays'])} exact{(' ' + ' '.join(bad)) if bad else ''}")
        shutil.rmtree(self.run_dir(prog), ignore_errors=True)
        return res


# --------------------------------------------------------------------------- report


def summarize(results: list[dict], names: dict[str, str], parallel_reps: int) -> tuple[str, str, dict]:
    rows = []
    totals = {label: [0, 0] for label, _ in MODES}
    kinds: dict[str, int] = {}
    rec_kinds: dict[str, int] = {}
    ran = skipped = 0
    for res in results:
        if res["skip"]:
            skipped += 1
            continue
        ran += 1
        recs = res["recordings"]
        per_mode = {label: [0, 0] for label, _ in MODES}
        fails: dict[str, int] = {}
        for rec in recs:
            rec_kinds[rec["kind"]] = rec_kinds.get(rec["kind"], 0) + 1
            if rec["kind"] != "OK":
                key = f"record {rec['kind']}"
                fails[key] = fails.get(key, 0) + 1
            for rp in rec["replays"]:
                cell = per_mode[rp["mode"]]
                cell[1] += 1
                cell[0] += rp["kind"] == "EXACT"
                if rp["kind"] != "EXACT":
                    key = f"{rp['mode']} {rp['kind']}"
                    fails[key] = fails.get(key, 0) + 1
                    kinds[rp["kind"]] = kinds.get(rp["kind"], 0) + 1
        for label in per_mode:
            totals[label][0] += per_mode[label][0]
            totals[label][1] += per_mode[label][1]
        statuses = [str(r["status"]) for r in recs]
        usable = sum(r["kind"] in ("OK", "HUNG-INTERRUPTED") for r in recs)
        threads = max((r["threads"] or 0) for r in recs) if recs else 0
        events = [r["events"] for r in recs if r["events"] is not None]
        ev = f"{min(events)}-{max(events)}" if events and min(events) != max(events) else (str(events[0]) if events else "-")
        rows.append(
            "| " + " | ".join([
                names[res["name"]],
                f"{usable}/{len(recs)}",
                ",".join(statuses),
                str(threads),
                ev,
                *[f"{per_mode[label][0]}/{per_mode[label][1]}" for label, _ in MODES],
                ", ".join(f"{k} x{n}" for k, n in sorted(fails.items())) or "",
            ]) + " |"
        )
    columns = ["program", "recordings usable", "recorded exit", "threads", "events"]
    columns += [f"{label}{f' x{parallel_reps}' if label == 'parallel' else ''} exact" for label, _ in MODES]
    columns += ["failures"]
    header = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)
    all_exact = sum(t[0] for t in totals.values())
    all_total = sum(t[1] for t in totals.values())
    n_recs = sum(rec_kinds.values())
    summary = (
        f"SUMMARY: {ran} programs run, {skipped} skipped; {n_recs} recordings"
        f" ({', '.join(f'{k} {n}' for k, n in sorted(rec_kinds.items()))}); replays exact {all_exact}/{all_total}"
        f" ({'; '.join(f'{label} {t[0]}/{t[1]}' for label, t in totals.items())});"
        f" failures: {', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or 'none'}"
    )
    return header + "\n" + "\n".join(rows), summary, {
        "programs_run": ran, "programs_skipped": skipped, "recordings": rec_kinds,
        "replays": {label: {"exact": t[0], "total": t[1]} for label, t in totals.items()},
        "replay_failures": kinds, "exact": all_exact, "total": all_total,
    }


def find_rr_lite(opt: str | None) -> Path:
    if opt:
        p = Path(opt)
        if not (p.is_file() and os.access(p, os.X_OK)):
            sys.exit(f"third-party: --rr-lite {opt}: not an executable file")
        return p.resolve()
    repo = Path(__file__).resolve().parent.parent
    built = repo / "target" / "release" / "rr-lite"
    if built.is_file():
        return built
    found = shutil.which("rr-lite")
    if found:
        return Path(found).resolve()
    sys.exit("third-party: no rr-lite: give --rr-lite, run `cargo build --release`, or put it on PATH")


def git_commit(path: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except OSError:
        return None


def main() -> int:
    ap = argparse.ArgumentParser(
        prog="scripts/third-party.sh", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2],
    )
    ap.add_argument("checkout", help="checkout of the third-party suite (never inside this repository)")
    ap.add_argument("--manifest", help="INI file adding, overriding or skipping programs (see below)")
    ap.add_argument("--no-discover", action="store_true", help="only the manifest's programs")
    ap.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                    help="leave out discovered files/dirs whose path under CHECKOUT matches (repeatable)")
    ap.add_argument("--only", metavar="REGEX", help="run only programs whose name matches")
    ap.add_argument("--list", action="store_true", help="list the programs (and skips) and exit")
    ap.add_argument("-n", "--recordings", type=int, default=3, help="recordings per program (3)")
    ap.add_argument("--parallel-replays", type=int, default=2, help="--parallel replays per recording (2)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per record or replay run (30)")
    ap.add_argument("--build-timeout", type=float, default=600.0, help="seconds per program build (600)")
    ap.add_argument("--threads", type=int, default=4, help="value of {NUMTHREADS} in arguments (4)")
    ap.add_argument("--rr-lite", help="rr-lite binary (default: this repo's target/release, then PATH)")
    ap.add_argument("--scratch", help="scratch directory (default: a new one under $TMPDIR, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (builds, traces)")
    ap.add_argument("--json", metavar="FILE", help="write every result as JSON")
    ap.add_argument("--tsv", metavar="FILE", help="write one row per run as TSV")
    opts = ap.parse_args()

    root = Path(opts.checkout).resolve()
    if not root.is_dir():
        sys.exit(f"third-party: {opts.checkout}: not a directory")
    repo = Path(__file__).resolve().parent.parent
    if root == repo or repo in root.parents:
        sys.exit("third-party: the checkout must be outside this repository")
    rr = find_rr_lite(opts.rr_lite)
    if opts.scratch:
        scratch = Path(opts.scratch).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="rr-lite-third-party-"))
    programs = load_programs(opts, root, [scratch])
    names = display_names(programs)
    if opts.list:
        for p in programs:
            if p.skip:
                how = "SKIP: " + p.skip
            elif p.build:
                how = f"build: {p.build} -> {p.exe}; args: {p.args}"
            else:
                how = f"{p.lang}: {' '.join(p.sources)}; args: {p.args}"
            print(f"{names[p.name]}\t{p.origin}\t{how}")
        if not opts.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        return 0

    version = subprocess.run([str(rr), "--version"], capture_output=True, text=True).stdout.strip()
    log(f"third-party: {len(programs)} programs from {root}, rr-lite {rr} ({version}), scratch {scratch}")
    suite = Suite(opts, rr, root, scratch)
    results = []
    started = time.monotonic()
    interrupted = False
    try:
        for i, prog in enumerate(programs, 1):
            log(f"[{i}/{len(programs)}] {names[prog.name]}" + (f": skipped ({prog.skip})" if prog.skip else ""))
            res = suite.run_program(prog)
            if res["skip"] and not prog.skip:
                log(f"    skipped: {res['skip']}")
            results.append(res)
    except KeyboardInterrupt:
        interrupted = True
        log("third-party: interrupted; reporting what ran")
    finally:
        if not opts.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.monotonic() - started

    table, summary_line, summary = summarize(results, names, opts.parallel_replays)
    print(table)
    skips = [r for r in results if r["skip"]]
    if skips:
        print("\nSkipped:\n")
        for r in skips:
            print(f"- {names[r['name']]}: {r['skip']}")
    failures = [
        (names[r["name"]], rec, rp)
        for r in results for rec in r["recordings"] for rp in [None, *rec["replays"]]
        if (rp is None and rec["kind"] != "OK") or (rp is not None and rp["kind"] != "EXACT")
    ]
    if failures:
        print("\nProblems (recordings not OK, replays not exact):\n")
        for name, rec, rp in failures:
            if rp is None:
                print(f"- {name} recording {rec['index']}: {rec['kind']}: {rec['detail']}")
            else:
                print(f"- {name} recording {rec['index']} (exit {rec['status']}) {rp['mode']}: {rp['kind']}"
                      f" (exit {rp['status']}): {rp['detail']}")
    summary_line += f" [{elapsed:.0f}s{', interrupted' if interrupted else ''}]"
    print("\n" + summary_line)

    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "rr_lite": str(rr), "rr_lite_version": version,
        # The repository's commit names the binary only if it is the repository's own build
        # (a copy given with --rr-lite may be of any commit); the digest always does.
        "rr_lite_commit": git_commit(repo) if repo.resolve() in rr.resolve().parents else None,
        "rr_lite_sha256": hashlib.sha256(rr.read_bytes()).hexdigest(),
        "checkout": str(root), "checkout_commit": git_commit(root),
        "options": {k: v for k, v in vars(opts).items() if k not in ("json", "tsv")},
        "seconds": round(elapsed, 1), "interrupted": interrupted, "summary": summary,
        "summary_line": summary_line,
    }
    if opts.json:
        clean = []
        for r in results:
            r = dict(r, display=names[r["name"]])
            r["recordings"] = [{k: v for k, v in rec.items() if k not in ("trace", "result")} for rec in r["recordings"]]
            clean.append(r)
        Path(opts.json).write_text(json.dumps(dict(meta, programs=clean), indent=1) + "\n")
    if opts.tsv:
        with open(opts.tsv, "w", encoding="utf-8") as f:
            f.write("program\trecording\tmode\tkind\texit\trecorded_exit\tseconds\tdetail\n")
            for r in results:
                if r["skip"]:
                    f.write(f"{names[r['name']]}\t\tskip\tSKIPPED\t\t\t\t{r['skip']}\n")
                for rec in r["recordings"]:
                    f.write(f"{names[r['name']]}\t{rec['index']}\trecord\t{rec['kind']}\t{rec['status']}\t\t"
                            f"{rec['seconds']}\t{rec['detail']}\n")
                    for rp in rec["replays"]:
                        f.write(f"{names[r['name']]}\t{rec['index']}\t{rp['mode']}\t{rp['kind']}\t{rp['status']}\t"
                                f"{rp['expected']}\t{rp['seconds']}\t{rp['detail'].replace(chr(9), ' ')}\n")
    usable = {"OK", "HUNG-INTERRUPTED"}
    ok = not interrupted and summary["exact"] == summary["total"] and set(summary["recordings"]) <= usable
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
