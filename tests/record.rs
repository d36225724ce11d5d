//! End-to-end tests of the record side: build the C programs under
//! `tests/c` with `rr-lite cc`, record them with `rr-lite record`, and check
//! the traces through `rr-lite dump --json` and `rr-lite info --json`.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{
    Event, Recorded, build, build_with, check_trace, count_kind, describe, of_kind, record,
    rr_command, status_code, tempdir, text,
};
use serde_json::Value;

/// Records `program args`, expects `status`, checks the trace's global
/// order, and returns the recording with its events.
fn record_checked(program: &Path, args: &[&str], status: i32) -> (Recorded, Vec<Event>) {
    let rec = record(program, args);
    assert_eq!(rec.status, status, "unexpected status\n{}", rec.describe());
    let events = rec.events();
    assert!(!events.is_empty(), "empty trace\n{}", rec.describe());
    if let Err(e) = check_trace(&events) {
        panic!("invalid global order: {e}\n{}", rec.describe());
    }
    let info = rec.info();
    assert_eq!(
        info["complete"],
        Value::Bool(true),
        "trace not complete: {info}"
    );
    assert_eq!(info["exit_status"], Value::from(status), "info: {info}");
    assert_eq!(
        info["events"].as_u64(),
        Some(events.len() as u64),
        "info and dump disagree on the number of events: {info}"
    );
    (rec, events)
}

/// The address printed after `label` on a line of the program's output
/// (`label 0x...`).
fn printed_addr(stdout: &str, label: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(label))
        .unwrap_or_else(|| panic!("no line starting with {label:?} in {stdout:?}"));
    let hex = line.split_whitespace().nth(1).unwrap();
    u64::from_str_radix(hex.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("bad address in {line:?}: {e}"))
}

fn threads_of(events: &[Event]) -> BTreeSet<u32> {
    events.iter().map(|e| e.thread).collect()
}

fn assert_kinds(events: &[Event], kinds: &[&str]) {
    let present: BTreeSet<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    for k in kinds {
        assert!(
            present.contains(k),
            "no {k} event in the trace; kinds present: {present:?}"
        );
    }
}

#[test]
fn racy_counter_final_value_follows_from_the_global_order() {
    let exe = build("racy_counter");
    let (threads, iterations) = (4u64, 2000u64);
    for run in 0..3 {
        let (rec, events) = record_checked(&exe, &["4", "2000"], 0);
        let counter = printed_addr(&rec.stdout, "counter");
        let printed: i64 = rec
            .stdout
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(threads_of(&events).len(), 5, "run {run}");
        // Replay the accesses to `counter` in the global order: each read
        // sees the current value, each write stores the value its thread
        // last read plus one. A true global order gives the printed result.
        let mut value: i64 = 0;
        let mut last_read: HashMap<u32, i64> = HashMap::new();
        let mut writes = 0;
        for e in events.iter().filter(|e| e.addr == counter) {
            assert_eq!(
                e.size,
                4,
                "access to counter of size {}: {}",
                e.size,
                e.short()
            );
            match e.kind.as_str() {
                "read" => {
                    last_read.insert(e.thread, value);
                }
                "write" => {
                    let read = last_read
                        .remove(&e.thread)
                        .unwrap_or_else(|| panic!("write without a preceding read: {}", e.short()));
                    value = read + 1;
                    writes += 1;
                }
                other => panic!("unexpected {other} on counter: {}", e.short()),
            }
        }
        assert_eq!(
            writes,
            threads * iterations,
            "run {run}: number of increments"
        );
        assert_eq!(
            value, printed,
            "run {run}: the recorded order of the accesses to counter gives {value}, the program printed {printed}"
        );
    }
}

#[test]
fn accounts_mutex_sections_never_overlap() {
    let exe = build("accounts");
    for _ in 0..2 {
        let (rec, events) = record_checked(&exe, &[], 0);
        assert_eq!(rec.stdout, "total 6000\ntransfers some\n");
        assert_kinds(
            &events,
            &["mutex-lock", "mutex-unlock", "thread-create", "thread-join"],
        );
        // Two locks per transfer, one for the statistics.
        assert_eq!(count_kind(&events, "mutex-lock"), 4 * (400 * 2 + 1));
        assert_eq!(count_kind(&events, "mutex-unlock"), 4 * (400 * 2 + 1));
        assert_eq!(count_kind(&events, "thread-start"), 4);
        let exits: Vec<&Event> = of_kind(&events, "process-exit").collect();
        assert_eq!(exits.len(), 1);
        assert_eq!(exits[0].payload, Some(0));
    }
}

#[test]
fn prodcons_condition_variables() {
    let exe = build("prodcons");
    for _ in 0..2 {
        let (rec, events) = record_checked(&exe, &[], 0);
        assert_eq!(rec.stdout, "consumed 600 items, sum 180300\n");
        assert_kinds(
            &events,
            &[
                "cond-signal",
                "cond-broadcast",
                "cond-wake",
                "mutex-lock",
                "mutex-unlock",
            ],
        );
        // Every worker waits at the start gate at least once.
        let woken: BTreeSet<u32> = of_kind(&events, "cond-wake").map(|e| e.thread).collect();
        assert!(
            woken.len() >= 4,
            "threads woken from a cond wait: {woken:?}"
        );
        // A wait is: mutex-unlock, cond-wake, mutex-lock, in that thread.
        let mut by_thread: HashMap<u32, Vec<&Event>> = HashMap::new();
        for e in &events {
            by_thread.entry(e.thread).or_default().push(e);
        }
        for e in of_kind(&events, "cond-wake") {
            let own = &by_thread[&e.thread];
            let i = e.index as usize;
            assert_eq!(e.payload, Some(0), "{}", e.short());
            assert!(i >= 1 && own[i - 1].kind == "mutex-unlock", "{}", e.short());
            assert!(
                own.get(i + 1).is_some_and(|n| n.kind == "mutex-lock"),
                "{}",
                e.short()
            );
        }
    }
}

