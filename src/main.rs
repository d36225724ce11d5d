//! `rr-lite`: record a multithreaded C/C++ program's run as a global order of
//! its shared accesses, split it into per-thread dependencies, replay it.
//!
//! Two layers, as in ripgrep: clap parses the raw command line (`cli`), each
//! command module validates it into what it runs. `cc`/`c++` bypass clap:
//! every argument belongs to the compiler.

mod cli;
mod demo_cmd;
mod dump_cmd;
mod graph_cmd;
mod info_cmd;
mod output;
mod record_cmd;
mod replay_cmd;
mod split_cmd;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Exit status of rr-lite's own errors (bad arguments, unreadable trace...).
/// A recorded or replayed program's own status is passed through instead.
pub const ERROR_STATUS: u8 = 1;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let result = match args.get(1).and_then(|a| a.to_str()) {
        Some("cc") => record_cmd::compiler(rr_lite_recorder::toolchain::Language::C, &args[2..]),
        Some("c++") => record_cmd::compiler(rr_lite_recorder::toolchain::Language::Cxx, &args[2..]),
        _ => cli::Cli::parse_from(args).run(),
    };
    match result {
        Ok(status) => ExitCode::from(status.clamp(0, 255) as u8),
        Err(err) => {
            eprintln!("rr-lite: error: {err:#}");
            ExitCode::from(ERROR_STATUS)
        }
    }
}
