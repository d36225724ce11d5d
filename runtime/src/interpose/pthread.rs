//! Threads and synchronisation: each primitive is an access to the sync
//! object's address (see `EventKind` for the kind each call logs).

use core::ffi::{c_int, c_void};

use libc::{
    pthread_attr_t, pthread_barrier_t, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t,
    pthread_spinlock_t, pthread_t, sem_t, timespec,
};
use rr_lite_trace::{EventKind, pseudo};

use crate::hooks::with_site;
use crate::real::{self, StartRoutine};
use crate::record::{self, after_blocking, around, with_tracked};
use crate::thread;

fn addr<T>(p: *const T) -> u64 {
    p as u64
}

/// Payload of calls that return -1 and set errno: 0 or the errno value.
fn errno_result(r: c_int) -> u64 {
    if r == 0 {
        0
    } else {
        crate::sys::errno() as u64
    }
}

unsafe extern "C" fn create(
    out: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
    site: u64,
) -> c_int {
    let reserved = with_tracked(|t| t.id.get())
        .and_then(|parent| thread::reserve_id(parent, start as usize, arg as usize));
    let Some(id) = reserved else {
        if with_tracked(|_| ()).is_some() {
            crate::sys::warn(&[b"too many threads: the rest are not recorded"]);
        }
        // SAFETY: forwarding the caller's arguments.
        return unsafe { real::pthread_create(out, attr, start, arg) };
    };
    record::event(
        EventKind::ThreadCreate,
        pseudo::thread_start(id),
        0,
        site,
        u64::from(id),
    );
    // SAFETY: forwarding the caller's arguments with our trampoline, which
    // calls `start(arg)` in the new thread.
    let r = unsafe { real::pthread_create(out, attr, trampoline, id as usize as *mut c_void) };
    if r == 0 {
        // SAFETY: pthread_create succeeded, so it wrote `*out`.
        thread::set_pthread(id, unsafe { *out });
    }
    r
}
with_site!(pthread_create => create, "r8");

/// First and last code of every created thread: registers it, logs its
/// start and exit around the user's start routine.
extern "C" fn trampoline(arg: *mut c_void) -> *mut c_void {
    let id = arg as usize as u32;
    let (start, user_arg, parent) = thread::start_of(id);
    // SAFETY: pthread_self has no preconditions.
    thread::set_pthread(id, unsafe { libc::pthread_self() });
    crate::init::register_thread(id, parent);
    record::event(
        EventKind::ThreadStart,
        pseudo::thread_start(id),
        0,
        start as u64,
        0,
    );
    // SAFETY: `start` is the routine the program passed to pthread_create.
    let start: StartRoutine = unsafe { core::mem::transmute(start) };
    let result = start(user_arg as *mut c_void);
    crate::init::finish_thread();
    result
}

unsafe extern "C" fn exit(ret: *mut c_void, _site: u64) -> ! {
    crate::init::finish_thread();
    // SAFETY: forwarding; pthread_exit does not return.
    unsafe { real::pthread_exit(ret) };
    unreachable_exit()
}
with_site!(pthread_exit => exit, "rsi");

fn unreachable_exit() -> ! {
    // SAFETY: only reached if the real pthread_exit returned, which it never does.
    unsafe { libc::abort() }
}

unsafe extern "C" fn join(t: pthread_t, ret: *mut *mut c_void, site: u64) -> c_int {
    let id = thread::id_of_pthread(t);
    after_blocking(
        site,
        // SAFETY: forwarding the caller's arguments.
        || unsafe { real::pthread_join(t, ret) },
        |&r| {
            let id = id.filter(|_| r == 0)?;
            Some((
                EventKind::ThreadJoin,
                pseudo::thread_exit(id),
                u64::from(id),
            ))
        },
    )
}
with_site!(pthread_join => join, "rdx");

unsafe extern "C" fn detach(t: pthread_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let op = || unsafe { real::pthread_detach(t) };
    match thread::id_of_pthread(t) {
        Some(id) => around(
            EventKind::ThreadDetach,
            pseudo::thread_exit(id),
            0,
            site,
            op,
            |_| u64::from(id),
        ),
        None => op(),
    }
}
with_site!(pthread_detach => detach, "rsi");