#[test]
fn barrier_rounds_are_ordered() {
    let exe = build("barrier_stencil");
    let (rec, events) = record_checked(&exe, &[], 0);
    assert!(rec.stdout.starts_with("checksum "), "{}", rec.stdout);
    assert_eq!(count_kind(&events, "barrier-arrive"), 4 * 10 * 2);
    assert_eq!(count_kind(&events, "barrier-depart"), 4 * 10 * 2);
    // Exactly one serial thread (PTHREAD_BARRIER_SERIAL_THREAD = -1) per round.
    let serial = of_kind(&events, "barrier-depart")
        .filter(|e| {
            e.payload
                .is_some_and(|p| p as i64 == -1 || p == u64::from(u32::MAX))
        })
        .count();
    assert_eq!(serial, 10 * 2, "serial departures");
}

#[test]
fn atomics_message_passing_and_counters() {
    let exe = build("atomics_mp");
    for _ in 0..2 {
        let (rec, events) = record_checked(&exe, &[], 0);
        assert!(rec.stdout.ends_with("ok\n"), "{}", rec.stdout);
        assert_kinds(
            &events,
            &["rmw", "atomic-load", "atomic-store", "read", "write"],
        );
        let rmw_on = |addr: u64, size: u64| {
            of_kind(&events, "rmw")
                .filter(|e| e.addr == addr && e.size == size)
                .count()
        };
        for (label, size) in [("c8", 1), ("c16", 2), ("c32", 4), ("c64", 8)] {
            let addr = printed_addr(&rec.stdout, label);
            assert_eq!(rmw_on(addr, size), 3 * 200, "fetch_add events on {label}");
        }
        let cas = printed_addr(&rec.stdout, "cas");
        assert!(rmw_on(cas, 8) >= 3 * 200, "compare-exchange events");

        // Message passing: the consumer's payload reads come after all the
        // producer's payload writes, and its last read of the flag before
        // them comes after the flag's release store.
        let flag = printed_addr(&rec.stdout, "flag");
        let payload = printed_addr(&rec.stdout, "payload");
        let in_payload = |e: &&Event| e.addr >= payload && e.addr < payload + 128;
        let writes: Vec<&Event> = of_kind(&events, "write").filter(in_payload).collect();
        let reads: Vec<&Event> = of_kind(&events, "read").filter(in_payload).collect();
        assert_eq!(writes.len(), 16, "payload writes");
        assert_eq!(reads.len(), 16, "payload reads");
        let producer = writes[0].thread;
        let consumer = reads[0].thread;
        assert_ne!(producer, consumer);
        let flag_store = events
            .iter()
            .find(|e| e.kind == "atomic-store" && e.addr == flag && e.thread == producer)
            .expect("flag store");
        let last_write = writes.iter().map(|e| e.seq).max().unwrap();
        let first_read = reads.iter().map(|e| e.seq).min().unwrap();
        assert!(
            first_read > last_write,
            "payload read before it was written"
        );
        assert!(
            flag_store.seq > last_write,
            "flag stored before the payload"
        );
        let seen = events
            .iter()
            .rfind(|e| {
                e.thread == consumer
                    && e.addr == flag
                    && e.kind == "atomic-load"
                    && e.seq < first_read
            })
            .expect("consumer's flag load");
        assert!(
            seen.seq > flag_store.seq,
            "the consumer's last flag load {} precedes the flag store {}",
            seen.short(),
            flag_store.short()
        );
    }
}

#[test]
fn memcpy_memmove_memset_are_ranges() {
    let exe = build("memcpy_shared");
    let (rec, events) = record_checked(&exe, &[], 0);
    assert_eq!(rec.stdout, "ok\n");
    assert_kinds(&events, &["read-range", "write-range"]);
    let workers: Vec<u32> = of_kind(&events, "thread-start").map(|e| e.thread).collect();
    assert_eq!(workers.len(), 2);
    let count = |kind: &str, thread: u32, size: u64| {
        of_kind(&events, kind)
            .filter(|e| e.thread == thread && e.size == size)
            .count()
    };
    for &t in &workers {
        for n in [1u64, 3, 8, 100, 4096, 65536 + 17, 200000] {
            // One memcpy and two memmoves of n bytes each.
            assert!(
                count("read-range", t, n) >= 3,
                "thread {t}: read-range of {n} bytes: {}",
                count("read-range", t, n)
            );
            assert!(
                count("write-range", t, n) >= 3,
                "thread {t}: write-range of {n} bytes: {}",
                count("write-range", t, n)
            );
            // memset of n + 16 bytes.
            assert!(
                count("write-range", t, n + 16) >= 1,
                "thread {t}: memset of {} bytes",
                n + 16
            );
        }
    }
    // Each range is logged as one event, not per granule.
    let big = of_kind(&events, "write-range")
        .filter(|e| e.size > 65536)
        .count();
    assert!(big >= 2 * 4, "large write ranges: {big}");
    for e in events.iter().filter(|e| e.kind.ends_with("-range")) {
        assert!(e.size > 0, "empty range {}", e.short());
    }
}

