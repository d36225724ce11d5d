//! The program's SIGSEGV action, kept by the runtime while its own SIGSEGV
//! handler is installed (record and replay): that handler carries the
//! trapped counter reads (`crate::tsc`), the vDSO's `clock_gettime` among
//! them, so it must stay installed whatever the program asks. A program
//! that installed its own handler (a crash reporter: zstd's command line,
//! most servers) had it replace the runtime's, and then died of the first
//! counter read, in the vDSO's `clock_gettime` on machines whose clock
//! source is the TSC.
//!
//! So the program's action is kept here instead of in the kernel: the
//! interposed `sigaction` and `signal` family (`crate::interpose::signals`)
//! read and write it, and the runtime's handler passes every fault that is
//! not a counter read on to it ([`run_program_handler`]), honouring
//! `SA_SIGINFO`, `SA_RESETHAND` and the action's mask. Differences from the
//! kernel's delivery, on purpose: SIGSEGV itself is never blocked while the
//! program's handler runs (a counter read inside it would kill the
//! process), and the handler runs on the stack the runtime's runs on
//! (`SA_ONSTACK` asked by the program puts the runtime's handler on the
//! alternate stack too).

use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

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
pub(crate) fn owned(signal: c_int) -> bool {
    signal == libc::SIGSEGV && OWNED.load(Ordering::Acquire)
}

/// The program's SIGSEGV action as kept.
pub(crate) fn program_action() -> libc::sigaction {
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
pub(crate) fn keep(action: &libc::sigaction) {
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
