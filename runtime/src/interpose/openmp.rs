//! What OpenMP runtimes have in common, as the runtime models them (see
//! `gomp` for gcc's libgomp and `kmp` for clang's libomp): the runtime's
//! own synchronisation happens inside an uninstrumented library, so each
//! entry point that synchronises is an event, modelled like the pthread
//! primitive it amounts to:
//!
//! - a parallel region: the starting thread writes `OMP_FORK`, each member
//!   reads it as it begins and writes `OMP_JOIN` as it ends (the region's
//!   function is wrapped), the starting thread reads `OMP_JOIN` afterwards;
//! - barriers: arrival and departure, as `pthread_barrier_wait`, with the
//!   real barrier called in both modes (the runtime's barrier state must
//!   advance);
//! - `critical`, `ordered`, reductions' locks and `omp_*_lock`: mutex lock
//!   and unlock;
//! - worksharing (loop chunks, sections, `single`, cancellation): atomic
//!   operations on `OMP_WORKSHARE` before and after the real call, the
//!   stripe held across, so calls happen in the recorded order at replay
//!   and hand out the same work; the result is the closing event's
//!   payload, checked at replay;
//! - tasks run undeferred (in the creating thread, in creation order) in both
//!   modes: which thread runs a deferred task is the runtime's choice, and
//!   replay could not reproduce it.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Replayed, log_after_blocking_call, log_after_call};

/// Declares an OpenMP runtime's functions reached through
/// `dlsym(RTLD_NEXT)`, with a `resolve_once` that looks them all up and a
/// `real` module of forwarding functions. Unlike `crate::real`, a missing
/// one is not fatal at start-up: programs without OpenMP have no OpenMP
/// runtime, and never call these.
macro_rules! omp_functions {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => { paste::paste! {
        $( #[allow(non_upper_case_globals)] static [<SLOT_ $name>]: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0); )*

        /// Looks every function up, once, before the first event
        /// that calls one (a lookup may allocate, and an allocation must not
        /// happen inside a call made with stripes held).
        fn resolve_once() {
            static DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
            if !DONE.swap(true, core::sync::atomic::Ordering::AcqRel) {
                $( $crate::interpose::openmp::lookup(&[<SLOT_ $name>], concat!(stringify!($name), "\0")); )*
            }
        }

        // The runtimes' signatures, some with ten arguments.
        #[allow(clippy::too_many_arguments)]
        mod real {
            use super::*;
            $(
                /// The OpenMP runtime's function of this name.
                ///
                /// # Safety
                /// The OpenMP runtime's contract for it.
                pub(super) unsafe fn $name($($arg: $ty),*) -> $ret {
                    let addr = $crate::interpose::openmp::required(&[<SLOT_ $name>], concat!(stringify!($name), "\0"));
                    // SAFETY: dlsym found the runtime's symbol of this name,
                    // whose type is the one declared here (from its headers).
                    let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { core::mem::transmute(addr) };
                    // SAFETY: forwarded contract.
                    unsafe { f($($arg),*) }
                }
            )*
        }
    }};
}
pub(crate) use omp_functions;

/// Entry points passed on to the OpenMP runtime's function of the same
/// name (its `real::` one) with some arguments changed, after `before`
/// if given (e.g. `taskloop` with its `if` clause false).
macro_rules! forward_changed {
    (before $before:expr; $($rest:tt)*) => {
        $crate::interpose::openmp::forward_changed!(@with { $before; } $($rest)*);
    };
    (@with $before:block $(
        $(#[$doc:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) { $($changed:ident = $value:expr;)+ }
    )*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments, unused_variables)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            $before
            $(let $changed = $value;)+
            // SAFETY: forwarded contract, with the arguments changed as the
            // runtime allows for them.
            unsafe { real::$name($($arg),*) }
        }
    )*};
    ($($rest:tt)*) => {
        $crate::interpose::openmp::forward_changed!(@with {} $($rest)*);
    };
}
pub(crate) use forward_changed;

/// The symbol's address, or 0 if no library after the runtime defines it.
pub(crate) fn lookup(slot: &AtomicUsize, name: &'static str) -> usize {
    let cached = slot.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: `name` is a NUL-terminated literal; RTLD_NEXT is a valid handle.
    let addr = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    slot.store(addr, Ordering::Relaxed);
    addr
}

/// The symbol's address; it must exist, since the program called our
/// definition of it (a runtime loaded later, by dlopen, is looked up now).
pub(crate) fn required(slot: &AtomicUsize, name: &'static str) -> usize {
    match lookup(slot, name) {
        0 => crate::real::resolve(slot, name),
        addr => addr,
    }
}

