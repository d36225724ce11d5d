//! Record: notes in the trace something it cannot hold (the `problems`
//! file, one line per note); the recorder then marks the trace incomplete,
//! and replay refuses it. The recorder reserves the file's blocks before
//! the program starts, so a note still fits on a disk the logs filled.

use core::sync::atomic::AtomicBool;

use crate::mode::{self, Mode};

/// Set by the first thread whose log could not grow: the warning and the
/// note are made once per recording.
pub(crate) static LOG_FAILED: AtomicBool = AtomicBool::new(false);

/// Appends one line, `parts` joined, to the trace's `problems` file.
pub(crate) fn note(parts: &[&[u8]]) {
    if mode::current() != Mode::Record {
        return;
    }
    crate::descriptors::locked(|| {
        crate::sys::append_line_in_dir(
            mode::TRACE_DIR.get(),
            rr_lite_trace::dir::PROBLEMS_FILE.as_bytes(),
            parts,
        )
    });
}
