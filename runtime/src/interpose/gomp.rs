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
    fn GOMP_parallel_reductions(f: RegionFn, data: *mut c_void, threads: c_uint, flags: c_uint) -> c_uint;
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
    fn GOMP_loop_ordered_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ordered_guided_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ordered_runtime_start(start: i64, end: i64, incr: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ordered_start(start: i64, end: i64, incr: i64, sched: i64, chunk: i64, first: *mut i64, last: *mut i64, reductions: *mut usize, mem: *mut *mut c_void) -> bool;
    fn GOMP_loop_ordered_dynamic_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ordered_guided_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ordered_runtime_next(first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_ull_static_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_dynamic_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_guided_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_nonmonotonic_dynamic_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_nonmonotonic_guided_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_runtime_start(up: bool, start: u64, end: u64, incr: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_nonmonotonic_runtime_start(up: bool, start: u64, end: u64, incr: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_maybe_nonmonotonic_runtime_start(up: bool, start: u64, end: u64, incr: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_start(up: bool, start: u64, end: u64, incr: u64, sched: i64, chunk: u64, first: *mut u64, last: *mut u64, reductions: *mut usize, mem: *mut *mut c_void) -> bool;
    fn GOMP_loop_ull_static_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_dynamic_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_guided_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_nonmonotonic_dynamic_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_nonmonotonic_guided_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_runtime_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_nonmonotonic_runtime_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_maybe_nonmonotonic_runtime_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_static_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_dynamic_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_guided_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_runtime_start(up: bool, start: u64, end: u64, incr: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_start(up: bool, start: u64, end: u64, incr: u64, sched: i64, chunk: u64, first: *mut u64, last: *mut u64, reductions: *mut usize, mem: *mut *mut c_void) -> bool;
    fn GOMP_loop_ull_ordered_static_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_dynamic_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_guided_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_ordered_runtime_next(first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_doacross_static_start(ncounts: c_uint, counts: *mut i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_doacross_dynamic_start(ncounts: c_uint, counts: *mut i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_doacross_guided_start(ncounts: c_uint, counts: *mut i64, chunk: i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_doacross_runtime_start(ncounts: c_uint, counts: *mut i64, first: *mut i64, last: *mut i64) -> bool;
    fn GOMP_loop_doacross_start(ncounts: c_uint, counts: *mut i64, sched: i64, chunk: i64, first: *mut i64, last: *mut i64, reductions: *mut usize, mem: *mut *mut c_void) -> bool;
    fn GOMP_loop_ull_doacross_static_start(ncounts: c_uint, counts: *mut u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_doacross_dynamic_start(ncounts: c_uint, counts: *mut u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_doacross_guided_start(ncounts: c_uint, counts: *mut u64, chunk: u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_doacross_runtime_start(ncounts: c_uint, counts: *mut u64, first: *mut u64, last: *mut u64) -> bool;
    fn GOMP_loop_ull_doacross_start(ncounts: c_uint, counts: *mut u64, sched: i64, chunk: u64, first: *mut u64, last: *mut u64, reductions: *mut usize, mem: *mut *mut c_void) -> bool;
    fn GOMP_barrier_cancel() -> bool;
    fn GOMP_cancel(which: c_int, do_cancel: bool) -> bool;
    fn GOMP_cancellation_point(which: c_int) -> bool;
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
    /// The first word of the program's argument, where libgomp looks for a
    /// region's task reductions (`GOMP_parallel_reductions` reads it from
    /// the argument it is given, this one); unused otherwise.
    reductions: *mut c_void,
    f: RegionFn,
    data: *mut c_void,
}

extern "C" fn run_member(region: *mut c_void) {
    // SAFETY: `region` points to the `Region` on the stack of the thread
    // that started the region, which waits in libgomp until every member
    // has returned from here.
    let region = unsafe { &*region.cast::<Region>() };
    openmp::member(region.f as usize as u64, || {
        // SAFETY: the program's region body with its argument; its frames
        // go on the program's stack (the master runs this inside
        // GOMP_parallel, on the runtime's own stack).
        unsafe { crate::own_stack::on_program_stack(region.data, region.f) }
    });
}

/// Runs a parallel region (`start` calls libgomp with the wrapped function
/// and its argument) between the fork and join events.
fn parallel<R>(
    f: RegionFn,
    data: *mut c_void,
    site: u64,
    start: impl FnOnce(RegionFn, *mut c_void) -> R,
) -> R {
    resolve_once();
    let region = Region {
        reductions: core::ptr::null_mut(),
        f,
        data,
    };
    let arg = (&region as *const Region).cast_mut().cast();
    openmp::parallel(site, || start(run_member, arg))
}

/// `parallel` with task reductions (`reduction(task, ...)`): libgomp reads
/// the reductions' descriptor from the first word of the region's argument.
unsafe extern "C" fn parallel_reductions_impl(
    f: RegionFn,
    data: *mut c_void,
    threads: c_uint,
    flags: c_uint,
    site: u64,
) -> c_uint {
    resolve_once();
    // SAFETY: the program's argument for a region with task reductions
    // starts with the pointer to their descriptor (gcc's contract with
    // libgomp), which libgomp reads before it starts the team.
    let reductions = unsafe { *data.cast::<*mut c_void>() };
    let region = Region {
        reductions,
        f,
        data,
    };
    let arg = (&region as *const Region).cast_mut().cast();
    openmp::parallel(site, || {
        // SAFETY: forwarding, with the member wrapper in place of `f` and
        // an argument whose first word is the program's.
        unsafe { real::GOMP_parallel_reductions(run_member, arg, threads, flags) }
    })
}
with_site!(GOMP_parallel_reductions => parallel_reductions_impl, "r8");

/// A barrier, after the lookups.
fn barrier<R>(site: u64, wait: impl FnOnce() -> R) -> R {
    resolve_once();
    openmp::barrier(site, wait)
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
}

/// The barrier of a region that holds a `cancel` construct: as above, and
/// it returns whether the region was cancelled.
unsafe extern "C" fn barrier_cancel_impl(site: u64) -> bool {
    // SAFETY: forwarding.
    barrier(site, || unsafe { real::GOMP_barrier_cancel() })
}
with_site!(GOMP_barrier_cancel => barrier_cancel_impl, "rdi");

/// The end of a work-sharing construct with its barrier (`GOMP_loop_end`,
/// `GOMP_sections_end` and their `_cancel` forms). In libgomp, the thread
/// that arrives last at that barrier frees the construct before last (its
/// `ordered` list, when allocated): which thread that is depends on the
/// real arrival order, which replay does not reproduce, and the free is an
/// event of that thread. libgomp's no-wait end does the same clean-up in
/// the thread that completes the construct last, by a count that the
/// work-sharing events order; followed by the team barrier, it does what
/// the barrier form does, in the recorded thread.
macro_rules! ends_with_barrier {
    ($($name:ident => $imp:ident, $nowait:ident, $barrier:ident -> $r:ty;)*) => {$(
        unsafe extern "C" fn $imp(site: u64) -> $r {
            // SAFETY: the no-wait end, then the barrier, of the construct
            // this thread is in.
            unsafe {
                $nowait(site);
                $barrier(site)
            }
        }
        with_site!($name => $imp, "rdi");
    )*};
}

ends_with_barrier! {
    GOMP_loop_end => loop_end_impl, loop_end_nowait_impl, barrier_impl -> ();
    GOMP_sections_end => sections_end_impl, sections_end_nowait_impl, barrier_impl -> ();
    GOMP_loop_end_cancel => loop_end_cancel_impl, loop_end_nowait_impl, barrier_cancel_impl -> bool;
    GOMP_sections_end_cancel => sections_end_cancel_impl, sections_end_nowait_impl, barrier_cancel_impl -> bool;
}

/// `cancel` and `cancellation point`: with cancellation enabled
/// (`OMP_CANCELLATION=true`), one thread sets the construct's cancelled flag
/// that the others read at their cancellation points, inside libgomp; the
/// calls are made in the recorded order so that each reads what it read
/// when recorded, and the answer is the payload replay checks. Without it
/// (the default) both return false at once.
unsafe extern "C" fn cancel_impl(which: c_int, do_cancel: bool, site: u64) -> bool {
    resolve_once();
    // SAFETY: forwarding.
    workshare(
        site,
        || unsafe { real::GOMP_cancel(which, do_cancel) },
        |&c| u64::from(c),
    )
}
with_site!(GOMP_cancel => cancel_impl, "rdx");

unsafe extern "C" fn cancellation_point_impl(which: c_int, site: u64) -> bool {
    resolve_once();
    // SAFETY: forwarding.
    workshare(
        site,
        || unsafe { real::GOMP_cancellation_point(which) },
        |&c| u64::from(c),
    )
}
with_site!(GOMP_cancellation_point => cancellation_point_impl, "rsi");

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
}

/// An `ordered` region's start: a lock whose real wait ends when the
/// thread before it in the loop's order takes its next chunk (libgomp posts
/// this thread's semaphore inside that work-sharing call). So the lock is on
/// `OMP_WORKSHARE`, the address of that call: the recorded dependency puts
/// the region after the hand-out in every replay order (sequential replay
/// would otherwise give the region's turn first and wait in libgomp with
/// it); its clock is past every thread's for the merged order.
unsafe extern "C" fn ordered_start_impl(site: u64) {
    lock(pseudo::OMP_WORKSHARE, site, || {
        // SAFETY: forwarding.
        unsafe { real::GOMP_ordered_start() };
        crate::events::after_hidden_sync_with_all();
    });
}
with_site!(GOMP_ordered_start => ordered_start_impl, "rdi");

unsafe extern "C" fn ordered_end_impl(site: u64) {
    // SAFETY: forwarding.
    unlock(pseudo::OMP_WORKSHARE, site, || unsafe {
        real::GOMP_ordered_end()
    });
}
with_site!(GOMP_ordered_end => ordered_end_impl, "rdi");

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

/// `GOMP_loop_[ull_]*_next(first, last)`: the next chunk (the bounds are
/// `long` or `unsigned long long`, the same eight bytes). `ordered:` marks
/// those of dynamic, guided and run-time scheduled `ordered` loops: libgomp
/// first waits, inside, for this thread's turn in the loop's order, then
/// hands out the next chunk, whose bounds depend on the order of the calls.
/// They are split in two: the wait alone (`GOMP_ordered_start`, which only
/// waits for the turn, and returns at once when the thread has it already),
/// then the hand-out, a work-sharing event in the recorded order.
macro_rules! loop_next {
    (ordered: $($name:ident => $imp:ident, $t:ty;)*) => {$(
        // SAFETY: libgomp's turn wait, in the loop this thread is in.
        loop_next!(@one $name => $imp, $t, crate::events::hidden_blocking_call(|| unsafe { real::GOMP_ordered_start() }));
    )*};
    ($($name:ident => $imp:ident, $t:ty;)*) => {$(
        loop_next!(@one $name => $imp, $t, ());
    )*};
    (@one $name:ident => $imp:ident, $t:ty, $before:expr) => {
        unsafe extern "C" fn $imp(first: *mut $t, last: *mut $t, site: u64) -> bool {
            $before;
            // SAFETY: forwarding.
            workshare(site, || unsafe { real::$name(first, last) }, |&more| chunk_result(more, || bounds(first.cast(), last.cast())))
        }
        with_site!($name => $imp, "rdx");
    };
}

loop_next! {
    GOMP_loop_static_next => loop_static_next_impl, i64;
    GOMP_loop_dynamic_next => loop_dynamic_next_impl, i64;
    GOMP_loop_guided_next => loop_guided_next_impl, i64;
    GOMP_loop_nonmonotonic_dynamic_next => loop_nonmonotonic_dynamic_next_impl, i64;
    GOMP_loop_nonmonotonic_guided_next => loop_nonmonotonic_guided_next_impl, i64;
    GOMP_loop_runtime_next => loop_runtime_next_impl, i64;
    GOMP_loop_nonmonotonic_runtime_next => loop_nonmonotonic_runtime_next_impl, i64;
    GOMP_loop_maybe_nonmonotonic_runtime_next => loop_maybe_nonmonotonic_runtime_next_impl, i64;
    GOMP_loop_ull_static_next => loop_ull_static_next_impl, u64;
    GOMP_loop_ull_dynamic_next => loop_ull_dynamic_next_impl, u64;
    GOMP_loop_ull_guided_next => loop_ull_guided_next_impl, u64;
    GOMP_loop_ull_nonmonotonic_dynamic_next => loop_ull_nonmonotonic_dynamic_next_impl, u64;
    GOMP_loop_ull_nonmonotonic_guided_next => loop_ull_nonmonotonic_guided_next_impl, u64;
    GOMP_loop_ull_runtime_next => loop_ull_runtime_next_impl, u64;
    GOMP_loop_ull_nonmonotonic_runtime_next => loop_ull_nonmonotonic_runtime_next_impl, u64;
    GOMP_loop_ull_maybe_nonmonotonic_runtime_next => loop_ull_maybe_nonmonotonic_runtime_next_impl, u64;
}

loop_next! { ordered:
    GOMP_loop_ordered_dynamic_next => loop_ordered_dynamic_next_impl, i64;
    GOMP_loop_ordered_guided_next => loop_ordered_guided_next_impl, i64;
    GOMP_loop_ordered_runtime_next => loop_ordered_runtime_next_impl, i64;
    GOMP_loop_ull_ordered_dynamic_next => loop_ull_ordered_dynamic_next_impl, u64;
    GOMP_loop_ull_ordered_guided_next => loop_ull_ordered_guided_next_impl, u64;
    GOMP_loop_ull_ordered_runtime_next => loop_ull_ordered_runtime_next_impl, u64;
}

/// `GOMP_loop_[ull_]*_start([up,] start, end, incr, [chunk,] first, last)`:
/// the loop's work share and the first chunk (six or seven arguments: no
/// register left for the call site).
macro_rules! loop_start {
    ($($name:ident($($arg:ident: $t:ty),*) -> $b:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $t,)* first: *mut $b, last: *mut $b) -> bool {
            // SAFETY: forwarding.
            workshare(0, || unsafe { real::$name($($arg,)* first, last) }, |&more| chunk_result(more, || bounds(first.cast(), last.cast())))
        }
    )*};
}

loop_start! {
    GOMP_loop_static_start(start: i64, end: i64, incr: i64, chunk: i64) -> i64;
    GOMP_loop_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64) -> i64;
    GOMP_loop_guided_start(start: i64, end: i64, incr: i64, chunk: i64) -> i64;
    GOMP_loop_nonmonotonic_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64) -> i64;
    GOMP_loop_nonmonotonic_guided_start(start: i64, end: i64, incr: i64, chunk: i64) -> i64;
    GOMP_loop_runtime_start(start: i64, end: i64, incr: i64) -> i64;
    GOMP_loop_nonmonotonic_runtime_start(start: i64, end: i64, incr: i64) -> i64;
    GOMP_loop_maybe_nonmonotonic_runtime_start(start: i64, end: i64, incr: i64) -> i64;
    GOMP_loop_ull_static_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64) -> u64;
    GOMP_loop_ull_dynamic_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64) -> u64;
    GOMP_loop_ull_guided_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64) -> u64;
    GOMP_loop_ull_nonmonotonic_dynamic_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64) -> u64;
    GOMP_loop_ull_nonmonotonic_guided_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64) -> u64;
    GOMP_loop_ull_runtime_start(up: bool, start: u64, end: u64, incr: u64) -> u64;
    GOMP_loop_ull_nonmonotonic_runtime_start(up: bool, start: u64, end: u64, incr: u64) -> u64;
    GOMP_loop_ull_maybe_nonmonotonic_runtime_start(up: bool, start: u64, end: u64, incr: u64) -> u64;
}

/// The start of an `ordered` or doacross loop: the first thread in makes
/// the loop's order or its dependence array (allocating), and with a
/// dynamic or guided schedule the first chunks depend on the order of the
/// calls, so the calls are made in the recorded order, each waiting before
/// it calls (`openmp::in_order_on`). None of them waits for another thread
/// inside.
macro_rules! in_order_loop_start {
    (doacross: $($name:ident($n:ident: $nt:ty, $($arg:ident: $t:ty),*);)*) => {$(
        in_order_loop_start!(@one $name($n: $nt, $($arg: $t),*) { doacross_dimensions($n); });
    )*};
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        in_order_loop_start!(@one $name($($arg: $t),*) {});
    )*};
    (@one $name:ident($($arg:ident: $t:ty),*) $before:block) => {
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> bool {
            $before
            resolve_once();
            openmp::in_order_on(pseudo::OMP_WORKSHARE, 0, || {
                // SAFETY: forwarding.
                unsafe { real::$name($($arg),*) }
            })
        }
    };
}

