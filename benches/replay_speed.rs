//! `replay_speed`: what rr-lite costs and what the dependency-pair method
//! gains, on the C workloads of `benches/workloads/` (SPEC section 4).
//!
//! For every case (a workload with its arguments) the bench builds the
//! program twice (plain `cc -O2 -pthread`, and `rr-lite cc -O2 -pthread`),
//! records it once, splits the trace, replays it once in each mode (the plans
//! are cached in the trace directory after the first replay, so what is
//! measured is the steady state) and checks that the replays print what the
//! recording printed. Then, side by side in one run, criterion measures up to
//! five modes as whole processes:
//!
//! - `native`: the uninstrumented program;
//! - `instrumented`: the `rr-lite cc` build started by hand (inert runtime);
//! - `record`: `rr-lite record -q` into a fresh directory;
//! - `parallel`: `rr-lite replay --parallel`;
//! - `sequential`: `rr-lite replay --sequential` (total order, the baseline).
//!
//! Besides criterion's timings, each mode is run a few times more under
//! perf-event software counters inherited by the child processes (task
//! clock, context switches, CPU migrations), so the cost of waiting shows
//! next to wall time. Those numbers, the trace sizes (`rr-lite info --json`),
//! the split statistics (`rr-lite split --json`), the machine and any failure
//! go to `<target>/tmp/replay_speed/results.json`; `benches/report.py` turns
//! them and criterion's estimates into the README table.
//!
//! Series: `stages`, every workload at a real size (50 to 150 ms natively,
//! 4 threads, tens to hundreds of millions of events) through every stage:
//! native, instrumented, record, `split`, the first replay (no plans yet:
//! split and plan building included), later parallel and sequential
//! replays. Record, split and the first replay take seconds there, so they
//! are counted runs only (`HEAVY_COUNTER_RUNS`, no criterion samples), and
//! every counted run of a stage reports the peak resident memory of its
//! largest process (`peak_rss`). Then the main table (seven workloads at
//! small sizes, 4 threads), parallel replay
//! against thread count (racy_share, the same total work on 1, 2, 4, 8
//! threads), against the sharing ratio (racy_share at 0 to 100 % shared
//! updates; `sharing_real`: the same at 64 M events), against size (private_merge at 1x and 8x, which separates
//! the fixed cost of starting a replay from the cost per event), and the
//! recording quantum (shared_index, racy_share, an atomic ring buffer and
//! a spin lock recorded with `--quantum 0` and with record's default),
//! serial recording (`serial`: `record --serialize` against the default at
//! real sizes, sharing-heavy workloads and two that compute side by side),
//! and the cost of one
//! dependency alone (`handover`: two threads taking turns at almost every
//! event, replayed spread over the CPUs and on one CPU).
//!
//! `REPLAY_SPEED_SERIES=stages,quantum cargo bench --bench replay_speed`
//! runs only the cases of those series.
//!
//! Everything runs under a scratch directory in cargo's target tmpdir
//! (traces, the runtime cache), never in the user's home.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode};
use perf_event::events::Software;
use perf_event::{Builder, Counter};
use serde_json::{Value, json};

/// The binary under test (cargo builds it for benches).
const RR_LITE: &str = env!("CARGO_BIN_EXE_rr-lite");

/// Runs of each mode under the perf-event counters (outside criterion).
const COUNTER_RUNS: u32 = 3;
/// Counted runs of a costly stage (record, split, first replay) at real
/// sizes, where they are the only measurement (see `Mode::is_costly`).
const HEAVY_COUNTER_RUNS: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Native,
    Instrumented,
    Record,
    Parallel,
    Sequential,
    /// `replay --parallel --one-cpu never`: the threads spread over every
    /// CPU, so a waiter's producer runs on another one.
    ParallelSpread,
    /// `replay --parallel --one-cpu always`: the threads on one CPU, so a
    /// waiter's producer must be given the core.
    ParallelOneCpu,
    /// `rr-lite split` of the recorded trace (its `split/` rewritten).
    Split,
    /// `replay --parallel` with no plans or split: the first replay after
    /// `record`, split and plan building included. Last of all, so the
    /// plans it leaves are fresh for whatever runs next.
    FirstReplay,
}

