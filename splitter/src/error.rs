//! Errors of splitting a trace and of reading replay logs back. Every variant
//! that concerns a file names it (and the byte offset where it applies), so a
//! user, or the replayer's report, can tell what is wrong with which file.

use std::path::PathBuf;

use rr_lite_trace::TraceError;

use crate::pairs::EventRef;

#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// The trace could not be read (missing thread log, truncated or corrupt
    /// file, newer format version...), or a replay log is not well-formed:
    /// the format errors of every rr-lite file are [`TraceError`]'s.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// `action` is a verb phrase: "read", "create", "rename"...
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no split output: run `rr-lite split` on this trace first", path.display())]
    NotSplit { path: PathBuf },
    #[error("{}: replay log missing (the split lists {threads} threads)", path.display())]
    MissingReplayLog { path: PathBuf, threads: u32 },
    #[error("granule must be a power of two between 1 and {max} bytes, not {granule}")]
    BadGranule { granule: u64, max: u64 },
    /// The events fed to the analysis are not in an order consistent with
    /// program order (a bug in the caller, or a trace that changed while it
    /// was being split).
    #[error("event {event} arrives out of program order (expected index {expected} of thread {})", event.thread)]
    OutOfOrder { event: EventRef, expected: u64 },
    #[error(
        "event {event} covers {bytes} bytes at {addr:#x}, more than the splitter tracks in one entry ({max_granules} granules)"
    )]
    RangeTooLarge {
        event: EventRef,
        addr: u64,
        bytes: u64,
        max_granules: u64,
    },
    /// A thread id or event index beyond what the analysis packs (a trace
    /// of 65535 threads or more, or of 2^47 events in one thread).
    #[error(
        "event {event} is beyond what the splitter handles (thread ids below {max_threads}, event indices below {max_index})"
    )]
    EventOutOfRange {
        event: EventRef,
        max_threads: u32,
        max_index: u64,
    },
    /// The plans would hold more points than memory allows: plans are
    /// built in memory (some [`crate::recorded::BYTES_PER_POINT`] bytes a
    /// point), and a trace of a program that calls `pthread_mutex_trylock`
    /// or the like hundreds of millions of times (a spin barrier) has as
    /// many points. Reported when the limit is reached, not after the
    /// machine runs out of memory.
    #[error(
        "{}: its replay plans would hold more than {limit} points ({most_share}% of them \
         {most_kind} events), and plans are built in memory, some {mib} MiB at that count: the \
         limit is what this machine's free memory allows, or RR_LITE_MAX_PLAN_POINTS. A shorter \
         recording has fewer points",
        trace.display()
    )]
    TooManyPlanPoints {
        trace: PathBuf,
        limit: u64,
        most_kind: &'static str,
        most_share: u64,
        mib: u64,
    },
    /// A thread's log ended before an event the analysis needs (the trace
    /// changed between the analysis and the writing of the replay logs).
    #[error("thread {thread}: log ends before event {index}, which the analysis saw")]
    ThreadLogChanged { thread: u32, index: u64 },
}

impl SplitError {
    /// The error, naming `trace` if it concerns a whole trace and does not
    /// name it yet.
    pub fn with_trace(self, trace: &std::path::Path) -> SplitError {
        match self {
            SplitError::TooManyPlanPoints {
                limit,
                most_kind,
                most_share,
                mib,
                ..
            } => SplitError::TooManyPlanPoints {
                trace: trace.to_path_buf(),
                limit,
                most_kind,
                most_share,
                mib,
            },
            other => other,
        }
    }

    /// Wraps an I/O error with what was being done (a verb phrase: "read",
    /// "create", "rename"...) and the file it concerns.
    pub fn io(
        action: &'static str,
        path: impl AsRef<std::path::Path>,
    ) -> impl FnOnce(std::io::Error) -> SplitError {
        // The path is copied only on an error: `map_err(io(..))` is built
        // before the call, on every call (a plan's per-point writes made a
        // path each, 5 % of a split).
        move |source| SplitError::Io {
            action,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = SplitError> = std::result::Result<T, E>;