#[test]
fn rwlocks_semaphores_spinlocks_trylock() {
    let exe = build("rwlock_sem_spin");
    for _ in 0..2 {
        let (rec, events) = record_checked(&exe, &[], 0);
        assert_eq!(rec.stdout, "trylock busy=16 free=0 spin=600 ok\n");
        assert_kinds(
            &events,
            &[
                "rwlock-rdlock",
                "rwlock-wrlock",
                "rwlock-rdunlock",
                "rwlock-wrunlock",
                "sem-post",
                "sem-wait",
                "spin-lock",
                "spin-unlock",
                "mutex-trylock",
            ],
        );
        let payloads = |kind: &str| -> BTreeSet<u64> {
            of_kind(&events, kind).filter_map(|e| e.payload).collect()
        };
        let sem = payloads("sem-wait");
        assert!(sem.contains(&11), "sem_trywait EAGAIN not logged: {sem:?}");
        assert!(
            sem.contains(&110),
            "sem_timedwait ETIMEDOUT not logged: {sem:?}"
        );
        assert!(sem.contains(&0), "{sem:?}");
        // The trylocks (busy, then taken), then the failed locks (EDEADLK, then
        // EINVAL on the destroyed mutex), which log as trylocks with their error.
        let tries: Vec<&Event> = of_kind(&events, "mutex-trylock").collect();
        assert_eq!(
            tries.iter().map(|e| e.payload).collect::<Vec<_>>(),
            vec![Some(16), Some(0), Some(35), Some(22)],
            "trylock and failed lock results"
        );
        assert_eq!(tries[0].thread, tries[1].thread);
        // Initialisations and destroys write the whole object and carry
        // their result: one spin lock (4 bytes), five semaphores (32), the
        // error-checking mutex (40), destroyed once refused (EBUSY), once done.
        let sizes = |kind: &str| -> Vec<u64> { of_kind(&events, kind).map(|e| e.size).collect() };
        assert_eq!(sizes("sync-init"), vec![4, 32, 32, 32, 32, 32, 40]);
        assert_eq!(payloads("sync-init"), BTreeSet::from([0]));
        let destroys: Vec<Option<u64>> = of_kind(&events, "sync-destroy")
            .map(|e| e.payload)
            .collect();
        assert_eq!(destroys, vec![Some(16), Some(0)], "destroy results");
        // Every spin lock round: 3 threads x 200 rounds, each ends in an unlock.
        assert_eq!(count_kind(&events, "spin-unlock"), 600);
        assert_eq!(count_kind(&events, "sem-post"), 4 + 100);
    }
}

/// The crash: status, info, and the crashing thread's last event.
fn check_crash(args: &[&str], signal: u64, signal_name: &str) {
    let exe = build("crash");
    let (rec, events) = record_checked(&exe, args, 128 + signal as i32);
    assert!(!rec.stdout.contains("not reached"));
    let info = rec.info();
    assert_eq!(
        info["ending"],
        Value::from(format!("killed by {signal_name}")),
        "{info}"
    );
    let fatal: Vec<&Event> = of_kind(&events, "fatal-signal").collect();
    assert_eq!(fatal.len(), 1, "fatal-signal events: {fatal:?}");
    let f = fatal[0];
    assert_eq!(f.payload, Some(signal), "{}", f.short());
    let last = events.iter().rfind(|e| e.thread == f.thread).unwrap();
    assert_eq!(
        last.seq,
        f.seq,
        "the crashing thread's last event is {}",
        last.short()
    );
    // The crasher was created first: thread 1.
    assert_eq!(f.thread, 1);
    if signal == 11 {
        assert_eq!(f.addr, 0, "faulting address");
        assert!(f.site.contains("crasher"), "fault site {:?}", f.site);
        // The store that faulted was logged just before.
        let before = events
            .iter()
            .rfind(|e| e.thread == f.thread && e.seq < f.seq)
            .unwrap();
        assert_eq!(
            (before.kind.as_str(), before.addr),
            ("write", 0),
            "{}",
            before.short()
        );
    }
    // The other workers were busy when it happened.
    assert!(
        count_kind(&events, "mutex-lock") > 200,
        "workers' lock events"
    );
}

#[test]
fn crash_segv_leaves_a_complete_trace() {
    check_crash(&[], 11, "SIGSEGV");
}

#[test]
fn crash_abort_leaves_a_complete_trace() {
    check_crash(&["abort"], 6, "SIGABRT");
}

#[test]
fn exit_while_threads_run_leaves_a_complete_trace() {
    let exe = build("exit_early");
    let (rec, events) = record_checked(&exe, &[], 3);
    assert_eq!(rec.stdout, "exiting early\n");
    let exits: Vec<&Event> = of_kind(&events, "process-exit").collect();
    assert_eq!(exits.len(), 1, "process-exit events: {exits:?}");
    assert_eq!(exits[0].payload, Some(3));
    assert_eq!(exits[0].thread, 0);
    let last_main = events.iter().rfind(|e| e.thread == 0).unwrap();
    assert_eq!(
        last_main.kind,
        "process-exit",
        "main's last event: {}",
        last_main.short()
    );
    assert_eq!(threads_of(&events).len(), 4);
    assert_eq!(count_kind(&events, "thread-exit"), 0, "no worker ended");
}

