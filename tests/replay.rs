//! End-to-end tests of the replay side: C programs whose output depends on
//! the interleaving are recorded until at least two different outputs are
//! seen (so the program is shown to be nondeterministic here), then every
//! distinct recording is replayed several times in each mode and must give
//! its own output and exit status every time. Crashes replay to the same
//! signal; a changed binary or changed arguments are reported as a
//! divergence; a replay that cannot progress is stopped by the watchdog.
//!
//! Every record and replay runs under a time limit: a hang fails the test
//! instead of blocking it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::{
    Recorded, build, build_variant, describe, output_within, record_within, rr_command,
    status_code, tempdir, text,
};
use serde_json::Value;

/// Longest a single recording may take before the test fails.
const LIMIT: Duration = Duration::from_secs(60);
/// Longest a single replay may take before the test fails (the programs
/// run in well under a second; the watchdog's default is 2 s).
const REPLAY_LIMIT: Duration = Duration::from_secs(30);
/// Most recordings made while looking for a second, different output.
const MAX_RECORDINGS: usize = 30;
/// Replays of each distinct recording.
const PARALLEL_REPLAYS: usize = 3;
const SEQUENTIAL_REPLAYS: usize = 2;
const VERIFY_REPLAYS: usize = 1;

/// `rr-lite replay ARGS... TRACE` under the time limit.
fn replay(trace: &Path, args: &[&str]) -> Output {
    let mut cmd = rr_command();
    cmd.arg("replay").args(args).arg(trace);
    output_within(&mut cmd, REPLAY_LIMIT).unwrap_or_else(|e| panic!("replay hangs: {e}"))
}

/// What a run showed: stdout and exit status.
fn outcome(rec: &Recorded) -> (String, i32) {
    (rec.stdout.clone(), rec.status)
}

/// Records `program args` until two recordings differ in stdout or status
/// (at most [`MAX_RECORDINGS`]), and returns one recording per distinct
/// outcome seen. `ok` says which statuses the program may end with.
fn record_distinct(
    program: &Path,
    args: &[&str],
    ok: &dyn Fn(i32) -> bool,
    enough: &dyn Fn(&[Recorded]) -> bool,
) -> Vec<Recorded> {
    let mut distinct: Vec<Recorded> = Vec::new();
    for _ in 0..MAX_RECORDINGS {
        let rec = record_within(program, args, LIMIT);
        assert!(
            ok(rec.status),
            "unexpected recording status\n{}",
            rec.describe()
        );
        if !distinct.iter().any(|d| outcome(d) == outcome(&rec)) {
            distinct.push(rec);
        }
        if enough(&distinct) {
            break;
        }
    }
    distinct
}

/// Replays `rec` in every mode ([`PARALLEL_REPLAYS`] x `--parallel`, ...):
/// stdout and exit status must be the recording's every time.
fn replay_all_modes(rec: &Recorded) {
    let modes = std::iter::repeat_n("--parallel", PARALLEL_REPLAYS)
        .chain(std::iter::repeat_n("--sequential", SEQUENTIAL_REPLAYS))
        .chain(std::iter::repeat_n("--verify", VERIFY_REPLAYS));
    for (n, mode) in modes.enumerate() {
        let out = replay(&rec.trace, &[mode]);
        let what = format!("replay {mode} (#{n}) of {}", rec.trace.display());
        assert_eq!(
            status_code(&out),
            rec.status,
            "exit status differs from the recording's\n{}\n--- recording ---\n{}",
            describe(&what, &out),
            rec.describe()
        );
        let stdout = text(&out.stdout);
        assert!(
            stdout == rec.stdout,
            "stdout differs from the recording's: {}\n{}\n--- recording ---\n{}",
            first_difference(&rec.stdout, &stdout),
            describe(&what, &out),
            rec.describe()
        );
        let stderr = text(&out.stderr);
        assert!(
            !stderr.contains("rr-lite:"),
            "rr-lite complained\n{}",
            describe(&what, &out)
        );
    }
}