impl Mode {
    const ALL: [Mode; 5] = [
        Mode::Native,
        Mode::Instrumented,
        Mode::Record,
        Mode::Parallel,
        Mode::Sequential,
    ];
    /// Every stage from the native run to the later replays.
    const STAGES: [Mode; 7] = [
        Mode::Native,
        Mode::Instrumented,
        Mode::Record,
        Mode::Parallel,
        Mode::Sequential,
        Mode::Split,
        Mode::FirstReplay,
    ];

    fn name(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Instrumented => "instrumented",
            Mode::Record => "record",
            Mode::Parallel => "parallel",
            Mode::Sequential => "sequential",
            Mode::ParallelSpread => "parallel_spread",
            Mode::ParallelOneCpu => "parallel_one_cpu",
            Mode::Split => "split",
            Mode::FirstReplay => "first_replay",
        }
    }

    fn is_replay(self) -> bool {
        matches!(
            self,
            Mode::Parallel
                | Mode::Sequential
                | Mode::ParallelSpread
                | Mode::ParallelOneCpu
                | Mode::FirstReplay
        )
    }

    /// `replay`'s options in a replay mode.
    fn replay_options(self) -> &'static [&'static str] {
        match self {
            Mode::Sequential => &["--sequential"],
            Mode::ParallelSpread => &["--parallel", "--one-cpu", "never"],
            Mode::ParallelOneCpu => &["--parallel", "--one-cpu", "always"],
            _ => &["--parallel"],
        }
    }

    /// Stages that take seconds at real sizes: counted runs only, no
    /// criterion samples, in the `stages` series.
    fn is_costly(self) -> bool {
        matches!(self, Mode::Record | Mode::Split | Mode::FirstReplay)
    }
}

/// One workload run with fixed arguments, and the series it belongs to.
#[derive(Debug)]
struct Case {
    workload: &'static str,
    args: Vec<u64>,
    series: Vec<&'static str>,
    modes: Vec<Mode>,
    /// `record --quantum` (None: record's default).
    quantum: Option<u32>,
    /// `record --serialize` (with its default slice).
    serial: bool,
}

impl Case {
    fn label(&self) -> String {
        let args: Vec<String> = self.args.iter().map(u64::to_string).collect();
        let quantum = self.quantum.map(|q| format!("-q{q}")).unwrap_or_default();
        let serial = if self.serial { "-serial" } else { "" };
        format!("{}-{}{quantum}{serial}", self.workload, args.join("-"))
    }

    /// `record`'s options for this case.
    /// A case of the `stages` series: real sizes, where the costly stages
    /// are counted runs only and every counted run reports its peak memory.
    fn is_heavy(&self) -> bool {
        self.series.contains(&"stages")
    }

    fn record_options(&self) -> Vec<String> {
        let mut options: Vec<String> = self
            .quantum
            .map(|q| vec!["--quantum".to_owned(), q.to_string()])
            .unwrap_or_default();
        if self.serial {
            options.push("--serialize".to_owned());
        }
        options
    }
}

/// Adds a case recorded with record's default quantum, or merges series and
/// modes into an identical one.
fn add_case(
    cases: &mut Vec<Case>,
    workload: &'static str,
    args: &[u64],
    series: &'static str,
    modes: &[Mode],
) {
    add_case_with_quantum(cases, workload, args, None, series, modes);
}