/// A log that cannot grow (a full disk; here a file size limit, whose
/// SIGXFSZ the shell ignores, so growing fails with EFBIG as a full disk
/// fails with ENOSPC): the program runs on with its output and status,
/// the trace is finished but marked incomplete with the reason, and replay
/// refuses it.
#[test]
fn a_log_that_cannot_grow_leaves_the_program_its_output_and_status() {
    let exe = build("log_filler");
    let tmp = common::tempdir();
    let trace = tmp.path().join("trace");
    // 6000 KiB per file (bash counts KiB): the 4 MiB first chunk of each
    // log fits, the second
    // does not.
    let script = format!(
        "ulimit -f 6000; trap '' XFSZ; exec \"$0\" record -o '{}' '{}'",
        trace.display(),
        exe.display()
    );
    // The test environment of rr_command, through a shell.
    let rr = common::rr_command();
    let mut cmd = Command::new("bash");
    for (key, value) in rr.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.arg("-c").arg(script).arg(rr.get_program());
    let out = common::output_within(&mut cmd, std::time::Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("recording hangs: {e}"));
    let what = describe("record under a file size limit", &out);
    assert_eq!(status_code(&out), 3, "{what}");
    assert_eq!(text(&out.stdout), "counter 800000\n", "{what}");
    assert!(text(&out.stderr).contains("disk full?"), "{what}");
    let info = common::info(&trace).unwrap_or_else(|e| panic!("{e}\n{what}"));
    assert_eq!(info["complete"], false, "{info}");
    let replay = common::rr(["replay".as_ref(), trace.as_os_str()]);
    let what = describe("replay of the incomplete trace", &replay);
    assert_eq!(status_code(&replay), 1, "{what}");
    assert!(text(&replay.stderr).contains("could not grow"), "{what}");
}

/// Exiting right after creating threads, while they start up: every run
/// must still give the program's status and a complete, readable trace.
#[test]
fn exit_while_threads_start_leaves_a_complete_trace() {
    let exe = build("exit_early");
    for run in 0..8 {
        let rec = record(&exe, &["now"]);
        assert_eq!(
            rec.status,
            3,
            "run {run}: unexpected status\n{}",
            rec.describe()
        );
        assert!(!rec.stderr.contains("panicked"), "{}", rec.describe());
        let events = rec.events();
        check_trace(&events).unwrap_or_else(|e| panic!("run {run}: {e}"));
        let info = rec.info();
        assert_eq!(info["complete"], Value::Bool(true), "run {run}: {info}");
        let exits = count_kind(&events, "process-exit");
        assert_eq!(exits, 1, "run {run}");
    }
}

/// The runtime library a built executable loads (from its RUNPATH).
fn runtime_of(exe: &Path) -> PathBuf {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(exe)
        .output()
        .expect("run readelf");
    let dynamic = text(&out.stdout);
    let dir = dynamic
        .lines()
        .find_map(|l| {
            let l = l
                .split("Library runpath: [")
                .nth(1)
                .or_else(|| l.split("Library rpath: [").nth(1))?;
            l.split(']').next()
        })
        .unwrap_or_else(|| panic!("no RUNPATH in {}:\n{dynamic}", exe.display()));
    let lib = Path::new(dir).join("librr_lite_rt.so");
    assert!(lib.is_file(), "{} missing", lib.display());
    lib
}

/// `__tsan_*` symbols of an object or library, via nm.
fn tsan_symbols(file: &Path, nm_args: &[&str]) -> BTreeSet<String> {
    let out = Command::new("nm")
        .args(nm_args)
        .arg(file)
        .output()
        .expect("run nm");
    assert!(out.status.success(), "{}", describe("nm", &out));
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| s.starts_with("__tsan_"))
        .map(str::to_owned)
        .collect()
}

fn runtime_exports(exe: &Path) -> BTreeSet<String> {
    let exports = tsan_symbols(&runtime_of(exe), &["-D", "--defined-only"]);
    assert!(exports.len() > 100, "runtime exports: {exports:?}");
    exports
}

#[test]
fn all_hooks_links_and_runs_natively_and_recorded() {
    let exe = build("all_hooks");
    // Every exported hook is referenced by the program.
    let exported = runtime_exports(&exe);
    let used = tsan_symbols(&exe, &["-D", "--undefined-only"]);
    let unused: Vec<&String> = exported.difference(&used).collect();
    assert!(unused.is_empty(), "all_hooks.c does not call: {unused:?}");

    // Without rr-lite record the runtime is inert, the hooks still work.
    let out = Command::new(&exe)
        .env_remove("RR_LITE_MODE")
        .env_remove("RR_LITE_TRACE")
        .output()
        .unwrap();
    assert_eq!(status_code(&out), 0, "{}", describe("all_hooks", &out));
    assert_eq!(text(&out.stdout), "all hooks ok (0 wrong)\n");

    let (rec, events) = record_checked(&exe, &[], 0);
    assert_eq!(rec.stdout, "all hooks ok (0 wrong)\n");
    assert_kinds(
        &events,
        &["read", "write", "rmw", "read-range", "write-range"],
    );
    let range_32 = |kind: &str| of_kind(&events, kind).filter(|e| e.size == 32).count();
    assert_eq!(
        range_32("read-range"),
        2,
        "__tsan_read_range(_pc) of 32 bytes"
    );
    assert_eq!(
        range_32("write-range"),
        2,
        "__tsan_write_range(_pc) of 32 bytes"
    );
    for size in [1, 2, 4, 8, 16] {
        let n = of_kind(&events, "read").filter(|e| e.size == size).count();
        assert!(n >= 5, "reads of {size} bytes: {n}");
    }
    let rmw16 = of_kind(&events, "rmw").filter(|e| e.size == 16).count();
    assert!(rmw16 >= 8, "128-bit read-modify-writes: {rmw16}");
}

/// A small finished trace to damage (three threads).
fn pristine_trace() -> &'static Recorded {
    static TRACE: OnceLock<Recorded> = OnceLock::new();
    TRACE.get_or_init(|| {
        let rec = record(&build("racy_counter"), &["2", "50"]);
        assert_eq!(rec.status, 0, "{}", rec.describe());
        rec
    })
}

