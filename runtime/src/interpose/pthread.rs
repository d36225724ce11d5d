//! Threads and synchronisation: each primitive is an access to the sync
//! object's address (see `EventKind` for the kind each call logs).

use core::ffi::{c_int, c_void};

use libc::{
    pthread_attr_t, pthread_barrier_t, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t,
    pthread_spinlock_t, pthread_t, sem_t, timespec,
};
use rr_lite_trace::state::Divergence;
use rr_lite_trace::{EventKind, pseudo};

use crate::events::{
    self, LockKinds, Replayed, log_after_blocking_call, log_after_call, log_after_call_or_recorded,
    with_tracked,
};
use crate::mode::Mode;
use crate::real::{self, StartRoutine};
use crate::site::{with_site, with_site_here};
use crate::thread;

fn addr<T>(p: *const T) -> u64 {
    p as u64
}

pub(super) unsafe extern "C" fn create(
    out: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
    site: u64,
) -> c_int {
    let Some((parent, mode)) = with_tracked(|t, mode| (t.id.get(), mode)) else {
        // SAFETY: forwarding the caller's arguments.
        return unsafe { real::pthread_create(out, attr, start, arg) };
    };
    // Record picks the next id; replay takes the one the recording logged.
    let id = match mode {
        Mode::Replay => match events::next_recorded(EventKind::ThreadCreate) {
            Some(id) => thread::claim_id(id as u32, parent, start as usize, arg as usize)
                .unwrap_or_else(|| unknown_thread(id as u32)),
            // The recording ended inside this pthread_create (a crash or an
            // exit elsewhere): the child never ran.
            None => return phantom_create(out, attr, site),
        },
        _ => match thread::reserve_id(parent, start as usize, arg as usize) {
            Some(id) => id,
            None => {
                crate::sys::warn(&[
                    b"more threads than the runtime's table holds: the rest are not recorded",
                ]);
                // SAFETY: forwarding the caller's arguments.
                return unsafe { real::pthread_create(out, attr, start, arg) };
            }
        },
    };
    create_in_order(site, pseudo::thread_start(id), u64::from(id), || {
        // SAFETY: forwarding the caller's arguments with our trampoline,
        // which calls `start(arg)` in the new thread.
        let r = unsafe { real::pthread_create(out, attr, trampoline, id as usize as *mut c_void) };
        if r == 0 {
            // SAFETY: pthread_create succeeded, so it wrote `*out`.
            thread::set_pthread(id, unsafe { *out });
            crate::chaos::thread_created(id);
        }
        r
    })
}

/// A create's events, in a create's order, around `op` (the real call):
/// - its turn among the descriptor calls: the real call takes the loader's
///   TLS lock (its thread's TLS blocks), which `dlopen` holds while it
///   allocates inside; unordered, a replay could let a thread into
///   `dlopen` whose allocation there waits for this creation, blocked on
///   that lock (a deadlock). Outermost, so that a library constructor
///   creating a thread inside `dlopen` takes the same order of locks;
/// - glibc's stack cache: whether pthread_create reuses a cached stack (or
///   allocates a new thread control block, an event) depends on which
///   threads have ended;
/// - the create event on the child's `start` pseudo-address with
///   `payload`, logged after the real call, holding that stripe
///   throughout: the child's first event then follows the DTV allocation
///   pthread_create makes before the clone.
fn create_in_order(site: u64, start: u64, payload: u64, op: impl FnOnce() -> c_int) -> c_int {
    super::libc_files::ordered(site, || {
        on_stack_cache(site, || {
            events::log_after_nested_call(EventKind::ThreadCreate, start, 0, site, op, |_| payload)
        })
    })
}

/// Runs `op` (a real call that takes a stack from glibc's cache, puts one
/// into it, or trims it of the stacks whose threads are gone) as a
/// thread-stacks event held across it, once every thread that handed its
/// stack back before is gone: what glibc finds in its cache is then what
/// the recorded order says, in record and replay alike.
fn on_stack_cache(site: u64, op: impl FnOnce() -> c_int) -> c_int {
    events::log_after_nested_call(
        EventKind::ThreadStacks,
        pseudo::THREAD_STACKS,
        0,
        site,
        || {
            thread::wait_until_handed_back_stacks_are_free();
            op()
        },
        |_| 0,
    )
}
with_site!(pthread_create => create, "r8");

