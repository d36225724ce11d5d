//! End-to-end tests of chaos scheduling and `record --until-failure`: PCT
//! is deterministic given its seed, different seeds give different
//! schedules, a rare order violation is caught within a few runs, hangs and
//! matching output count as failures, and every trace recorded under chaos
//! replays exactly in every mode (with no chaos at replay).

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{
    Recorded, build, describe, output_within, record_with_options, rr_command, status_code,
    tempdir, text,
};

const LIMIT: Duration = Duration::from_secs(120);
const REPLAY_LIMIT: Duration = Duration::from_secs(30);

fn replay(trace: &Path, mode: &str) -> Output {
    let mut cmd = rr_command();
    cmd.arg("replay").arg(mode).arg(trace);
    output_within(&mut cmd, REPLAY_LIMIT).unwrap_or_else(|e| panic!("replay hangs: {e}"))
}

/// Replays `trace` in each mode: the status and stdout must be `status`
/// and `stdout`, and rr-lite must not complain.
fn replays_exactly(trace: &Path, status: i32, stdout: &str) {
    for mode in ["--parallel", "--sequential", "--verify"] {
        let out = replay(trace, mode);
        let what = format!("replay {mode} of {}", trace.display());
        assert_eq!(status_code(&out), status, "{}", describe(&what, &out));
        assert_eq!(text(&out.stdout), stdout, "{}", describe(&what, &out));
        assert!(
            !common::rr_lite_complained(&text(&out.stderr)),
            "rr-lite complained\n{}",
            describe(&what, &out)
        );
    }
}

fn record_pct(program: &Path, seed: u64) -> Recorded {
    let seed = seed.to_string();
    let options = ["--chaos=pct", "--seed", &seed, "--pct-events", "300"];
    let rec = record_with_options(&options, program, &[], LIMIT);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    assert!(
        rec.stderr.contains(&format!("seed {seed}")),
        "the seed is printed\n{}",
        rec.describe()
    );
    rec
}

#[test]
fn pct_repeats_a_schedule_from_its_seed_and_varies_it_across_seeds() {
    let program = build("chaos_interleaving");
    let first = record_pct(&program, 7);
    let again = record_pct(&program, 7);
    assert_eq!(
        first.stdout,
        again.stdout,
        "the same seed gave two schedules\n{}\n{}",
        first.describe(),
        again.describe()
    );
    let header = first.header();
    assert_eq!(header["chaos"]["strategy"], "pct", "{header}");
    assert_eq!(header["chaos"]["seed"], 7, "{header}");
    let mut outputs = std::collections::BTreeSet::new();
    for seed in 1..=6 {
        let rec = record_pct(&program, seed);
        outputs.insert(rec.stdout.clone());
        replays_exactly(&rec.trace, 0, &rec.stdout);
    }
    assert!(
        outputs.len() >= 2,
        "six seeds gave one schedule: {outputs:?}"
    );
}

#[test]
fn pct_lets_threads_finish_before_an_unjoined_exit_but_not_a_spinner() {
    let program = build("chaos_unjoined");
    for seed in 1..=4 {
        let rec = record_pct(&program, seed);
        let mut lines: Vec<&str> = rec.stdout.lines().collect();
        lines.sort_unstable();
        assert_eq!(
            lines,
            ["worker 0", "worker 1", "worker 2"],
            "seed {seed}: every worker runs before main's exit\n{}",
            rec.describe()
        );
        if seed == 1 {
            replays_exactly(&rec.trace, 0, &rec.stdout);
        }
    }
}

/// A thread spinning until another makes progress, with that thread
/// dropped to a change-point priority, must not spin for ever: it goes
/// below it. The SPSC rings of `replay_spin_ring` (a consumer polling a
/// flag main sets after its own work, a producer polling for room) hung
/// under PCT at depth 3 with every seed tried; each run must now end, with
/// its sums, and replay exactly.
#[test]
fn pct_lets_spinners_wait_for_a_thread_dropped_at_a_change_point() {
    let program = build("replay_spin_ring");
    for seed in 1..=3 {
        let seed = seed.to_string();
        let options = ["--chaos=pct", "--seed", &seed, "--pct-depth", "3"];
        let rec = record_with_options(&options, &program, &["2000", "20000"], LIMIT);
        assert_eq!(rec.status, 0, "{}", rec.describe());
        assert!(
            rec.stdout.starts_with("sums 5999000 5999000 "),
            "{}",
            rec.describe()
        );
        if seed == "1" {
            replays_exactly(&rec.trace, 0, &rec.stdout);
        }
    }
}

#[test]
fn random_chaos_records_a_trace_that_replays() {
    let program = build("chaos_interleaving");
    let rec = record_with_options(&["--chaos=random", "--seed", "3"], &program, &[], LIMIT);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    replays_exactly(&rec.trace, 0, &rec.stdout);
}

/// `rr-lite record --until-failure ...` with its own trace directory.
fn until_failure(options: &[&str], program: &Path, traces: &Path) -> Output {
    let mut cmd = rr_command();
    cmd.env("RR_LITE_TRACE_DIR", traces)
        .arg("record")
        .args(options)
        .arg(program);
    output_within(&mut cmd, LIMIT).unwrap_or_else(|e| panic!("record hangs: {e}"))
}

