//! `rr-lite replay --debug --at T:N`: thread T stops in the debugger when it
//! is about to perform its event N. The replayer writes T and N into the
//! state file's header; the thread's next stop on the fast path
//! (`next_point`) is then N at the latest, so the fast path stays one
//! compare; at N the thread calls [`rr_lite_debug_stop`], an exported
//! function the debugger has a breakpoint on. At a point, the stop comes
//! after the point's waits: every event N depends on has been done, so the
//! other threads, which gdb stops with it, are at a cut consistent with it.

use rr_lite_trace::state::DebugStop;

/// The event index at which thread `id` stops, or `u64::MAX`.
pub(super) fn stop_index_of(id: u32) -> u64 {
    match super::shared::header().debug_stop() {
        Some(DebugStop { thread, index }) if thread == id => index,
        _ => u64::MAX,
    }
}

/// The debugger's breakpoint: thread `thread` is about to perform its
/// event `index`. It does nothing else; `black_box` keeps the call and its
/// arguments (which the gdb script prints) from being optimised away.
// SAFETY: a unique exported name (the runtime's own prefix), which the
// gdb script `rr-lite replay --debug` writes names; nothing else defines it.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn rr_lite_debug_stop(thread: u32, index: u64) {
    core::hint::black_box((thread, index));
}

/// Bits of the position that hold the event index.
const INDEX_BITS: u32 = 40;

/// `r`'s logical id and the index of its next event, as `id << 40 |
/// index` (for gdb's `rr-lite-event`, through `crate::debugger`). The
/// index is the thread's own counter, exact wherever the thread stopped
/// (the state file's copy is refreshed at sync points only).
pub(crate) fn position(r: &super::ReplayThread) -> u64 {
    (u64::from(r.id.get()) << INDEX_BITS) | (r.index.get() & ((1 << INDEX_BITS) - 1))
}