fn unknown_thread(id: u32) -> ! {
    crate::thread::THREAD.with(|t| {
        let detail = crate::replay::DivergenceDetail::value(u64::from(id), 0);
        crate::replay::diverge(&t.replay, Divergence::UnknownThread, &detail)
    })
}

/// Replay of a pthread_create the recording ended in: the real call runs
/// (its allocations are recorded events) with a child that never starts
/// the program's routine, then the create event stops this thread at its
/// recorded end. Its events are a recorded create's, in the same order
/// ([`create_in_order`]), so that the thread stops at whichever of them
/// the recording ended at: without the first two, the allocation inside
/// came where the recording has the descriptor calls' turn (a crash in
/// another thread while this one started a thread), and the replay
/// reported a divergence.
fn phantom_create(out: *mut pthread_t, attr: *const pthread_attr_t, site: u64) -> c_int {
    create_in_order(site, pseudo::thread_start(thread::NO_THREAD), 0, || {
        // SAFETY: a real thread running `phantom`, which only waits.
        unsafe { real::pthread_create(out, attr, phantom, core::ptr::null_mut()) }
    })
}

extern "C" fn phantom(_arg: *mut c_void) -> *mut c_void {
    crate::sys::wait_forever()
}

/// First code of every created thread: registers it and logs its start
/// before the user's start routine; its exit is logged after the
/// destructors that run once the routine has returned (`thread_end`).
extern "C" fn trampoline(arg: *mut c_void) -> *mut c_void {
    let id = arg as usize as u32;
    let (start, user_arg, parent) = thread::start_of(id);
    // The registration runs on the runtime's own stack: it differs by mode,
    // and the start routine's frames go where it would have run.
    crate::own_stack::adopt(id);
    crate::own_stack::run(|| {
        // SAFETY: pthread_self has no preconditions.
        thread::set_pthread(id, unsafe { libc::pthread_self() });
        thread::set_kernel_tid(id);
        crate::init::register_thread(crate::mode::current(), id, parent);
        events::log_event(
            EventKind::ThreadStart,
            pseudo::thread_start(id),
            0,
            start as u64,
            0,
        );
    });
    // SAFETY: `start` is the routine the program passed to pthread_create.
    let start: StartRoutine = unsafe { core::mem::transmute(start) };
    let result = start(user_arg as *mut c_void);
    crate::thread_end::start_routine_ended();
    result
}

/// The thread's exit event comes after the destructors that run once
/// pthread_exit has unwound it (see `thread_end`).
pub(super) unsafe extern "C" fn exit(ret: *mut c_void, _site: u64) -> ! {
    crate::thread_end::start_routine_ended();
    // SAFETY: forwarding; pthread_exit does not return.
    unsafe { real::pthread_exit(ret) };
    unreachable_exit()
}
// Cleanup handlers and destructors run inside: on the program's stack.
with_site_here!(pthread_exit => exit, "rsi");

fn unreachable_exit() -> ! {
    // SAFETY: only reached if the real pthread_exit returned, which it never does.
    unsafe { libc::abort() }
}

/// Replay of a call whose recorded result is its return value: a failure
/// is returned as recorded, success calls the real function (which then
/// succeeds at once: its predecessors are done).
fn return_failure(recorded: u64) -> Replayed<c_int> {
    if recorded == 0 {
        Replayed::CallReal
    } else {
        Replayed::Return(recorded as c_int)
    }
}

/// Like [`return_failure`] for calls that return -1 and set errno.
fn return_errno_failure(recorded: u64) -> Replayed<c_int> {
    if recorded == 0 {
        Replayed::CallReal
    } else {
        crate::sys::set_errno(recorded as c_int);
        Replayed::Return(-1)
    }
}

/// Payload of calls that return -1 and set errno: 0 or the errno value.
fn errno_result(r: c_int) -> u64 {
    if r == 0 {
        0
    } else {
        crate::sys::errno() as u64
    }
}