/// Where `replayed` departs from `recorded`, in a few words.
fn first_difference(recorded: &str, replayed: &str) -> String {
    let at = recorded
        .bytes()
        .zip(replayed.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(recorded.len().min(replayed.len()));
    let line = recorded.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1;
    let excerpt = |s: &str| {
        s.get(at..)
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>()
    };
    format!(
        "recorded {} bytes, replayed {} bytes; first difference at byte {at} (line {line}): \
         recorded {:?}, replayed {:?}",
        recorded.len(),
        replayed.len(),
        excerpt(recorded),
        excerpt(replayed)
    )
}

/// The check for a nondeterministic program: two different
/// outputs within [`MAX_RECORDINGS`] recordings, then every distinct
/// recording replays to its own output and status in every mode.
fn check_nondeterministic(name: &str, args: &[&str]) {
    check_nondeterministic_ending(name, args, 0);
}

/// [`check_nondeterministic`] for a program that ends with `status`.
fn check_nondeterministic_ending(name: &str, args: &[&str], status: i32) {
    let exe = build(name);
    let distinct = record_distinct(&exe, args, &|s| s == status, &|d| d.len() >= 2);
    assert!(
        distinct.len() >= 2,
        "{name} {args:?} gave the same output in {MAX_RECORDINGS} recordings: it does not show \
         its nondeterminism here\n{}",
        distinct[0].describe()
    );
    for rec in &distinct {
        replay_all_modes(rec);
    }
}

#[test]
fn racy_counter_lost_updates_replay() {
    check_nondeterministic("replay_racy_counter", &["3"]);
}

#[test]
fn mutex_order_replays() {
    check_nondeterministic("replay_lock_order", &[]);
}

#[test]
fn producer_consumer_condvars_replay() {
    check_nondeterministic("replay_prodcons", &[]);
}

#[test]
fn atomics_slot_claims_replay() {
    check_nondeterministic("replay_atomics", &[]);
}

#[test]
fn barrier_serial_thread_replays() {
    check_nondeterministic("replay_barrier", &[]);
}

#[test]
fn trylock_first_to_finish_replays() {
    check_nondeterministic("replay_trylock", &[]);
}

#[test]
fn rand_and_time_return_recorded_values() {
    check_nondeterministic("replay_rand_time", &[]);
}

#[test]
fn stdout_lines_from_threads_replay_in_order() {
    check_nondeterministic("replay_stdout_threads", &[]);
}

#[test]
fn stdout_lines_under_flockfile_replay_in_order() {
    check_nondeterministic("replay_stdout_threads", &["lock"]);
}

#[test]
fn heap_and_stack_addresses_replay() {
    check_nondeterministic("replay_addresses", &[]);
}

#[test]
fn racy_crash_replays_to_the_same_signal() {
    let exe = build("replay_race_crash");
    let crashed = |d: &[Recorded]| d.iter().any(|r| r.status == 139);
    let survived = |d: &[Recorded]| d.iter().any(|r| r.status == 0);
    let distinct = record_distinct(&exe, &[], &|s| s == 0 || s == 139, &|d| {
        crashed(d) && survived(d)
    });
    assert!(
        crashed(&distinct),
        "replay_race_crash never crashed in {MAX_RECORDINGS} recordings"
    );
    if !survived(&distinct) {
        eprintln!(
            "note: replay_race_crash crashed in all {MAX_RECORDINGS} recordings; only the crash is replayed"
        );
    }
    for rec in &distinct {
        replay_all_modes(rec);
    }
}

#[test]
fn segv_replays_to_status_139() {
    let exe = build("replay_crash");
    let rec = record_within(&exe, &[], LIMIT);
    assert_eq!(rec.status, 139, "{}", rec.describe());
    replay_all_modes(&rec);
}

#[test]
fn crash_replays_with_the_recorded_output() {
    // How many bytes the main thread wrote before another thread crashed.
    check_nondeterministic_ending("replay_crash_output", &[], 139);
}

#[test]
fn abort_replays_to_status_134() {
    let exe = build("replay_crash");
    let rec = record_within(&exe, &["abort"], LIMIT);
    assert_eq!(rec.status, 134, "{}", rec.describe());
    replay_all_modes(&rec);
}

/// A private copy of `exe` (the recording's program path), so that the
/// test can overwrite it.
fn private_copy(exe: &Path, dir: &Path) -> PathBuf {
    let copy = dir.join(exe.file_name().unwrap());
    std::fs::copy(exe, &copy).expect("copy the program");
    copy
}

/// Asserts that `out` is a divergence report naming a thread.
fn assert_diverged(out: &Output, what: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(status_code(out), 86, "{}", describe(what, out));
    assert!(
        stderr.contains("diverged") && stderr.contains("thread"),
        "no divergence report naming the thread\n{}",
        describe(what, out)
    );
}

/// Records the original `replay_diverge N` at a private path and checks
/// that it replays as recorded.
fn diverge_recording(dir: &Path, n: &str) -> (PathBuf, Recorded) {
    let prog = private_copy(&build("replay_diverge"), dir);
    let rec = record_within(&prog, &[n], LIMIT);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let out = replay(&rec.trace, &["--parallel"]);
    assert_eq!(
        (status_code(&out), text(&out.stdout)),
        (0, rec.stdout.clone()),
        "{}",
        describe("replay of the unchanged program", &out)
    );
    (prog, rec)
}

#[test]
fn rebuilt_changed_binary_diverges() {
    let dir = tempdir();
    let (prog, rec) = diverge_recording(dir.path(), "50");
    let changed = build_variant("replay_diverge", "changed", &["-DCHANGED"]);
    std::fs::copy(&changed, &prog).expect("copy the changed program over the recorded one");
    for mode in ["--parallel", "--sequential", "--verify"] {
        let started = Instant::now();
        let out = replay(&rec.trace, &[mode]);
        assert_diverged(&out, &format!("replay {mode} with an extra shared write"));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the divergence took {:?} to report",
            started.elapsed()
        );
    }
}