/// A copy of the pristine trace (thread logs cut to their used part, so
/// that copies stay small), damaged by `damage`; returns the copy.
fn damaged(damage: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    let src = &pristine_trace().trace;
    let tmp = tempdir();
    let dst = tmp.path().join("trace");
    std::fs::create_dir(&dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
    }
    damage(&dst);
    (tmp, dst)
}

/// Byte offsets of the entries of a thread log (start of each entry, then
/// the end of the last one), from the trace crate's reader.
fn entry_offsets(log: &Path) -> Vec<u64> {
    let mut reader = rr_lite_trace::ThreadLogReader::open(log).unwrap();
    let mut offsets = vec![reader.offset()];
    while let Some(e) = reader.next() {
        e.unwrap();
        offsets.push(reader.offset());
    }
    offsets
}

fn truncate(path: &Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
}

/// `dump` and `info` must both fail cleanly with a message naming `file`.
fn assert_rejected(trace: &Path, file: &str) {
    for cmd in [
        &["dump", "--json"][..],
        &["info", "--json"][..],
        &["dump"][..],
    ] {
        let out = rr_command()
            .arg(cmd[0])
            .arg(trace)
            .args(&cmd[1..])
            .output()
            .unwrap();
        let what = format!("rr-lite {} on a damaged trace", cmd.join(" "));
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("panicked"), "{}", describe(&what, &out));
        assert_eq!(status_code(&out), 1, "{}", describe(&what, &out));
        assert!(
            stderr.contains(file),
            "the error does not name {file}: {}",
            describe(&what, &out)
        );
    }
}

#[test]
fn pristine_trace_is_accepted() {
    let (_tmp, trace) = damaged(|_| {});
    let events = common::dump(&trace).unwrap();
    check_trace(&events).unwrap();
    assert_eq!(threads_of(&events).len(), 3);
}

#[test]
fn truncated_thread_log_mid_entry_is_an_error() {
    let (_tmp, trace) = damaged(|dir| {
        let log = dir.join("thread-0001.log");
        let offsets = entry_offsets(&log);
        assert!(offsets.len() > 20, "{offsets:?}");
        // Two bytes into an entry in the middle of the log.
        truncate(&log, offsets[offsets.len() / 2] + 2);
    });
    assert_rejected(&trace, "thread-0001.log");
}

#[test]
fn truncated_thread_log_at_entry_boundary_is_an_error() {
    // The file ends cleanly between two entries, but header.json says the
    // thread logged more entries than are left.
    let (_tmp, trace) = damaged(|dir| {
        let log = dir.join("thread-0002.log");
        let offsets = entry_offsets(&log);
        truncate(&log, offsets[offsets.len() / 2]);
    });
    assert_rejected(&trace, "thread-0002.log");
}

#[test]
fn corrupted_thread_log_is_an_error() {
    let (_tmp, trace) = damaged(|dir| {
        let log = dir.join("thread-0001.log");
        let mut bytes = std::fs::read(&log).unwrap();
        // 0xeb: a compact access of size code 6, which does not exist.
        let end = bytes.len().min(64 + 200);
        assert!(end > 64, "thread 1 logged nothing");
        for b in &mut bytes[64..end] {
            *b = 0xeb;
        }
        std::fs::write(&log, bytes).unwrap();
    });
    assert_rejected(&trace, "thread-0001.log");
}

#[test]
fn foreign_thread_log_is_an_error() {
    let (_tmp, trace) = damaged(|dir| {
        std::fs::copy(common::rr_lite(), dir.join("thread-0002.log")).unwrap();
    });
    assert_rejected(&trace, "thread-0002.log");
}

#[test]
fn empty_thread_log_is_an_error() {
    let (_tmp, trace) = damaged(|dir| truncate(&dir.join("thread-0001.log"), 0));
    assert_rejected(&trace, "thread-0001.log");
}

#[test]
fn missing_thread_log_is_an_error() {
    let (_tmp, trace) = damaged(|dir| std::fs::remove_file(dir.join("thread-0002.log")).unwrap());
    assert_rejected(&trace, "thread-0002.log");
}

#[test]
fn newer_version_file_is_an_error() {
    let (_tmp, trace) = damaged(|dir| std::fs::write(dir.join("version"), "99\n").unwrap());
    assert_rejected(&trace, "version");
}

#[test]
fn newer_header_format_version_is_an_error() {
    let (_tmp, trace) = damaged(|dir| {
        let path = dir.join("header.json");
        let mut header: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        header["format_version"] = Value::from(99);
        std::fs::write(&path, header.to_string()).unwrap();
    });
    assert_rejected(&trace, "header.json");
}

#[test]
fn newer_thread_log_version_is_an_error() {
    let (_tmp, trace) = damaged(|dir| {
        let log = dir.join("thread-0001.log");
        let mut bytes = std::fs::read(&log).unwrap();
        bytes[8] = 9; // format version, little-endian u16 at offset 8
        std::fs::write(&log, bytes).unwrap();
    });
    assert_rejected(&trace, "thread-0001.log");
}

fn compile_plain(src: &Path, exe: &Path) {
    let out = Command::new("cc")
        .args(["-O2", "-pthread"])
        .arg(src)
        .arg("-o")
        .arg(exe)
        .output()
        .expect("run cc");
    assert!(out.status.success(), "{}", describe("cc", &out));
}

