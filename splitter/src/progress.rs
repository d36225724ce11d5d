//! How a split reports its progress, without knowing who listens: the CLI
//! draws a terminal bar from these calls, library users and tests pass
//! [`NoProgress`]. The analysis crate stays free of terminal code.

use std::fmt;

/// Receives the progress of [`analyze_trace`](crate::analyze_trace) and
/// [`split_trace`](crate::split_trace). Every method has a do-nothing
/// default. The receiver's display, if any, is its own to end once the call
/// returns (whether it succeeded or not).
pub trait Progress {
    /// Reading the global order begins: `total` entries, or `None` when the
    /// trace does not say (a recording that did not finish has no header).
    fn start(&self, total: Option<u64>) {
        let _ = total;
    }

    /// `done` entries of the global order have been read so far. Called
    /// about every [`PROGRESS_STEP`] entries and once at the end of the
    /// reading.
    fn entries_read(&self, done: u64) {
        let _ = done;
    }

    /// The reading is over; the split moved on to `stage`.
    fn stage(&self, stage: Stage) {
        let _ = stage;
    }
}

/// Entries between two [`Progress::entries_read`] calls: rare enough to cost
/// nothing next to the analysis of the entries.
pub const PROGRESS_STEP: u64 = 1 << 16;

/// The stages of a split after the reading of the global order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading the trace again at a finer granule (false sharing).
    FinerGranule,
    /// Placing the sync points of the kept pairs (reads the thread logs
    /// that have some).
    PlacingSyncPoints,
    /// Writing the replay logs.
    Writing,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::FinerGranule => "again at 4-byte granules (false sharing at 8)",
            Stage::PlacingSyncPoints => "placing sync points",
            Stage::Writing => "writing",
        })
    }
}

/// Progress nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