unsafe extern "C" fn mutex_lock(m: *mut pthread_mutex_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_mutex_lock(m) },
        |&r| (r == 0).then_some((EventKind::MutexLock, addr(m), 0)),
    )
}
with_site!(pthread_mutex_lock => mutex_lock, "rsi");

unsafe extern "C" fn mutex_trylock(m: *mut pthread_mutex_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::MutexTryLock,
        addr(m),
        0,
        site,
        || unsafe { real::pthread_mutex_trylock(m) },
        |&r| r as u64,
    )
}
with_site!(pthread_mutex_trylock => mutex_trylock, "rsi");

unsafe extern "C" fn mutex_timedlock(
    m: *mut pthread_mutex_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_mutex_timedlock(m, t) },
        |&r| Some((EventKind::MutexTryLock, addr(m), r as u64)),
    )
}
with_site!(pthread_mutex_timedlock => mutex_timedlock, "rdx");

unsafe extern "C" fn mutex_unlock(m: *mut pthread_mutex_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::MutexUnlock,
        addr(m),
        0,
        site,
        || unsafe { real::pthread_mutex_unlock(m) },
        |_| 0,
    )
}
with_site!(pthread_mutex_unlock => mutex_unlock, "rsi");

/// Shared by the read-lock wrappers: logs the attempt, remembers success.
fn read_locked(l: *mut pthread_rwlock_t, r: c_int) -> Option<(EventKind, u64, u64)> {
    if r == 0 {
        with_tracked(|t| t.note_read_lock(l as usize));
    }
    Some((EventKind::RwReadLock, addr(l), r as u64))
}

unsafe extern "C" fn rw_rdlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_rwlock_rdlock(l) },
        |&r| read_locked(l, r),
    )
}
with_site!(pthread_rwlock_rdlock => rw_rdlock, "rsi");

unsafe extern "C" fn rw_timedrdlock(
    l: *mut pthread_rwlock_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_rwlock_timedrdlock(l, t) },
        |&r| read_locked(l, r),
    )
}
with_site!(pthread_rwlock_timedrdlock => rw_timedrdlock, "rdx");

unsafe extern "C" fn rw_tryrdlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let r = around(
        EventKind::RwReadLock,
        addr(l),
        0,
        site,
        || unsafe { real::pthread_rwlock_tryrdlock(l) },
        |&r| r as u64,
    );
    if r == 0 {
        with_tracked(|t| t.note_read_lock(l as usize));
    }
    r
}
with_site!(pthread_rwlock_tryrdlock => rw_tryrdlock, "rsi");

unsafe extern "C" fn rw_wrlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_rwlock_wrlock(l) },
        |&r| Some((EventKind::RwWriteLock, addr(l), r as u64)),
    )
}
with_site!(pthread_rwlock_wrlock => rw_wrlock, "rsi");

unsafe extern "C" fn rw_timedwrlock(
    l: *mut pthread_rwlock_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_rwlock_timedwrlock(l, t) },
        |&r| Some((EventKind::RwWriteLock, addr(l), r as u64)),
    )
}
with_site!(pthread_rwlock_timedwrlock => rw_timedwrlock, "rdx");

unsafe extern "C" fn rw_trywrlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::RwWriteLock,
        addr(l),
        0,
        site,
        || unsafe { real::pthread_rwlock_trywrlock(l) },
        |&r| r as u64,
    )
}
with_site!(pthread_rwlock_trywrlock => rw_trywrlock, "rsi");

unsafe extern "C" fn rw_unlock(l: *mut pthread_rwlock_t, site: u64) -> c_int {
    let was_reader = with_tracked(|t| t.take_read_lock(l as usize)).unwrap_or(false);
    let kind = if was_reader {
        EventKind::RwReadUnlock
    } else {
        EventKind::RwWriteUnlock
    };
    // SAFETY: forwarding.
    around(
        kind,
        addr(l),
        0,
        site,
        || unsafe { real::pthread_rwlock_unlock(l) },
        |_| 0,
    )
}
with_site!(pthread_rwlock_unlock => rw_unlock, "rsi");

