//! Shared body of the single-word compiler wrappers (`rr-lite-cc`,
//! `rr-lite-cxx`), for build systems that want one program name in CC/CXX:
//! each runs `rr-lite cc|c++ ARGS...` with the `rr-lite` installed beside
//! it (or found on PATH).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// The rr-lite binary: beside this one, else the one on PATH.
fn rr_lite() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("rr-lite")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("rr-lite"))
}

/// Replaces this process with `rr-lite <subcommand> ARGS...`.
pub fn run(subcommand: &str) -> std::process::ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let rr = rr_lite();
    let err = Command::new(&rr).arg(subcommand).args(args).exec();
    eprintln!("rr-lite-{subcommand}: cannot run {}: {err}", rr.display());
    std::process::ExitCode::from(1)
}