/// The trace directories in `traces` (without the latest-trace link).
fn traces_in(traces: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(traces)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn until_failure_catches_an_order_violation_keeps_only_its_trace_and_replays_it() {
    let program = build("chaos_order_violation");
    let tmp = tempdir();
    let traces = tmp.path().join("traces");
    let options = ["--until-failure=20", "--chaos", "--seed", "1"];
    let out = until_failure(&options, &program, &traces);
    let stderr = text(&out.stderr);
    assert_eq!(status_code(&out), 1, "{}", describe("until-failure", &out));
    assert!(stderr.contains("caught after"), "{stderr}");
    assert!(
        stderr.contains("worker ran before the buffer existed"),
        "{stderr}"
    );
    let kept = traces_in(&traces);
    assert_eq!(
        kept.len(),
        1,
        "passing runs are deleted: {kept:?}\n{stderr}"
    );
    let latest = std::fs::canonicalize(traces.join("latest-trace")).unwrap();
    assert_eq!(
        latest,
        std::fs::canonicalize(traces.join(&kept[0])).unwrap()
    );
    replays_exactly(&latest, 1, "");
}

#[test]
fn until_failure_without_a_failure_exits_zero_and_keeps_nothing() {
    let program = build("chaos_interleaving");
    let tmp = tempdir();
    let traces = tmp.path().join("traces");
    let out = until_failure(&["--until-failure=3", "--chaos"], &program, &traces);
    assert_eq!(status_code(&out), 0, "{}", describe("until-failure", &out));
    assert!(text(&out.stderr).contains("no failure in 3 runs"));
    assert_eq!(traces_in(&traces), Vec::<String>::new());
    let kept = until_failure(&["--until-failure=2", "--keep-all"], &program, &traces);
    assert_eq!(status_code(&kept), 0, "{}", describe("--keep-all", &kept));
    assert_eq!(traces_in(&traces).len(), 2);
}

#[test]
fn matching_output_is_a_failure() {
    let program = build("chaos_interleaving");
    let tmp = tempdir();
    let traces = tmp.path().join("traces");
    let options = ["--until-failure=5", "--failure-output", "^[abc]{36}$"];
    let out = until_failure(&options, &program, &traces);
    assert_eq!(status_code(&out), 1, "{}", describe("failure-output", &out));
    assert!(text(&out.stderr).contains("caught after 1 run: its output matched"));
    // The output still reached the terminal, whole.
    assert_eq!(text(&out.stdout).trim().len(), 36, "{}", describe("", &out));
    let trace = traces.join("latest-trace");
    replays_exactly(&trace, 0, &text(&out.stdout));
}

#[test]
fn a_hang_stopped_by_the_timeout_is_a_failure_that_replays_to_the_same_end() {
    let program = build("chaos_hang");
    let tmp = tempdir();
    let traces = tmp.path().join("traces");
    let options = ["--until-failure=3", "--chaos", "--timeout", "1"];
    let out = until_failure(&options, &program, &traces);
    assert_eq!(status_code(&out), 130, "{}", describe("timeout", &out));
    assert!(text(&out.stderr).contains("caught after 1 run: it ran past --timeout"));
    replays_exactly(&traces.join("latest-trace"), 130, "waiting\n");
}

#[test]
fn bad_hunting_options_are_refused_clearly() {
    let program = build("chaos_interleaving");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--until-failure=2", "--failure-output", "("],
            "not a valid regular expression",
        ),
        (&["--timeout", "-1"], "positive number of seconds"),
        (
            &["--until-failure", "-o", "/tmp/x"],
            "cannot be used with -o",
        ),
    ];
    for (options, message) in cases {
        let mut cmd = rr_command();
        cmd.arg("record").args(options).arg(&program);
        let out = output_within(&mut cmd, LIMIT).unwrap();
        assert_eq!(
            status_code(&out),
            1,
            "{}",
            describe(&format!("{options:?}"), &out)
        );
        assert!(
            text(&out.stderr).contains(message),
            "{}",
            describe(&format!("{options:?}"), &out)
        );
    }
}

/// Every command that prints to stdout ends quietly, status 0, when its
/// reader has gone (`rr-lite split --json | head -0`): `println!` panicked.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    let program = build("chaos_interleaving");
    let rec = record_pct(&program, 5);
    let commands: [&[&str]; 7] = [
        &["info"],
        &["split", "--json"],
        &["split"],
        &["races"],
        &["races", "--json"],
        &["why", "t0:0"],
        &["dump"],
    ];
    for args in commands {
        let mut child = rr_command()
            .args(args)
            .arg(&rec.trace)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before rr-lite writes anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let what = format!("{args:?} | closed");
        assert_eq!(status_code(&out), 0, "{}", describe(&what, &out));
        assert!(
            !text(&out.stderr).contains("panicked"),
            "{}",
            describe(&what, &out)
        );
    }
}
