//! The commands rr users reach for: traces named by the name `record`
//! printed, `ls`, `rm`, the replay command `record` ends with, and the
//! one-word compiler wrappers.

mod common;

use common::{build, describe, status_code, tempdir, text};
use serde_json::Value;

/// `rr-lite ARGS...` with its traces in `base`.
fn rr_in(base: &std::path::Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    common::rr_command()
        .env("RR_LITE_TRACE_DIR", base)
        .args(args)
        .output()
        .expect("run rr-lite")
}

#[test]
fn traces_are_named_listed_and_removed() {
    let exe = build("racy_counter");
    let tmp = tempdir();
    let base = tmp.path().join("traces");
    let rec = rr_in(
        &base,
        &[
            "record".as_ref(),
            exe.as_os_str(),
            "2".as_ref(),
            "50".as_ref(),
        ],
    );
    assert_eq!(status_code(&rec), 0, "{}", describe("record", &rec));
    let err = text(&rec.stderr);
    let hint = err
        .lines()
        .find_map(|l| l.strip_prefix("rr-lite: to replay it: rr-lite replay "))
        .unwrap_or_else(|| panic!("no replay command in\n{err}"));
    assert_eq!(hint, "racy_counter-0", "{err}");

    // The bare name works from any directory.
    let replay = common::rr_command()
        .env("RR_LITE_TRACE_DIR", &base)
        .current_dir("/")
        .args(["replay", hint])
        .output()
        .unwrap();
    assert_eq!(
        status_code(&replay),
        0,
        "{}",
        describe("replay by name", &replay)
    );
    assert_eq!(text(&replay.stdout), text(&rec.stdout));

    let ls = rr_in(&base, &["ls".as_ref(), "--json".as_ref()]);
    assert_eq!(status_code(&ls), 0, "{}", describe("ls", &ls));
    let listed: Value = serde_json::from_slice(&ls.stdout).unwrap();
    let first = &listed[0];
    assert_eq!(first["name"], "racy_counter-0", "{listed}");
    assert_eq!(first["latest"], true, "{listed}");
    assert_eq!(first["complete"], true, "{listed}");
    assert_eq!(first["threads"], 3, "{listed}");
    assert!(first["events"].as_u64().unwrap() > 100, "{listed}");
    let table = rr_in(&base, &["ls".as_ref()]);
    assert!(
        text(&table.stdout).contains("*racy_counter-0"),
        "{}",
        describe("ls", &table)
    );

    let rm = rr_in(&base, &["rm".as_ref(), hint.as_ref()]);
    assert_eq!(status_code(&rm), 0, "{}", describe("rm", &rm));
    assert!(!base.join(hint).exists());
    assert!(!base.join("latest-trace").exists());
    let again = rr_in(&base, &["rm".as_ref(), tmp.path().as_os_str()]);
    assert_ne!(status_code(&again), 0, "rm must refuse what is not a trace");
    assert!(tmp.path().exists());
}

