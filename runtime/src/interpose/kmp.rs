//! OpenMP as clang compiles it: calls into LLVM's libomp (`__kmpc_*`),
//! modelled as `super::openmp` describes. What is particular to libomp:
//!
//! - `__kmpc_fork_call` is variadic (the region's shared variables follow
//!   the function): an assembly entry collects them, and each member calls
//!   the region's function with them through an assembly trampoline, since
//!   stable Rust can neither define nor forward C variadics;
//! - reductions: libomp chooses among a lock, atomics and a tree of
//!   barriers by team size, and only the lock is visible at its entry
//!   points. The runtime asks libomp for the lock
//!   (`KMP_FORCE_REDUCTION=critical` through `kmp_set_defaults`, in both
//!   modes), so `__kmpc_reduce*` takes a mutex and `__kmpc_end_reduce*`
//!   gives it back (and, without `nowait`, waits at a barrier);
//! - the time-stamp counter that libomp reads while it spins, and the
//!   mutexes and condition variables it sleeps and wakes its threads with,
//!   depend on timing only: they are not events (see `crate::tsc` and
//!   `crate::own_code::in_openmp_runtime`).
//!
//! - `taskloop`: libomp makes the tasks itself; asked with `if(0)`, it runs
//!   them at once, in order, in the encountering thread, like other tasks.
//!
//! - `teams`: one team (the specification lets an implementation create
//!   fewer teams than `num_teams` asks for); libomp makes the teams itself,
//!   and the threads of several would share nothing the hooks see.
//!
//! Not modelled: the `__kmpc_atomic_*` functions clang
//! calls for `long double` and complex atomics.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use rr_lite_trace::{EventKind, pseudo};

use super::openmp::{self, forward_changed, in_order_on, omp_functions};
use crate::events;
use crate::site::with_site;

/// libomp's source location record (`ident_t`), passed through unread.
type Ident = *mut c_void;
/// A reduction's combining function, or `copyprivate`'s copy function.
type PairFn = extern "C" fn(*mut c_void, *mut c_void);
/// The real `__kmpc_fork_call`, called with one shared argument.
type ForkCall = unsafe extern "C" fn(Ident, i32, usize, ...);
/// A task's entry point: `(gtid, task)`.
type TaskEntry = extern "C" fn(i32, *mut c_void) -> i32;

/// Most shared variables a parallel region may pass to its function.
const MAX_REGION_ARGS: usize = 256;

