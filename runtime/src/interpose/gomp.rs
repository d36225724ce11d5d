//! OpenMP as gcc compiles it: calls into libgomp (`GOMP_*`, `omp_*_lock`).
//! libgomp synchronises its threads with its own futexes inside an
//! uninstrumented library, which the recorder cannot see: a thread blocked
//! there would keep its stripes (see `crate::handover`), and replay would
//! not know the order in which libgomp handed out loop chunks, `single`
//! winners or `critical` sections. So each entry point is an event, modelled
//! like the pthread primitive it amounts to:
//!
//! - a parallel region: the starting thread writes `OMP_FORK`, each member
//!   reads it as it begins and writes `OMP_JOIN` as it ends (the region's
//!   function is wrapped), the starting thread reads `OMP_JOIN` afterwards;
//! - barriers (explicit, and ending a loop or sections): arrival and
//!   departure, as `pthread_barrier_wait`, with the real barrier called in
//!   both modes (libgomp's barrier state must advance);
//! - `critical`, `atomic`, `ordered` and `omp_*_lock`: mutex lock and unlock;
//! - worksharing (loop chunks, sections, `single`): an atomic operation on
//!   `OMP_WORKSHARE` held across the real call, so calls happen in the
//!   recorded order at replay and hand out the same work; the result is
//!   the payload, checked at replay;
//! - tasks run undeferred (in the creating thread, in creation order) in both
//!   modes: which thread runs a deferred task is libgomp's choice, and
//!   replay could not reproduce it.
//!
//! libgomp's own allocations and time reads go through the interposed
//! malloc and clock_gettime and are ordinary events.

use core::ffi::{c_int, c_uint, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Replayed, log_after_blocking_call, log_after_call};
use crate::site::with_site;

/// A region's function, as libgomp calls it in each member.
type RegionFn = extern "C" fn(*mut c_void);

