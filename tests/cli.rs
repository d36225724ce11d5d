//! How the CLI reports its own errors: what failed and on which file, then
//! why, each once. Needs no compiler and no recording.

use std::process::{Command, Output};

fn rr_lite(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rr-lite"))
        .args(args)
        .output()
        .expect("cannot run the rr-lite binary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_trace_is_reported_once_with_its_reason() {
    let out = rr_lite(&["info", "/nonexistent/trace"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert_eq!(err.matches("/nonexistent/trace").count(), 1, "{err}");
    assert!(
        err.contains("error: cannot open /nonexistent/trace: No such file or directory"),
        "{err}"
    );
}

#[test]
fn an_unreadable_file_inside_a_trace_is_reported_once_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the version file should be: reading it fails.
    std::fs::create_dir(dir.path().join("version")).unwrap();
    let out = rr_lite(&["split", dir.path().to_str().unwrap()]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.matches("not a regular file").count(), 1, "{err}");
    let version = dir.path().join("version");
    assert!(
        err.contains(&format!("{}: not a regular file", version.display())),
        "{err}"
    );
}

#[test]
fn the_compiler_wrapper_explains_itself() {
    for (word, var) in [("cc", "RR_LITE_CC"), ("c++", "RR_LITE_CXX")] {
        let out = rr_lite(&[word, "--rr-help"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains(var) && help.contains("RR_LITE_RUNTIME_DIR"),
            "{help}"
        );
    }
}
