//! `rr-lite timeline`: the page's data matches the trace (every event
//! counted in its thread's lane, the races `races` reports, dependencies
//! between recorded events), and the page itself, opened in a real headless
//! Chromium, draws every lane, the races and the dependencies, answers a
//! hover with the event's call site and zooms; a screenshot is kept. Bad
//! arguments get a clear error.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{build, describe, record, status_code, text};
use serde_json::Value;

fn timeline(trace: &Path, html: &Path) -> std::process::Output {
    common::rr([
        "timeline".as_ref(),
        "-o".as_ref(),
        html.as_os_str(),
        trace.as_os_str(),
    ])
}

/// The JSON the page embeds.
fn page_data(html: &Path) -> Value {
    let page = std::fs::read_to_string(html).expect("the page");
    let start = page
        .find(r#"<script type="application/json" id="rr-data">"#)
        .expect("data element");
    let body = &page[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</script>").unwrap()];
    serde_json::from_str(body).expect("the page's data is JSON")
}

fn races_count(trace: &Path) -> usize {
    let out = common::rr(["races".as_ref(), "--json".as_ref(), trace.as_os_str()]);
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("races JSON");
    report["races"].as_array().unwrap().len()
}

fn recorded_page(program: &str, dir: &Path) -> (common::Recorded, PathBuf, Value) {
    let rec = record(&build(program), &[]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let html = dir.join(format!("{program}.html"));
    let out = timeline(&rec.trace, &html);
    assert_eq!(status_code(&out), 0, "{}", describe("timeline", &out));
    let data = page_data(&html);
    (rec, html, data)
}

#[test]
fn the_page_data_counts_every_event_and_names_the_races() {
    let dir = common::tempdir();
    for program in ["replay_racy_counter", "accounts"] {
        let (rec, _, data) = recorded_page(program, dir.path());
        let events = rec.events();
        assert_eq!(data["events"], events.len() as u64, "{program}");
        let lanes = data["lanes"].as_array().unwrap();
        let threads = events.iter().map(|e| e.thread).max().unwrap() + 1;
        assert_eq!(lanes.len(), threads as usize, "{program}");
        for (t, lane) in lanes.iter().enumerate() {
            let in_bins: u64 = lane["bins"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap())
                .sum();
            let of_thread = events.iter().filter(|e| e.thread == t as u32).count();
            assert_eq!(in_bins, of_thread as u64, "{program} t{t}");
            // Small traces: every event drawn singly, with its index.
            let singly = lane["sync"]["seq"].as_array().unwrap().len()
                + lane["accesses"]["seq"].as_array().unwrap().len();
            assert_eq!(singly, of_thread, "{program} t{t}");
        }
        let races = data["races"].as_array().unwrap();
        assert_eq!(races.len(), races_count(&rec.trace), "{program}");
        for race in races {
            for occurrence in race["occurrences"].as_array().unwrap() {
                let [a, b] = [&occurrence[0], &occurrence[1]];
                assert!(a[2].as_u64() < b[2].as_u64(), "{program}: {occurrence}");
            }
        }
        for edge in data["edges"].as_array().unwrap() {
            let (from, to) = (&edge[0], &edge[1]);
            assert_ne!(
                from[0], to[0],
                "{program}: a pair within one thread: {edge}"
            );
            assert!(from[2].as_u64() < to[2].as_u64(), "{program}: {edge}");
            let to = events
                .iter()
                .find(|e| u64::from(e.thread) == to[0] && e.index == to[1].as_u64().unwrap());
            assert!(to.is_some(), "{program}: an edge to no event: {edge}");
        }
        if program == "accounts" {
            assert!(races.is_empty(), "accounts has no race: {races:?}");
        } else {
            assert!(!races.is_empty());
            assert!(
                races[0]["first"]["site"]
                    .as_str()
                    .unwrap()
                    .contains("bump (replay_racy_counter.c:")
            );
        }
    }
}

fn chromium(args: &[&str]) -> std::process::Output {
    let profile = common::tempdir();
    let mut cmd = Command::new("chromium");
    // As the machine notes say: no sandbox as root, and none of the
    // background connections a closed network refuses.
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args);
    common::output_within(&mut cmd, std::time::Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// What the page reports having drawn (`#rr-status`), after its self-test.
fn rendered_status(html: &Path) -> Value {
    let url = format!("file://{}#selftest", html.display());
    let out = chromium(&["--dump-dom", "--virtual-time-budget=10000", &url]);
    let dom = text(&out.stdout);
    let start = dom
        .find(r#"<pre id="rr-status">"#)
        .unwrap_or_else(|| panic!("{}", describe("chromium --dump-dom", &out)));
    let body = &dom[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</pre>").unwrap()];
    let body = body
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("status {body:?}: {e}"))
}

#[test]
#[cfg_attr(
    rr_lite_no_chromium,
    ignore = "chromium not found: install it (Debian: chromium), or set \
              RR_LITE_REQUIRE_CHROMIUM=1 to fail instead"
)]
fn the_page_renders_in_a_headless_browser() {
    common::require_tool("chromium", "RR_LITE_REQUIRE_CHROMIUM");
    let dir = common::tempdir();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("timeline");
    std::fs::create_dir_all(&shots).unwrap();
    for program in ["replay_racy_counter", "accounts"] {
        let (rec, html, data) = recorded_page(program, dir.path());
        let status = rendered_status(&html);
        let what = format!("{program}: {status}");
        let lanes = data["lanes"].as_array().unwrap();
        assert_eq!(status["lanes"], lanes.len(), "{what}");
        for (t, lane) in lanes.iter().enumerate() {
            if lane["events"].as_u64().unwrap() > 0 {
                assert!(status["painted"][t].as_u64().unwrap() > 0, "t{t}: {what}");
            }
        }
        assert!(status["drawn"]["marks"].as_u64().unwrap() > 0, "{what}");
        assert!(status["drawn"]["edges"].as_u64().unwrap() > 0, "{what}");
        assert_eq!(status["zoomed"], true, "{what}");
        // Hovering an event names its kind and call site.
        let tip = status["markTip"].as_str().unwrap_or_default();
        assert!(tip.starts_with('t'), "{what}");
        assert!(tip.lines().any(|l| l.starts_with("at ")), "{what}");
        if program == "accounts" {
            assert_eq!(status["drawn"]["races"], 0, "{what}");
        } else {
            assert!(status["drawn"]["races"].as_u64().unwrap() > 0, "{what}");
            let tip = status["raceTip"].as_str().unwrap_or_default();
            assert!(tip.contains("bump (replay_racy_counter.c:"), "{what}");
            assert!(tip.contains("variable counter"), "{what}");
        }

        let shot = shots.join(format!("{program}.png"));
        let _ = std::fs::remove_file(&shot);
        let url = format!("file://{}", html.display());
        let out = chromium(&[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,800",
            &url,
        ]);
        let png = std::fs::read(&shot)
            .unwrap_or_else(|e| panic!("{e}: {}", describe("chromium --screenshot", &out)));
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", shot.display());
        // A blank 1280x800 page compresses to a few KB.
        assert!(
            png.len() > 20_000,
            "{}: {} bytes",
            shot.display(),
            png.len()
        );
        eprintln!("screenshot of {}: {}", rec.trace.display(), shot.display());
    }
}

#[test]
fn bad_arguments_get_a_clear_error() {
    let dir = common::tempdir();
    let missing = dir.path().join("no-such-trace");
    let out = timeline(&missing, &dir.path().join("x.html"));
    let what = describe("timeline of a missing trace", &out);
    assert_eq!(status_code(&out), 1, "{what}");
    assert!(text(&out.stderr).contains("no-such-trace"), "{what}");

    let rec = record(&build("replay_racy_counter"), &[]);
    let unwritable = dir.path().join("no-dir").join("x.html");
    let out = timeline(&rec.trace, &unwritable);
    let what = describe("timeline into a missing directory", &out);
    assert_eq!(status_code(&out), 1, "{what}");
    assert!(text(&out.stderr).contains("no-dir/x.html"), "{what}");

    let out = common::rr(["timeline".as_ref(), rec.trace.as_os_str()]);
    let what = describe("timeline without -o", &out);
    assert_eq!(status_code(&out), 2, "{what}");
    assert!(text(&out.stderr).contains("--output"), "{what}");
}