/// [`add_case`] with a `record --quantum` of its own.
fn add_case_with_quantum(
    cases: &mut Vec<Case>,
    workload: &'static str,
    args: &[u64],
    quantum: Option<u32>,
    series: &'static str,
    modes: &[Mode],
) {
    if let Some(c) = cases
        .iter_mut()
        .find(|c| c.workload == workload && c.args == args && c.quantum == quantum && !c.serial)
    {
        c.series.push(series);
        c.modes.extend_from_slice(modes);
        c.modes.sort();
        c.modes.dedup();
        return;
    }
    cases.push(Case {
        workload,
        args: args.to_vec(),
        series: vec![series],
        modes: modes.to_vec(),
        quantum,
        serial: false,
    });
}

/// The `stages` series: every workload at a real size (50 to 150 ms
/// natively with 4 threads on the project's 2-core machine, tens to
/// hundreds of millions of events), every stage from the native run to the
/// later replays.
const STAGES: [(&str, &[u64]); 9] = [
    ("fft", &[19, 4, 2]),
    ("lu", &[500, 4]),
    ("radix", &[6_000_000, 4]),
    ("nbody", &[1000, 4, 10]),
    ("stencil", &[262_144, 4, 100]),
    ("prodcons", &[50_000, 4]),
    ("transfers", &[2_000_000, 4]),
    ("racy_share", &[8_000_000, 4, 100]),
    ("shared_index", &[3_000_000, 4]),
];

/// Which series to run: `$REPLAY_SPEED_SERIES` (comma-separated names),
/// else all of them.
fn series_wanted(series: &str) -> bool {
    std::env::var("REPLAY_SPEED_SERIES")
        .map_or(true, |wanted| wanted.split(',').any(|w| w.trim() == series))
}

/// The cases: sizes chosen so each recording has some 0.1 to 0.4 M events
/// (sequential replay costs microseconds per event) while every program
/// runs well under a second natively; the `stages` series at real sizes.
fn cases() -> Vec<Case> {
    let mut cases = small_cases();
    for (workload, args) in STAGES {
        add_case(&mut cases, workload, args, "stages", &Mode::STAGES);
    }
    cases.retain(|c| c.series.iter().any(|s| series_wanted(s)));
    cases
}