omp_functions! {
    fn __kmpc_barrier(loc: Ident, gtid: i32) -> ();
    fn __kmpc_critical(loc: Ident, gtid: i32, name: *mut c_void) -> ();
    fn __kmpc_critical_with_hint(loc: Ident, gtid: i32, name: *mut c_void, hint: u32) -> ();
    fn __kmpc_end_critical(loc: Ident, gtid: i32, name: *mut c_void) -> ();
    fn __kmpc_single(loc: Ident, gtid: i32) -> i32;
    fn __kmpc_ordered(loc: Ident, gtid: i32) -> ();
    fn __kmpc_end_ordered(loc: Ident, gtid: i32) -> ();
    fn __kmpc_reduce(loc: Ident, gtid: i32, vars: i32, size: usize, data: *mut c_void, f: PairFn, name: *mut c_void) -> i32;
    fn __kmpc_reduce_nowait(loc: Ident, gtid: i32, vars: i32, size: usize, data: *mut c_void, f: PairFn, name: *mut c_void) -> i32;
    fn __kmpc_end_reduce(loc: Ident, gtid: i32, name: *mut c_void) -> ();
    fn __kmpc_end_reduce_nowait(loc: Ident, gtid: i32, name: *mut c_void) -> ();
    fn __kmpc_copyprivate(loc: Ident, gtid: i32, size: usize, data: *mut c_void, f: PairFn, didit: i32) -> ();
    fn __kmpc_dispatch_init_4(loc: Ident, gtid: i32, sched: c_int, lb: i32, ub: i32, st: i32, chunk: i32) -> ();
    fn __kmpc_dispatch_init_4u(loc: Ident, gtid: i32, sched: c_int, lb: u32, ub: u32, st: i32, chunk: i32) -> ();
    fn __kmpc_dispatch_init_8(loc: Ident, gtid: i32, sched: c_int, lb: i64, ub: i64, st: i64, chunk: i64) -> ();
    fn __kmpc_dispatch_init_8u(loc: Ident, gtid: i32, sched: c_int, lb: u64, ub: u64, st: i64, chunk: i64) -> ();
    fn __kmpc_dispatch_next_4(loc: Ident, gtid: i32, last: *mut i32, lb: *mut i32, ub: *mut i32, st: *mut i32) -> c_int;
    fn __kmpc_dispatch_next_4u(loc: Ident, gtid: i32, last: *mut i32, lb: *mut u32, ub: *mut u32, st: *mut i32) -> c_int;
    fn __kmpc_dispatch_next_8(loc: Ident, gtid: i32, last: *mut i32, lb: *mut i64, ub: *mut i64, st: *mut i64) -> c_int;
    fn __kmpc_dispatch_next_8u(loc: Ident, gtid: i32, last: *mut i32, lb: *mut u64, ub: *mut u64, st: *mut i64) -> c_int;
    fn __kmpc_dispatch_fini_4(loc: Ident, gtid: i32) -> ();
    fn __kmpc_dispatch_fini_4u(loc: Ident, gtid: i32) -> ();
    fn __kmpc_dispatch_fini_8(loc: Ident, gtid: i32) -> ();
    fn __kmpc_dispatch_fini_8u(loc: Ident, gtid: i32) -> ();
    fn __kmpc_doacross_init(loc: Ident, gtid: i32, num_dims: i32, dims: *const c_void) -> ();
    fn __kmpc_doacross_wait(loc: Ident, gtid: i32, vec: *const i64) -> ();
    fn __kmpc_doacross_fini(loc: Ident, gtid: i32) -> ();
    fn __kmpc_cancel(loc: Ident, gtid: i32, kind: i32) -> i32;
    fn __kmpc_cancellationpoint(loc: Ident, gtid: i32, kind: i32) -> i32;
    fn __kmpc_cancel_barrier(loc: Ident, gtid: i32) -> i32;
    fn __kmpc_omp_task_begin_if0(loc: Ident, gtid: i32, task: *mut c_void) -> ();
    fn __kmpc_omp_task_complete_if0(loc: Ident, gtid: i32, task: *mut c_void) -> ();
    fn __kmpc_omp_wait_deps(loc: Ident, gtid: i32, ndeps: i32, deps: *mut c_void, ndeps_noalias: i32, noalias: *mut c_void) -> ();
    fn __kmpc_push_num_teams(loc: Ident, gtid: i32, num_teams: i32, num_threads: i32) -> ();
    fn __kmpc_push_num_teams_51(loc: Ident, gtid: i32, lower: i32, upper: i32, num_threads: i32) -> ();
    fn __kmpc_taskloop(loc: Ident, gtid: i32, task: *mut c_void, if_val: c_int, lb: *mut u64, ub: *mut u64, st: i64, nogroup: c_int, sched: c_int, grainsize: u64, task_dup: *mut c_void) -> ();
    fn __kmpc_taskloop_5(loc: Ident, gtid: i32, task: *mut c_void, if_val: c_int, lb: *mut u64, ub: *mut u64, st: i64, nogroup: c_int, sched: c_int, grainsize: u64, modifier: c_int, task_dup: *mut c_void) -> ();
    fn kmp_set_defaults(settings: *const core::ffi::c_char) -> ();
    fn __kmpc_global_thread_num(loc: Ident) -> i32;
}