#[test]
fn recording_an_uninstrumented_program_fails_clearly() {
    let tmp = tempdir();
    let exe = tmp.path().join("accounts-plain");
    compile_plain(&common::c_dir().join("accounts.c"), &exe);
    let trace = tmp.path().join("trace");
    let out = rr_command()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .arg(&exe)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(status_code(&out), 1, "{}", describe("record", &out));
    assert!(!stderr.contains("panicked"));
    assert!(
        stderr.contains("accounts-plain") && stderr.contains("rr-lite cc"),
        "unclear message: {stderr}"
    );
    assert!(
        text(&out.stdout).is_empty(),
        "the program ran: {}",
        text(&out.stdout)
    );
}

#[test]
fn separate_compile_and_link() {
    let tmp = tempdir();
    let obj = tmp.path().join("accounts.o");
    let exe = tmp.path().join("accounts-linked");
    let out = rr_command()
        .args(["cc", "-O2", "-g", "-pthread", "-c"])
        .arg(common::c_dir().join("accounts.c"))
        .arg("-o")
        .arg(&obj)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe("rr-lite cc -c", &out));
    let out = rr_command()
        .args(["cc", "-pthread"])
        .arg(&obj)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        describe("rr-lite cc (link)", &out)
    );
    let (rec, events) = record_checked(&exe, &[], 0);
    assert_eq!(rec.stdout, "total 6000\ntransfers some\n");
    assert_eq!(count_kind(&events, "mutex-lock"), 4 * (400 * 2 + 1));
}

#[test]
#[cfg_attr(
    rr_lite_no_make,
    ignore = "make not found: install it, or set RR_LITE_REQUIRE_MAKE=1 to fail instead"
)]
fn make_with_rr_lite_cc() {
    common::require_tool("make", "RR_LITE_REQUIRE_MAKE");
    let tmp = tempdir();
    std::fs::copy(
        common::c_dir().join("prodcons.c"),
        tmp.path().join("prog.c"),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("Makefile"),
        "CFLAGS = -O2 -g -pthread\nLDFLAGS = -pthread\nprog: prog.o\n",
    )
    .unwrap();
    let out = rr_command()
        .program_is("make")
        .arg(format!("CC={} cc", common::rr_lite().display()))
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe("make", &out));
    let log = text(&out.stdout);
    assert!(
        log.contains("prog.o"),
        "make did not compile separately: {log}"
    );
    let (rec, events) = record_checked(&tmp.path().join("prog"), &[], 0);
    assert_eq!(rec.stdout, "consumed 600 items, sum 180300\n");
    assert_kinds(&events, &["cond-wake", "cond-signal"]);
}

/// Changes the program of a command built by [`rr_command`], keeping its
/// environment.
trait ProgramIs {
    fn program_is(self, program: &str) -> Command;
}

impl ProgramIs for Command {
    fn program_is(self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        for (k, v) in self.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }
}

use common::CLANG;

#[test]
#[cfg_attr(
    rr_lite_no_clang,
    ignore = "clang-14 not found: install it, or set RR_LITE_REQUIRE_CLANG=1 to fail instead"
)]
fn clang_builds_and_records() {
    common::require_tool(CLANG, "RR_LITE_REQUIRE_CLANG");
    let exe = build_with("atomics_mp", Some(CLANG));
    let comment = Command::new("readelf")
        .args(["-p", ".comment"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        text(&comment.stdout).contains("clang"),
        "not built by clang"
    );
    let (rec, events) = record_checked(&exe, &[], 0);
    assert!(rec.stdout.ends_with("ok\n"), "{}", rec.stdout);
    let c64 = printed_addr(&rec.stdout, "c64");
    let n = of_kind(&events, "rmw")
        .filter(|e| e.addr == c64 && e.size == 8)
        .count();
    assert_eq!(n, 600);

    let exe = build_with("prodcons", Some(CLANG));
    let (rec, events) = record_checked(&exe, &[], 0);
    assert_eq!(rec.stdout, "consumed 600 items, sum 180300\n");
    assert_kinds(
        &events,
        &[
            "cond-wake",
            "cond-signal",
            "cond-broadcast",
            "read",
            "write",
        ],
    );

    let exe = build_with("memcpy_shared", Some(CLANG));
    let (rec, events) = record_checked(&exe, &[], 0);
    assert_eq!(rec.stdout, "ok\n");
    assert!(of_kind(&events, "write-range").any(|e| e.size == 65536 + 17));

    let exe = build_with("racy_counter", Some(CLANG));
    let (rec, events) = record_checked(&exe, &["2", "500"], 0);
    let counter = printed_addr(&rec.stdout, "counter");
    let writes = of_kind(&events, "write")
        .filter(|e| e.addr == counter)
        .count();
    assert_eq!(writes, 1000);
}

/// Every hook gcc emits for the test programs is exported by the runtime (a
/// missing one would only show up as a link error).
#[test]
fn gcc_emits_only_hooks_the_runtime_exports() {
    assert_emits_only_exported_hooks("gcc");
}

/// The same for clang, which emits some hooks gcc does not.
#[test]
#[cfg_attr(
    rr_lite_no_clang,
    ignore = "clang-14 not found: install it, or set RR_LITE_REQUIRE_CLANG=1 to fail instead"
)]
fn clang_emits_only_hooks_the_runtime_exports() {
    common::require_tool(CLANG, "RR_LITE_REQUIRE_CLANG");
    assert_emits_only_exported_hooks(CLANG);
}

