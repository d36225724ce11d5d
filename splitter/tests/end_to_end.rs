//! `split` on trace directories: what it writes, what reads it back, and
//! that bad traces give clear errors and no output.

mod common;

use std::path::Path;

use rr_lite_splitter::replay_log::{SPLIT_TMP_DIR, STATS_FILE};
use rr_lite_splitter::{
    Algorithm, EventRef, NoProgress, Notify, Reduction, SPLIT_DIR, SplitError, SplitOptions,
    ThreadLog, analyze_events, read_split, replay_log_name, split_trace, thread_logs_from_events,
};
use rr_lite_trace::{
    ACCESS_HASH_SEED, EventKind, RecordedEvent, TraceDir, TraceError, fold_access_hash,
};

use EventKind::{Read, Rmw, Write};

const X: u64 = 0x1000;
const Y: u64 = 0x2000;

fn ev(thread: u32, index: u64) -> EventRef {
    EventRef { thread, index }
}

fn split_dir_events(
    events: &[RecordedEvent],
    threads: u32,
    options: &SplitOptions,
) -> (tempfile::TempDir, Vec<ThreadLog>) {
    let dir = tempfile::tempdir().unwrap();
    common::write_trace(dir.path(), threads, events);
    let trace = TraceDir::open(dir.path()).unwrap();
    split_trace(&trace, options, &NoProgress).unwrap();
    let logs = read_split(dir.path()).unwrap();
    (dir, logs)
}

fn assert_no_output(dir: &Path) {
    assert!(!dir.join(SPLIT_DIR).exists(), "split/ left behind");
    assert!(!dir.join(SPLIT_TMP_DIR).exists(), "split.tmp/ left behind");
}

#[test]
fn raw_group_then_war_places_broadcast_and_waits() {
    // t0 writes X; t1 and t2 read it; t0 writes it again.
    let events = common::events(&[
        (0, Write, X, 8),
        (1, Read, X, 8),
        (2, Read, X, 8),
        (0, Write, X, 8),
    ]);
    let (_dir, logs) = split_dir_events(&events, 3, &SplitOptions::default());
    assert_eq!(logs.len(), 3);
    let t0 = &logs[0].sync_points;
    assert_eq!(t0.len(), 2);
    assert_eq!(
        (t0[0].index, t0[0].notify, t0[0].waits.len()),
        (0, Notify::Broadcast, 0)
    );
    assert_eq!(t0[1].waits, vec![ev(1, 0), ev(2, 0)]);
    assert_eq!((t0[1].kind, t0[1].addr), (Write, X));
    for t in [1, 2] {
        let p = &logs[t].sync_points;
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].index, p[0].notify), (0, Notify::Signal));
        assert_eq!(p[0].waits, vec![ev(0, 0)]);
    }
    // Access count and hash cover every event of the thread.
    let expected = ([(Write, X), (Write, X)].iter().zip(0..))
        .fold(ACCESS_HASH_SEED, |h, (&(k, a), i)| {
            fold_access_hash(h, i, k, a)
        });
    assert_eq!((logs[0].accesses, logs[0].access_hash), (2, expected));
}

#[test]
fn waw_signals_once_and_private_accesses_are_not_sync_points() {
    let events = common::events(&[
        (0, Write, Y, 8),
        (0, Write, X, 8),
        (1, Read, Y + 64, 8),
        (1, Rmw, X, 8),
    ]);
    let (_dir, logs) = split_dir_events(&events, 2, &SplitOptions::default());
    assert_eq!(logs[0].sync_points.len(), 1);
    assert_eq!(
        (logs[0].sync_points[0].index, logs[0].sync_points[0].notify),
        (1, Notify::Signal)
    );
    assert_eq!(logs[1].sync_points.len(), 1);
    assert_eq!(logs[1].sync_points[0].index, 1);
    assert_eq!(logs[1].sync_points[0].waits, vec![ev(0, 1)]);
    assert_eq!(logs[1].accesses, 2);
}

