//! Errors of building and recording. Each names the file or program concerned.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{program}: not found (not a path to a file, and not on PATH)")]
    ProgramNotFound { program: String },
    #[error("{}: not built with rr-lite: {why}; rebuild it with `rr-lite cc` (or `CC=\"rr-lite cc\" make`)", path.display())]
    NotInstrumented { path: PathBuf, why: String },
    #[error("{}: trace directory already exists and is not empty", path.display())]
    TraceDirExists { path: PathBuf },
    #[error("cannot start {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the program ran but the rr-lite runtime wrote no log (was it started through a wrapper script that drops the environment?)", path.display())]
    NothingRecorded { path: PathBuf },
    #[error(transparent)]
    Trace(#[from] rr_lite_trace::TraceError),
    #[error("cannot run the compiler {compiler}: {source}")]
    Compiler {
        compiler: String,
        #[source]
        source: std::io::Error,
    },
}

impl RecordError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> RecordError {
        let path = path.into();
        move |source| RecordError::Io { path, source }
    }
}