pub(super) unsafe extern "C" fn join(t: pthread_t, ret: *mut *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding the caller's arguments.
    let op = || unsafe { real::pthread_join(t, ret) };
    let Some(id) = thread::id_of_pthread(t) else {
        return log_after_blocking_call(
            EventKind::ThreadJoin,
            0,
            site,
            op,
            |_| None,
            |_| Replayed::CallReal,
        );
    };
    // Once the joined thread has logged its exit (and its stack event),
    // the real join only waits for the kernel to end it, then puts its
    // stack into glibc's cache: a call on the stack cache, whose
    // predecessors (that thread's last event among them) replay waits for.
    events::after_exit_of(id, pseudo::thread_exit(id));
    let r = on_stack_cache(site, op);
    if r == 0 {
        events::log_event(
            EventKind::ThreadJoin,
            pseudo::thread_exit(id),
            0,
            site,
            u64::from(id),
        );
    }
    r
}
with_site!(pthread_join => join, "rdx");

pub(super) unsafe extern "C" fn detach(t: pthread_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let op = || unsafe { real::pthread_detach(t) };
    match thread::id_of_pthread(t) {
        // Detaching a thread that has ended frees its stack into glibc's
        // cache.
        Some(id) => on_stack_cache(site, || {
            log_after_call(
                EventKind::ThreadDetach,
                pseudo::thread_exit(id),
                0,
                site,
                op,
                |_| u64::from(id),
            )
        }),
        None => op(),
    }
}
with_site!(pthread_detach => detach, "rsi");

/// Calls that release or signal a sync object: performed while the event
/// is held, in both modes, by `$log` (`log_releasing`, or
/// `events::log_keeping_stripe` for one whose stripe the quantum keeps).
macro_rules! releasing_calls {
    ($($export:ident => $imp:ident($t:ty), $kind:ident, $log:path;)*) => {$(
        pub(super) unsafe extern "C" fn $imp(obj: *mut $t, site: u64) -> c_int {
            if omp_internal(site) {
                // SAFETY: forwarding.
                return unsafe { real::$export(obj) };
            }
            let op = || {
                // SAFETY: forwarding.
                let r = unsafe { real::$export(obj) };
                crate::chaos::lock_released();
                r
            };
            $log(EventKind::$kind, addr(obj), 0, site, op)
        }
        with_site!($export => $imp, "rsi");
    )*};
}

/// How a releasing call is performed and logged: held around the real call
/// and given back after it.
pub(super) fn log_releasing<R>(
    kind: EventKind,
    obj: u64,
    size: u64,
    site: u64,
    op: impl FnOnce() -> R,
) -> R {
    log_after_call(kind, obj, size, site, op, |_| 0)
}

// A spin lock's or a mutex's unlock keeps its stripe under the recording
// quantum, like an atomic's (`events::log_keeping_stripe`), so that its
// thread may take the lock again in its quantum (`events::record_spin_lock`,
// `events::attempt_keeping_stripe`).
releasing_calls! {
    pthread_mutex_unlock => mutex_unlock(pthread_mutex_t), MutexUnlock, events::log_keeping_stripe;
    pthread_cond_signal => cond_signal(pthread_cond_t), CondSignal, log_releasing;
    pthread_cond_broadcast => cond_broadcast(pthread_cond_t), CondBroadcast, log_releasing;
    pthread_spin_unlock => spin_unlock(pthread_spinlock_t), SpinUnlock, events::log_keeping_stripe;
    sem_post => semaphore_post(sem_t), SemPost, log_releasing;
}

/// Initialising or destroying a sync object writes all of it (glibc's
/// destroy marks a mutex invalid, so a lock after it fails with EINVAL, and
/// refuses to destroy a locked one): a `kind` event over the object, held
/// across the real call, so that it is ordered against every other
/// thread's use of the object. `result` is the payload (0 or the error);
/// replay returns a recorded failure without calling, and performs a
/// success at the same place among the object's other events.
pub(super) fn rewrite_object<T, R>(
    kind: EventKind,
    obj: *mut T,
    site: u64,
    op: impl FnOnce() -> R,
    result: impl FnOnce(&R) -> u64,
    replayed: impl FnOnce(u64) -> Replayed<R>,
) -> R {
    if omp_internal(site) {
        return op();
    }
    let size = core::mem::size_of::<T>() as u64;
    log_after_call_or_recorded(kind, addr(obj), size, site, op, result, replayed)
}

