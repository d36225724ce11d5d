//! Choices around a chaos recording that the recorder makes: PCT needs
//! the number of events a run makes (its change points are drawn among
//! them), which only earlier runs tell.

use std::path::Path;

use rr_lite_trace::TraceHeader;
use rr_lite_trace::dir::{HEADER_FILE, default_base_dir};

/// Events assumed when no earlier run of the program is known.
pub const DEFAULT_EVENTS: u64 = 10_000;

/// Most traces looked at for an estimate (the newest by modification time).
const MOST_TRACES_READ: usize = 200;

/// The events of the newest recorded run of `program` (its canonical
/// path) among the traces in the base directory, if there is one.
pub fn estimate_events(program: &Path) -> Option<u64> {
    let base = default_base_dir();
    let mut dirs: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(&base)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
    dirs.iter()
        .take(MOST_TRACES_READ)
        .filter_map(|(_, dir)| TraceHeader::read(&dir.join(HEADER_FILE)).ok())
        .find(|h| h.program == program && h.ok)
        .map(|h| steps_of(&h))
}

/// The steps a recorded run made: PCT's own count, else its events.
pub fn steps_of(header: &TraceHeader) -> u64 {
    header
        .chaos_steps
        .unwrap_or_else(|| header.entries.iter().sum())
        .max(1)
}