fn small_cases() -> Vec<Case> {
    use Mode::*;
    let all = Mode::ALL;
    let replay = [Instrumented, Parallel, Sequential];
    let mut cases = Vec::new();
    for (workload, args) in [
        ("private_merge", &[3000, 4][..]),
        ("matmul", &[40, 4]),
        ("transfers", &[4000, 4]),
        ("racy_share", &[20000, 4, 100]),
        ("stencil", &[2048, 4, 10]),
        ("prodcons", &[5000, 4]),
        ("shared_index", &[50000, 4]),
    ] {
        add_case(&mut cases, workload, args, "main", &all);
    }
    for threads in [1u64, 2, 4, 8] {
        add_case(
            &mut cases,
            "racy_share",
            &[80000 / threads, threads, 100],
            "threads",
            &replay,
        );
    }
    // The cost per kept wait at a real size (36 M events, 60 ms and more
    // natively): replays long enough for the CPU governor (`replay
    // --one-cpu`), whose first tick comes after 100 ms, to place them.
    for threads in [2u64, 4, 8] {
        add_case(
            &mut cases,
            "shared_index",
            &[12_000_000 / threads, threads],
            "index_threads",
            &replay,
        );
    }
    // The cost of one dependency alone: two threads recorded without the
    // quantum take turns on a shared index at almost every event, so
    // nearly every event waits for the other thread's last one (1.1 M
    // waits); replayed spread over the CPUs (the producer runs on the
    // other one: the 300 ns) and on one CPU (the producer must be
    // given the core: 5 us).
    add_case_with_quantum(
        &mut cases,
        "shared_index",
        &[300_000, 2],
        Some(0),
        "handover",
        &[Instrumented, ParallelSpread, ParallelOneCpu],
    );
    // Against the sharing ratio: small, and at a real size (64 M events,
    // 35 ms and more natively), where fixed costs do not hide the waits'.
    for (size, series) in [(20_000u64, "sharing"), (8_000_000, "sharing_real")] {
        for per_mille in [0u64, 10, 100, 500, 1000] {
            add_case(
                &mut cases,
                "racy_share",
                &[size, 4, per_mille],
                series,
                &replay,
            );
        }
    }
    // The recording quantum: record's default against none, where threads
    // bump one shared index (it pays), update random shared slots (it
    // must not cost), hand items over through atomics (a ring) and take
    // turns on a spin lock (atomics keep their stripe too).
    for (workload, args) in [
        ("shared_index", &[50000, 4][..]),
        ("racy_share", &[20000, 4, 500]),
        ("ring", &[300_000, 1]),
        ("spinlock", &[200_000, 4]),
    ] {
        for quantum in [Some(0), None] {
            add_case_with_quantum(
                &mut cases,
                workload,
                args,
                quantum,
                "quantum",
                &[Instrumented, Record, Parallel, Sequential],
            );
        }
    }
    // Serial recording (`record --serialize`) against record's default at
    // real sizes: where threads share at fine grain (shared index, random
    // shared slots, racy counters through locks, an atomic ring, a spin
    // lock) and where they compute side by side (its cost).
    for (workload, args) in [
        ("shared_index", &[3_000_000, 4][..]),
        ("racy_share", &[8_000_000, 4, 100]),
        ("transfers", &[2_000_000, 4]),
        ("ring", &[300_000, 1]),
        ("spinlock", &[200_000, 4]),
        ("lu", &[500, 4]),
        ("fft", &[19, 4, 2]),
    ] {
        let modes = [Instrumented, Record, Parallel, Sequential];
        add_case(&mut cases, workload, args, "serial", &modes);
        cases.push(Case {
            workload,
            args: args.to_vec(),
            series: vec!["serial"],
            modes: modes.to_vec(),
            quantum: None,
            serial: true,
        });
    }
    for size in [3000u64, 24000] {
        add_case(
            &mut cases,
            "private_merge",
            &[size, 4],
            "size",
            &[Native, Instrumented, Parallel],
        );
    }
    cases
}

/// Paths and environment shared by every command.
#[derive(Debug)]
struct Env {
    rr_lite: PathBuf,
    workloads: PathBuf,
    scratch: PathBuf,
}

impl Env {
    fn new() -> Env {
        let rr_lite = PathBuf::from(RR_LITE);
        assert!(
            rr_lite.is_file(),
            "replay_speed: the rr-lite binary {} is missing: run `cargo build --release` \
             (cargo bench builds it too)",
            rr_lite.display()
        );
        let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay_speed");
        for sub in ["bin", "traces"] {
            let _ = std::fs::remove_dir_all(scratch.join(sub));
        }
        std::fs::create_dir_all(scratch.join("bin")).expect("create the scratch directory");
        std::fs::create_dir_all(scratch.join("traces")).expect("create the scratch directory");
        Env {
            rr_lite,
            workloads: Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/workloads"),
            scratch,
        }
    }

    /// A command with the bench environment: traces and the runtime cache
    /// in the scratch directory, no rr-lite mode inherited.
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("RR_LITE_TRACE_DIR", self.scratch.join("traces"))
            .env("XDG_CACHE_HOME", self.scratch.join("cache"))
            .env_remove("RR_LITE_MODE")
            .env_remove("RR_LITE_TRACE")
            .env_remove("RR_LITE_RUNTIME_DIR");
        cmd
    }

    fn rr(&self) -> Command {
        self.command(&self.rr_lite)
    }

    /// Builds `workload.c` plainly and with `rr-lite cc` (once per workload).
    fn build(&self, workload: &str) -> (PathBuf, PathBuf) {
        let source = self.workloads.join(format!("{workload}.c"));
        let native = self.scratch.join("bin").join(format!("{workload}.native"));
        let instrumented = self.scratch.join("bin").join(format!("{workload}.rr"));
        if !native.exists() {
            let mut cc = self.command(Path::new("cc"));
            cc.args(["-O2", "-pthread", "-o"])
                .arg(&native)
                .arg(&source)
                .arg("-lm");
            expect_success(&mut cc, "build the native workload");
            let mut rr = self.rr();
            rr.args(["cc", "-O2", "-pthread", "-o"])
                .arg(&instrumented)
                .arg(&source)
                .arg("-lm");
            expect_success(&mut rr, "build the instrumented workload");
        }
        (native, instrumented)
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

fn expect_success(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("replay_speed: cannot {what}: {}: {e}", describe(cmd)));
    assert!(
        out.status.success(),
        "replay_speed: cannot {what}: {} exited with {}\n{}",
        describe(cmd),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json_of(out: &Output, what: &str) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("replay_speed: {what} printed no JSON: {e}"))
}