#[test]
fn a_thread_exit_waits_for_every_thread_before_it() {
    // Threads 1 and 2 share nothing with thread 0 or each other, but thread
    // 2's exit came after thread 0's second write and thread 1's read in
    // the recorded order (a release no hook saw may have let it go).
    let exit2 = rr_lite_trace::pseudo::thread_exit(2);
    let events = common::events(&[
        (0, Write, X, 8),
        (1, Read, Y, 8),
        (0, Write, X + 64, 8),
        (2, EventKind::ThreadExit, exit2, 0),
        (0, Write, X + 128, 8),
    ]);
    let (_dir, logs) = split_dir_events(&events, 3, &SplitOptions::default());
    let exit = &logs[2].sync_points;
    assert_eq!(exit.len(), 1);
    assert_eq!((exit[0].index, exit[0].kind), (0, EventKind::ThreadExit));
    assert_eq!(exit[0].waits, vec![ev(0, 1), ev(1, 0)]);
    // Thread 0's later write is not waited for.
    assert_eq!(logs[0].sync_points.len(), 1);
    assert_eq!(logs[0].sync_points[0].index, 1);
}

#[test]
fn a_thread_exit_after_the_process_exit_does_not_wait_for_it() {
    // exit() in thread 0 waits for every thread to end at replay: a thread
    // that ends after it waits for thread 0's event before the exit.
    let events = common::events(&[
        (0, Write, X, 8),
        (1, Read, Y, 8),
        (0, EventKind::ProcessExit, rr_lite_trace::pseudo::PROCESS, 0),
        (
            1,
            EventKind::ThreadExit,
            rr_lite_trace::pseudo::thread_exit(1),
            0,
        ),
    ]);
    let (_dir, logs) = split_dir_events(&events, 2, &SplitOptions::default());
    let exit = &logs[1].sync_points;
    assert_eq!(exit.len(), 1);
    assert_eq!(exit[0].waits, vec![ev(0, 0)]);
}

#[test]
fn trace_split_equals_in_memory_split_and_writes_stats() {
    let raw: Vec<_> = (0..400u64)
        .map(|i| {
            let kind = [Read, Write, Rmw, Read][(i % 4) as usize];
            ((i * 7 % 5) as u32, kind, 0x1000 + 8 * (i * 13 % 9), 8)
        })
        .collect();
    let events = common::events(&raw);
    for algorithm in [Algorithm::Worklist, Algorithm::Indexed] {
        for reduction in [Reduction::None, Reduction::Thread, Reduction::Vc] {
            let options = SplitOptions {
                algorithm,
                reduction,
                granule: 8,
                ..SplitOptions::default()
            };
            let (dir, logs) = split_dir_events(&events, 5, &options);
            let mut analysis = analyze_events(&events, &options).unwrap();
            let expected = thread_logs_from_events(&mut analysis, &events).unwrap();
            assert_eq!(logs, expected, "{algorithm} {reduction}");
            let stats: serde_json::Value = serde_json::from_slice(
                &std::fs::read(dir.path().join(SPLIT_DIR).join(STATS_FILE)).unwrap(),
            )
            .unwrap();
            assert_eq!(stats["entries"], 400);
            assert_eq!(stats["reduction"], reduction.name());
            assert_eq!(stats["pairs_kept"]["RAW"], analysis.stats.pairs_kept.raw);
            assert!(!dir.path().join(SPLIT_TMP_DIR).exists());
        }
    }
}

#[test]
fn resplit_replaces_the_previous_output() {
    let events = common::events(&[(0, Write, X, 8), (1, Read, X, 8), (1, Read, X, 8)]);
    let dir = tempfile::tempdir().unwrap();
    common::write_trace(dir.path(), 2, &events);
    let trace = TraceDir::open(dir.path()).unwrap();
    let none = SplitOptions {
        reduction: Reduction::None,
        ..SplitOptions::default()
    };
    split_trace(&trace, &none, &NoProgress).unwrap();
    let with_none = read_split(dir.path()).unwrap();
    split_trace(&trace, &SplitOptions::default(), &NoProgress).unwrap();
    let with_vc = read_split(dir.path()).unwrap();
    assert_eq!(with_none[1].sync_points.len(), 2);
    assert_eq!(with_vc[1].sync_points.len(), 1);
    assert!(!dir.path().join("split.old").exists());
}

