//! A fast way to find the calling thread's state from a hook.
//!
//! The runtime is a shared library, so Rust's `thread_local!` costs a
//! `__tls_get_addr` call per access (general-dynamic model; stable Rust
//! cannot choose initial-exec). Profiles of replay put about half of a
//! hook's cost there. This module defines one 8-byte thread-local slot in
//! assembly with the initial-exec model (`@GOTTPOFF`: the slot's offset from
//! the thread pointer, read from the GOT, then one `fs:`-relative load).
//! Registration stores a pointer to the thread's `ThreadState` in it; every
//! new thread's slot starts zeroed (`.tbss`), so a thread the runtime has not
//! registered reads null and is treated as untracked.

use crate::thread::ThreadState;

core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl rr_lite_thread_slot",
    ".hidden rr_lite_thread_slot",
    ".type rr_lite_thread_slot, @tls_object",
    ".size rr_lite_thread_slot, 8",
    "rr_lite_thread_slot:",
    ".zero 8",
    ".popsection",
);

/// The calling thread's registered state, or null.
#[inline(always)]
pub(crate) fn current() -> *const ThreadState {
    let state: *const ThreadState;
    // SAFETY: reads this thread's own slot (defined above, 8 bytes in the
    // static TLS block) through the thread pointer; no memory is written.
    unsafe {
        core::arch::asm!(
            "mov {off}, qword ptr [rip + rr_lite_thread_slot@GOTTPOFF]",
            "mov {state}, qword ptr fs:[{off}]",
            off = out(reg) _,
            state = lateout(reg) state,
            options(nostack, readonly, preserves_flags),
        );
    }
    state
}

/// Stores the calling thread's state (at registration).
pub(crate) fn set_current(state: *const ThreadState) {
    // SAFETY: writes this thread's own slot through the thread pointer.
    unsafe {
        core::arch::asm!(
            "mov {off}, qword ptr [rip + rr_lite_thread_slot@GOTTPOFF]",
            "mov qword ptr fs:[{off}], {state}",
            off = out(reg) _,
            state = in(reg) state,
            options(nostack, preserves_flags),
        );
    }
}