#[test]
fn one_word_wrappers_build_instrumented_programs() {
    let tmp = tempdir();
    let exe = tmp.path().join("prog");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rr-lite-cc"))
        .env("XDG_CACHE_HOME", common::cache_home())
        .args(["-O2", "-pthread"])
        .arg(common::c_dir().join("racy_counter.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe("rr-lite-cc", &out));
    let nm = std::process::Command::new("nm")
        .arg("-u")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(text(&nm.stdout).contains("__tsan_"), "not instrumented");
    let none = std::process::Command::new(env!("CARGO_BIN_EXE_rr-lite-cc"))
        .env("XDG_CACHE_HOME", common::cache_home())
        .output()
        .unwrap();
    assert!(!none.status.success());
    assert!(
        text(&none.stderr).contains("no input files"),
        "{}",
        describe("rr-lite-cc", &none)
    );
}

/// Traces are private whatever the umask (directories 0700, files 0600),
/// the runtime cache is restored when deleted and refused when others can
/// write it, and a tampered library in it is replaced.
#[test]
fn traces_and_the_runtime_cache_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempdir();
    let cache = tmp.path().join("runtime");
    let exe = tmp.path().join("prog");
    let trace = tmp.path().join("trace");
    let rr = |args: &[&std::ffi::OsStr]| {
        let mut cmd = common::rr_command();
        cmd.env("RR_LITE_RUNTIME_DIR", &cache).args(args);
        cmd.output().unwrap()
    };
    let src = common::c_dir().join("accounts.c");
    let out = rr(&[
        "cc".as_ref(),
        "-O1".as_ref(),
        "-pthread".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        exe.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", common::describe("cc", &out));
    // Record under umask 000.
    let out = std::process::Command::new("sh")
        .envs(
            common::rr_command()
                .get_envs()
                .filter_map(|(k, v)| Some((k, v?))),
        )
        .env("RR_LITE_RUNTIME_DIR", &cache)
        .arg("-c")
        .arg(r#"umask 000; exec "$0" record -o "$1" "$2""#)
        .arg(common::rr_lite())
        .arg(&trace)
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::describe("record", &out));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&trace), 0o700);
    for entry in std::fs::read_dir(&trace).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            assert_eq!(
                mode(&path) & 0o077,
                0,
                "{} is {:o}",
                path.display(),
                mode(&path)
            );
        }
    }
    let replay = || rr(&["replay".as_ref(), trace.as_os_str()]);
    std::fs::remove_dir_all(&cache).unwrap();
    let out = replay();
    assert!(
        out.status.success(),
        "{}",
        common::describe("replay without cache", &out)
    );
    let lib = cache.join("librr_lite_rt.so");
    let good = std::fs::read(&lib).unwrap();
    let mut bad = good.clone();
    bad[100] ^= 0xff;
    std::fs::write(&lib, &bad).unwrap();
    let out = replay();
    assert!(
        out.status.success(),
        "{}",
        common::describe("replay, tampered library", &out)
    );
    assert!(
        std::fs::read(&lib).unwrap() == good,
        "the tampered library was kept"
    );
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = replay();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        common::describe("replay", &out)
    );
    assert!(
        common::text(&out.stderr).contains("writable by nobody else"),
        "{}",
        common::describe("replay, world-writable cache", &out)
    );
}

/// Secret-looking environment values are not stored (same-length `*`s, so
/// replay still works), `info` names them, and `--keep-env` keeps them.
#[test]
fn secret_looking_environment_values_are_masked() {
    let exe = build("accounts");
    let tmp = tempdir();
    let secret = "s3cr3t-value-123";
    for (n, keep) in [(0, false), (1, true)] {
        let trace = tmp.path().join(format!("t{n}"));
        let mut cmd = common::rr_command();
        cmd.env("MY_API_KEY", secret).arg("record");
        if keep {
            cmd.arg("--keep-env");
        }
        let out = cmd.arg("-o").arg(&trace).arg(&exe).output().unwrap();
        assert!(out.status.success(), "{}", describe("record", &out));
        let header = std::fs::read_to_string(trace.join("header.json")).unwrap();
        assert_eq!(header.contains(secret), keep, "{header}");
        if !keep {
            assert!(header.contains(&"*".repeat(secret.len())), "{header}");
            let info = common::rr(["info".as_ref(), trace.as_os_str()]);
            assert!(
                text(&info.stdout).contains("masked env:   MY_API_KEY"),
                "{}",
                describe("info", &info)
            );
        }
        let replay = common::rr(["replay".as_ref(), trace.as_os_str()]);
        assert_eq!(status_code(&replay), 0, "{}", describe("replay", &replay));
    }
}

/// A trace replays after it moves (to a directory of another path length)
/// and, once packed, after its program is deleted: exactly, in every mode,
/// under gdb too. Unpacked, the deleted program is a clear error that
/// names `rr-lite pack`.
#[test]
fn a_packed_trace_replays_moved_with_its_program_deleted() {
    let dir = tempdir();
    let program = dir.path().join("prog");
    std::fs::copy(build("replay_racy_counter"), &program).unwrap();
    let rec = common::record(&program, &[]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let replays_exactly = |trace: &std::path::Path, what: &str| {
        for mode in ["--parallel", "--sequential", "--verify"] {
            let out = common::rr(["replay".as_ref(), mode.as_ref(), trace.as_os_str()]);
            let what = describe(&format!("replay {mode} of {what}"), &out);
            assert_eq!(status_code(&out), 0, "{what}");
            assert_eq!(text(&out.stdout), rec.stdout, "{what}");
        }
    };
    let moved = dir.path().join("a").join("much-longer-place").join("moved");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&rec.trace, &moved).unwrap();
    replays_exactly(&moved, "a moved trace");

    std::fs::rename(&program, dir.path().join("prog.away")).unwrap();
    let out = common::rr(["replay".as_ref(), moved.as_os_str()]);
    let what = describe("replay with the program gone", &out);
    assert_eq!(status_code(&out), 1, "{what}");
    assert!(text(&out.stderr).contains("rr-lite pack"), "{what}");

    std::fs::rename(dir.path().join("prog.away"), &program).unwrap();
    let out = common::rr(["pack".as_ref(), moved.as_os_str()]);
    assert_eq!(status_code(&out), 0, "{}", describe("pack", &out));
    std::fs::remove_file(&program).unwrap();
    let elsewhere = dir.path().join("t");
    std::fs::rename(&moved, &elsewhere).unwrap();
    replays_exactly(&elsewhere, "a packed trace, moved, its program deleted");
    let dump = common::rr(["dump".as_ref(), elsewhere.as_os_str()]);
    assert!(
        text(&dump.stdout).contains("bump (replay_racy_counter.c:"),
        "dump reads symbols from the packed copy\n{}",
        describe("dump", &dump)
    );
    let links = std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.path()
                .read_link()
                .is_ok_and(|t| t.starts_with(dir.path()))
        })
        .count();
    assert_eq!(links, 0, "replay left its links in /tmp");
}

