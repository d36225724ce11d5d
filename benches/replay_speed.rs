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
//! Series: the main table (seven workloads, 4 threads), parallel replay
//! against thread count (racy_share, the same total work on 1, 2, 4, 8
//! threads), against the sharing ratio (racy_share at 0 to 100 % shared
//! updates), against size (private_merge at 1x and 8x, which separates
//! the fixed cost of starting a replay from the cost per event), and the
//! recording quantum (shared_index and racy_share recorded with
//! `--quantum 0` and with record's default).
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Native,
    Instrumented,
    Record,
    Parallel,
    Sequential,
}

impl Mode {
    const ALL: [Mode; 5] = [
        Mode::Native,
        Mode::Instrumented,
        Mode::Record,
        Mode::Parallel,
        Mode::Sequential,
    ];

    fn name(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Instrumented => "instrumented",
            Mode::Record => "record",
            Mode::Parallel => "parallel",
            Mode::Sequential => "sequential",
        }
    }

    fn is_replay(self) -> bool {
        matches!(self, Mode::Parallel | Mode::Sequential)
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
}

impl Case {
    fn label(&self) -> String {
        let args: Vec<String> = self.args.iter().map(u64::to_string).collect();
        let quantum = self.quantum.map(|q| format!("-q{q}")).unwrap_or_default();
        format!("{}-{}{quantum}", self.workload, args.join("-"))
    }

    /// `record`'s options for this case.
    fn record_options(&self) -> Vec<String> {
        self.quantum
            .map(|q| vec!["--quantum".to_owned(), q.to_string()])
            .unwrap_or_default()
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
        .find(|c| c.workload == workload && c.args == args && c.quantum == quantum)
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
    });
}

/// The cases: sizes chosen so each recording has some 0.1 to 0.4 M events
/// (sequential replay costs microseconds per event) while every program
/// runs well under a second natively.
fn cases() -> Vec<Case> {
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
    for threads in [2u64, 4, 8] {
        add_case(
            &mut cases,
            "shared_index",
            &[100_000 / threads, threads],
            "index_threads",
            &replay,
        );
    }
    for per_mille in [0u64, 10, 100, 500, 1000] {
        add_case(
            &mut cases,
            "racy_share",
            &[20000, 4, per_mille],
            "sharing",
            &replay,
        );
    }
    // The recording quantum: record's default against none, where threads
    // bump one shared index (it pays) and update random shared slots (it
    // must not cost).
    for (workload, args) in [
        ("shared_index", &[50000, 4][..]),
        ("racy_share", &[20000, 4, 500]),
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
            cc.args(["-O2", "-pthread", "-o"]).arg(&native).arg(&source);
            expect_success(&mut cc, "build the native workload");
            let mut rr = self.rr();
            rr.args(["cc", "-O2", "-pthread", "-o"])
                .arg(&instrumented)
                .arg(&source);
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
            Mode::Parallel | Mode::Sequential => {
                let mut c = env.rr();
                c.arg("replay")
                    .arg(if mode == Mode::Parallel {
                        "--parallel"
                    } else {
                        "--sequential"
                    })
                    .arg(&self.trace);
                c
            }
        }
    }

    /// Runs one mode once; `Err` describes a failed run precisely.
    fn run(&self, env: &Env, mode: Mode) -> Result<Output, Value> {
        if mode == Mode::Record {
            let _ = std::fs::remove_dir_all(&self.rerecord);
        }
        let mut cmd = self.command(env, mode);
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
        prepared
            .counters
            .insert(mode.name(), count(env, &prepared, mode, failures));
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

/// Runs a mode `COUNTER_RUNS` times under the counters; means per run.
fn count(env: &Env, p: &Prepared, mode: Mode, failures: &RefCell<Vec<Value>>) -> Value {
    let (mut wall, mut task, mut switches, mut migrations) = (0.0, 0.0, 0u64, 0u64);
    let mut source = "perf-event (task-clock, context-switches, cpu-migrations; inherit)";
    for _ in 0..COUNTER_RUNS {
        let counters = Counters::open().and_then(|mut c| c.reset_all().map(|()| c));
        let before = children_cpu_seconds();
        let start = Instant::now();
        let result = match counters {
            Ok(mut c) => {
                let _ = c.enable();
                let r = p.run(env, mode);
                let _ = c.disable();
                task += c.task_clock.read().unwrap_or(0) as f64 / 1e9;
                switches += c.switches.read().unwrap_or(0);
                migrations += c.migrations.read().unwrap_or(0);
                r
            }
            Err(_) => {
                source = "/proc/self/stat children utime+stime (perf_event_open refused)";
                let r = p.run(env, mode);
                task += children_cpu_seconds().unwrap_or(0.0) - before.unwrap_or(0.0);
                r
            }
        };
        wall += start.elapsed().as_secs_f64();
        if let Err(f) = result {
            eprintln!("replay_speed: FAILED (counted run): {f:#}");
            failures.borrow_mut().push(f);
        }
    }
    let n = f64::from(COUNTER_RUNS);
    json!({
        "runs": COUNTER_RUNS,
        "source": source,
        "wall_s": wall / n,
        "task_clock_s": task / n,
        "context_switches": switches as f64 / n,
        "cpu_migrations": migrations as f64 / n,
    })
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
        let check = |r: Result<Output, Value>| {
            if let Err(f) = r {
                eprintln!("replay_speed: FAILED (measured run): {f:#}");
                failures.borrow_mut().push(f);
            }
        };
        group.bench_function(BenchmarkId::from_parameter(mode.name()), |b| {
            if mode == Mode::Record {
                // Removing the previous recording is not part of the time.
                b.iter_batched(
                    || {
                        let _ = std::fs::remove_dir_all(&p.rerecord);
                    },
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