/// Compiles every test program with `compiler -fsanitize=thread` (not
/// linked) and checks that each `__tsan_*` symbol it needs is one the
/// runtime exports.
fn assert_emits_only_exported_hooks(compiler: &str) {
    let exported = runtime_exports(&build("accounts"));
    let tmp = tempdir();
    let mut emitted = BTreeSet::new();
    for entry in std::fs::read_dir(common::c_dir()).unwrap() {
        let src = entry.unwrap().path();
        if src.extension().is_none_or(|e| e != "c") || src.ends_with("all_hooks.c") {
            continue;
        }
        let obj = tmp
            .path()
            .join(src.with_extension("o").file_name().unwrap());
        let openmp = std::fs::read_to_string(&src)
            .unwrap()
            .contains("#include <omp.h>");
        let out = Command::new(compiler)
            .args(["-O2", "-g", "-pthread", "-fsanitize=thread", "-c"])
            .args(openmp.then_some("-fopenmp"))
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .output()
            .unwrap();
        if openmp && !out.status.success() && !common::openmp_headers_required() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("'omp.h' file not found") {
                eprintln!(
                    "note: {compiler} has no OpenMP headers (libomp-dev): {} skipped \
                     (RR_LITE_REQUIRE_CLANG_OPENMP=1 makes this fail)",
                    src.display()
                );
                continue;
            }
        }
        assert!(out.status.success(), "{}", describe(compiler, &out));
        emitted.extend(tsan_symbols(&obj, &["--undefined-only"]));
    }
    let missing: Vec<&String> = emitted.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "{compiler} emits hooks the runtime lacks: {missing:?}"
    );
    assert!(emitted.len() > 20, "{compiler} emitted {emitted:?}");
}

/// Bytes that are not UTF-8 in an argument, the environment or the
/// program's path are recorded as they are (`header.json` holds them as
/// hex) and replayed byte for byte: the program prints the same bytes and
/// the same stack address.
#[test]
fn non_utf8_arguments_environment_and_paths_replay_exactly() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempdir();
    let odd_dir = tmp.path().join(OsStr::from_bytes(b"dir-\xff\xfe"));
    std::fs::create_dir(&odd_dir).unwrap();
    let exe = odd_dir.join("prog");
    std::fs::copy(build("bytes_args_env"), &exe).unwrap();
    let bad = OsStr::from_bytes(b"a\xffb");
    for (n, env_key, env_value, arg) in [
        (0, bad, OsStr::new("1"), OsStr::new("x")),
        (1, OsStr::new("RR_LITE_TEST_VAR"), bad, OsStr::new("x")),
        (2, OsStr::new("RR_LITE_TEST_VAR"), OsStr::new("1"), bad),
    ] {
        let trace = tmp.path().join(format!("t{n}"));
        let out = common::rr_command()
            .env(env_key, env_value)
            .arg("record")
            .arg("-o")
            .arg(&trace)
            .arg(&exe)
            .arg(arg)
            .output()
            .unwrap();
        let recorded = describe(&format!("record, case {n}"), &out);
        assert_eq!(status_code(&out), 0, "{recorded}");
        let printed = text(&out.stdout);
        if n == 1 {
            assert!(printed.contains("env:61ff62\n"), "{recorded}");
        }
        if n == 2 {
            assert!(printed.contains("arg:61ff62\n"), "{recorded}");
        }
        // Replay runs with rr-lite's own environment, not the recorded one.
        for mode in ["--parallel", "--verify"] {
            let replay = common::rr(["replay".as_ref(), mode.as_ref(), trace.as_os_str()]);
            let what = format!(
                "{recorded}\n{}",
                describe(&format!("replay {mode}"), &replay)
            );
            assert_eq!(status_code(&replay), 0, "{what}");
            assert_eq!(text(&replay.stdout), printed, "{what}");
        }
    }
}