/// A case ready to measure.
#[derive(Debug)]
struct Prepared<'a> {
    case: &'a Case,
    label: String,
    native: PathBuf,
    instrumented: PathBuf,
    trace: PathBuf,
    /// Scratch trace directory of the measured recordings.
    rerecord: PathBuf,
    expected_stdout: Vec<u8>,
    info: Value,
    split: Value,
    /// Modes whose warm-up run passed.
    ok: Vec<Mode>,
    counters: BTreeMap<&'static str, Value>,
}

impl Prepared<'_> {
    fn command(&self, env: &Env, mode: Mode) -> Command {
        let args: Vec<String> = self.case.args.iter().map(u64::to_string).collect();
        match mode {
            Mode::Native => {
                let mut c = env.command(&self.native);
                c.args(&args);
                c
            }
            Mode::Instrumented => {
                let mut c = env.command(&self.instrumented);
                c.args(&args);
                c
            }
            Mode::Record => {
                let mut c = env.rr();
                c.args(["record", "-q"])
                    .args(self.case.record_options())
                    .arg("-o")
                    .arg(&self.rerecord)
                    .arg(&self.instrumented)
                    .args(&args);
                c
            }
            Mode::Parallel
            | Mode::Sequential
            | Mode::ParallelSpread
            | Mode::ParallelOneCpu
            | Mode::FirstReplay => {
                let mut c = env.rr();
                c.arg("replay").args(mode.replay_options()).arg(&self.trace);
                c
            }
            Mode::Split => {
                let mut c = env.rr();
                c.arg("split").arg(&self.trace);
                c
            }
        }
    }

    /// What a run of `mode` must not find: the previous recording, or the
    /// plans and split a first replay builds. Not part of the time.
    fn clear_for(&self, mode: Mode) {
        match mode {
            Mode::Record => {
                let _ = std::fs::remove_dir_all(&self.rerecord);
            }
            Mode::FirstReplay => {
                for cached in ["plans", "split"] {
                    let _ = std::fs::remove_dir_all(self.trace.join(cached));
                }
            }
            _ => {}
        }
    }

    /// Runs one mode once; `Err` describes a failed run precisely.
    fn run(&self, env: &Env, mode: Mode) -> Result<Output, Value> {
        self.clear_for(mode);
        self.execute(self.command(env, mode), mode)
    }

    /// Runs `mode` once, already cleared for, under the peak-memory
    /// wrapper if the case is heavy: the run and its peak (KiB).
    fn run_counted(&self, env: &Env, mode: Mode) -> (Result<Output, Value>, Option<u64>) {
        if !self.case.is_heavy() {
            return (self.execute(self.command(env, mode), mode), None);
        }
        let answer = env.scratch.join("peak_rss");
        let _ = std::fs::remove_file(&answer);
        let run = self.execute(peak_rss::wrapped(&self.command(env, mode), &answer), mode);
        let peak = std::fs::read_to_string(&answer)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        (run, peak)
    }

    /// Runs `cmd`, the command of `mode`, and checks what it printed.
    fn execute(&self, mut cmd: Command, mode: Mode) -> Result<Output, Value> {
        let line = describe(&cmd);
        let failure = |status: String, stderr: &[u8]| {
            json!({
                "case": self.label,
                "mode": mode.name(),
                "command": line,
                "status": status,
                "stderr": String::from_utf8_lossy(stderr),
            })
        };
        let out = cmd
            .output()
            .map_err(|e| failure(format!("cannot run: {e}"), b""))?;
        if !out.status.success() {
            return Err(failure(out.status.to_string(), &out.stderr));
        }
        if mode.is_replay() && out.stdout != self.expected_stdout {
            let mut stderr = b"stdout differs from the recording's:\n".to_vec();
            stderr.extend_from_slice(&out.stdout);
            stderr.extend_from_slice(&out.stderr);
            return Err(failure(out.status.to_string(), &stderr));
        }
        Ok(out)
    }
}

