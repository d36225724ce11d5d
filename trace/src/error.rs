//! Errors of reading and writing trace directories, and the format errors of
//! every rr-lite file (the splitter's replay logs wrap these too). Every
//! variant names the file, and where it applies the byte offset, so a user
//! can tell what is wrong with which file.
//!
//! A variant that wraps another error says what failed and on which file,
//! and leaves why to its `source()`: the message does not repeat the source,
//! so a caller printing the chain shows each cause once.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// `action` is a verb phrase: "read", "create", "rename"...
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `expected` says what the file should have been: "thread log"...
    #[error("{}: not an rr-lite {expected} (bad magic number)", path.display())]
    BadMagic {
        path: PathBuf,
        expected: &'static str,
    },
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
    /// A file of the trace that cannot be what the format says it is
    /// (a device, a link to one, too large).
    #[error("{}: {what}", path.display())]
    BadFile { path: PathBuf, what: String },
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
    /// Wraps an I/O error with what was being done (a verb phrase: "read",
    /// "create", "rename"...) and the file it concerns.
    pub fn io(
        action: &'static str,
        path: impl AsRef<std::path::Path>,
    ) -> impl FnOnce(std::io::Error) -> TraceError {
        // The path is copied only on an error: `map_err(io(..))` is built
        // before the call, on every call (a plan's per-point writes made a
        // path each, 5 % of a split).
        move |source| TraceError::Io {
            action,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = TraceError> = std::result::Result<T, E>;