/// `kill -9` of `rr-lite record` stops the recorded program too (it would
/// otherwise run on and grow its trace without limit); the trace is left
/// incomplete and still readable.
#[test]
fn the_program_dies_with_a_killed_recorder() {
    let tmp = tempdir();
    let exe = tmp.path().join("runs-until-killed-by-this-test");
    std::fs::copy(build("runs_until_killed"), &exe).unwrap();
    let trace = tmp.path().join("trace");
    let mut recorder = rr_command()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .arg(&exe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let alive = || {
        Command::new("pgrep")
            .arg("-f")
            .arg(exe.as_os_str())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let until = |cond: &dyn Fn() -> bool| {
        let start = std::time::Instant::now();
        while !cond() && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        cond()
    };
    assert!(
        until(&|| alive() && trace.join("thread-0001.log").exists()),
        "the program did not start"
    );
    recorder.kill().unwrap();
    recorder.wait().unwrap();
    assert!(
        until(&|| !alive()),
        "the program still runs after its recorder was killed"
    );
    let info = common::rr(["info".as_ref(), trace.as_os_str()]);
    assert!(
        text(&info.stdout).contains("(incomplete)"),
        "{}",
        describe("info", &info)
    );
}

/// A program built by another rr-lite build loads that build's runtime
/// through its rpath, which may not read the plans and state file this
/// build's replay writes: record and replay name it (here the other
/// "build" is this one's runtime in another `runtime-<hash>` directory, so
/// both still work), and a program of this build gets no such warning.
#[test]
fn a_program_built_by_another_build_is_named_at_record_and_replay() {
    let dir = common::tempdir();
    let other = dir.path().join("runtime-0123456789abcdef");
    let exe = dir.path().join("racy_counter_other_build");
    let mut cc = common::rr_command();
    cc.env("RR_LITE_RUNTIME_DIR", &other);
    build_racy_counter(cc, &exe);
    let warning = "was built by another rr-lite build";
    let rec = common::record(&exe, &["2", "1000"]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    assert!(
        rec.stderr.contains(warning) && rec.stderr.contains("runtime-0123456789abcdef"),
        "{}",
        rec.describe()
    );
    let rep = common::rr([std::ffi::OsStr::new("replay"), rec.trace.as_os_str()]);
    assert_eq!(
        common::status_code(&rep),
        0,
        "{}",
        common::describe("replay", &rep)
    );
    assert_eq!(common::text(&rep.stdout), rec.stdout);
    assert!(
        common::text(&rep.stderr).contains(warning),
        "{}",
        common::describe("replay", &rep)
    );
    let own = common::record(&common::build("racy_counter"), &["2", "1000"]);
    assert_eq!(own.status, 0, "{}", own.describe());
    assert!(!own.stderr.contains(warning), "{}", own.describe());
    // That other runtime no longer attaching (here: a library without the
    // hooks, so the program does not even load): the error names it as the
    // likely cause, not only the warning before.
    let runtime = other.join("librr_lite_rt.so");
    std::fs::remove_file(&runtime).unwrap();
    let empty = dir.path().join("empty.c");
    std::fs::write(&empty, "int rr_lite_not_a_runtime;\n").unwrap();
    let gcc = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&runtime)
        .arg(&empty)
        .status()
        .unwrap();
    assert!(gcc.success());
    let rep = common::rr([std::ffi::OsStr::new("replay"), rec.trace.as_os_str()]);
    let stderr = common::text(&rep.stderr);
    assert_eq!(
        common::status_code(&rep),
        1,
        "{}",
        common::describe("replay", &rep)
    );
    assert!(
        stderr.contains("did not attach")
            && stderr.contains("it loads another rr-lite build's runtime")
            && stderr.contains("runtime-0123456789abcdef"),
        "{}",
        common::describe("replay", &rep)
    );
}

/// The split reads a trace in the analysis order: an event one private
/// clock step past its thread's previous one comes right after it (its
/// stripe was that thread's since its previous access: ARCHITECTURE.md,
/// "Private steps"). It must find exactly the pairs, sync points and
/// granules of the order by clock, on programs that walk their own data
/// (long private runs) and share it at fine grain, through locks, barriers,
/// read-shared data and copies.
#[test]
fn the_analysis_order_finds_the_pairs_of_the_clock_order() {
    let programs: [(&str, &[&str]); 7] = [
        ("racy_counter", &["4", "2000"]),
        // Stripes kept for the quantum, used on the fast path (a private
        // step on a kept stripe: `RecordThread::hold_kept_fast`).
        ("replay_shared_index", &["20000"]),
        ("barrier_stencil", &[]),
        ("replay_read_shared", &["500"]),
        ("memcpy_shared", &[]),
        ("accounts", &[]),
        ("prodcons", &[]),
    ];
    for (name, args) in programs {
        let rec = record(&build(name), args);
        assert_eq!(rec.status, 0, "{}", rec.describe());
        let events = common::dump(&rec.trace).unwrap();
        let mut last = HashMap::new();
        let private_steps = events
            .iter()
            .filter(|e| {
                last.insert(e.thread, e.clock)
                    .is_some_and(|c| e.clock == c + 1)
            })
            .count();
        assert!(private_steps > 0, "{name}: no private step recorded");
        let stats = |order: &str| {
            let trace = rec.trace.to_str().unwrap();
            let out = common::rr(["split", "--json", "--order", order, trace]);
            assert!(out.status.success(), "{}", describe(order, &out));
            let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
            // The order itself, the time, and the memory figures, which the
            // order may move: the table's, and the clocks' peak (the
            // history is compacted when it doubles, at a point of the pass
            // that depends on the order).
            for k in [
                "order",
                "seconds",
                "entries_per_second",
                "state_bytes",
                "state_bytes_per_granule",
                "clock_bytes",
            ] {
                v.as_object_mut().unwrap().remove(k);
            }
            v
        };
        assert_eq!(stats("runs"), stats("clock"), "{name}");
    }
}

/// A relative `$HOME` (Phoenix's makefiles set `HOME=../..`) or
/// `$XDG_CACHE_HOME` does not put a relative rpath into the programs
/// `rr-lite cc` builds: the runtime's directory is absolute, and the
/// program starts from any directory.
#[test]
fn a_relative_home_gives_an_absolute_runtime_path() {
    let dir = common::tempdir();
    std::fs::create_dir(dir.path().join("home")).expect("create home");
    let exe = dir.path().join("racy_counter_relative_home");
    let mut cc = common::rr_command();
    cc.current_dir(dir.path())
        .env_remove("RR_LITE_RUNTIME_DIR")
        .env("HOME", "home")
        .env("XDG_CACHE_HOME", "cache");
    build_racy_counter(cc, &exe);
    let lib = runtime_of(&exe);
    assert!(lib.is_absolute(), "{}", lib.display());
    assert!(
        lib.starts_with(dir.path().join("home").canonicalize().unwrap()),
        "{}",
        lib.display()
    );
    let run = Command::new(&exe)
        .args(["2", "1000"])
        .current_dir("/")
        .output()
        .expect("run the program");
    assert!(
        run.status.success(),
        "{}",
        common::describe("program", &run)
    );
}

/// `rr-lite cc -O2 -pthread racy_counter.c -o EXE` by `cc` (an rr-lite
/// command, its environment set by the caller); asserts that it built.
fn build_racy_counter(mut cc: Command, exe: &Path) {
    let out = cc
        .args(["cc", "-O2", "-pthread"])
        .arg(common::c_dir().join("racy_counter.c"))
        .arg("-o")
        .arg(exe)
        .output()
        .expect("run rr-lite cc");
    assert!(out.status.success(), "{}", common::describe("cc", &out));
}
