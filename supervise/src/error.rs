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
    /// Waiting for the started program failed.
    #[error("cannot wait for {}", path.display())]
    Wait {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