/// libomp's settings in both modes (its environment syntax, `|` between
/// settings): reductions by the lock (module doc), and workers that wait
/// for work by spinning, never by sleeping. A worker sleeps once it has
/// waited `KMP_BLOCKTIME` (200 ms by default), and whether it does depends
/// on timing: at the process's end, libomp lets spinning workers go by
/// one store, which they see at once, and wakes sleeping ones one at a
/// time as it joins them. A recording whose workers all saw the store and
/// ended before the first join then met, in a slower replay, workers
/// asleep that only the joins could wake, and a first join ordered after
/// their ends: a deadlock (6 of 16 `--verify` replays of Rodinia's
/// backprop built with clang).
const LIBOMP_SETTINGS: &core::ffi::CStr = c"KMP_FORCE_REDUCTION=critical|KMP_BLOCKTIME=infinite";

/// The real `__kmpc_fork_call` (variadic, so outside `omp_functions!`).
static SLOT_FORK_CALL: AtomicUsize = AtomicUsize::new(0);

/// The lookups, and libomp set up the same way in both modes, before the
/// first event of any `__kmpc_*` entry point (lookups and libomp's own
/// initialisation allocate: not inside a call made with stripes held).
fn prepare() {
    static DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    resolve_once();
    locate_libomp(openmp::lookup(&SLOT_FORK_CALL, "__kmpc_fork_call\0"));
    // SAFETY: a NUL-terminated settings string in libomp's environment
    // syntax; libomp initialises itself first if it has not.
    unsafe { real::kmp_set_defaults(LIBOMP_SETTINGS.as_ptr()) };
    // libomp's parallel initialisation (affinity masks, structures copied
    // onto its stack) happens in the first fork, barrier or loop: here, at
    // the same depth in both modes, rather than inside a real call the
    // modes reach through frames of other sizes (a barrier before the
    // first parallel region: the stack addresses it logged moved by 0x60
    // at replay, a divergence).
    // SAFETY: libomp's entry points, called from the thread making its
    // first `__kmpc_*` call, outside any parallel region (every region
    // starts with an interposed fork); a null location is accepted.
    unsafe {
        let gtid = real::__kmpc_global_thread_num(core::ptr::null_mut());
        real::__kmpc_barrier(core::ptr::null_mut(), gtid);
    }
}

/// Finds libomp's code from the address of one of its functions.
fn locate_libomp(known: usize) {
    if let Some((start, end)) = crate::own_code::code_of(known) {
        crate::own_code::set_openmp_runtime(start, end);
    }
}

/// A parallel region's function and shared variables, passed to each
/// member as its one shared argument.
#[repr(C)]
struct Region {
    function: usize,
    argc: usize,
    args: [usize; MAX_REGION_ARGS],
}

/// `__kmpc_fork_call(loc, argc, function, args...)`: saves the three
/// register arguments next to each other, then calls [`fork_call`] with
/// them, the address of the stack arguments and the return address.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_fork_call() {
    core::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push r9",
        "push r8",
        "push rcx",
        "mov rcx, rsp",
        "lea r8, [rbp + 16]",
        "mov r9, [rbp + 8]",
        "sub rsp, 8",
        "call {imp}",
        "leave",
        "ret",
        imp = sym fork_call,
    )
}

/// Runs the region with [`run_member`] as its function in each member.
///
/// # Safety
/// Called by [`__kmpc_fork_call`] with its arguments: `registers` holds
/// the first three shared variables, `stack` the rest.
unsafe extern "C" fn fork_call(
    loc: Ident,
    argc: i32,
    function: usize,
    registers: *const usize,
    stack: *const usize,
    site: u64,
) {
    prepare();
    let argc = usize::try_from(argc).unwrap_or(0);
    if argc > MAX_REGION_ARGS {
        crate::sys::warn(&[b"a parallel region passes more than 256 shared variables, which rr-lite cannot forward"]);
        // SAFETY: no preconditions.
        unsafe { libc::abort() };
    }
    let mut region = Region {
        function,
        argc,
        args: [0; MAX_REGION_ARGS],
    };
    for (i, arg) in region.args.iter_mut().take(argc).enumerate() {
        // SAFETY: the caller passed `argc` variables: three in registers
        // (saved at `registers`), the rest on its stack in order.
        *arg = unsafe {
            if i < 3 {
                *registers.add(i)
            } else {
                *stack.add(i - 3)
            }
        };
    }
    let real = openmp::required(&SLOT_FORK_CALL, "__kmpc_fork_call\0");
    // SAFETY: dlsym found libomp's variadic `__kmpc_fork_call`.
    let real: ForkCall = unsafe { core::mem::transmute(real) };
    let shared = &mut region as *mut Region as usize;
    // SAFETY: one shared variable, the region, which outlives the call
    // (libomp returns after every member has).
    openmp::parallel(site, || unsafe {
        real(loc, 1, run_member as *const () as usize, shared)
    });
}

