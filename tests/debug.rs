//! End-to-end tests of `rr-lite replay --debug` (gdb in batch mode): a stop
//! at an event taken from `dump` lands in the function and line `dump`
//! names, with the program's frames in `bt`, and `continue` finishes the
//! replay with the recorded output; `--at-end` of a crash shows the
//! faulting line; gdb's `rr-lite-event` names the thread's next event; bad
//! event ids are refused clearly.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{Recorded, build, describe, output_within, record, rr_command, status_code, text};

const LIMIT: Duration = Duration::from_secs(120);

/// `rr-lite replay --debug ARGS TRACE -- -batch GDB-ARGS...`.
fn debug(trace: &Path, args: &[&str], gdb: &[&str]) -> Output {
    let mut cmd = rr_command();
    cmd.arg("replay")
        .arg("--debug")
        .args(args)
        .arg(trace)
        .arg("--");
    cmd.arg("-batch").args(gdb);
    output_within(&mut cmd, LIMIT).unwrap_or_else(|e| panic!("replay --debug hangs: {e}"))
}

/// The line of `tests/c/debug_target.c` holding `marker`.
fn line_of(marker: &str) -> usize {
    let source = std::fs::read_to_string(common::c_dir().join("debug_target.c")).unwrap();
    1 + source
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker} in debug_target.c"))
}

fn recorded(args: &[&str], status: i32) -> Recorded {
    let rec = record(&build("debug_target"), args);
    assert_eq!(rec.status, status, "{}", rec.describe());
    rec
}

macro_rules! needs_gdb {
    () => {
        common::require_tool("gdb", "RR_LITE_REQUIRE_GDB")
    };
}

#[test]
#[cfg_attr(
    rr_lite_no_gdb,
    ignore = "gdb not found: install it, or set RR_LITE_REQUIRE_GDB=1 to fail instead"
)]
fn a_stop_at_an_event_from_dump_lands_on_its_line_and_continue_finishes() {
    needs_gdb!();
    let rec = recorded(&[], 0);
    let events = rec.events();
    let add_line = format!("debug_target.c:{}", line_of("ADD LINE"));
    // The 20th write of `total` by thread 2: a point where thread 2 waits
    // for thread 1's unlock, or not, as the recording says.
    let event = events
        .iter()
        .filter(|e| e.thread == 2 && e.kind == "write" && e.site.contains(&add_line))
        .nth(19)
        .unwrap_or_else(|| panic!("no 20th write of total by thread 2\n{}", rec.describe()));
    let id = format!("t{}:{}", event.thread, event.index);
    let out = debug(
        &rec.trace,
        &["--at", &id],
        &["-ex", "bt", "-ex", "rr-lite-event", "-ex", "continue"],
    );
    let what = describe(&format!("replay --debug --at {id}"), &out);
    let stdout = text(&out.stdout);
    assert_eq!(status_code(&out), 0, "{what}");
    assert!(
        stdout.contains(&format!("about to perform its event {id}")),
        "{what}"
    );
    // The stop shows the program's frame, and bt starts there (the runtime's
    // frames are filtered out), with add called from worker.
    let bt: Vec<&str> = stdout.lines().filter(|l| l.starts_with('#')).collect();
    assert!(
        bt.first()
            .is_some_and(|l| l.contains("add") && l.contains(&add_line)),
        "{what}"
    );
    assert!(bt.iter().any(|l| l.contains("worker")), "{what}");
    assert!(
        !bt.iter().any(|l| l.contains("rr_lite_rt::")),
        "runtime frames in bt\n{what}"
    );
    assert!(
        stdout.contains(&format!("next event {id} (write")),
        "rr-lite-event names the event\n{what}"
    );
    assert!(
        stdout.contains(&rec.stdout),
        "continue finishes the replay\n{what}"
    );
    assert!(stdout.contains("exited normally"), "{what}");
}

#[test]
#[cfg_attr(
    rr_lite_no_gdb,
    ignore = "gdb not found: install it, or set RR_LITE_REQUIRE_GDB=1 to fail instead"
)]
fn at_end_of_a_crash_shows_the_faulting_line() {
    needs_gdb!();
    let rec = recorded(&["crash"], 139);
    let out = debug(&rec.trace, &["--at-end"], &["-ex", "bt"]);
    let what = describe("replay --debug --at-end", &out);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("received signal SIGSEGV"), "{what}");
    let crash_line = format!("debug_target.c:{}", line_of("CRASH LINE"));
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("#0") && l.contains("main") && l.contains(&crash_line)),
        "{what}"
    );
}