/// [`rewrite_object`] for a pthread call that returns 0 or an error.
fn rewrite_with_status<T>(
    kind: EventKind,
    obj: *mut T,
    site: u64,
    op: impl FnOnce() -> c_int,
) -> c_int {
    rewrite_object(kind, obj, site, op, |&r| r as u64, return_failure)
}

macro_rules! destroy_calls {
    ($($export:ident => $imp:ident($t:ty);)*) => {$(
        pub(super) unsafe extern "C" fn $imp(obj: *mut $t, site: u64) -> c_int {
            // SAFETY: forwarding.
            rewrite_with_status(EventKind::SyncDestroy, obj, site, || unsafe { real::$export(obj) })
        }
        with_site!($export => $imp, "rsi");
    )*};
}

destroy_calls! {
    pthread_mutex_destroy => mutex_destroy(pthread_mutex_t);
    pthread_cond_destroy => cond_destroy(pthread_cond_t);
    pthread_rwlock_destroy => rwlock_destroy(pthread_rwlock_t);
    pthread_spin_destroy => spin_destroy(pthread_spinlock_t);
    pthread_barrier_destroy => barrier_destroy(pthread_barrier_t);
}

/// Initialisations whose second argument is an attribute or a flag.
macro_rules! init_calls {
    ($($export:ident => $imp:ident($t:ty, $a:ty);)*) => {$(
        pub(super) unsafe extern "C" fn $imp(obj: *mut $t, a: $a, site: u64) -> c_int {
            // SAFETY: forwarding.
            rewrite_with_status(EventKind::SyncInit, obj, site, || unsafe { real::$export(obj, a) })
        }
        with_site!($export => $imp, "rdx");
    )*};
}

init_calls! {
    pthread_mutex_init => mutex_init(pthread_mutex_t, *const libc::pthread_mutexattr_t);
    pthread_cond_init => cond_init(pthread_cond_t, *const libc::pthread_condattr_t);
    pthread_rwlock_init => rwlock_init(pthread_rwlock_t, *const libc::pthread_rwlockattr_t);
    pthread_spin_init => spin_init(pthread_spinlock_t, c_int);
}

unsafe extern "C" fn barrier_init(
    b: *mut pthread_barrier_t,
    attr: *const libc::pthread_barrierattr_t,
    count: libc::c_uint,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    let op = || unsafe { real::pthread_barrier_init(b, attr, count) };
    rewrite_with_status(EventKind::SyncInit, b, site, op)
}
with_site!(pthread_barrier_init => barrier_init, "rcx");

/// sem_init and sem_destroy return -1 and set errno.
fn rewrite_semaphore(
    kind: EventKind,
    s: *mut sem_t,
    site: u64,
    op: impl FnOnce() -> c_int,
) -> c_int {
    rewrite_object(
        kind,
        s,
        site,
        op,
        |&r| errno_result(r),
        return_errno_failure,
    )
}

unsafe extern "C" fn semaphore_init(
    s: *mut sem_t,
    pshared: c_int,
    value: libc::c_uint,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    rewrite_semaphore(EventKind::SyncInit, s, site, || unsafe {
        real::sem_init(s, pshared, value)
    })
}
with_site!(sem_init => semaphore_init, "rcx");

unsafe extern "C" fn semaphore_destroy(s: *mut sem_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    rewrite_semaphore(EventKind::SyncDestroy, s, site, || unsafe {
        real::sem_destroy(s)
    })
}
with_site!(sem_destroy => semaphore_destroy, "rsi");

/// Non-blocking tries whose result is their return value: replay returns a
/// recorded failure (EBUSY) without calling.
macro_rules! try_calls {
    ($($export:ident => $imp:ident($t:ty), $kind:ident;)*) => {$(
        pub(super) unsafe extern "C" fn $imp(obj: *mut $t, site: u64) -> c_int {
            // SAFETY: forwarding.
            let op = || unsafe { real::$export(obj) };
            if omp_internal(site) {
                return op();
            }
            let r = log_after_call_or_recorded(EventKind::$kind, addr(obj), 0, site, op, |&r| r as u64, return_failure);
            events::lock_tried(r == libc::EBUSY);
            r
        }
        with_site!($export => $imp, "rsi");
    )*};
}

