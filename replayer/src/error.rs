//! Errors of preparing and running a replay; each names its file.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{}: {source}", path.display())]
    Io {
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
    #[error("{}: the split logs disagree with the trace: {what}", path.display())]
    SplitMismatch { path: PathBuf, what: String },
    #[error(transparent)]
    Launch(#[from] rr_lite_recorder::RecordError),
}

impl ReplayError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ReplayError {
        let path = path.into();
        move |source| ReplayError::Io { path, source }
    }
}