/// Each member's function: the region's function, between the member's
/// events, with the region's shared variables.
extern "C" fn run_member(gtid: *mut i32, btid: *mut i32, region: *const Region) {
    // SAFETY: `region` is the `Region` on the stack of the thread in
    // `fork_call`, which waits in libomp until every member has returned.
    let region = unsafe { &*region };
    openmp::member(region.function as u64, || {
        // SAFETY: the function clang outlined for the region takes the
        // two thread ids and `argc` pointer-sized shared variables.
        unsafe {
            invoke_region(
                region.function,
                gtid,
                btid,
                region.argc,
                region.args.as_ptr(),
            )
        }
    });
}

/// Calls `function(gtid, btid, args[0], ..., args[argc - 1])`.
///
/// # Safety
/// `function` takes two pointers and `argc` pointer-sized arguments;
/// `args` holds at least `max(argc, 4)` of them.
#[unsafe(naked)]
unsafe extern "C" fn invoke_region(
    function: usize,
    gtid: *mut i32,
    btid: *mut i32,
    argc: usize,
    args: *const usize,
) {
    core::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "mov rax, rdi",
        "mov r10, rcx",
        "mov r11, r8",
        // Arguments beyond the sixth go on the stack, last first, with the
        // stack 16-byte aligned at the call.
        "mov rcx, r10",
        "sub rcx, 4",
        "jle 3f",
        "test rcx, 1",
        "jz 1f",
        "sub rsp, 8",
        "1:",
        "mov rcx, r10",
        "2:",
        "dec rcx",
        "push qword ptr [r11 + rcx * 8]",
        "cmp rcx, 4",
        "jg 2b",
        "3:",
        "mov rdi, rsi",
        "mov rsi, rdx",
        "mov rdx, [r11]",
        "mov rcx, [r11 + 8]",
        "mov r8, [r11 + 16]",
        "mov r9, [r11 + 24]",
        "call rax",
        "leave",
        "ret",
    )
}

unsafe extern "C" fn barrier_impl(loc: Ident, gtid: i32, site: u64) {
    prepare();
    // SAFETY: forwarding.
    openmp::barrier(site, || unsafe { real::__kmpc_barrier(loc, gtid) });
}
with_site!(__kmpc_barrier => barrier_impl, "rdx");

/// Whether the lock of a critical section or reduction (`name`, a
/// `kmp_critical_name`: eight 32-bit words, the first two a lock pointer
/// or tag) has not been made yet.
fn uninitialised(name: *mut c_void) -> bool {
    // SAFETY: `name` is the program's zero-initialised, 8-byte aligned
    // lock variable, which libomp writes atomically once.
    let words = unsafe { &*name.cast::<[core::sync::atomic::AtomicU32; 2]>() };
    words.iter().all(|w| w.load(Ordering::Acquire) == 0)
}

/// libomp makes a critical section's lock at its first use, allocating it
/// in whichever thread comes first, and more than one may race to: an
/// event on the lock variable before each use, held across making the
/// lock if it is not made yet (`make` takes and gives back the section),
/// makes only the first thread in the recorded order make it, and replay
/// take the same order.
fn make_lock_once(name: *mut c_void, site: u64, make: impl FnOnce()) {
    openmp::in_order_on(name as u64, site, || {
        let first = uninitialised(name);
        if first {
            make();
        }
        first
    });
}

