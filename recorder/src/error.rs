//! Errors of building and recording. Each names the file or program concerned.
//! A variant wrapping another error says what failed; why is its `source()`,
//! which the message does not repeat (the CLI prints the chain).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// `action` is a verb phrase: "read", "create", "rename"...
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{program}: not found (not a path to a file, and not on PATH)")]
    ProgramNotFound { program: String },
    #[error("{}: not built with rr-lite: {why}; rebuild it with `rr-lite cc` (or `CC=\"rr-lite cc\" make`)", path.display())]
    NotInstrumented { path: PathBuf, why: String },
    #[error(
        "{}: the runtime cache belongs to uid {owner} with mode {mode:o}: programs load \
         rr-lite's runtime from there, so it must be yours and writable by nobody else \
         (remove it, or set RR_LITE_RUNTIME_DIR)",
        path.display()
    )]
    UnsafeRuntimeDir {
        path: PathBuf,
        owner: u32,
        mode: u32,
    },
    #[error("{}: trace directory already exists and is not empty", path.display())]
    TraceDirExists { path: PathBuf },
    /// Starting or waiting for the recorded program.
    #[error(transparent)]
    Launch(#[from] rr_lite_supervise::SuperviseError),
    #[error("{}: the program ran but the rr-lite runtime wrote no log (was it started through a wrapper script that drops the environment?)", path.display())]
    NothingRecorded { path: PathBuf },
    #[error(transparent)]
    Trace(#[from] rr_lite_trace::TraceError),
    /// The program ran and ended, but the trace could not be finished (a
    /// full disk): it stays `incomplete`; the program's ending is kept.
    #[error("{}: the program ended (status {}), but the trace could not be finished and stays incomplete", dir.display(), ending.shell_status())]
    Unfinished {
        dir: PathBuf,
        ending: rr_lite_trace::ProgramEnding,
        #[source]
        source: Box<RecordError>,
    },
    #[error("cannot run the compiler {compiler}")]
    Compiler {
        compiler: String,
        #[source]
        source: std::io::Error,
    },
}

impl RecordError {
    /// Wraps an I/O error with what was being done (a verb phrase: "read",
    /// "create", "rename"...) and the file it concerns.
    pub fn io(
        action: &'static str,
        path: impl AsRef<std::path::Path>,
    ) -> impl FnOnce(std::io::Error) -> RecordError {
        // The path is copied only on an error: `map_err(io(..))` is built
        // before the call, on every call (a plan's per-point writes made a
        // path each, 5 % of a split).
        move |source| RecordError::Io {
            action,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}
