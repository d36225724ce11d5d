//! OpenMP as gcc compiles it: calls into libgomp (`GOMP_*`, `omp_*_lock`),
//! modelled as `super::openmp` describes; `atomic` (libgomp's one global
//! lock) is a mutex too. libgomp synchronises with raw futexes, and its own
//! allocations and time reads go through the interposed malloc and
//! clock_gettime and are ordinary events.

use core::ffi::{c_int, c_uint, c_void};

use rr_lite_trace::pseudo;

use super::openmp::{self, chunk_result, forward_changed, omp_functions, workshare};
use crate::site::with_site;

/// A region's function, as libgomp calls it in each member.
type RegionFn = extern "C" fn(*mut c_void);

omp_functions! {
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
    fn GOMP_loop_ordered_static_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ordered_static_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_dynamic_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_guided_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_dynamic_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_guided_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_nonmonotonic_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_maybe_nonmonotonic_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_taskloop(f: RegionFn, data: *mut c_void, copy: *const c_void, size: i64, align: i64, flags: c_uint, num_tasks: u64, priority: c_int, start: i64, end: i64, step: i64) -> ();
    fn GOMP_taskloop_ull(f: RegionFn, data: *mut c_void, copy: *const c_void, size: i64, align: i64, flags: c_uint, num_tasks: u64, priority: c_int, up: bool, start: u64, end: u64, step: u64) -> ();
    fn GOMP_task(f: RegionFn, data: *mut c_void, copy: *const c_void, size: i64, align: i64, if_clause: bool, flags: c_uint, depend: *mut *mut c_void, priority: c_int, detach: *mut c_void) -> ();
    fn omp_set_lock(lock: *mut c_void) -> ();
    fn omp_unset_lock(lock: *mut c_void) -> ();
    fn omp_test_lock(lock: *mut c_void) -> c_int;
    fn omp_set_nest_lock(lock: *mut c_void) -> ();
    fn omp_unset_nest_lock(lock: *mut c_void) -> ();
    fn omp_test_nest_lock(lock: *mut c_void) -> c_int;
}

/// A region's function and its argument, passed to each member.
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
    openmp::member(region.f as usize as u64, || (region.f)(region.data));
}

/// Runs a parallel region (`start` calls libgomp with the wrapped function
/// and its argument) between the fork and join events.
fn parallel(f: RegionFn, data: *mut c_void, site: u64, start: impl FnOnce(RegionFn, *mut c_void)) {
    resolve_once();
    let region = Region { f, data };
    let arg = (&region as *const Region).cast_mut().cast();
    openmp::parallel(site, || start(run_member, arg));
}

/// A barrier, after the lookups.
fn barrier(site: u64, wait: impl FnOnce()) {
    resolve_once();
    openmp::barrier(site, wait);
}

/// A lock-like object taken, after the lookups.
fn lock(addr: u64, site: u64, take: impl FnOnce()) {
    resolve_once();
    openmp::lock(addr, site, take);
}

use openmp::unlock;

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

unsafe extern "C" fn single_start_impl(site: u64) -> bool {
    // SAFETY: forwarding.
    workshare(
        site,
        || unsafe { real::GOMP_single_start() },
        |&won| u64::from(won),
    )
}
with_site!(GOMP_single_start => single_start_impl, "rdi");

/// `single copyprivate`: libgomp's `GOMP_single_copy_start` decides the
/// winner and then blocks the others inside libgomp, where neither the
/// decision nor the wait could be ordered. The same construct, out of
/// modelled parts: the winner is `GOMP_single_start`'s (a work-sharing
/// event), and the others wait for the winner's data at a barrier
/// (`GOMP_barrier`'s events) that `GOMP_single_copy_end` joins after
/// leaving the data here. One slot: two teams running `copyprivate` at the
/// same moment (nested parallelism) would share it.
static COPYPRIVATE: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn single_copy_start_impl(site: u64) -> *mut c_void {
    // SAFETY: forwarding to the modelled constructs.
    if unsafe { single_start_impl(site) } {
        return core::ptr::null_mut();
    }
    // SAFETY: as above.
    unsafe { barrier_impl(site) };
    COPYPRIVATE.load(core::sync::atomic::Ordering::Acquire) as *mut c_void
}
with_site!(GOMP_single_copy_start => single_copy_start_impl, "rdi");