/// Declares libgomp functions reached through `dlsym(RTLD_NEXT)`. Unlike
/// `crate::real`, a missing one is not fatal at start-up: programs without
/// OpenMP have no libgomp, and never call these.
macro_rules! gomp_functions {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => { paste::paste! {
        $( #[allow(non_upper_case_globals)] static [<SLOT_ $name>]: AtomicUsize = AtomicUsize::new(0); )*

        /// Looks every libgomp function up, once, before the first event
        /// that calls one (a lookup may allocate, and an allocation must not
        /// happen inside a call made with stripes held).
        fn resolve_once() {
            static DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
            if !DONE.swap(true, Ordering::AcqRel) {
                $( lookup(&[<SLOT_ $name>], concat!(stringify!($name), "\0")); )*
            }
        }

        // libgomp's signatures, some with ten arguments.
        #[allow(clippy::too_many_arguments)]
        mod real {
            use super::*;
            $(
                /// libgomp's function of this name.
                ///
                /// # Safety
                /// libgomp's contract for it.
                pub(super) unsafe fn $name($($arg: $ty),*) -> $ret {
                    let addr = required(&[<SLOT_ $name>], concat!(stringify!($name), "\0"));
                    // SAFETY: dlsym found libgomp's symbol of this name,
                    // whose type is the one declared here (from libgomp.h).
                    let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { core::mem::transmute(addr) };
                    // SAFETY: forwarded contract.
                    unsafe { f($($arg),*) }
                }
            )*
        }
    }};
}

/// The symbol's address, or 0 if no library after the runtime defines it.
fn lookup(slot: &AtomicUsize, name: &'static str) -> usize {
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
/// definition of it (libgomp loaded later, by dlopen, is looked up now).
fn required(slot: &AtomicUsize, name: &'static str) -> usize {
    match lookup(slot, name) {
        0 => crate::real::resolve(slot, name),
        addr => addr,
    }
}

gomp_functions! {
    fn GOMP_parallel(f: RegionFn, data: *mut c_void, threads: c_uint, flags: c_uint) -> ();
    fn GOMP_parallel_sections(f: RegionFn, data: *mut c_void, threads: c_uint, count: c_uint, flags: c_uint) -> ();
    fn GOMP_parallel_loop_static(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_dynamic(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_guided(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_nonmonotonic_dynamic(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_nonmonotonic_guided(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_runtime(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_nonmonotonic_runtime(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, flags: c_uint) -> ();
    fn GOMP_parallel_loop_maybe_nonmonotonic_runtime(f: RegionFn, data: *mut c_void, threads: c_uint, start: i64, end: i64, incr: i64, flags: c_uint) -> ();
    fn GOMP_barrier() -> ();
    fn GOMP_loop_end() -> ();
    fn GOMP_sections_end() -> ();
    fn GOMP_critical_start() -> ();
    fn GOMP_critical_end() -> ();
    fn GOMP_critical_name_start(name: *mut *mut c_void) -> ();
    fn GOMP_critical_name_end(name: *mut *mut c_void) -> ();
    fn GOMP_atomic_start() -> ();
    fn GOMP_atomic_end() -> ();
    fn GOMP_ordered_start() -> ();
    fn GOMP_ordered_end() -> ();
    fn GOMP_single_start() -> bool;
    fn GOMP_loop_end_nowait() -> ();
    fn GOMP_sections_start(count: c_uint) -> c_uint;
    fn GOMP_sections_next() -> c_uint;
    fn GOMP_sections_end_nowait() -> ();
    fn GOMP_loop_static_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_guided_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_guided_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_runtime_start(start: i64, end: i64, incr: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_runtime_start(start: i64, end: i64, incr: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_maybe_nonmonotonic_runtime_start(start: i64, end: i64, incr: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_start(start: i64, end: i64, incr: i64, sched: i64, chunk: i64, first: *mut i64, last: *mut i64, reductions: *mut usize, mem: *mut *mut c_void) -> bool;
    fn GOMP_loop_static_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_dynamic_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_guided_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_dynamic_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_guided_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_maybe_nonmonotonic_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_task(f: RegionFn, data: *mut c_void, copy: *const c_void, size: i64, align: i64, if_clause: bool, flags: c_uint, depend: *mut *mut c_void, priority: c_int, detach: *mut c_void) -> ();
    fn omp_set_lock(lock: *mut c_void) -> ();
    fn omp_unset_lock(lock: *mut c_void) -> ();
    fn omp_test_lock(lock: *mut c_void) -> c_int;
    fn omp_set_nest_lock(lock: *mut c_void) -> ();
    fn omp_unset_nest_lock(lock: *mut c_void) -> ();
    fn omp_test_nest_lock(lock: *mut c_void) -> c_int;
}

/// What each member of a region runs: the region's function between its
/// start (reads `OMP_FORK`) and end (writes `OMP_JOIN`) events.
#[repr(C)]
struct Region {
    f: RegionFn,
    data: *mut c_void,
}

extern "C" fn run_member(region: *mut c_void) {
    // SAFETY: `region` points to the `Region` on the stack of the thread
    // that started the region, which waits in libgomp until every member
    // has returned from here.
    let region = unsafe { &*region.cast::<Region>() };
    let site = region.f as usize as u64;
    // libgomp released this member from its dock, a barrier of every pool
    // thread that the runtime does not see.
    events::after_hidden_sync_with_all();
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_FORK, 0, site, 0);
    (region.f)(region.data);
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_JOIN, 0, site, 0);
}

/// Runs a parallel region (`start` calls libgomp with the wrapped function
/// and its argument) between the fork and join events.
fn parallel(f: RegionFn, data: *mut c_void, site: u64, start: impl FnOnce(RegionFn, *mut c_void)) {
    resolve_once();
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_FORK, 0, site, 0);
    let region = Region { f, data };
    events::before_blocking();
    start(run_member, (&region as *const Region).cast_mut().cast());
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_JOIN, 0, site, 0);
}

unsafe extern "C" fn parallel_impl(
    f: RegionFn,
    data: *mut c_void,
    threads: c_uint,
    flags: c_uint,
    site: u64,
) {
    // SAFETY: forwarding, with the member wrapper in place of `f`.
    parallel(f, data, site, |f, d| unsafe {
        real::GOMP_parallel(f, d, threads, flags)
    });
}
with_site!(GOMP_parallel => parallel_impl, "r8");

unsafe extern "C" fn parallel_sections_impl(
    f: RegionFn,
    data: *mut c_void,
    threads: c_uint,
    count: c_uint,
    flags: c_uint,
    site: u64,
) {
    // SAFETY: forwarding, with the member wrapper in place of `f`.
    parallel(f, data, site, |f, d| unsafe {
        real::GOMP_parallel_sections(f, d, threads, count, flags)
    });
}
with_site!(GOMP_parallel_sections => parallel_sections_impl, "r9");

/// Combined `parallel for`: seven or eight arguments leave no register for
/// the call site.
macro_rules! parallel_loops {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(f: RegionFn, data: *mut c_void, threads: c_uint, $($arg: $t),*) {
            // SAFETY: forwarding, with the member wrapper in place of `f`.
            parallel(f, data, 0, |f, d| unsafe { real::$name(f, d, threads, $($arg),*) });
        }
    )*};
}

parallel_loops! {
    GOMP_parallel_loop_static(start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_dynamic(start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_guided(start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_nonmonotonic_dynamic(start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_nonmonotonic_guided(start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_runtime(start: i64, end: i64, incr: i64, flags: c_uint);
    GOMP_parallel_loop_nonmonotonic_runtime(start: i64, end: i64, incr: i64, flags: c_uint);
    GOMP_parallel_loop_maybe_nonmonotonic_runtime(start: i64, end: i64, incr: i64, flags: c_uint);
}

/// A barrier: arrival, the real barrier (in both modes: libgomp's barrier
/// state must advance), departure after every recorded arrival. Replay waits
/// for the departure's predecessors after the real barrier, not before: a
/// departure may have been logged after another thread's next events.
fn barrier(site: u64, wait: impl FnOnce()) {
    resolve_once();
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_BARRIER, 0, site, 0);
    events::blocking_call(wait);
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_BARRIER, 0, site, 0);
}

macro_rules! barriers {
    ($($name:ident => $imp:ident;)*) => {$(
        unsafe extern "C" fn $imp(site: u64) {
            // SAFETY: forwarding.
            barrier(site, || unsafe { real::$name() });
        }
        with_site!($name => $imp, "rdi");
    )*};
}

barriers! {
    GOMP_barrier => barrier_impl;
    GOMP_loop_end => loop_end_impl;
    GOMP_sections_end => sections_end_impl;
}

/// Taking a lock-like object: blocks, so the stripes are released first;
/// replay takes it in the recorded order.
fn lock(addr: u64, site: u64, take: impl FnOnce()) {
    resolve_once();
    log_after_blocking_call(
        EventKind::MutexLock,
        addr,
        site,
        take,
        |_| Some(0),
        |_| Replayed::CallReal,
    );
}

fn unlock(addr: u64, site: u64, give: impl FnOnce()) {
    log_after_call(EventKind::MutexUnlock, addr, 0, site, give, |_| 0);
}

macro_rules! lock_pairs {
    ($($take:ident => $take_imp:ident, $give:ident => $give_imp:ident, $addr:expr;)*) => {$(
        unsafe extern "C" fn $take_imp(site: u64) {
            // SAFETY: forwarding.
            lock($addr, site, || unsafe { real::$take() });
        }
        with_site!($take => $take_imp, "rdi");
        unsafe extern "C" fn $give_imp(site: u64) {
            // SAFETY: forwarding.
            unlock($addr, site, || unsafe { real::$give() });
        }
        with_site!($give => $give_imp, "rdi");
    )*};
}

lock_pairs! {
    GOMP_critical_start => critical_start_impl, GOMP_critical_end => critical_end_impl, pseudo::OMP_CRITICAL;
    GOMP_atomic_start => atomic_start_impl, GOMP_atomic_end => atomic_end_impl, pseudo::OMP_ATOMIC;
    GOMP_ordered_start => ordered_start_impl, GOMP_ordered_end => ordered_end_impl, pseudo::OMP_ORDERED;
}

unsafe extern "C" fn critical_name_start_impl(name: *mut *mut c_void, site: u64) {
    // SAFETY: forwarding; `name` is the program's lock variable, whose
    // address identifies the named critical section.
    lock(name as u64, site, || unsafe {
        real::GOMP_critical_name_start(name)
    });
}
with_site!(GOMP_critical_name_start => critical_name_start_impl, "rsi");

unsafe extern "C" fn critical_name_end_impl(name: *mut *mut c_void, site: u64) {
    // SAFETY: forwarding.
    unlock(name as u64, site, || unsafe {
        real::GOMP_critical_name_end(name)
    });
}
with_site!(GOMP_critical_name_end => critical_name_end_impl, "rsi");

/// A worksharing call: atomic on `OMP_WORKSHARE`, held across the real
/// call so that replay makes the calls in the recorded order; `result`
/// makes the payload that replay checks.
fn workshare<R>(site: u64, op: impl FnOnce() -> R, result: impl FnOnce(&R) -> u64) -> R {
    log_after_call(EventKind::Rmw, pseudo::OMP_WORKSHARE, 0, site, op, result)
}

/// The payload of a call that hands out a chunk: whether it did, and which.
fn chunk_result(more: bool, first: *const i64, last: *const i64) -> u64 {
    if !more || first.is_null() || last.is_null() {
        return u64::from(more);
    }
    // SAFETY: libgomp wrote both bounds when it handed out a chunk.
    let (first, last) = unsafe { (*first as u64, *last as u64) };
    first.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ last ^ 1
}

unsafe extern "C" fn single_start_impl(site: u64) -> bool {
    // SAFETY: forwarding.
    workshare(
        site,
        || unsafe { real::GOMP_single_start() },
        |&won| u64::from(won),
    )
}
with_site!(GOMP_single_start => single_start_impl, "rdi");

unsafe extern "C" fn loop_end_nowait_impl(site: u64) {
    // SAFETY: forwarding.
    workshare(site, || unsafe { real::GOMP_loop_end_nowait() }, |_| 0);
}
with_site!(GOMP_loop_end_nowait => loop_end_nowait_impl, "rdi");

unsafe extern "C" fn sections_end_nowait_impl(site: u64) {
    // SAFETY: forwarding.
    workshare(site, || unsafe { real::GOMP_sections_end_nowait() }, |_| 0);
}
with_site!(GOMP_sections_end_nowait => sections_end_nowait_impl, "rdi");

unsafe extern "C" fn sections_start_impl(count: c_uint, site: u64) -> c_uint {
    // SAFETY: forwarding.
    workshare(
        site,
        || unsafe { real::GOMP_sections_start(count) },
        |&s| u64::from(s),
    )
}
with_site!(GOMP_sections_start => sections_start_impl, "rsi");

unsafe extern "C" fn sections_next_impl(site: u64) -> c_uint {
    // SAFETY: forwarding.
    workshare(
        site,
        || unsafe { real::GOMP_sections_next() },
        |&s| u64::from(s),
    )
}
with_site!(GOMP_sections_next => sections_next_impl, "rdi");

/// `GOMP_loop_*_next(first, last)`: the next chunk.
macro_rules! loop_next {
    ($($name:ident => $imp:ident;)*) => {$(
        unsafe extern "C" fn $imp(first: *mut i64, last: *mut i64, site: u64) -> bool {
            // SAFETY: forwarding.
            workshare(site, || unsafe { real::$name(first, last) }, |&more| chunk_result(more, first, last))
        }
        with_site!($name => $imp, "rdx");
    )*};
}

loop_next! {
    GOMP_loop_static_next => loop_static_next_impl;
    GOMP_loop_dynamic_next => loop_dynamic_next_impl;
    GOMP_loop_guided_next => loop_guided_next_impl;
    GOMP_loop_nonmonotonic_dynamic_next => loop_nonmonotonic_dynamic_next_impl;
    GOMP_loop_nonmonotonic_guided_next => loop_nonmonotonic_guided_next_impl;
    GOMP_loop_runtime_next => loop_runtime_next_impl;
    GOMP_loop_nonmonotonic_runtime_next => loop_nonmonotonic_runtime_next_impl;
    GOMP_loop_maybe_nonmonotonic_runtime_next => loop_maybe_nonmonotonic_runtime_next_impl;
}

/// `GOMP_loop_*_start(start, end, incr, [chunk,] first, last)`: the loop's
/// work share and the first chunk (six arguments: no register left for the
/// call site).
macro_rules! loop_start {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $t,)* first: *mut i64, last: *mut i64) -> bool {
            // SAFETY: forwarding.
            workshare(0, || unsafe { real::$name($($arg,)* first, last) }, |&more| chunk_result(more, first, last))
        }
    )*};
}

loop_start! {
    GOMP_loop_static_start(start: i64, end: i64, incr: i64, chunk: i64);
    GOMP_loop_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64);
    GOMP_loop_guided_start(start: i64, end: i64, incr: i64, chunk: i64);
    GOMP_loop_nonmonotonic_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64);
    GOMP_loop_nonmonotonic_guided_start(start: i64, end: i64, incr: i64, chunk: i64);
    GOMP_loop_runtime_start(start: i64, end: i64, incr: i64);
    GOMP_loop_nonmonotonic_runtime_start(start: i64, end: i64, incr: i64);
    GOMP_loop_maybe_nonmonotonic_runtime_start(start: i64, end: i64, incr: i64);
}

/// The generic loop start (loops with reductions or a schedule chosen at
/// run time).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_loop_start(
    start: i64,
    end: i64,
    incr: i64,
    sched: i64,
    chunk: i64,
    first: *mut i64,
    last: *mut i64,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    let op = || {
        // SAFETY: forwarding.
        unsafe {
            real::GOMP_loop_start(start, end, incr, sched, chunk, first, last, reductions, mem)
        }
    };
    workshare(0, op, |&more| chunk_result(more, first, last))
}

/// Tasks run undeferred: the creating thread runs each one at once, in both
/// modes (see the module doc). The task's events are the creator's.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_task(
    f: RegionFn,
    data: *mut c_void,
    copy: *const c_void,
    size: i64,
    align: i64,
    _if_clause: bool,
    flags: c_uint,
    depend: *mut *mut c_void,
    priority: c_int,
    detach: *mut c_void,
) {
    // SAFETY: forwarding, with the if clause false (undeferred).
    unsafe {
        real::GOMP_task(
            f, data, copy, size, align, false, flags, depend, priority, detach,
        )
    }
}