unsafe extern "C" fn critical_impl(loc: Ident, gtid: i32, name: *mut c_void, site: u64) {
    prepare();
    // SAFETY: forwarding; `name` is the section's lock variable, whose
    // address identifies it.
    make_lock_once(name, site, || unsafe {
        real::__kmpc_critical(loc, gtid, name);
        real::__kmpc_end_critical(loc, gtid, name);
    });
    // SAFETY: as above.
    openmp::lock(name as u64, site, || unsafe {
        real::__kmpc_critical(loc, gtid, name)
    });
}
with_site!(__kmpc_critical => critical_impl, "rcx");

unsafe extern "C" fn critical_with_hint_impl(
    loc: Ident,
    gtid: i32,
    name: *mut c_void,
    hint: u32,
    site: u64,
) {
    prepare();
    // SAFETY: forwarding.
    make_lock_once(name, site, || unsafe {
        real::__kmpc_critical_with_hint(loc, gtid, name, hint);
        real::__kmpc_end_critical(loc, gtid, name);
    });
    // SAFETY: forwarding.
    openmp::lock(name as u64, site, || unsafe {
        real::__kmpc_critical_with_hint(loc, gtid, name, hint)
    });
}
with_site!(__kmpc_critical_with_hint => critical_with_hint_impl, "r8");

unsafe extern "C" fn end_critical_impl(loc: Ident, gtid: i32, name: *mut c_void, site: u64) {
    // SAFETY: forwarding.
    openmp::unlock(name as u64, site, || unsafe {
        real::__kmpc_end_critical(loc, gtid, name)
    });
}
with_site!(__kmpc_end_critical => end_critical_impl, "rcx");

unsafe extern "C" fn ordered_impl(loc: Ident, gtid: i32, site: u64) {
    prepare();
    // SAFETY: forwarding.
    // The wait ends when the thread before this one in the loop's order
    // finishes its chunk (`__kmpc_dispatch_fini_*`, a work-sharing call):
    // on that call's address, as libgomp's (`gomp::ordered_start_impl`).
    openmp::lock(pseudo::OMP_WORKSHARE, site, || {
        // SAFETY: forwarding.
        unsafe { real::__kmpc_ordered(loc, gtid) };
        crate::events::after_hidden_sync_with_all();
    });
}
with_site!(__kmpc_ordered => ordered_impl, "rdx");

unsafe extern "C" fn end_ordered_impl(loc: Ident, gtid: i32, site: u64) {
    // SAFETY: forwarding.
    openmp::unlock(pseudo::OMP_WORKSHARE, site, || unsafe {
        real::__kmpc_end_ordered(loc, gtid)
    });
}
with_site!(__kmpc_end_ordered => end_ordered_impl, "rdx");

unsafe extern "C" fn single_impl(loc: Ident, gtid: i32, site: u64) -> i32 {
    prepare();
    // SAFETY: forwarding.
    in_order_on(pseudo::OMP_WORKSHARE, site, || unsafe {
        real::__kmpc_single(loc, gtid)
    })
}
with_site!(__kmpc_single => single_impl, "rdx");

/// `__kmpc_reduce` and `__kmpc_reduce_nowait`: the reduction's lock (see
/// the module doc; seven arguments leave no register for the call site).
macro_rules! reductions {
    ($($name:ident;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            loc: Ident,
            gtid: i32,
            vars: i32,
            size: usize,
            data: *mut c_void,
            f: PairFn,
            name: *mut c_void,
        ) -> i32 {
            prepare();
            // SAFETY: forwarding; the reduction's lock is made like a
            // critical section's.
            make_lock_once(name, 0, || unsafe {
                real::__kmpc_critical(loc, gtid, name);
                real::__kmpc_end_critical(loc, gtid, name);
            });
            // SAFETY: forwarding.
            openmp::lock(name as u64, 0, || unsafe { real::$name(loc, gtid, vars, size, data, f, name) })
        }
    )*};
}

reductions! {
    __kmpc_reduce;
    __kmpc_reduce_nowait;
}

unsafe extern "C" fn end_reduce_nowait_impl(loc: Ident, gtid: i32, name: *mut c_void, site: u64) {
    // SAFETY: forwarding.
    openmp::unlock(name as u64, site, || unsafe {
        real::__kmpc_end_reduce_nowait(loc, gtid, name)
    });
}
with_site!(__kmpc_end_reduce_nowait => end_reduce_nowait_impl, "rcx");

