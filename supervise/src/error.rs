//! Errors of starting and waiting for a supervised program; each names the
//! program (or says which set-up step failed).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    /// The handlers that keep Ctrl-C for the program and forward SIGTERM
    /// and SIGHUP could not be installed.
    #[error("cannot install the signal handlers")]
    SignalHandlers {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The program is started in a working directory that does not exist
    /// (a replay runs it where it was recorded); the kernel says only "no
    /// such file", which named the program as if it were missing.
    #[error(
        "cannot start {} in {}: that working directory does not exist (the program runs in \
         the directory it was recorded in; create it again)",
        path.display(),
        dir.display()
    )]
    MissingDirectory { path: PathBuf, dir: PathBuf },
    /// Waiting for the started program failed.
    #[error("cannot wait for {}", path.display())]
    Wait {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
