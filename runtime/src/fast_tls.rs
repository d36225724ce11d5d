//! A fast way to find the calling thread's state from a hook.
//!
//! The runtime is a shared library, so Rust's `thread_local!` costs a
//! `__tls_get_addr` call per access (general-dynamic model; stable Rust
//! cannot choose initial-exec). Profiles of replay put about half of a
//! hook's cost there. This module defines 8-byte thread-local words in
//! assembly (`define_tls_word!`, `tls_word!`; `crate::own_stack` has one
//! too) with the initial-exec model (`@GOTTPOFF`: the word's offset from
//! the thread pointer, read from the GOT, then one `fs:`-relative load).
//! Registration stores a pointer to the thread's `ThreadState` in it; every
//! new thread's slot starts zeroed (`.tbss`), so a thread the runtime has not
//! registered reads null and is treated as untracked.

use crate::thread::ThreadState;

/// Defines `$sym`, one 8-byte word of static TLS (`.tbss`: zero in every
/// new thread), read and written with [`tls_word!`].
macro_rules! define_tls_word {
    ($sym:literal) => {
        core::arch::global_asm!(
            ".pushsection .tbss,\"awT\",@nobits",
            ".p2align 3",
            concat!(".globl ", $sym),
            concat!(".hidden ", $sym),
            concat!(".type ", $sym, ", @tls_object"),
            concat!(".size ", $sym, ", 8"),
            concat!($sym, ":"),
            ".zero 8",
            ".popsection",
        );
    };
}
pub(crate) use define_tls_word;

/// Reads (`tls_word!(read "sym")`) or writes (`tls_word!(write "sym", v)`)
/// the calling thread's TLS word `sym`: its offset from the thread pointer
/// from the GOT (initial-exec), then one `fs:`-relative access.
macro_rules! tls_word {
    (read $sym:literal) => {{
        let value: usize;
        // SAFETY: reads the calling thread's own word (static TLS, defined
        // with `define_tls_word!`) through the thread pointer.
        unsafe {
            core::arch::asm!(
                concat!("mov {off}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                "mov {value}, qword ptr fs:[{off}]",
                off = out(reg) _,
                value = lateout(reg) value,
                options(nostack, readonly, preserves_flags),
            );
        }
        value
    }};
    (write $sym:literal, $value:expr) => {{
        let value: usize = $value;
        // SAFETY: writes the calling thread's own word through the thread
        // pointer.
        unsafe {
            core::arch::asm!(
                concat!("mov {off}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                "mov qword ptr fs:[{off}], {value}",
                off = out(reg) _,
                value = in(reg) value,
                options(nostack, preserves_flags),
            );
        }
    }};
}
pub(crate) use tls_word;

define_tls_word!("rr_lite_thread_slot");

/// The calling thread's registered state, or null.
#[inline(always)]
pub(crate) fn current() -> *const ThreadState {
    tls_word!(read "rr_lite_thread_slot") as *const ThreadState
}

/// The calling thread's registered state, if it has one.
#[inline(always)]
pub(crate) fn registered() -> Option<&'static ThreadState> {
    // SAFETY: the slot holds null or this thread's own ThreadState (set at
    // registration), which lives as long as the thread and is only used by
    // it.
    unsafe { current().as_ref() }
}

/// Stores the calling thread's state (at registration).
pub(crate) fn set_current(state: *const ThreadState) {
    tls_word!(write "rr_lite_thread_slot", state as usize);
}