/// Gives the reduction's lock back, then waits at the team's barrier: one
/// call does both, so the barrier arrival and the unlock are both logged
/// before it, the unlock last. The next holder's lock then follows this
/// thread's arrival in the recorded order as it does in time (the lock is
/// really released inside the call); logged the other way round, sequential
/// replay could give that lock its turn before the arrival, while the
/// holder waits in libomp for the release the arrival's turn precedes.
unsafe extern "C" fn end_reduce_impl(loc: Ident, gtid: i32, name: *mut c_void, site: u64) {
    openmp::barrier_after(
        site,
        || openmp::unlock(name as u64, site, || {}),
        // SAFETY: forwarding.
        || unsafe { real::__kmpc_end_reduce(loc, gtid, name) },
    );
}
with_site!(__kmpc_end_reduce => end_reduce_impl, "rcx");

thread_local! {
    /// The copy function of the `copyprivate` this thread is in.
    static COPY_FUNCTION: core::cell::Cell<Option<PairFn>> = const { core::cell::Cell::new(None) };
}

/// `copyprivate`: barriers around the copies from the `single` winner.
/// libomp calls the copy function (instrumented: its accesses are events)
/// between two barriers of its own inside the call; it is called through
/// [`copy_then_wait`], so that the thread's stripes (record) and its turn
/// and progress (replay) go back before it waits in the second barrier,
/// where it spins unseen while the others copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_copyprivate(
    loc: Ident,
    gtid: i32,
    size: usize,
    data: *mut c_void,
    f: PairFn,
    didit: i32,
) {
    prepare();
    let outer = COPY_FUNCTION.replace(Some(f));
    // SAFETY: forwarding, with a copy function that calls `f`.
    openmp::barrier(0, || unsafe {
        real::__kmpc_copyprivate(loc, gtid, size, data, copy_then_wait, didit)
    });
    COPY_FUNCTION.set(outer);
}

/// The copy function libomp calls in this thread: a departure from
/// libomp's first barrier, the program's copy, then an arrival at libomp's
/// second barrier, then the thread gives back what it holds as before any
/// wait it cannot be seen in.
///
/// The departure orders the copy after every thread's arrival at the
/// `copyprivate` (`__kmpc_copyprivate`'s event, logged before libomp's first
/// barrier, which the copier has passed). Without it only the data the copy
/// reads ordered it, after the `single` winner's write: sequential replay
/// could give the copy a turn before a slower thread's arrival, and stalled
/// with the copier waiting in libomp's barrier for a thread that waited for
/// a later turn (one sequential replay in some three hundred recordings of
/// `replay_openmp.c` built with clang).
///
/// The arrival orders the copy before every thread's departure from the
/// copyprivate (their departures read the barrier's pseudo-address after
/// it). Without it nothing ordered them: the sequential total order could
/// give another thread's departure and later events turns before this
/// copy, while that thread really waits in the second barrier for it (a
/// rare stall: one sequential replay of `replay_openmp.c` in a full test
/// run, reported by the stall report with the copier waiting for a turn).
extern "C" fn copy_then_wait(destination: *mut c_void, source: *mut c_void) {
    events::log_event(EventKind::BarrierDepart, pseudo::OMP_BARRIER, 0, 0, 0);
    if let Some(copy) = COPY_FUNCTION.get() {
        copy(destination, source);
    }
    events::log_event(EventKind::BarrierArrive, pseudo::OMP_BARRIER, 0, 0, 0);
    events::before_blocking();
}

/// A doacross loop (`ordered(N)`) begins: the first thread in allocates the
/// loop's flags, the others wait, inside, until it has; the calls are made
/// in the recorded order.
unsafe extern "C" fn doacross_init_impl(
    loc: Ident,
    gtid: i32,
    num_dims: i32,
    dims: *const c_void,
    site: u64,
) {
    prepare();
    // SAFETY: forwarding.
    in_order_on(pseudo::OMP_WORKSHARE, site, || unsafe {
        real::__kmpc_doacross_init(loc, gtid, num_dims, dims)
    });
}
with_site!(__kmpc_doacross_init => doacross_init_impl, "r8");