/// `omp_set_lock`/`omp_unset_lock` and the nestable forms: mutex events on
/// the lock's address.
macro_rules! omp_locks {
    ($($set:ident => $set_imp:ident, $unset:ident => $unset_imp:ident;)*) => {$(
        unsafe extern "C" fn $set_imp(l: *mut c_void, site: u64) {
            // SAFETY: forwarding.
            lock(l as u64, site, || unsafe { real::$set(l) });
        }
        with_site!($set => $set_imp, "rsi");
        unsafe extern "C" fn $unset_imp(l: *mut c_void, site: u64) {
            // SAFETY: forwarding.
            unlock(l as u64, site, || unsafe { real::$unset(l) });
        }
        with_site!($unset => $unset_imp, "rsi");
    )*};
}

omp_locks! {
    omp_set_lock => set_lock_impl, omp_unset_lock => unset_lock_impl;
    omp_set_nest_lock => set_nest_lock_impl, omp_unset_nest_lock => unset_nest_lock_impl;
}

/// `omp_test_lock` and `omp_test_nest_lock` return non-zero when they took
/// the lock. Logged as a trylock (payload 0 = acquired, as for pthread);
/// replay returns a recorded failure without calling.
fn test_lock(l: *mut c_void, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    resolve_once();
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

unsafe extern "C" fn test_lock_impl(l: *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding.
    test_lock(l, site, || unsafe { real::omp_test_lock(l) })
}
with_site!(omp_test_lock => test_lock_impl, "rsi");

unsafe extern "C" fn test_nest_lock_impl(l: *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding.
    test_lock(l, site, || unsafe { real::omp_test_nest_lock(l) })
}
with_site!(omp_test_nest_lock => test_nest_lock_impl, "rsi");