#[test]
fn missing_thread_log_is_an_error_and_writes_nothing() {
    let events = common::events(&[(0, Write, X, 8), (1, Read, X, 8), (2, Read, X, 8)]);
    let dir = tempfile::tempdir().unwrap();
    common::write_trace(dir.path(), 3, &events);
    std::fs::remove_file(dir.path().join("thread-0001.log")).unwrap();
    let err = TraceDir::open(dir.path())
        .map_err(SplitError::from)
        .and_then(|t| split_trace(&t, &SplitOptions::default(), &NoProgress))
        .unwrap_err();
    assert!(err.to_string().contains("thread-0001.log"), "{err}");
    assert_no_output(dir.path());
}

#[test]
fn truncated_thread_log_is_an_error_and_writes_nothing() {
    let events = common::events(&[
        (0, Write, X, 8),
        (1, Read, X, 8),
        (0, Write, X, 8),
        (1, Read, X, 8),
    ]);
    let dir = tempfile::tempdir().unwrap();
    common::write_trace(dir.path(), 2, &events);
    let path = dir.path().join("thread-0000.log");
    let mut bytes = std::fs::read(&path).unwrap();
    // Drop the end marker and the last byte of the last entry (a tag and
    // its site: a synced clock step costs no byte of its own).
    bytes.truncate(bytes.len() - 16 - 1);
    std::fs::write(&path, bytes).unwrap();
    let trace = TraceDir::open(dir.path()).unwrap();
    let err = split_trace(&trace, &SplitOptions::default(), &NoProgress).unwrap_err();
    assert!(
        matches!(err, SplitError::Trace(TraceError::Truncated { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("thread-0000.log"), "{err}");
    assert_no_output(dir.path());
}

#[test]
fn newer_trace_version_is_an_error() {
    let events = common::events(&[(0, Write, X, 8)]);
    let dir = tempfile::tempdir().unwrap();
    common::write_trace(dir.path(), 1, &events);
    std::fs::write(dir.path().join("version"), "99\n").unwrap();
    let err = TraceDir::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, TraceError::NewerVersion { found: 99, .. }),
        "{err}"
    );
    // And a newer thread log format.
    std::fs::write(dir.path().join("version"), "1\n").unwrap();
    let path = dir.path().join("thread-0000.log");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 42;
    std::fs::write(&path, bytes).unwrap();
    let trace = TraceDir::open(dir.path()).unwrap();
    let err = split_trace(&trace, &SplitOptions::default(), &NoProgress).unwrap_err();
    assert!(
        matches!(err, SplitError::Trace(TraceError::NewerVersion { .. })),
        "{err}"
    );
    assert_no_output(dir.path());
}

#[test]
fn bad_granule_is_refused_before_anything_is_read() {
    let err = analyze_events(
        &[],
        &SplitOptions {
            granule: 12,
            ..SplitOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, SplitError::BadGranule { granule: 12, .. }),
        "{err}"
    );
}

#[test]
fn read_split_reports_missing_and_corrupt_logs() {
    let events = common::events(&[(0, Write, X, 8), (1, Read, X, 8)]);
    let (dir, _) = split_dir_events(&events, 2, &SplitOptions::default());
    let log1 = dir.path().join(SPLIT_DIR).join(replay_log_name(1));
    let bytes = std::fs::read(&log1).unwrap();
    std::fs::write(&log1, &bytes[..bytes.len() - 3]).unwrap();
    let err = read_split(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("thread-0001.sync") && err.contains("byte"),
        "{err}"
    );
    std::fs::remove_file(&log1).unwrap();
    let err = read_split(dir.path()).unwrap_err();
    assert!(
        matches!(err, SplitError::MissingReplayLog { threads: 2, .. }),
        "{err}"
    );
    let unsplit = tempfile::tempdir().unwrap();
    assert!(matches!(
        read_split(unsplit.path()).unwrap_err(),
        SplitError::NotSplit { .. }
    ));
}

#[test]
fn topology_exports_dot_and_json() {
    let events = common::events(&[
        (0, Write, X, 8),
        (1, Read, X, 8),
        (2, Read, X, 8),
        (0, Write, X, 8),
        (1, Write, X, 8),
    ]);
    let dir = tempfile::tempdir().unwrap();
    common::write_trace(dir.path(), 3, &events);
    let trace = TraceDir::open(dir.path()).unwrap();
    let split =
        rr_lite_splitter::analyze_trace(&trace, &SplitOptions::default(), &NoProgress).unwrap();
    let topology = split.topology();
    let labeller = |site: u64| format!("prog.c:{}", site & 0xff);
    let json = topology.to_json(Some(&labeller));
    let edges = json["edges"].as_array().unwrap();
    assert_eq!(edges.len(), split.analysis.pairs.len());
    assert!(edges.iter().any(|e| e["kind"] == "RAW"
        && e["from"] == serde_json::json!({"thread": 0, "index": 0})
        && e["to"] == serde_json::json!({"thread": 1, "index": 0})));
    assert!(edges.iter().any(|e| e["kind"] == "WAR"));
    assert!(edges.iter().any(|e| e["kind"] == "WAW"));
    assert!(
        json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["site_label"].as_str().unwrap().starts_with("prog.c:"))
    );
    let dot = topology.to_dot(None);
    assert!(dot.starts_with("digraph"));
    assert!(dot.contains("\"0:0\" -> \"1:0\" [label=\"RAW\""), "{dot}");
    assert!(dot.contains("write"));
    // Nothing was written by the analysis alone.
    assert_no_output(dir.path());
}

