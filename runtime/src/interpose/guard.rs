//! One-time initialisation: C++ function-local statics, `pthread_once`
//! and C11's `call_once`.
//!
//! C++ function-local statics: `static T x = f();` in a function is built
//! by the first thread to get there, under a guard word. A compiler may
//! check the guard's first byte inline first (an atomic load: a hook sees
//! it; g++ with `-fsanitize=thread` does not, and calls the acquire at
//! every pass) and calls `__cxa_guard_acquire` when it is clear; libstdc++'s acquire
//! returns 1 to the thread that is to build the object (others wait inside
//! until it is built, and get 0), and `__cxa_guard_release` sets the byte
//! and wakes them. Neither is instrumented, so the byte's write was no
//! event: replay could let another thread's acquire, or its inline check,
//! come before the builder's release, and that thread then built the
//! object too or waited in the kernel (every replay of four threads
//! reaching one static at once deadlocked or diverged, 11 of 12
//! recordings).
//!
//! Each call is an event on the guard: acquire a one-byte read of it
//! (`built`), then, if the object is not built, a trylock (`claim_event`:
//! made before the event at record, outside the stripes, since
//! it may wait for the builder; ordered at replay, when it no longer waits),
//! release and abort an unlock, held across the real call so that a waiter
//! woken by it, or a thread checking the byte inline, comes after it.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize, Ordering};

use rr_lite_trace::EventKind;

use super::pthread::log_releasing;
use crate::events;
use crate::mode::{self, Mode};
use crate::real;
use crate::site::with_site;

extern "C" fn guard_acquire_impl(guard: *mut c_void, site: u64) -> c_int {
    // SAFETY: the program's guard, at least 8 bytes, whose first byte is
    // set once the object is built (the Itanium C++ ABI); read atomically
    // as a compiler's inline check reads it.
    let byte = unsafe { AtomicU8::from_ptr(guard.cast()) };
    if built(guard as u64, site, || byte.load(Ordering::Acquire) != 0) {
        // (libstdc++'s acquire returns 0 at once then.)
        return 0;
    }
    // SAFETY: forwarding the program's guard to libstdc++.
    claim_event(guard as u64, site, || unsafe {
        real::__cxa_guard_acquire(guard)
    })
}
with_site!(__cxa_guard_acquire => guard_acquire_impl, "rsi");

extern "C" fn guard_release_impl(guard: *mut c_void, site: u64) {
    // SAFETY: forwarding.
    released(guard as u64, site, || unsafe {
        real::__cxa_guard_release(guard)
    });
}
with_site!(__cxa_guard_release => guard_release_impl, "rsi");

extern "C" fn guard_abort_impl(guard: *mut c_void, site: u64) {
    // SAFETY: forwarding.
    released(guard as u64, site, || unsafe {
        real::__cxa_guard_abort(guard)
    });
}
with_site!(__cxa_guard_abort => guard_abort_impl, "rsi");

/// A release (a guard's release or abort, a once control's), `op`, as an
/// unlock of `addr`: held across the call, so that a waiter it wakes, or a
/// thread that reads the object built, comes after it.
fn released(addr: u64, site: u64, op: impl FnOnce()) {
    log_releasing(EventKind::MutexUnlock, addr, 0, site, op);
}

/// Whether the object of the guard or once control at `addr` is built,
/// `check` read as a one-byte read event of it: ordered after the release
/// that built it, or before it (so replay reads what record read), and
/// reads do not wait for each other at replay. g++ with
/// `-fsanitize=thread` calls the acquire at every pass over a static's
/// declaration, not only the first: as a claim each pass waited for the
/// other threads' passes.
fn built(addr: u64, site: u64, check: impl FnOnce() -> bool) -> bool {
    events::log_after_call(EventKind::Read, addr, 1, site, check, |_| 0)
}

/// A claim (a guard's acquire, a once control's) of an object not yet
/// built when checked, as an event on `addr` with its result, `op`'s: made
/// before its event at record, between events, where it may wait for
/// another thread's build; at its ordered place at replay, where it no
/// longer waits.
///
/// The event is a trylock's, with a trylock's result: 0 when the caller got
/// the claim (it builds, and its release is the unlock), `EBUSY` when the
/// object was built meanwhile; so every reader of a trace (the trace
/// checks, `races`' locks held) sees a lock taken and given back.
fn claim_event(addr: u64, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    let kind = EventKind::MutexTryLock;
    let payload = |&claimed: &c_int| if claimed == 1 { 0 } else { libc::EBUSY as u64 };
    if mode::current() == Mode::Record {
        let got = events::hidden_blocking_call(op);
        return events::log_after_call(kind, addr, 0, site, || got, payload);
    }
    events::log_after_call(kind, addr, 0, site, op, payload)
}