/// A doacross loop ends in this thread: the last thread to end it frees
/// the flags, by a count the recorded order of these calls makes the same.
unsafe extern "C" fn doacross_fini_impl(loc: Ident, gtid: i32, site: u64) {
    prepare();
    // SAFETY: forwarding.
    in_order_on(pseudo::OMP_WORKSHARE, site, || unsafe {
        real::__kmpc_doacross_fini(loc, gtid)
    });
}
with_site!(__kmpc_doacross_fini => doacross_fini_impl, "rdx");

/// `depend(sink: ...)`: libomp spins until the iteration has posted
/// (`__kmpc_doacross_post`, a plain atomic or of a flag bit, not an event):
/// a blocking call between events, in both modes, like a barrier's.
unsafe extern "C" fn doacross_wait_impl(loc: Ident, gtid: i32, vec: *const i64, _site: u64) {
    prepare();
    // SAFETY: forwarding.
    crate::events::hidden_blocking_call(|| unsafe { real::__kmpc_doacross_wait(loc, gtid, vec) });
}
with_site!(__kmpc_doacross_wait => doacross_wait_impl, "rcx");

/// `cancel` and `cancellation point`: as libgomp's (`gomp`), made in the
/// recorded order, their answer checked at replay.
macro_rules! cancellations {
    ($($name:ident => $imp:ident;)*) => {$(
        unsafe extern "C" fn $imp(loc: Ident, gtid: i32, kind: i32, site: u64) -> i32 {
            prepare();
            // SAFETY: forwarding.
            openmp::workshare(site, || unsafe { real::$name(loc, gtid, kind) }, |&c| c as u64)
        }
        with_site!($name => $imp, "rcx");
    )*};
}

cancellations! {
    __kmpc_cancel => cancel_impl;
    __kmpc_cancellationpoint => cancellation_point_impl;
}

/// The barrier of a region that holds a `cancel` construct; it returns
/// whether the region was cancelled.
unsafe extern "C" fn cancel_barrier_impl(loc: Ident, gtid: i32, site: u64) -> i32 {
    prepare();
    // SAFETY: forwarding.
    openmp::barrier(site, || unsafe { real::__kmpc_cancel_barrier(loc, gtid) })
}
with_site!(__kmpc_cancel_barrier => cancel_barrier_impl, "rdx");

/// `__kmpc_dispatch_init_*`: a dynamic, guided or run-time scheduled loop
/// begins (seven arguments: no register for the call site).
macro_rules! dispatch_inits {
    ($($name:ident($lb:ty, $st:ty);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(loc: Ident, gtid: i32, sched: c_int, lb: $lb, ub: $lb, st: $st, chunk: $st) {
            prepare();
            // SAFETY: forwarding.
            in_order_on(pseudo::OMP_WORKSHARE, 0, || unsafe { real::$name(loc, gtid, sched, lb, ub, st, chunk) })
        }
    )*};
}

dispatch_inits! {
    __kmpc_dispatch_init_4(i32, i32);
    __kmpc_dispatch_init_4u(u32, i32);
    __kmpc_dispatch_init_8(i64, i64);
    __kmpc_dispatch_init_8u(u64, i64);
}

/// `__kmpc_dispatch_next_*`: the next chunk (six arguments: no register
/// for the call site).
macro_rules! dispatch_nexts {
    ($($name:ident($lb:ty, $st:ty);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(loc: Ident, gtid: i32, last: *mut i32, lb: *mut $lb, ub: *mut $lb, st: *mut $st) -> c_int {
            prepare();
            // SAFETY: forwarding.
            in_order_on(pseudo::OMP_WORKSHARE, 0, || unsafe { real::$name(loc, gtid, last, lb, ub, st) })
        }
    )*};
}