/// A member's part of a parallel region: `body` runs the region's function
/// between the member's start (reads `OMP_FORK`) and end (writes
/// `OMP_JOIN`) events. `site` is the region's function.
pub(crate) fn member(site: u64, body: impl FnOnce()) {
    // The OpenMP runtime released this member from its dock, a barrier of
    // every pool thread that the runtime does not see.
    events::after_hidden_sync_with_all();
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_FORK, 0, site, 0);
    body();
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_JOIN, 0, site, 0);
    // The member goes back to the runtime's dock, where it sleeps until the
    // next region: record gives its stripes back, sequential replay passes
    // the turn on (else the next turn's owner waits until the sleeping
    // member's turn is taken for done, milliseconds per region).
    events::before_hidden_wait();
}

/// Runs a parallel region (`start` calls the OpenMP runtime with the
/// wrapped function) between the fork and join events.
pub(crate) fn parallel<R>(site: u64, start: impl FnOnce() -> R) -> R {
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_FORK, 0, site, 0);
    events::before_blocking();
    let result = start();
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_JOIN, 0, site, 0);
    result
}

/// A barrier: arrival, the real barrier (in both modes: the runtime's
/// barrier state must advance), departure after every recorded arrival.
/// Replay waits for the departure's predecessors after the real barrier,
/// not before: a departure may have been logged after another thread's next
/// events.
pub(crate) fn barrier<R>(site: u64, wait: impl FnOnce() -> R) -> R {
    barrier_after(site, || {}, wait)
}

/// [`barrier`] with `arrived` (events of the thread's own) between the
/// arrival and the real wait.
pub(crate) fn barrier_after<R>(site: u64, arrived: impl FnOnce(), wait: impl FnOnce() -> R) -> R {
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_BARRIER, 0, site, 0);
    arrived();
    let result = events::blocking_call(wait);
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_BARRIER, 0, site, 0);
    result
}

/// Taking a lock-like object: blocks, so the stripes are released first;
/// replay takes it in the recorded order.
pub(crate) fn lock<R>(addr: u64, site: u64, take: impl FnOnce() -> R) -> R {
    log_after_blocking_call(
        EventKind::MutexLock,
        addr,
        site,
        take,
        |_| Some(0),
        |_| Replayed::CallReal,
    )
}

pub(crate) fn unlock(addr: u64, site: u64, give: impl FnOnce()) {
    log_after_call(EventKind::MutexUnlock, addr, 0, site, give, |_| 0);
}

/// A worksharing call: atomic operations on `OMP_WORKSHARE` before and
/// after it, the stripe held across, so that replay makes the calls in the
/// recorded order; `result` makes the closing event's payload, which
/// replay checks. The call's own allocations and frees (libgomp allocates
/// work shares and frees the one before last in the thread that ends a
/// construct last) nest between the two in both modes.
pub(crate) fn workshare<R>(site: u64, op: impl FnOnce() -> R, result: impl FnOnce(&R) -> u64) -> R {
    events::log_around_call_checked(EventKind::Rmw, pseudo::OMP_WORKSHARE, site, op, result)
}

/// A call made in the recorded order among the calls on `addr`: atomic
/// operations on it before and after the call, with its stripe held across,
/// so that the call's own events (libomp allocates in most of its entry
/// points) come between them in both modes, and the next call on `addr`
/// waits for this one to return (`events::log_around_call`).
pub(crate) fn in_order_on<R>(addr: u64, site: u64, op: impl FnOnce() -> R) -> R {
    events::log_around_call(EventKind::Rmw, addr, 0, site, true, op)
}

/// The payload of a call that hands out a chunk: whether it did, and which
/// (its bounds, when it did).
pub(crate) fn chunk_result(more: bool, bounds: impl FnOnce() -> Option<(u64, u64)>) -> u64 {
    match more.then(bounds).flatten() {
        Some((first, last)) => first.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ last ^ 1,
        None => u64::from(more),
    }
}

/// `omp_test_lock` and `omp_test_nest_lock` return non-zero when they took
/// the lock. Logged as a trylock (payload 0 = acquired, as for pthread);
/// replay returns a recorded failure without calling.
pub(crate) fn test_lock(l: *mut c_void, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    events::log_after_call_or_recorded(
        EventKind::MutexTryLock,
        l as u64,
        0,
        site,
        op,
        |&taken| if taken != 0 { 0 } else { libc::EBUSY as u64 },
        |recorded| {
            if recorded == 0 {
                Replayed::CallReal
            } else {
                Replayed::Return(0)
            }
        },
    )
}