/// One changed byte in header.json (an argument here) is caught by its
/// checksum before anything runs: an error naming the file, not a replay of
/// another run.
#[test]
fn a_changed_byte_in_the_header_is_caught() {
    let rec = common::record(&build("bytes_args_env"), &["abc"]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    let path = rec.trace.join("header.json");
    let header = std::fs::read_to_string(&path).unwrap();
    assert!(header.contains("\"abc\""), "{header}");
    std::fs::write(&path, header.replace("\"abc\"", "\"abd\"")).unwrap();
    for command in ["info", "dump", "replay"] {
        let out = common::rr([command.as_ref(), rec.trace.as_os_str()]);
        let what = describe(command, &out);
        assert_eq!(status_code(&out), 1, "{what}");
        let said = text(&out.stderr);
        assert!(
            said.contains("header.json") && said.contains("header.sum"),
            "{what}"
        );
        assert!(!text(&out.stdout).contains("arg:616264"), "{what}");
    }
}

/// A trace file replaced by a link to /dev/zero (endless) is refused at
/// once, with its name: no command hangs or grows without bound.
#[test]
fn files_linked_to_endless_devices_are_refused() {
    let rec = common::record(&build("accounts"), &[]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    for file in ["header.json", "version", "maps"] {
        let real = rec.trace.join(file);
        let aside = rec.trace.join(format!("{file}.aside"));
        std::fs::rename(&real, &aside).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &real).unwrap();
        for command in ["dump", "replay"] {
            let mut cmd = common::rr_command();
            cmd.arg(command).arg(&rec.trace);
            let out = common::output_within(&mut cmd, std::time::Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("{command} with {file} -> /dev/zero hangs: {e}"));
            let stderr = text(&out.stderr);
            assert_ne!(status_code(&out), 0, "{command}, {file}: {stderr}");
            assert!(stderr.contains(file), "{command}, {file}: {stderr}");
        }
        std::fs::remove_file(&real).unwrap();
        std::fs::rename(&aside, &real).unwrap();
    }
}

/// One changed byte in a thread log (a recorded value, say) is caught by
/// the checksum the recorder wrote: every command that reads the log names
/// it, instead of replaying or analysing something that never happened.
#[test]
fn a_changed_byte_in_a_thread_log_is_caught() {
    let rec = common::record(&build("accounts"), &[]);
    assert_eq!(rec.status, 0, "{}", rec.describe());
    for derived in ["split", "plans"] {
        let _ = std::fs::remove_dir_all(rec.trace.join(derived));
    }
    let log = rec.trace.join("thread-0001.log");
    let header = rec.header();
    // Inside the entries (the rest of the file is chunk padding, never read).
    let written = header["log_checksums"][1][0].as_u64().unwrap() as usize;
    let mut bytes = std::fs::read(&log).unwrap();
    let at = (64 + written) / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&log, bytes).unwrap();
    for command in ["dump", "split", "replay"] {
        let out = common::rr([command.as_ref(), rec.trace.as_os_str()]);
        let stderr = text(&out.stderr);
        assert_ne!(status_code(&out), 0, "{command}: {stderr}");
        assert!(
            stderr.contains("thread-0001.log") && stderr.contains("checksum"),
            "{command}: {stderr}"
        );
    }
}