// `pthread_once` and C11's `call_once` have the same shape with the build
// inside the call, where the runtime cannot put an event between glibc's
// check and its routine. So the runtime makes the call itself, on the
// control word's glibc values (0 not run, [`ONCE_RUNNING`], [`ONCE_DONE`]):
// a claim (an event as a guard's acquire: 1 if this thread is to run the
// routine, 0 if it has run), the routine outside any event, and the
// release (an event as a guard's release). A routine that does not return
// (it exits the thread) leaves the control running, as glibc's would
// without its cancellation clean-up.

/// glibc's `__PTHREAD_ONCE_INPROGRESS` and `__PTHREAD_ONCE_DONE`.
const ONCE_RUNNING: u32 = 1;
const ONCE_DONE: u32 = 2;

/// The control word of `pthread_once` (an `int`) or `call_once` (a
/// struct of one `int`).
fn control<'a>(once: *mut c_int) -> &'a AtomicU32 {
    // SAFETY: the program's control object, an aligned int that lives as
    // long as the program uses it; glibc uses it atomically too.
    unsafe { AtomicU32::from_ptr(once.cast()) }
}

/// Claims `once`: 1 if the caller is to run the routine (the word is then
/// [`ONCE_RUNNING`]), 0 if it has run; waits while another thread runs it.
fn claim(once: &AtomicU32) -> c_int {
    loop {
        match once.compare_exchange(0, ONCE_RUNNING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => return 1,
            Err(state) if state & ONCE_DONE != 0 => return 0,
            Err(state) => crate::sys::futex_wait(once, state, 0),
        }
    }
}

/// Runs `routine` once for `once` (see above); returns 0 as glibc does.
fn run_once(once: *mut c_int, routine: OnceRoutine, site: u64) -> c_int {
    let word = control(once);
    let addr = once as u64;
    if built(addr, site, || word.load(Ordering::Acquire) & ONCE_DONE != 0) {
        return 0;
    }
    let run = claim_event(addr, site, || claim(word));
    if run == 1 {
        routine();
        released(addr, site, || {
            word.store(ONCE_DONE, Ordering::Release);
            crate::sys::futex_wake_all(word);
        });
    }
    0
}

/// A once routine.
type OnceRoutine = extern "C" fn();

static REAL_PTHREAD_ONCE: AtomicUsize = AtomicUsize::new(0);
static REAL_CALL_ONCE: AtomicUsize = AtomicUsize::new(0);

/// The entry of a once function `$name`: while the runtime is inert (the
/// instrumented program run without rr-lite), a jump to the C library's
/// (found first if need be, the arguments kept), so that nothing of the
/// runtime stands between the program and its routine (an exception out
/// of the routine passes, as without rr-lite); else `$imp` with the site.
macro_rules! once_entry {
    ($name:ident => $imp:path, $slot:ident, $find:ident, $real:literal) => {
        extern "C" fn $find() -> usize {
            real::resolve(&$slot, concat!($real, "\0"))
        }

        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "cmp byte ptr [rip + {mode}], 0",
                "je 2f",
                "mov rdx, [rsp]",
                "jmp {imp}",
                "2:",
                crate::site::jump_to_real!(),
                mode = sym mode::MODE,
                imp = sym $imp,
                slot = sym $slot,
                find = sym $find,
            )
        }
    };
}

/// Recording or replaying: [`run_once`]. (An exception out of the routine
/// ends the program here: the runtime's frames do not unwind.)
extern "C" fn pthread_once_impl(once: *mut c_int, routine: OnceRoutine, site: u64) -> c_int {
    run_once(once, routine, site)
}
once_entry!(pthread_once => pthread_once_impl, REAL_PTHREAD_ONCE, find_real_pthread_once, "pthread_once");

extern "C" fn call_once_impl(flag: *mut c_int, routine: OnceRoutine, site: u64) {
    run_once(flag, routine, site);
}
once_entry!(call_once => call_once_impl, REAL_CALL_ONCE, find_real_call_once, "call_once");
