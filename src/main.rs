//! `rr-lite`: record a multithreaded C/C++ program's run as a global order of
//! its shared accesses, split it into per-thread dependencies, replay it.
//!
//! Two layers, as in ripgrep: clap parses the raw command line (`cli`), each
//! command module validates it into what it runs. `cc`/`c++` bypass clap:
//! every argument belongs to the compiler.

#![forbid(unsafe_code)]

mod cli;
mod debug_cmd;
mod demo_cmd;
mod dump_cmd;
mod graph_cmd;
mod info_cmd;
mod output;
mod progress;
mod races_cmd;
mod record_cmd;
mod replay_cmd;
mod split_cmd;
mod timeline_cmd;
mod traces_cmd;
mod until_failure;
mod why_cmd;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Exit status of rr-lite's own errors (bad arguments, unreadable trace...).
/// A recorded or replayed program's own status is passed through instead.
pub const ERROR_STATUS: u8 = 1;

/// The compiler wrapper a program name stands for: `rr-lite-cc` and
/// `rr-lite-c++` (links to rr-lite, for build systems that want one word).
fn wrapper_named(argv0: &std::ffi::OsStr) -> Option<rr_lite_recorder::toolchain::Language> {
    use rr_lite_recorder::toolchain::Language;
    let name = std::path::Path::new(argv0).file_name()?.to_str()?;
    match name {
        "rr-lite-cc" | "rr-lite-gcc" => Some(Language::C),
        "rr-lite-c++" | "rr-lite-g++" | "rr-lite-cxx" => Some(Language::Cxx),
        _ => None,
    }
}

fn main() -> ExitCode {
    use rr_lite_recorder::toolchain::Language;
    let args: Vec<OsString> = std::env::args_os().collect();
    let wrapper = args.first().and_then(|a| wrapper_named(a));
    let result = match (wrapper, args.get(1).and_then(|a| a.to_str())) {
        (Some(lang), _) => record_cmd::compiler(lang, &args[1..]),
        (None, Some("cc")) => record_cmd::compiler(Language::C, &args[2..]),
        (None, Some("c++")) => record_cmd::compiler(Language::Cxx, &args[2..]),
        _ => cli::Cli::parse_from(args).run(),
    };
    match result {
        Ok(status) => ExitCode::from(status.clamp(0, 255) as u8),
        Err(err) => {
            // `{:#}` prints the error then each of its causes, once, joined
            // by ": " ("cannot read X: No such file or directory"): the
            // error types keep their source out of their own message.
            eprintln!("rr-lite: error: {err:#}");
            ExitCode::from(ERROR_STATUS)
        }
    }
}
