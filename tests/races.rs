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