try_calls! {
    pthread_mutex_trylock => mutex_trylock(pthread_mutex_t), MutexTryLock;
    pthread_rwlock_trywrlock => rw_trywrlock(pthread_rwlock_t), RwWriteLock;
    pthread_spin_trylock => spin_trylock(pthread_spinlock_t), SpinLock;
}

/// A lock-like blocking call whose event's payload is its return value.
fn lock_call(kind: EventKind, lock: u64, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    log_after_blocking_call(kind, lock, site, op, |&r| Some(r as u64), return_failure)
}

/// A trylock's result as a lock call's: None when the lock is held.
fn taken_unless_busy(r: c_int) -> Option<c_int> {
    (r != libc::EBUSY).then_some(r)
}

/// [`lock_call`] for a lock that `try_op` (its trylock, EBUSY when held)
/// takes without blocking: see `events::log_after_lock_call`.
fn lock_call_trying(
    kind: EventKind,
    lock: u64,
    site: u64,
    try_op: impl Fn() -> c_int,
    op: impl FnOnce() -> c_int,
) -> c_int {
    events::log_after_lock_call(
        LockKinds::one(kind),
        lock,
        site,
        Some(|| taken_unless_busy(try_op())),
        op,
        |&r| Some(r as u64),
        return_failure,
    )
}

/// Whether a call comes from libomp, whose own mutexes, condition
/// variables and semaphores only put its threads to sleep and wake them,
/// as often as timing makes it (`crate::own_code::in_openmp_runtime`): a
/// real call, not an event (blocking ones release the stripes first).
fn omp_internal(site: u64) -> bool {
    crate::own_code::in_openmp_runtime(site)
}

pub(super) unsafe extern "C" fn mutex_lock(m: *mut pthread_mutex_t, site: u64) -> c_int {
    if omp_internal(site) {
        // SAFETY: forwarding.
        return events::hidden_blocking_call(|| unsafe { real::pthread_mutex_lock(m) });
    }
    // A failure (a destroyed mutex, a relock of an error-checking one) is
    // logged as a trylock with its error, and replays as that error.
    let kinds = LockKinds {
        taken: EventKind::MutexLock,
        failed: EventKind::MutexTryLock,
    };
    events::log_after_lock_call(
        kinds,
        addr(m),
        site,
        // SAFETY: forwarding (a trylock takes the lock as lock would).
        Some(|| taken_unless_busy(unsafe { real::pthread_mutex_trylock(m) })),
        // SAFETY: forwarding.
        || replayed_lock(unsafe { real::pthread_mutex_lock(m) }),
        |&r| Some(r as u64),
        return_failure,
    )
}
with_site!(pthread_mutex_lock => mutex_lock, "rsi");

/// The result of a real mutex lock, as the recording had it. Replay calls
/// the real lock only where the recording took the mutex (a failure
/// replays as recorded, without the call). A lock that blocked while the
/// holder unlocked and another thread destroyed the mutex still took it in
/// the recording (glibc checks for a destroyed mutex before it waits),
/// logged after the destroy; replay, which performs them in that order,
/// finds the mutex destroyed (EINVAL). The mutex excludes nothing more at
/// replay than the recorded order already does, so the lock is as taken.
fn replayed_lock(r: c_int) -> c_int {
    if r == libc::EINVAL && crate::mode::current() == Mode::Replay {
        0
    } else {
        r
    }
}

pub(super) unsafe extern "C" fn mutex_timedlock(
    m: *mut pthread_mutex_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding. Replay of a success takes the lock untimed: its
    // predecessors are done, so it is free.
    let op = || unsafe { real::pthread_mutex_timedlock(m, t) };
    lock_call(EventKind::MutexTryLock, addr(m), site, op)
}
with_site!(pthread_mutex_timedlock => mutex_timedlock, "rdx");