/// Records, splits and warms up one case.
fn prepare<'a>(env: &Env, case: &'a Case, failures: &RefCell<Vec<Value>>) -> Prepared<'a> {
    let label = case.label();
    let (native, instrumented) = env.build(case.workload);
    let trace = env.scratch.join("traces").join(&label);
    let rerecord = env.scratch.join("traces").join(format!("{label}.measured"));
    let args: Vec<String> = case.args.iter().map(u64::to_string).collect();
    let mut record = env.rr();
    record
        .args(["record", "-q"])
        .args(case.record_options())
        .arg("-o")
        .arg(&trace)
        .arg(&instrumented)
        .args(&args);
    let recorded = expect_success(&mut record, "record the workload");
    let mut split = env.rr();
    split.args(["split", "--json"]).arg(&trace);
    let split = json_of(
        &expect_success(&mut split, "split the trace"),
        "split --json",
    );
    let mut info = env.rr();
    info.args(["info", "--json"]).arg(&trace);
    let info = json_of(&expect_success(&mut info, "read the trace"), "info --json");
    let mut prepared = Prepared {
        case,
        label,
        native,
        instrumented,
        trace,
        rerecord,
        expected_stdout: recorded.stdout,
        info,
        split,
        ok: Vec::new(),
        counters: BTreeMap::new(),
    };
    for &mode in &case.modes {
        if case.is_heavy() && mode.is_costly() {
            // Seconds per run, and only counted: no warm-up.
            prepared.ok.push(mode);
            continue;
        }
        // The first replay of each kind builds and caches its plans.
        match prepared.run(env, mode) {
            Ok(_) => prepared.ok.push(mode),
            Err(f) => {
                eprintln!("replay_speed: FAILED (warm-up): {f:#}");
                failures.borrow_mut().push(f);
            }
        }
    }
    for mode in prepared.ok.clone() {
        let failed_before = failures.borrow().len();
        let counted = count(env, &prepared, mode, failures);
        if failures.borrow().len() != failed_before {
            prepared.ok.retain(|&m| m != mode);
        }
        prepared.counters.insert(mode.name(), counted);
    }
    prepared
}

/// Software counters inherited by every process the bench spawns from
/// now on (the child and its own children, e.g. the program under rr-lite).
#[derive(Debug)]
struct Counters {
    task_clock: Counter,
    switches: Counter,
    migrations: Counter,
}

impl Counters {
    fn open() -> std::io::Result<Counters> {
        let counter = |kind: Software| {
            let mut b = Builder::new().kind(kind);
            b.inherit(true).include_kernel();
            b.build()
        };
        Ok(Counters {
            task_clock: counter(Software::TASK_CLOCK)?,
            switches: counter(Software::CONTEXT_SWITCHES)?,
            migrations: counter(Software::CPU_MIGRATIONS)?,
        })
    }

    fn reset_all(&mut self) -> std::io::Result<()> {
        self.task_clock.reset()?;
        self.switches.reset()?;
        self.migrations.reset()
    }

    fn enable(&mut self) -> std::io::Result<()> {
        self.task_clock.enable()?;
        self.switches.enable()?;
        self.migrations.enable()
    }