unsafe extern "C" fn cond_signal(c: *mut pthread_cond_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::CondSignal,
        addr(c),
        0,
        site,
        || unsafe { real::pthread_cond_signal(c) },
        |_| 0,
    )
}
with_site!(pthread_cond_signal => cond_signal, "rsi");

unsafe extern "C" fn cond_broadcast(c: *mut pthread_cond_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::CondBroadcast,
        addr(c),
        0,
        site,
        || unsafe { real::pthread_cond_broadcast(c) },
        |_| 0,
    )
}
with_site!(pthread_cond_broadcast => cond_broadcast, "rsi");

/// A cond wait is three events: the mutex released, the wake-up (with the
/// result, so a timeout replays as a timeout), the mutex re-acquired.
fn cond_wait_events(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    site: u64,
    wait: impl FnOnce() -> c_int,
) -> c_int {
    record::event(EventKind::MutexUnlock, addr(m), 0, site, 0);
    let r = after_blocking(site, wait, |&r| {
        Some((EventKind::CondWake, addr(c), r as u64))
    });
    record::event(EventKind::MutexLock, addr(m), 0, site, 0);
    r
}

unsafe extern "C" fn cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    cond_wait_events(c, m, site, || unsafe { real::pthread_cond_wait(c, m) })
}
with_site!(pthread_cond_wait => cond_wait, "rdx");

unsafe extern "C" fn cond_timedwait(
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

unsafe extern "C" fn barrier_wait(b: *mut pthread_barrier_t, site: u64) -> c_int {
    record::event(EventKind::BarrierArrive, addr(b), 0, site, 0);
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_barrier_wait(b) },
        |&r| Some((EventKind::BarrierDepart, addr(b), r as u64)),
    )
}
with_site!(pthread_barrier_wait => barrier_wait, "rsi");

unsafe extern "C" fn spin_lock(s: *mut pthread_spinlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::pthread_spin_lock(s) },
        |&r| Some((EventKind::SpinLock, addr(s), r as u64)),
    )
}
with_site!(pthread_spin_lock => spin_lock, "rsi");

unsafe extern "C" fn spin_trylock(s: *mut pthread_spinlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::SpinLock,
        addr(s),
        0,
        site,
        || unsafe { real::pthread_spin_trylock(s) },
        |&r| r as u64,
    )
}
with_site!(pthread_spin_trylock => spin_trylock, "rsi");

unsafe extern "C" fn spin_unlock(s: *mut pthread_spinlock_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::SpinUnlock,
        addr(s),
        0,
        site,
        || unsafe { real::pthread_spin_unlock(s) },
        |_| 0,
    )
}
with_site!(pthread_spin_unlock => spin_unlock, "rsi");

unsafe extern "C" fn semaphore_post(s: *mut sem_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::SemPost,
        addr(s),
        0,
        site,
        || unsafe { real::sem_post(s) },
        |_| 0,
    )
}
with_site!(sem_post => semaphore_post, "rsi");

unsafe extern "C" fn semaphore_wait(s: *mut sem_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::sem_wait(s) },
        |&r| Some((EventKind::SemWait, addr(s), errno_result(r))),
    )
}
with_site!(sem_wait => semaphore_wait, "rsi");

unsafe extern "C" fn semaphore_timedwait(s: *mut sem_t, t: *const timespec, site: u64) -> c_int {
    // SAFETY: forwarding.
    after_blocking(
        site,
        || unsafe { real::sem_timedwait(s, t) },
        |&r| Some((EventKind::SemWait, addr(s), errno_result(r))),
    )
}
with_site!(sem_timedwait => semaphore_timedwait, "rdx");

unsafe extern "C" fn semaphore_trywait(s: *mut sem_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    around(
        EventKind::SemWait,
        addr(s),
        0,
        site,
        || unsafe { real::sem_trywait(s) },
        |&r| errno_result(r),
    )
}
with_site!(sem_trywait => semaphore_trywait, "rsi");
