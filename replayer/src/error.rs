//! Errors of preparing and running a replay; each names its file. A variant
//! wrapping another error says what failed; why is its `source()`, which the
//! message does not repeat (the CLI prints the chain).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// `action` is a verb phrase: "read", "create", "rename"...
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Trace(#[from] rr_lite_trace::TraceError),
    #[error(transparent)]
    Split(#[from] rr_lite_splitter::SplitError),
    #[error("{}: the trace has no header (the recording never finished): it cannot be replayed", path.display())]
    NotReplayable { path: PathBuf },
    #[error("{}: the recording is incomplete and would not replay faithfully: {}", path.display(), problems.join("; "))]
    Incomplete {
        path: PathBuf,
        problems: Vec<String>,
    },
    #[error("{}: the split logs disagree with the trace: {what}", path.display())]
    SplitMismatch { path: PathBuf, what: String },
    #[error(transparent)]
    Launch(#[from] rr_lite_supervise::SuperviseError),
}

impl ReplayError {
    /// Wraps an I/O error with what was being done (a verb phrase: "read",
    /// "create", "rename"...) and the file it concerns.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> ReplayError {
        let path = path.into();
        move |source| ReplayError::Io {
            action,
            path,
            source,
        }
    }
}