    fn disable(&mut self) -> std::io::Result<()> {
        self.task_clock.disable()?;
        self.switches.disable()?;
        self.migrations.disable()
    }
}

/// CPU time of the reaped children of this process (utime + stime, from
/// /proc/self/stat, in clock ticks of 10 ms): the fallback when
/// perf_event_open is not allowed.
fn children_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Runs a mode `COUNTER_RUNS` times under the counters (the costly stages
/// of a heavy case `HEAVY_COUNTER_RUNS` times); means per run, and for a
/// heavy case the largest peak resident memory of any process of a run.
fn count(env: &Env, p: &Prepared, mode: Mode, failures: &RefCell<Vec<Value>>) -> Value {
    let runs = if p.case.is_heavy() && mode.is_costly() {
        HEAVY_COUNTER_RUNS
    } else {
        COUNTER_RUNS
    };
    let (mut wall, mut task, mut switches, mut migrations) = (0.0, 0.0, 0u64, 0u64);
    let mut peak_rss_kb: Option<u64> = None;
    let mut source = "perf-event (task-clock, context-switches, cpu-migrations; inherit)";
    for _ in 0..runs {
        p.clear_for(mode);
        let counters = Counters::open().and_then(|mut c| c.reset_all().map(|()| c));
        let before = children_cpu_seconds();
        let start = Instant::now();
        let (result, peak) = match counters {
            Ok(mut c) => {
                let _ = c.enable();
                let r = p.run_counted(env, mode);
                let _ = c.disable();
                task += c.task_clock.read().unwrap_or(0) as f64 / 1e9;
                switches += c.switches.read().unwrap_or(0);
                migrations += c.migrations.read().unwrap_or(0);
                r
            }
            Err(_) => {
                source = "/proc/self/stat children utime+stime (perf_event_open refused)";
                let r = p.run_counted(env, mode);
                task += children_cpu_seconds().unwrap_or(0.0) - before.unwrap_or(0.0);
                r
            }
        };
        wall += start.elapsed().as_secs_f64();
        peak_rss_kb = peak_rss_kb.max(peak);
        if let Err(f) = result {
            eprintln!("replay_speed: FAILED (counted run): {f:#}");
            failures.borrow_mut().push(f);
        }
    }
    let n = f64::from(runs);
    json!({
        "runs": runs,
        "source": source,
        "wall_s": wall / n,
        "task_clock_s": task / n,
        "context_switches": switches as f64 / n,
        "cpu_migrations": migrations as f64 / n,
        "peak_rss_kb": peak_rss_kb,
    })
}

/// Peak memory of a step: the bench runs it under a copy of itself
/// (`PEAK_RSS_ENV` names the file for the answer), which waits for it and
/// writes `getrusage(RUSAGE_CHILDREN).ru_maxrss`: the largest resident set
/// of any process of the step (the step's processes wait for their own
/// children, so the kernel carries their figures up).
mod peak_rss {
    use std::path::Path;
    use std::process::Command;

    pub const ENV: &str = "REPLAY_SPEED_PEAK_RSS_FILE";

    /// `cmd` run under the bench's own binary, which writes its peak
    /// resident memory (KiB) into `answer`.
    pub fn wrapped(cmd: &Command, answer: &Path) -> Command {
        let me = std::env::current_exe().expect("the bench's own path");
        let mut w = Command::new(me);
        w.env(ENV, answer)
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (key, value) in cmd.get_envs() {
            match value {
                Some(v) => w.env(key, v),
                None => w.env_remove(key),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            w.current_dir(dir);
        }
        w
    }

    /// The wrapper's side, when `ENV` is set: runs the command it was
    /// given, writes the answer, exits as the command did.
    pub fn serve(answer: std::ffi::OsString) -> ! {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        let Some((program, rest)) = args.split_first() else {
            eprintln!("replay_speed: {ENV} set without a command to run");
            std::process::exit(2);
        };
        let status = Command::new(program).args(rest).env_remove(ENV).status();
        let status = match status {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "replay_speed: cannot run {}: {e}",
                    program.to_string_lossy()
                );
                std::process::exit(127);
            }
        };
        use nix::sys::resource::{UsageWho, getrusage};
        if let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) {
            let _ = std::fs::write(&answer, usage.max_rss().to_string());
        }
        use std::os::unix::process::ExitStatusExt;
        std::process::exit(
            status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        );
    }
}