/// Everything a split reports, in order.
#[derive(Default)]
struct RecordedProgress(std::cell::RefCell<Vec<String>>);

impl rr_lite_splitter::Progress for RecordedProgress {
    fn start(&self, total: Option<u64>) {
        self.0.borrow_mut().push(format!("start {total:?}"));
    }
    fn entries_read(&self, done: u64) {
        self.0.borrow_mut().push(format!("read {done}"));
    }
    fn stage(&self, stage: rr_lite_splitter::Stage) {
        self.0.borrow_mut().push(stage.to_string());
    }
}

#[test]
fn split_reports_its_progress() {
    let events = common::events(&[(0, Write, X, 8), (1, Read, X, 8), (0, Write, Y, 8)]);
    let dir = tempfile::tempdir().unwrap();
    // No header.json: the total is unknown, as for an unfinished recording.
    common::write_trace(dir.path(), 2, &events);
    let trace = TraceDir::open(dir.path()).unwrap();
    let progress = RecordedProgress::default();
    split_trace(&trace, &SplitOptions::default(), &progress).unwrap();
    assert_eq!(
        progress.0.into_inner(),
        ["start None", "read 3", "placing sync points", "writing"]
    );
}

/// Two threads taking turns, `rounds` times, on each of 64 granules: thread
/// `t` writes then reads `size` bytes at `offset * t` in it (4 and 4: each
/// its own half; 0 and 8: the whole granule, shared).
fn turns_on(offset: u64, size: u64, rounds: u64) -> Vec<RecordedEvent> {
    let mut raw = Vec::new();
    for _ in 0..rounds {
        for granule in 0..64u64 {
            for thread in 0..2u32 {
                let at = X + 8 * granule + offset * u64::from(thread);
                raw.push((thread, Write, at, size));
                raw.push((thread, Read, at, size));
            }
        }
    }
    common::events(&raw)
}

fn split_stats(events: &[RecordedEvent], options: &SplitOptions) -> serde_json::Value {
    let (dir, _) = split_dir_events(events, 2, options);
    serde_json::from_slice(&std::fs::read(dir.path().join(SPLIT_DIR).join(STATS_FILE)).unwrap())
        .unwrap()
}

/// Most pairs kept at 8 bytes join the two halves of a granule: the split
/// goes to 4 bytes and keeps none of them; with `--fixed-granule`, or when
/// the threads share whole granules, it stays at 8.
#[test]
fn false_sharing_makes_the_split_go_to_four_byte_granules() {
    let halves = turns_on(4, 4, 8);
    let finer = split_stats(&halves, &SplitOptions::default());
    assert_eq!(finer["granule"], 4, "{finer}");
    assert_eq!(finer["granule_finer_for_false_sharing"], true);
    assert_eq!(finer["waits"], 0, "{finer}");
    let fixed = SplitOptions {
        finer_for_false_sharing: false,
        ..SplitOptions::default()
    };
    let whole = split_stats(&halves, &fixed);
    assert_eq!(
        (whole["granule"].as_u64(), whole["fixed_granule"].as_bool()),
        (Some(8), Some(true))
    );
    assert!(whole["waits"].as_u64().unwrap() > 500, "{whole}");
    let shared = split_stats(&turns_on(0, 8, 8), &SplitOptions::default());
    assert_eq!(shared["granule"], 8, "{shared}");
    assert!(shared["waits"].as_u64().unwrap() > 500, "{shared}");
}
