//! Helpers shared by the commands that read traces: opening one with a
//! useful error, describing events, writing to a pipe that may close.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rr_lite_symbols::{ModuleMap, Symbolizer};
use rr_lite_trace::{ProgramEnding, TraceDir, pseudo, resolve_trace};

/// Opens the trace named on the command line, or the latest one.
pub fn open_trace(arg: Option<&Path>) -> anyhow::Result<TraceDir> {
    let path: PathBuf = resolve_trace(arg)?;
    let trace = TraceDir::open(&path)?;
    match trace.header() {
        Some(h) if !h.ok => eprintln!(
            "rr-lite: warning: {}: the recording is incomplete ({}); showing what was written",
            path.display(),
            h.problems.join("; ")
        ),
        _ if !trace.is_complete() => eprintln!(
            "rr-lite: warning: {}: the recording did not finish cleanly (rr-lite record was killed?); showing what was written",
            path.display()
        ),
        _ => {}
    }
    Ok(trace)
}

/// Warns when `program` loads another rr-lite build's runtime (its rpath
/// names another `runtime-<hash>` directory), with `advice`.
pub fn warn_if_other_builds_runtime(program: &Path, advice: &str) {
    if let Some(dir) = rr_lite_recorder::other_builds_runtime(program) {
        eprintln!(
            "rr-lite: warning: {} was built by another rr-lite build (it loads the runtime in \
             {dir}): {advice}",
            program.display()
        );
    }
}

/// A symboliser for the trace's call sites.
pub fn symbolizer(trace: &TraceDir) -> anyhow::Result<Symbolizer> {
    let map = ModuleMap::read(&trace.maps_path())?;
    let mut symbols = Symbolizer::new(map);
    if let Some(manifest) = rr_lite_trace::pack::Manifest::read(trace.path())? {
        for (recorded, copy) in manifest.copies(trace.path()) {
            symbols.read_module_from(recorded.to_path_buf(), copy);
        }
    }
    Ok(symbols)
}

pub fn describe_ending(ending: ProgramEnding) -> String {
    match ending {
        ProgramEnding::Exited { code } => format!("exited with status {code}"),
        ProgramEnding::Signaled { signal } => {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| format!("signal {signal}"));
            format!("killed by {name}")
        }
    }
}

/// The variable `addr` is in, from the symbol table: `counter` or
/// `counter+8`.
pub fn variable_at(symbols: &mut Symbolizer, addr: u64) -> Option<String> {
    symbols.variable(addr).map(|(name, offset)| match offset {
        0 => name,
        n => format!("{name}+{n}"),
    })
}

/// An address for people: pseudo-addresses by name, others in hex.
pub fn describe_addr(addr: u64) -> String {
    pseudo::describe(addr).unwrap_or_else(|| format!("{addr:#x}"))
}

/// Writes a line; a closed pipe (`| head`) ends the output quietly.
pub fn write_line(out: &mut impl Write, line: &str) -> anyhow::Result<bool> {
    match writeln!(out, "{line}") {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e).context("cannot write to standard output"),
    }
}

/// `println!` for a command's output: a closed pipe (`rr-lite split --json |
/// head`) ends rr-lite quietly, with status 0, where `println!` panics;
/// any other failure to write is an error message and status 1.
macro_rules! outln {
    () => {
        $crate::output::print_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// `print!` as [`outln!`] does `println!`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print_out(format_args!($($arg)*))
    };
}
pub(crate) use out;

/// Writes `text` to standard output (see [`outln!`]).
pub fn print_out(text: std::fmt::Arguments) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("rr-lite: error: cannot write to standard output: {e}");
        std::process::exit(i32::from(crate::ERROR_STATUS));
    }
}