/// Criterion measurements of one case, each mode as a whole process.
fn measure(c: &mut Criterion, env: &Env, p: &Prepared, failures: &RefCell<Vec<Value>>) {
    let mut group = c.benchmark_group(format!("replay_speed/{}", p.label));
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for &mode in &p.ok {
        if p.case.is_heavy() && mode.is_costly() {
            continue;
        }
        let check = |r: Result<Output, Value>| {
            if let Err(f) = r {
                eprintln!("replay_speed: FAILED (measured run): {f:#}");
                failures.borrow_mut().push(f);
            }
        };
        group.bench_function(BenchmarkId::from_parameter(mode.name()), |b| {
            if matches!(mode, Mode::Record | Mode::FirstReplay) {
                // Removing what the last run left is not part of the time.
                b.iter_batched(
                    || p.clear_for(mode),
                    |()| check(p.run(env, mode)),
                    BatchSize::PerIteration,
                );
            } else {
                b.iter(|| check(p.run(env, mode)));
            }
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&p.rerecord);
}

fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_owned)
}

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned());
    json!({
        "cpu": model,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_owned()),
        "loadavg_start": std::fs::read_to_string("/proc/loadavg").ok().map(|s| s.trim().to_owned()),
        "cc": first_line("cc", &["--version"]),
    })
}

fn write_results(
    env: &Env,
    machine: &Value,
    prepared: &[Prepared],
    failures: &RefCell<Vec<Value>>,
    finished: bool,
) {
    let cases: Vec<Value> = prepared
        .iter()
        .map(|p| {
            json!({
                "label": p.label,
                "group": format!("replay_speed/{}", p.label),
                "workload": p.case.workload,
                "args": p.case.args,
                "series": p.case.series,
                "quantum": p.case.quantum,
                "serial": p.case.serial,
                "modes": p.case.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
                "ok_modes": p.ok.iter().map(|m| m.name()).collect::<Vec<_>>(),
                "info": p.info,
                "split": p.split,
                "counters": p.counters,
            })
        })
        .collect();
    let mut machine = machine.clone();
    machine["loadavg_end"] = json!(
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|s| s.trim().to_owned())
    );
    let results = json!({
        "finished": finished,
        "command": std::env::args().collect::<Vec<_>>(),
        "rr_lite": env.rr_lite,
        "machine": machine,
        "cases": cases,
        "failures": *failures.borrow(),
    });
    let path = env.scratch.join("results.json");
    let text = serde_json::to_string_pretty(&results).expect("serialise the results");
    std::fs::write(&path, text).expect("write results.json");
    eprintln!("replay_speed: wrote {}", path.display());
}

fn main() {
    if let Some(answer) = std::env::var_os(peak_rss::ENV) {
        peak_rss::serve(answer);
    }
    let mut criterion = Criterion::default().sample_size(10).configure_from_args();
    let env = Env::new();
    let machine = machine();
    let cases = cases();
    let failures = RefCell::new(Vec::new());
    let prepared: Vec<Prepared> = cases
        .iter()
        .map(|case| {
            eprintln!("replay_speed: preparing {}", case.label());
            prepare(&env, case, &failures)
        })
        .collect();
    write_results(&env, &machine, &prepared, &failures, false);
    for p in &prepared {
        measure(&mut criterion, &env, p, &failures);
    }
    criterion.final_summary();
    write_results(&env, &machine, &prepared, &failures, true);
}
