//! `sigaction` and `signal` for SIGSEGV, while the runtime's own SIGSEGV
//! handler is installed (record and replay): it carries the trapped
//! counter reads (`crate::tsc`), the vDSO's `clock_gettime` among them, so
//! it must stay installed whatever the program asks. A program that
//! installs its own handler (a crash reporter: zstd's command line, most
//! servers) had it replace the runtime's, and then died of the first
//! counter read, in the vDSO's `clock_gettime` on machines whose clock
//! source is the TSC.
//!
//! So the program's action for SIGSEGV is kept here instead of in the
//! kernel: `sigaction` and `signal` read and write it, and the runtime's
//! handler passes on every fault that is not a counter read to it
//! ([`run_program_handler`]), honouring `SA_SIGINFO`, `SA_RESETHAND` and
//! the action's mask. Differences from the kernel's delivery, on purpose:
//! SIGSEGV itself is never blocked while the program's handler runs (a
//! counter read inside it would kill the process), and the handler runs on
//! the runtime's choice of stack (`SA_ONSTACK` asked by the program also
//! puts the runtime's handler on the alternate stack).

use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

use crate::own_stack::switching_entry;
use crate::real;

/// Set once the runtime's SIGSEGV handler is installed (record, replay).
static OWNED: AtomicBool = AtomicBool::new(false);
/// The program's SIGSEGV action: handler (`SIG_DFL` = 0 at start), flags,
/// and mask, word by word.
static HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static FLAGS: AtomicI32 = AtomicI32::new(0);
const MASK_WORDS: usize = core::mem::size_of::<libc::sigset_t>() / 8;
static MASK: [AtomicU64; MASK_WORDS] = [const { AtomicU64::new(0) }; MASK_WORDS];

/// The runtime's handler for SIGSEGV is installed: the program's actions
/// for it are kept here from now on.
pub(crate) fn own_segv() {
    OWNED.store(true, Ordering::Release);
}

/// Whether the program's SIGSEGV action is kept here.
fn owned(signal: c_int) -> bool {
    signal == libc::SIGSEGV && OWNED.load(Ordering::Acquire)
}

/// The program's SIGSEGV action as kept.
fn program_action() -> libc::sigaction {
    // SAFETY: a zeroed sigaction is a valid value (empty mask, SIG_DFL).
    let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
    action.sa_sigaction = HANDLER.load(Ordering::Acquire);
    action.sa_flags = FLAGS.load(Ordering::Relaxed);
    // SAFETY: sigset_t is plain words; MASK_WORDS of them fit in it.
    let words = unsafe {
        core::slice::from_raw_parts_mut(
            (&mut action.sa_mask as *mut libc::sigset_t).cast::<u64>(),
            MASK_WORDS,
        )
    };
    for (word, kept) in words.iter_mut().zip(&MASK) {
        *word = kept.load(Ordering::Relaxed);
    }
    action
}

/// Keeps `action` as the program's SIGSEGV action.
fn keep(action: &libc::sigaction) {
    // SAFETY: sigset_t is plain words; MASK_WORDS of them fit in it.
    let words = unsafe {
        core::slice::from_raw_parts(
            (&action.sa_mask as *const libc::sigset_t).cast::<u64>(),
            MASK_WORDS,
        )
    };
    for (kept, word) in MASK.iter().zip(words) {
        kept.store(*word, Ordering::Relaxed);
    }
    FLAGS.store(action.sa_flags, Ordering::Relaxed);
    HANDLER.store(action.sa_sigaction, Ordering::Release);
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
        keep(unsafe { &*action });
    }
    0
}
switching_entry!(sigaction => sigaction_impl);
switching_entry!(__sigaction => sigaction_impl);

/// `signal`'s BSD semantics (glibc's): the handler stays, interrupted
/// calls restart, the signal is blocked while it runs (not kept: see the
/// module doc).
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
    let old = HANDLER.load(Ordering::Acquire);
    // SAFETY: a zeroed sigaction is a valid value (empty mask).
    let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_flags = flags;
    keep(&action);
    old
}

/// In the runtime's SIGSEGV handler, for a fault that is not a counter
/// read: runs the program's handler if it has one, as the kernel would
/// have (its mask added to the blocked set meanwhile, `SA_RESETHAND`
/// honoured), and returns true; false if the program's action is the
/// default or to ignore it (the runtime then lets the fault kill the
/// process as before).
pub(crate) fn run_program_handler(
    signal: c_int,
    info: *mut libc::siginfo_t,
    context: *mut core::ffi::c_void,
) -> bool {
    let action = program_action();
    if action.sa_sigaction == libc::SIG_DFL || action.sa_sigaction == libc::SIG_IGN {
        return false;
    }
    if action.sa_flags & libc::SA_RESETHAND != 0 {
        HANDLER.store(libc::SIG_DFL, Ordering::Release);
    }
    let mut mask = action.sa_mask;
    // SAFETY: a zeroed sigset_t is a valid (empty) set.
    let mut previous: libc::sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: valid sigsets; SIGSEGV stays deliverable (the module doc).
    unsafe {
        libc::sigdelset(&mut mask, libc::SIGSEGV);
        libc::pthread_sigmask(libc::SIG_BLOCK, &mask, &mut previous);
    }
    if action.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the program installed a three-argument handler.
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut core::ffi::c_void) =
            unsafe { core::mem::transmute(action.sa_sigaction) };
        handler(signal, info, context);
    } else {
        // SAFETY: the program installed a one-argument handler.
        let handler: extern "C" fn(c_int) = unsafe { core::mem::transmute(action.sa_sigaction) };
        handler(signal);
    }
    // SAFETY: restoring the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &previous, core::ptr::null_mut()) };
    true
}
