//! Errors of reading and writing trace directories. Every variant names the
//! file, and where it applies the byte offset, so a user can tell what is
//! wrong with which file.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not an rr-lite thread log (bad magic number)", path.display())]
    BadMagic { path: PathBuf },
    #[error(
        "{}: written by a newer rr-lite (format version {found}, this build reads up to {supported})",
        path.display()
    )]
    NewerVersion {
        path: PathBuf,
        found: u64,
        supported: u16,
    },
    #[error("{}: truncated at byte {offset}: incomplete {what}", path.display())]
    Truncated {
        path: PathBuf,
        offset: u64,
        what: &'static str,
    },
    #[error("{}: corrupt at byte {offset}: {what}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    #[error("{}: bad trace header: {what}", path.display())]
    BadHeader { path: PathBuf, what: String },
    #[error("{}: thread log missing (the trace has {threads} threads)", path.display())]
    MissingThreadLog { path: PathBuf, threads: u32 },
    #[error("{}: not an rr-lite trace directory (no version, incomplete or thread-0000.log file)", path.display())]
    NotATrace { path: PathBuf },
    #[error("no trace given and no latest trace at {}: record one with `rr-lite record PROG`", path.display())]
    NoLatestTrace { path: PathBuf },
}

impl TraceError {
    /// Wraps an I/O error with the file it concerns.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> TraceError {
        let path = path.into();
        move |source| TraceError::Io { path, source }
    }
}

pub type Result<T, E = TraceError> = std::result::Result<T, E>;