unsafe extern "C" fn single_copy_end_impl(data: *mut c_void, site: u64) {
    COPYPRIVATE.store(data as usize, core::sync::atomic::Ordering::Release);
    // SAFETY: forwarding to the modelled barrier.
    unsafe { barrier_impl(site) };
}
with_site!(GOMP_single_copy_end => single_copy_end_impl, "rsi");

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

/// The bounds libgomp wrote when it handed out a chunk.
fn bounds(first: *const i64, last: *const i64) -> Option<(u64, u64)> {
    if first.is_null() || last.is_null() {
        return None;
    }
    // SAFETY: libgomp wrote both bounds when it handed out a chunk.
    Some(unsafe { (*first as u64, *last as u64) })
}

/// `GOMP_loop_*_next(first, last)`: the next chunk.
macro_rules! loop_next {
    ($($name:ident => $imp:ident;)*) => {$(
        unsafe extern "C" fn $imp(first: *mut i64, last: *mut i64, site: u64) -> bool {
            // SAFETY: forwarding.
            workshare(site, || unsafe { real::$name(first, last) }, |&more| chunk_result(more, || bounds(first, last)))
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
            workshare(0, || unsafe { real::$name($($arg,)* first, last) }, |&more| chunk_result(more, || bounds(first, last)))
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

/// A static `ordered` loop's start: the first thread in makes the loop's
/// order (allocates and clears its list of threads), so the calls are made
/// in the recorded order, each waiting before it calls
/// (`openmp::in_order_on`); the first chunk is the static schedule's, the
/// same in every run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_ordered_static_start(
    start: i64,
    end: i64,
    incr: i64,
    chunk: i64,
    first: *mut i64,
    last: *mut i64,
) -> bool {
    openmp::in_order_on(pseudo::OMP_WORKSHARE, 0, || {
        // SAFETY: forwarding.
        unsafe { real::GOMP_loop_ordered_static_start(start, end, incr, chunk, first, last) }
    })
}

/// The next chunk of a static `ordered` loop: libgomp first waits, inside,
/// for this thread's turn in the loop's order (so no stripe may be kept
/// across the call), then hands out the chunk a static schedule gives this
/// thread, the same in every run: a call, not an event.
unsafe extern "C" fn loop_ordered_static_next_impl(
    first: *mut i64,
    last: *mut i64,
    _site: u64,
) -> bool {
    // SAFETY: forwarding.
    crate::events::hidden_blocking_call(|| unsafe {
        real::GOMP_loop_ordered_static_next(first, last)
    })
}
with_site!(GOMP_loop_ordered_static_next => loop_ordered_static_next_impl, "rdx");

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
    workshare(0, op, |&more| chunk_result(more, || bounds(first, last)))
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

/// libgomp's `GOMP_TASK_FLAG_IF`: the `if` clause holds (or is absent).
const TASK_FLAG_IF: c_uint = 1 << 10;

forward_changed! {
    /// `taskloop`: with the `if` clause false, libgomp runs the loop's tasks
    /// at once, in order, in this thread, like other tasks here.
    fn GOMP_taskloop(
        f: RegionFn, data: *mut c_void, copy: *const c_void, size: i64, align: i64,
        flags: c_uint, num_tasks: u64, priority: c_int, start: i64, end: i64, step: i64,
    ) { flags = flags & !TASK_FLAG_IF; }
    /// `taskloop` over an unsigned long long variable: as above.
    fn GOMP_taskloop_ull(
        f: RegionFn, data: *mut c_void, copy: *const c_void, size: i64, align: i64,
        flags: c_uint, num_tasks: u64, priority: c_int, up: bool, start: u64, end: u64,
        step: u64,
    ) { flags = flags & !TASK_FLAG_IF; }
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

unsafe extern "C" fn test_lock_impl(l: *mut c_void, site: u64) -> c_int {
    resolve_once();
    // SAFETY: forwarding.
    openmp::test_lock(l, site, || unsafe { real::omp_test_lock(l) })
}
with_site!(omp_test_lock => test_lock_impl, "rsi");

unsafe extern "C" fn test_nest_lock_impl(l: *mut c_void, site: u64) -> c_int {
    resolve_once();
    // SAFETY: forwarding.
    openmp::test_lock(l, site, || unsafe { real::omp_test_nest_lock(l) })
}
with_site!(omp_test_nest_lock => test_nest_lock_impl, "rsi");