/// Rewrites argv[1] in the trace's header.json (kept valid JSON).
fn set_recorded_arg(trace: &Path, value: &str) {
    let path = trace.join("header.json");
    let mut header: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read header.json"))
            .expect("header.json is JSON");
    let argv = header["argv"].as_array_mut().expect("argv is an array");
    assert_eq!(argv.len(), 2, "argv: {argv:?}");
    argv[1] = Value::from(value);
    std::fs::write(&path, serde_json::to_string_pretty(&header).unwrap())
        .expect("write header.json");
}

#[test]
fn changed_arguments_diverge() {
    for changed in ["60", "40"] {
        let dir = tempdir();
        let (_prog, rec) = diverge_recording(dir.path(), "50");
        set_recorded_arg(&rec.trace, changed);
        for mode in ["--parallel", "--sequential"] {
            let out = replay(&rec.trace, &[mode]);
            assert_diverged(
                &out,
                &format!("replay {mode} with argument {changed} instead of 50"),
            );
        }
    }
}

/// Plan layout (trace/src/plan.rs): header, points, then the waits
/// (thread u32, padding u32, index u64).
const PLAN_HEADER_LEN: usize = 64;
const POINT_LEN: usize = 40;
const WAIT_LEN: usize = 16;

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn corrupted_plan_is_reported_by_the_watchdog() {
    let exe = build("replay_lock_order");
    let rec = record_within(&exe, &[], LIMIT);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let out = replay(&rec.trace, &["--parallel"]);
    assert_eq!(status_code(&out), 0, "{}", describe("first replay", &out));
    let plans = rec.trace.join("plans-parallel");
    assert!(plans.join("complete").exists(), "no complete plans");

    // A worker's wait on the main thread now waits for an event far beyond
    // the main thread's last one; the main thread waits for the worker at
    // its join, so neither can progress.
    const FAR: u64 = 1 << 40;
    let mut edited = None;
    for t in 1..=4u32 {
        let path = plans.join(format!("thread-{t:04}.plan"));
        let mut bytes = std::fs::read(&path).expect("read plan");
        let points = le_u64(&bytes, 16) as usize;
        let waits = le_u64(&bytes, 24) as usize;
        let base = PLAN_HEADER_LEN + points * POINT_LEN;
        let on_main = (0..waits)
            .map(|n| base + n * WAIT_LEN)
            .find(|&at| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) == 0);
        if let Some(at) = on_main {
            let len = bytes.len();
            bytes[at + 8..at + 16].copy_from_slice(&FAR.to_le_bytes());
            assert_eq!(bytes.len(), len);
            std::fs::write(&path, &bytes).expect("write plan");
            edited = Some(t);
            break;
        }
    }
    let t = edited.expect("no worker plan waits on the main thread");

    let started = Instant::now();
    let out = replay(&rec.trace, &["--parallel", "--watchdog-ms", "500"]);
    let took = started.elapsed();
    let stderr = text(&out.stderr);
    assert_eq!(
        status_code(&out),
        87,
        "{}",
        describe("replay with a corrupted plan", &out)
    );
    assert!(
        stderr.contains("deadlock")
            && stderr.contains(&format!("thread {t} "))
            && stderr.contains(&format!("waits for thread 0 to complete event {FAR}")),
        "the report does not name thread {t} waiting for thread 0's event {FAR}\n{}",
        describe("replay with a corrupted plan", &out)
    );
    assert!(
        took < Duration::from_secs(10),
        "the watchdog took {took:?} to stop the replay"
    );
}

/// Ctrl-C during a recording: the trace is complete and says SIGINT; its
/// replay ends the same way once every thread is where it was interrupted.
#[test]
fn interrupted_recording_replays_to_the_same_signal() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;

    let exe = build("replay_interrupt");
    let dir = tempdir();
    let trace = dir.path().join("trace");
    let mut child = rr_command()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .arg(&exe)
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("starting rr-lite record");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("reading the program's output");
    assert_eq!(first, "started\n");
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGINT).expect("sending SIGINT");
    let status = child.wait().expect("waiting for rr-lite record");
    assert_eq!(
        status.code(),
        Some(130),
        "record exits like the program: 128 + SIGINT"
    );
    let info = common::info(&trace).expect("the interrupted trace is readable");
    assert_eq!(info["complete"], Value::Bool(true), "{info}");
    assert_eq!(info["exit_status"], 130, "{info}");
    for mode in ["--parallel", "--sequential"] {
        let out = replay(&trace, &[mode]);
        assert_eq!(
            status_code(&out),
            130,
            "{}",
            describe(&format!("replay {mode}"), &out)
        );
    }
}
