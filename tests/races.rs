//! `rr-lite races`: a program with a known race reports it (the variable,
//! both call sites with file:line, the event ids), in text and JSON, and
//! `--fail-on-race` turns it into an exit status; programs whose sharing is
//! all ordered (a mutex, condition variables, barriers, atomics with
//! release/acquire) report none.

mod common;

use common::{build, describe, record, status_code, text};
use serde_json::Value;

fn races(trace: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["races".as_ref()];
    all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    all.push(trace.as_os_str());
    common::rr(all)
}

#[test]
fn a_lost_update_is_reported_with_its_variable_sites_and_events() {
    let rec = record(&build("replay_racy_counter"), &[]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let out = races(&rec.trace, &["--json"]);
    let what = describe("races --json", &out);
    assert_eq!(status_code(&out), 0, "{what}");
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    let list = report["races"].as_array().expect("races array");
    assert!(!list.is_empty(), "{what}");
    for race in list {
        assert_eq!(race["location"], "variable counter", "{what}");
        for side in ["first", "second"] {
            let site = race[side]["site"].as_str().unwrap();
            assert!(site.contains("bump (replay_racy_counter.c:"), "{what}");
            let event = race[side]["event"].as_str().unwrap();
            assert!(event.starts_with('t') && event.contains(':'), "{what}");
        }
        assert_ne!(race["first"]["event"], race["second"]["event"], "{what}");
    }
    // A write-write pair of one site, and a read-write pair.
    assert!(
        list.iter()
            .any(|r| r["first"]["access"] == "write" && r["second"]["access"] == "write"),
        "{what}"
    );

    let out = races(&rec.trace, &["--fail-on-race"]);
    let what = describe("races --fail-on-race", &out);
    assert_eq!(status_code(&out), 3, "{what}");
    assert!(
        text(&out.stdout).contains("rr-lite replay --at t"),
        "{what}"
    );
}

#[test]
fn ordered_sharing_reports_no_race() {
    for program in ["accounts", "prodcons", "barrier_stencil", "atomics_mp"] {
        let rec = record(&build(program), &[]);
        assert_eq!(rec.status, 0, "{}", rec.describe());
        let out = races(&rec.trace, &["--fail-on-race=5"]);
        let what = describe(&format!("races of {program}"), &out);
        assert_eq!(status_code(&out), 0, "{what}");
        assert!(text(&out.stdout).starts_with("no data races"), "{what}");
    }
}

/// `why` on a read of the racy counter names the write it saw and goes back along
/// read-then-write; on that write, lists the read among those that saw it;
/// JSON as well; an event the trace does not have is a clear error.
#[test]
fn why_a_racing_read_saw_what_it_saw() {
    let rec = record(&build("replay_racy_counter"), &[]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let out = races(&rec.trace, &["--json"]);
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    // The last read of the counter (the race report's first one may have
    // seen the initial value).
    let last_read = rec
        .events()
        .into_iter()
        .rfind(|e| e.kind == "read" && e.site.contains("replay_racy_counter.c:21"))
        .unwrap_or_else(|| panic!("no read of the counter\n{}", rec.describe()));
    let read = format!("t{}:{}", last_read.thread, last_read.index);
    let read = read.as_str();
    assert!(
        report["races"].as_array().is_some_and(|r| !r.is_empty()),
        "{}",
        describe("races", &out)
    );

    let why = |args: &[&str]| {
        let mut all: Vec<&std::ffi::OsStr> = vec!["why".as_ref()];
        all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
        all.push(rec.trace.as_os_str());
        common::rr(all)
    };
    let out = why(&["--json", "--depth", "2", read]);
    let what = describe(&format!("why {read}"), &out);
    assert_eq!(status_code(&out), 0, "{what}");
    let answer: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    let saw = answer["saw"].as_array().expect("saw");
    assert!(!saw.is_empty() && saw.len() <= 2, "{what}");
    assert_eq!(saw[0]["write"]["kind"], "write", "{what}");
    assert!(
        saw[0]["write"]["site"]
            .as_str()
            .unwrap()
            .contains("replay_racy_counter.c:"),
        "{what}"
    );
    // The race's write came last before the read, or another thread's did.
    let seen_write = saw[0]["write"]["event"].as_str().unwrap().to_string();
    let out = why(&[&seen_write]);
    let what = describe(&format!("why {seen_write}"), &out);
    assert!(
        text(&out.stdout).contains(&format!("seen by {read} read")),
        "{what}"
    );

    let out = why(&["t0:999999"]);
    let what = describe("why t0:999999", &out);
    assert_eq!(status_code(&out), 1, "{what}");
    assert!(text(&out.stderr).contains("no event t0:999999"), "{what}");
}
