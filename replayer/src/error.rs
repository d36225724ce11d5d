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
    #[error(
        "{}: not the recorded program (recorded {recorded}, now {actual}): it was rebuilt or \
         replaced since the recording, and rr-lite runs only the program it recorded",
        program.display()
    )]
    ProgramChanged {
        program: PathBuf,
        recorded: String,
        actual: String,
    },
    #[error(
        "{}: recorded data replay would give the program, changed or damaged since the \
         recording (its checksum in header.json does not match)",
        path.display()
    )]
    DataDamaged { path: PathBuf },
    #[error(
        "{}: the recorded program is not there any more (and the trace has no packed copy \
         of it: `rr-lite pack` keeps one)",
        program.display()
    )]
    ProgramMissing {
        program: PathBuf,
        #[source]
        source: Box<rr_lite_trace::TraceError>,
    },
    #[error(
        "{}: not the library the packed trace recorded (recorded {recorded}, now {actual}): \
         replay needs the libraries the recording loaded, at the same paths",
        library.display()
    )]
    LibraryChanged {
        library: PathBuf,
        recorded: String,
        actual: String,
    },
    #[error(
        "{}: recorded at a path too short to reach the trace's new place with a path of the \
         same length (at least {shortest} bytes): move the trace back, or record again",
        recorded.display()
    )]
    PathTooShort { recorded: PathBuf, shortest: usize },
    #[error(
        "{}: the recorded environment has no {missing}, which every recording sets: the \
         header is damaged or was edited, and the program would run without the runtime",
        path.display()
    )]
    EnvironmentDamaged {
        path: PathBuf,
        missing: &'static str,
    },
    #[error(
        "{}: the rr-lite runtime did not attach to the program, which ran unreplayed and \
         {ending}: the trace's environment or the program's runtime library is not the \
         recorded one",
        program.display()
    )]
    NotAttached { program: PathBuf, ending: String },
    #[error(
        "{}: this trace belongs to another user (uid {owner}); replaying it runs:\n  {command}\n\
         pass --accept-foreign if you trust it",
        path.display()
    )]
    ForeignTrace {
        path: PathBuf,
        owner: u32,
        command: String,
    },
}

impl ReplayError {
    /// Wraps an I/O error with what was being done (a verb phrase: "read",
    /// "create", "rename"...) and the file it concerns.
    pub fn io(
        action: &'static str,
        path: impl AsRef<std::path::Path>,
    ) -> impl FnOnce(std::io::Error) -> ReplayError {
        // The path is copied only on an error: `map_err(io(..))` is built
        // before the call, on every call (a plan's per-point writes made a
        // path each, 5 % of a split).
        move |source| ReplayError::Io {
            action,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}
