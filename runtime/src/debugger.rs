//! What gdb calls in a program replayed under `rr-lite replay --debug`
//! (the stop itself is `replay::debug_stop`, on the event path).

use crate::mode::Mode;

/// For gdb's `rr-lite-event`, which calls it in the selected thread: that
/// thread's logical id and the index of its next event, as
/// `id << 40 | index`; `u64::MAX` if the runtime does not follow the
/// thread in a replay.
// SAFETY: a unique exported name (the runtime's prefix), called by the gdb
// script only.
#[unsafe(no_mangle)]
pub extern "C" fn rr_lite_debug_position() -> u64 {
    if crate::mode::current() != Mode::Replay {
        return u64::MAX;
    }
    // (gdb runs the call in the thread whose state this is.)
    let Some(t) = crate::fast_tls::registered() else {
        return u64::MAX;
    };
    // Registered and not ended; perhaps inside a wrapped call (a join):
    // its counter is still right there.
    if !t.is_live() {
        return u64::MAX;
    }
    crate::replay::debug_position(&t.replay)
}