dispatch_nexts! {
    __kmpc_dispatch_next_4(i32, i32);
    __kmpc_dispatch_next_4u(u32, i32);
    __kmpc_dispatch_next_8(i64, i64);
    __kmpc_dispatch_next_8u(u64, i64);
}

/// `__kmpc_dispatch_fini_*`: an `ordered` loop's chunk is done.
macro_rules! dispatch_finis {
    ($($name:ident => $imp:ident;)*) => {$(
        unsafe extern "C" fn $imp(loc: Ident, gtid: i32, site: u64) {
            prepare();
            // SAFETY: forwarding.
            in_order_on(pseudo::OMP_WORKSHARE, site, || unsafe { real::$name(loc, gtid) })
        }
        with_site!($name => $imp, "rdx");
    )*};
}

dispatch_finis! {
    __kmpc_dispatch_fini_4 => dispatch_fini_4_impl;
    __kmpc_dispatch_fini_4u => dispatch_fini_4u_impl;
    __kmpc_dispatch_fini_8 => dispatch_fini_8_impl;
    __kmpc_dispatch_fini_8u => dispatch_fini_8u_impl;
}

/// Runs a task at once, in the creating thread, as clang does for
/// `if(0)`: which thread would run a deferred task is libomp's choice.
///
/// # Safety
/// `task` is a `kmp_task_t` from `__kmpc_omp_task_alloc`, whose second
/// field is its entry point.
unsafe fn run_undeferred(loc: Ident, gtid: i32, task: *mut c_void) {
    // SAFETY: the caller's contract; `kmp_task_t` starts with `shareds`
    // then `routine`.
    unsafe {
        let entry: TaskEntry = core::mem::transmute(*task.cast::<usize>().add(1));
        real::__kmpc_omp_task_begin_if0(loc, gtid, task);
        entry(gtid, task);
        real::__kmpc_omp_task_complete_if0(loc, gtid, task);
    }
}

/// A task: run undeferred (the module doc). Returns libomp's "not queued".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task(loc: Ident, gtid: i32, task: *mut c_void) -> i32 {
    prepare();
    // SAFETY: forwarded contract.
    unsafe { run_undeferred(loc, gtid, task) };
    0
}

forward_changed! { before prepare();
    /// `num_teams(N)`: one team (the module doc).
    fn __kmpc_push_num_teams(loc: Ident, gtid: i32, num_teams: i32, num_threads: i32) {
        num_teams = 1;
    }
    /// `num_teams(L:U)` (OpenMP 5.1): one team.
    fn __kmpc_push_num_teams_51(
        loc: Ident, gtid: i32, lower: i32, upper: i32, num_threads: i32,
    ) { lower = 1; upper = 1; }
    /// `taskloop`: libomp splits the loop into tasks, run at once and in
    /// order by this thread (`if(0)`, which libomp turns into serial tasks).
    fn __kmpc_taskloop(
        loc: Ident, gtid: i32, task: *mut c_void, if_val: c_int, lb: *mut u64, ub: *mut u64,
        st: i64, nogroup: c_int, sched: c_int, grainsize: u64, task_dup: *mut c_void,
    ) { if_val = 0; }
    /// `taskloop` with OpenMP 5.1's `strict` modifier: as above.
    fn __kmpc_taskloop_5(
        loc: Ident, gtid: i32, task: *mut c_void, if_val: c_int, lb: *mut u64, ub: *mut u64,
        st: i64, nogroup: c_int, sched: c_int, grainsize: u64, modifier: c_int,
        task_dup: *mut c_void,
    ) { if_val = 0; }
}

/// A task with dependences: every earlier sibling has run already (tasks
/// are undeferred), so waiting for them returns at once; then as above.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task_with_deps(
    loc: Ident,
    gtid: i32,
    task: *mut c_void,
    ndeps: i32,
    deps: *mut c_void,
    ndeps_noalias: i32,
    noalias: *mut c_void,
) -> i32 {
    prepare();
    // SAFETY: forwarded contract.
    unsafe {
        real::__kmpc_omp_wait_deps(loc, gtid, ndeps, deps, ndeps_noalias, noalias);
        run_undeferred(loc, gtid, task);
    }
    0
}
