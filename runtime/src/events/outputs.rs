//! Outputs and the end of the process (record mode): every output that was
//! performed is logged and every logged output was performed, even when a
//! crash or an exit ends the process while other threads are writing.

use core::sync::atomic::Ordering::SeqCst;
use core::sync::atomic::{AtomicBool, AtomicU32};

use crate::mode::{self, Mode};
use crate::thread::ThreadState;

/// Outputs between their start and their log entry.
static OUTPUTS_IN_FLIGHT: AtomicU32 = AtomicU32::new(0);
/// Set when the process is about to end (fatal signal, exit): no output
/// starts any more.
static ENDING: AtomicBool = AtomicBool::new(false);

/// An output may start (it will be performed and logged before the process
/// ends), or the process is ending and this thread stops here.
pub(super) fn begin_output(t: &ThreadState) {
    OUTPUTS_IN_FLIGHT.fetch_add(1, SeqCst);
    if ENDING.load(SeqCst) {
        OUTPUTS_IN_FLIGHT.fetch_sub(1, SeqCst);
        super::busy(t, || t.record.release_held());
        crate::sys::wait_forever();
    }
}

pub(super) fn end_output() {
    OUTPUTS_IN_FLIGHT.fetch_sub(1, SeqCst);
}

/// How long the end of the process waits for outputs under way: long
/// enough for a descheduled thread on a loaded machine to finish its write
/// and log it, short enough that a write blocked for good (a full pipe)
/// does not hold the end back much.
const DRAIN_LIMIT_NS: u64 = 3_000_000_000;

/// Before the process ends (fatal signal, exit while threads run): outputs
/// under way finish and are logged, no new one starts. Otherwise a crash
/// could fall between a write and its log entry, and replay would write one
/// byte more or less than the recording. The bound is in time, not in
/// rounds: under load, a writer preempted between its write and its log
/// entry can need many of this thread's time slices.
pub(crate) fn drain_outputs() {
    if mode::current() != Mode::Record {
        return;
    }
    ENDING.store(true, SeqCst);
    let deadline = crate::sys::monotonic_ns() + DRAIN_LIMIT_NS;
    while OUTPUTS_IN_FLIGHT.load(SeqCst) != 0 && crate::sys::monotonic_ns() < deadline {
        // SAFETY: sched_yield has no preconditions (raw: not our wrapper).
        unsafe { libc::syscall(libc::SYS_sched_yield) };
    }
}