fn note_read_lock(l: *mut pthread_rwlock_t, r: c_int) -> c_int {
    if r == 0 {
        with_tracked(|t, _| t.note_read_lock(l as usize));
    }
    r
}

unsafe extern "C" fn rw_rdlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let r = lock_call_trying(
        EventKind::RwReadLock,
        addr(l),
        site,
        || unsafe { real::pthread_rwlock_tryrdlock(l) },
        || unsafe { real::pthread_rwlock_rdlock(l) },
    );
    note_read_lock(l, r)
}
with_site!(pthread_rwlock_rdlock => rw_rdlock, "rsi");

unsafe extern "C" fn rw_timedrdlock(
    l: *mut pthread_rwlock_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    let r = lock_call(EventKind::RwReadLock, addr(l), site, || unsafe {
        real::pthread_rwlock_timedrdlock(l, t)
    });
    note_read_lock(l, r)
}
with_site!(pthread_rwlock_timedrdlock => rw_timedrdlock, "rdx");

unsafe extern "C" fn rw_tryrdlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let op = || unsafe { real::pthread_rwlock_tryrdlock(l) };
    let r = log_after_call_or_recorded(
        EventKind::RwReadLock,
        addr(l),
        0,
        site,
        op,
        |&r| r as u64,
        return_failure,
    );
    note_read_lock(l, r)
}
with_site!(pthread_rwlock_tryrdlock => rw_tryrdlock, "rsi");

unsafe extern "C" fn rw_wrlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    lock_call_trying(
        EventKind::RwWriteLock,
        addr(l),
        site,
        || unsafe { real::pthread_rwlock_trywrlock(l) },
        || unsafe { real::pthread_rwlock_wrlock(l) },
    )
}
with_site!(pthread_rwlock_wrlock => rw_wrlock, "rsi");

unsafe extern "C" fn rw_timedwrlock(
    l: *mut pthread_rwlock_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    lock_call(EventKind::RwWriteLock, addr(l), site, || unsafe {
        real::pthread_rwlock_timedwrlock(l, t)
    })
}
with_site!(pthread_rwlock_timedwrlock => rw_timedwrlock, "rdx");

unsafe extern "C" fn rw_unlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    let was_reader = with_tracked(|t, _| t.take_read_lock(l as usize)).unwrap_or(false);
    let kind = if was_reader {
        EventKind::RwReadUnlock
    } else {
        EventKind::RwWriteUnlock
    };
    log_after_call(
        kind,
        addr(l),
        0,
        site,
        || {
            // SAFETY: forwarding.
            let r = unsafe { real::pthread_rwlock_unlock(l) };
            crate::chaos::lock_released();
            r
        },
        |_| 0,
    )
}
with_site!(pthread_rwlock_unlock => rw_unlock, "rsi");

/// A cond wait is three events: the mutex released, the wake-up (with the
/// result, so a timeout replays as a timeout), the mutex re-acquired.
/// Replay emulates it: it unlocks the mutex, waits for the recorded
/// predecessors of the wake-up (the signal), returns the recorded result and
/// re-locks; the real cond wait, which could miss a signal sent before it
/// and hang, is never called.
fn cond_wait_events(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    site: u64,
    wait: impl FnOnce() -> c_int,
) -> c_int {
    if omp_internal(site) {
        return events::hidden_blocking_call(wait);
    }
    if crate::mode::current() != Mode::Replay {
        events::log_event(EventKind::MutexUnlock, addr(m), 0, site, 0);
        let woke = log_after_blocking_call(
            EventKind::CondWake,
            addr(c),
            site,
            wait,
            |&r| Some(r as u64),
            |_| Replayed::CallReal,
        );
        events::log_event(EventKind::MutexLock, addr(m), 0, site, 0);
        return woke;
    }
    // SAFETY: the caller holds `m`, as cond_wait requires.
    log_after_call(
        EventKind::MutexUnlock,
        addr(m),
        0,
        site,
        || unsafe { real::pthread_mutex_unlock(m) },
        |_| 0,
    );
    let woke = log_after_blocking_call(
        EventKind::CondWake,
        addr(c),
        site,
        || 0,
        |&r| Some(r as u64),
        |p| Replayed::Return(p as c_int),
    );
    // SAFETY: re-acquiring the caller's mutex, as cond_wait does on return.
    log_after_blocking_call(
        EventKind::MutexLock,
        addr(m),
        site,
        || unsafe { real::pthread_mutex_lock(m) },
        |_| Some(0),
        |_| Replayed::CallReal,
    );
    woke
}