#[test]
#[cfg_attr(
    rr_lite_no_gdb,
    ignore = "gdb not found: install it, or set RR_LITE_REQUIRE_GDB=1 to fail instead"
)]
fn at_end_of_an_exit_stops_at_the_exit_and_bad_ids_are_refused() {
    needs_gdb!();
    let rec = recorded(&[], 0);
    let out = debug(&rec.trace, &["--at-end"], &["-ex", "bt"]);
    let what = describe("replay --debug --at-end", &out);
    assert!(
        text(&out.stdout).contains("about to perform its event t0:"),
        "{what}"
    );
    assert!(text(&out.stdout).contains("process-exit"), "{what}");

    for (id, status, says) in [
        ("t9:0", 1, "no thread 9"),
        ("t1:999999", 1, "thread 1 has"),
        ("one:two", 2, "not an event id"),
    ] {
        let out = debug(&rec.trace, &["--at", id], &[]);
        let what = describe(&format!("--at {id}"), &out);
        assert_eq!(status_code(&out), status, "{what}");
        assert!(text(&out.stderr).contains(says), "{what}");
    }
}

/// `--gdbserver PORT` with gdb connecting as an IDE would (`target remote`
/// with the script rr-lite names): the stop at an event, `bt`, and
/// `continue` to the end with the recorded output on rr-lite's standard
/// output. The server listens on the loopback interface only.
#[test]
#[cfg_attr(
    any(rr_lite_no_gdb, rr_lite_no_gdbserver),
    ignore = "gdb or gdbserver not found: install them, or set RR_LITE_REQUIRE_GDB=1 and \
              RR_LITE_REQUIRE_GDBSERVER=1 to fail instead"
)]
fn gdbserver_serves_the_stop_to_a_connecting_gdb() {
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    needs_gdb!();
    common::require_tool("gdbserver", "RR_LITE_REQUIRE_GDBSERVER");
    let rec = recorded(&[], 0);
    let id = rec
        .events()
        .iter()
        .find(|e| e.thread == 1 && e.kind == "write")
        .map(|e| format!("t{}:{}", e.thread, e.index))
        .unwrap_or_else(|| panic!("no write by thread 1\n{}", rec.describe()));
    // A port free a moment ago (the kernel picks it).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut server = rr_command()
        .args(["replay", "--gdbserver", &port.to_string(), "--at", &id])
        .arg(&rec.trace)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = server.stdout.take().unwrap();
    let program_output = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    // The announcement comes once it listens, with the script to source.
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut said = String::new();
    let script = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = server.kill();
            panic!("rr-lite ended before listening:\n{said}");
        }
        said.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("gdb -x '") {
            break rest.split('\'').next().unwrap().to_string();
        }
    };
    assert!(
        said.contains(&format!("waiting for a debugger on 127.0.0.1:{port}")),
        "{said}"
    );
    let rest_of_stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut gdb = std::process::Command::new("gdb");
    gdb.args(["-q", "-batch", "-x", &script])
        .args(["-ex", &format!("target remote 127.0.0.1:{port}")])
        .args(["-ex", "continue", "-ex", "bt", "-ex", "continue"])
        .arg(build("debug_target"));
    let out = output_within(&mut gdb, LIMIT);
    let status = server.wait().unwrap();
    let served = format!(
        "rr-lite said:\n{said}{}\nits stdout:\n{}",
        rest_of_stderr.join().unwrap(),
        program_output.join().unwrap_or_default()
    );
    let out = out.unwrap_or_else(|e| panic!("gdb hangs: {e}\n{served}"));
    let what = format!("{}\n{served}", describe("gdb target remote", &out));
    let gdb_says = text(&out.stdout);
    assert!(
        gdb_says.contains(&format!("about to perform its event {id}")),
        "{what}"
    );
    assert!(
        gdb_says
            .lines()
            .any(|l| l.starts_with('#') && l.contains("worker")),
        "{what}"
    );
    assert!(gdb_says.contains("exited normally"), "{what}");
    assert!(status.success(), "{what}");
    assert!(served.contains(&rec.stdout), "the recorded output\n{what}");
}
