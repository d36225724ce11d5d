//! `sigaction` and the `signal` family for SIGSEGV, while the runtime's own
//! SIGSEGV handler is installed (record and replay): they read and write
//! the program's action kept aside by the runtime (`crate::segv_action`,
//! which says why), never the kernel's.

use core::ffi::c_int;

use crate::own_stack::switching_entry;
use crate::real;
use crate::segv_action::{keep, owned, program_action};

/// Keeps `action` as the program's SIGSEGV action; the runtime's handler
/// goes on the alternate stack too if the program's asks for it.
fn keep_action(action: &libc::sigaction) {
    keep(action);
    if action.sa_flags & libc::SA_ONSTACK != 0 {
        crate::init::reinstall_segv_handler(libc::SA_ONSTACK);
    }
}

extern "C" fn sigaction_impl(
    signal: c_int,
    action: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if !owned(signal) {
        // SAFETY: forwarding the program's call.
        return unsafe { real::sigaction(signal, action, old) };
    }
    if !old.is_null() {
        // SAFETY: the program passed a writable sigaction.
        unsafe { old.write(program_action()) };
    }
    if !action.is_null() {
        // SAFETY: the program passed a readable sigaction.
        keep_action(unsafe { &*action });
    }
    0
}
switching_entry!(sigaction => sigaction_impl);
switching_entry!(__sigaction => sigaction_impl);

/// `signal`'s BSD semantics (glibc's): the handler stays, interrupted
/// calls restart, the signal is blocked while it runs (not kept: see
/// `crate::segv_action`).
extern "C" fn signal_impl(signal: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    if !owned(signal) {
        // SAFETY: forwarding the program's call.
        return unsafe { real::signal(signal, handler) };
    }
    keep_handler(handler, libc::SA_RESTART)
}
switching_entry!(signal => signal_impl);
switching_entry!(bsd_signal => signal_impl);

/// `sysv_signal` (what `signal` is with some feature macros: zstd's): the
/// handler runs once, then the default action is back.
extern "C" fn sysv_signal_impl(signal: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    if !owned(signal) {
        // SAFETY: forwarding the program's call.
        return unsafe { real::__sysv_signal(signal, handler) };
    }
    keep_handler(handler, libc::SA_RESETHAND | libc::SA_NODEFER)
}
switching_entry!(__sysv_signal => sysv_signal_impl);
switching_entry!(sysv_signal => sysv_signal_impl);

/// Keeps `handler` with `flags` and an empty mask as the program's SIGSEGV
/// action; returns the handler it replaces.
fn keep_handler(handler: libc::sighandler_t, flags: c_int) -> libc::sighandler_t {
    let old = program_action().sa_sigaction;
    // SAFETY: a zeroed sigaction is a valid value (empty mask).
    let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_flags = flags;
    keep_action(&action);
    old
}