in_order_loop_start! {
    GOMP_loop_ordered_static_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_ordered_dynamic_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_ordered_guided_start(start: i64, end: i64, incr: i64, chunk: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_ordered_runtime_start(start: i64, end: i64, incr: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_ordered_start(start: i64, end: i64, incr: i64, sched: i64, chunk: i64, first: *mut i64, last: *mut i64, reductions: *mut usize, mem: *mut *mut c_void);
    GOMP_loop_ull_ordered_static_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_ordered_dynamic_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_ordered_guided_start(up: bool, start: u64, end: u64, incr: u64, chunk: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_ordered_runtime_start(up: bool, start: u64, end: u64, incr: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_ordered_start(up: bool, start: u64, end: u64, incr: u64, sched: i64, chunk: u64, first: *mut u64, last: *mut u64, reductions: *mut usize, mem: *mut *mut c_void);
}

in_order_loop_start! { doacross:
    GOMP_loop_doacross_static_start(ncounts: c_uint, counts: *mut i64, chunk: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_doacross_dynamic_start(ncounts: c_uint, counts: *mut i64, chunk: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_doacross_guided_start(ncounts: c_uint, counts: *mut i64, chunk: i64, first: *mut i64, last: *mut i64);
    GOMP_loop_doacross_runtime_start(ncounts: c_uint, counts: *mut i64, first: *mut i64, last: *mut i64);
    GOMP_loop_doacross_start(ncounts: c_uint, counts: *mut i64, sched: i64, chunk: i64, first: *mut i64, last: *mut i64, reductions: *mut usize, mem: *mut *mut c_void);
    GOMP_loop_ull_doacross_static_start(ncounts: c_uint, counts: *mut u64, chunk: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_doacross_dynamic_start(ncounts: c_uint, counts: *mut u64, chunk: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_doacross_guided_start(ncounts: c_uint, counts: *mut u64, chunk: u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_doacross_runtime_start(ncounts: c_uint, counts: *mut u64, first: *mut u64, last: *mut u64);
    GOMP_loop_ull_doacross_start(ncounts: c_uint, counts: *mut u64, sched: i64, chunk: u64, first: *mut u64, last: *mut u64, reductions: *mut usize, mem: *mut *mut c_void);
}

/// The most loop dimensions a doacross wait is forwarded with.
const DOACROSS_MAX_DIMENSIONS: u32 = 16;

/// The most dimensions of the doacross loops started so far (`ordered(N)`:
/// a wait passes one iteration number per dimension).
static DOACROSS_DIMENSIONS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

fn doacross_dimensions(ncounts: c_uint) {
    let before = DOACROSS_DIMENSIONS.fetch_max(ncounts, core::sync::atomic::Ordering::Relaxed);
    if ncounts > DOACROSS_MAX_DIMENSIONS && before <= DOACROSS_MAX_DIMENSIONS {
        let what = b"an OpenMP doacross loop (ordered(N)) has more than 16 dimensions: its waits are not forwarded whole, and the run may go wrong";
        crate::sys::warn(&[what]);
        crate::problems::note(&[what]);
    }
}

static SLOT_DOACROSS_WAIT: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);
static SLOT_DOACROSS_ULL_WAIT: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

/// `GOMP_doacross_wait(first, ...)` and its `unsigned long long` form: wait,
/// inside libgomp, until the iteration named by the arguments (one per
/// dimension) has posted (`depend(source)`, `GOMP_doacross_post`, a plain
/// store libgomp makes, not an event). The wait spins in libgomp until the
/// post, in both modes: a blocking call between events, like a barrier's
/// (no stripe kept across it; replay waits for what follows only after it).
///
/// The function is variadic. The first six arguments come in registers; a
/// loop of more than six dimensions passes the rest on the stack, where
/// this function's stack parameters are: with such a loop started, they are
/// passed on as they came (the callee reads only as many as the loop has).
macro_rules! doacross_wait {
    ($($name:ident, $slot:ident, $t:ty;)*) => {$(
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            first: $t, a1: $t, a2: $t, a3: $t, a4: $t, a5: $t, a6: $t, a7: $t,
            a8: $t, a9: $t, a10: $t, a11: $t, a12: $t, a13: $t, a14: $t, a15: $t,
        ) {
            let addr = openmp::required(&$slot, concat!(stringify!($name), "\0"));
            // SAFETY: libgomp's function of this name, variadic over the
            // loop's iteration numbers.
            let wait: unsafe extern "C" fn($t, ...) = unsafe { core::mem::transmute(addr) };
            let wide = DOACROSS_DIMENSIONS.load(core::sync::atomic::Ordering::Relaxed) > 6;
            crate::events::hidden_blocking_call(|| {
                if wide {
                    // SAFETY: forwarding, the stack arguments as they came.
                    unsafe { wait(first, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) }
                } else {
                    // SAFETY: forwarding the register arguments.
                    unsafe { wait(first, a1, a2, a3, a4, a5) }
                }
            });
        }
    )*};
}

doacross_wait! {
    GOMP_doacross_wait, SLOT_DOACROSS_WAIT, i64;
    GOMP_doacross_ull_wait, SLOT_DOACROSS_ULL_WAIT, u64;
}

/// The next chunk of a static `ordered` loop: libgomp first waits, inside,
/// for this thread's turn in the loop's order (so no stripe may be kept
/// across the call), then hands out the chunk a static schedule gives this
/// thread, the same in every run: a call, not an event.
macro_rules! ordered_static_next {
    ($($name:ident => $imp:ident, $t:ty;)*) => {$(
        unsafe extern "C" fn $imp(first: *mut $t, last: *mut $t, _site: u64) -> bool {
            // SAFETY: forwarding.
            crate::events::hidden_blocking_call(|| unsafe { real::$name(first, last) })
        }
        with_site!($name => $imp, "rdx");
    )*};
}

ordered_static_next! {
    GOMP_loop_ordered_static_next => loop_ordered_static_next_impl, i64;
    GOMP_loop_ull_ordered_static_next => loop_ull_ordered_static_next_impl, u64;
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
    workshare(0, op, |&more| chunk_result(more, || bounds(first, last)))
}

/// The generic loop start over an `unsigned long long` variable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_loop_ull_start(
    up: bool,
    start: u64,
    end: u64,
    incr: u64,
    sched: i64,
    chunk: u64,
    first: *mut u64,
    last: *mut u64,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    let op = || {
        // SAFETY: forwarding.
        unsafe {
            real::GOMP_loop_ull_start(
                up, start, end, incr, sched, chunk, first, last, reductions, mem,
            )
        }
    };
    workshare(0, op, |&more| {
        chunk_result(more, || bounds(first.cast(), last.cast()))
    })
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