pub(super) unsafe extern "C" fn cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    cond_wait_events(c, m, site, || unsafe { real::pthread_cond_wait(c, m) })
}
with_site!(pthread_cond_wait => cond_wait, "rdx");

pub(super) unsafe extern "C" fn cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    cond_wait_events(c, m, site, || unsafe {
        real::pthread_cond_timedwait(c, m, t)
    })
}
with_site!(pthread_cond_timedwait => cond_timedwait, "rcx");

unsafe extern "C" fn cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: libc::clockid_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    cond_wait_events(c, m, site, || unsafe {
        real::pthread_cond_clockwait(c, m, clock, t)
    })
}
with_site!(pthread_cond_clockwait => cond_clockwait, "r8");

/// Arrival, then departure with the result (the serial thread gets
/// PTHREAD_BARRIER_SERIAL_THREAD). Replay emulates the barrier: departure
/// waits for the recorded arrivals and returns the recorded result.
unsafe extern "C" fn barrier_wait(b: *mut pthread_barrier_t, site: u64) -> c_int {
    events::log_event(EventKind::BarrierArrive, addr(b), 0, site, 0);
    log_after_blocking_call(
        EventKind::BarrierDepart,
        addr(b),
        site,
        // SAFETY: forwarding.
        || unsafe { real::pthread_barrier_wait(b) },
        |&r| Some(r as u64),
        |p| Replayed::Return(p as c_int),
    )
}
with_site!(pthread_barrier_wait => barrier_wait, "rsi");

unsafe extern "C" fn spin_lock(s: *mut pthread_spinlock_t, site: u64) -> c_int {
    let try_lock = || {
        // SAFETY: forwarding (a trylock only takes the lock or fails).
        unsafe { real::pthread_spin_trylock(s) }
    };
    if let Some(r) = events::record_spin_lock(addr(s), site, try_lock) {
        return r;
    }
    // SAFETY: forwarding.
    lock_call_trying(
        EventKind::SpinLock,
        addr(s),
        site,
        || unsafe { real::pthread_spin_trylock(s) },
        || unsafe { real::pthread_spin_lock(s) },
    )
}
with_site!(pthread_spin_lock => spin_lock, "rsi");

fn sem_call(s: *mut sem_t, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    let attempt = || {
        // SAFETY: forwarding (a trywait takes a unit as wait would).
        let r = unsafe { real::sem_trywait(s) };
        (r == 0 || crate::sys::errno() != libc::EAGAIN).then_some(r)
    };
    events::log_after_lock_call(
        LockKinds::one(EventKind::SemWait),
        addr(s),
        site,
        Some(attempt),
        op,
        |&r| Some(errno_result(r)),
        return_errno_failure,
    )
}

unsafe extern "C" fn semaphore_wait(s: *mut sem_t, site: u64) -> c_int {
    if omp_internal(site) {
        // SAFETY: forwarding.
        return events::hidden_blocking_call(|| unsafe { real::sem_wait(s) });
    }
    // SAFETY: forwarding.
    sem_call(s, site, || unsafe { real::sem_wait(s) })
}
with_site!(sem_wait => semaphore_wait, "rsi");

unsafe extern "C" fn semaphore_timedwait(s: *mut sem_t, t: *const timespec, site: u64) -> c_int {
    // SAFETY: forwarding.
    sem_call(s, site, || unsafe { real::sem_timedwait(s, t) })
}
with_site!(sem_timedwait => semaphore_timedwait, "rdx");

unsafe extern "C" fn semaphore_trywait(s: *mut sem_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let op = || unsafe { real::sem_trywait(s) };
    log_after_call_or_recorded(
        EventKind::SemWait,
        addr(s),
        0,
        site,
        op,
        |&r| errno_result(r),
        return_errno_failure,
    )
}
with_site!(sem_trywait => semaphore_trywait, "rsi");
