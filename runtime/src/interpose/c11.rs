//! C11 `<threads.h>`: glibc implements `thrd_*`, `mtx_*` and `cnd_*` on top
//! of its pthread functions but calls them internally, not through the
//! symbols the runtime interposes, so without these wrappers a thread
//! started with `thrd_create` would run unrecorded and its locks would not
//! be ordered. Each wrapper goes through the same event code as its pthread
//! counterpart (the C11 types are the pthread ones in glibc) and maps the
//! result to the C11 codes.

use core::ffi::{c_int, c_void};

use libc::{pthread_cond_t, pthread_mutex_t, pthread_t, timespec};

use rr_lite_trace::EventKind;

use super::pthread;
use crate::events::Replayed;
use crate::real::StartRoutine;
use crate::site::with_site;

/// `<threads.h>` result codes (glibc's values).
const THRD_SUCCESS: c_int = 0;
const THRD_BUSY: c_int = 1;
const THRD_ERROR: c_int = 2;
const THRD_NOMEM: c_int = 3;
const THRD_TIMEDOUT: c_int = 4;

/// A pthread result (0 or an errno value) as a C11 result, as glibc maps it.
fn c11_result(r: c_int) -> c_int {
    match r {
        0 => THRD_SUCCESS,
        libc::EBUSY => THRD_BUSY,
        libc::ENOMEM => THRD_NOMEM,
        libc::ETIMEDOUT => THRD_TIMEDOUT,
        _ => THRD_ERROR,
    }
}

/// `thrd_start_t` returns an int; glibc too starts it as a pthread start
/// routine and keeps the low 32 bits of the result (read back by
/// `thrd_join`), which the x86-64 calling convention makes sound.
unsafe extern "C" fn thrd_create_impl(
    thr: *mut pthread_t,
    func: *const c_void,
    arg: *mut c_void,
    site: u64,
) -> c_int {
    // SAFETY: `func` is the program's `int (*)(void *)` start routine; see
    // above for calling it as a pthread routine.
    let start: StartRoutine = unsafe { core::mem::transmute(func) };
    // SAFETY: the caller's arguments; a null attribute is the default.
    c11_result(unsafe { pthread::create(thr, core::ptr::null(), start, arg, site) })
}
with_site!(thrd_create => thrd_create_impl, "rcx");

unsafe extern "C" fn thrd_join_impl(thr: pthread_t, res: *mut c_int, site: u64) -> c_int {
    let mut ret: *mut c_void = core::ptr::null_mut();
    // SAFETY: `ret` is a valid out-parameter.
    let r = unsafe { pthread::join(thr, &mut ret, site) };
    if r == 0 && !res.is_null() {
        // SAFETY: the caller's out-parameter; the thread's int result is
        // the low 32 bits (see `thrd_create_impl`).
        unsafe { *res = ret as usize as c_int };
    }
    c11_result(r)
}
with_site!(thrd_join => thrd_join_impl, "rdx");

unsafe extern "C" fn thrd_exit_impl(res: c_int, site: u64) -> ! {
    // SAFETY: ends the calling thread with its result as glibc stores it.
    unsafe { pthread::exit(res as isize as *mut c_void, site) }
}
with_site!(thrd_exit => thrd_exit_impl, "rsi");

unsafe extern "C" fn thrd_detach_impl(thr: pthread_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    c11_result(unsafe { pthread::detach(thr, site) })
}
with_site!(thrd_detach => thrd_detach_impl, "rsi");

/// C11 calls on one mutex or condition variable, mapped to the pthread
/// wrapper of the same operation.
macro_rules! on_object {
    ($($export:ident => $imp:ident($t:ty) = $pthread:ident;)*) => {$(
        unsafe extern "C" fn $imp(obj: *mut $t, site: u64) -> c_int {
            // SAFETY: forwarding; mtx_t and cnd_t are the pthread types.
            c11_result(unsafe { pthread::$pthread(obj, site) })
        }
        with_site!($export => $imp, "rsi");
    )*};
}

on_object! {
    mtx_lock => mtx_lock_impl(pthread_mutex_t) = mutex_lock;
    mtx_trylock => mtx_trylock_impl(pthread_mutex_t) = mutex_trylock;
    mtx_unlock => mtx_unlock_impl(pthread_mutex_t) = mutex_unlock;
    cnd_signal => cnd_signal_impl(pthread_cond_t) = cond_signal;
    cnd_broadcast => cnd_broadcast_impl(pthread_cond_t) = cond_broadcast;
}

unsafe extern "C" fn mtx_timedlock_impl(
    m: *mut pthread_mutex_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    c11_result(unsafe { pthread::mutex_timedlock(m, t, site) })
}
with_site!(mtx_timedlock => mtx_timedlock_impl, "rdx");

unsafe extern "C" fn cnd_wait_impl(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    c11_result(unsafe { pthread::cond_wait(c, m, site) })
}
with_site!(cnd_wait => cnd_wait_impl, "rdx");

unsafe extern "C" fn cnd_timedwait_impl(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    t: *const timespec,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    c11_result(unsafe { pthread::cond_timedwait(c, m, t, site) })
}
with_site!(cnd_timedwait => cnd_timedwait_impl, "rcx");

/// C11 initialisation and destruction: events over the object, as their
/// pthread counterparts (`pthread::rewrite_object`).
fn c11_init<T>(obj: *mut T, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    pthread::rewrite_object(
        EventKind::SyncInit,
        obj,
        site,
        op,
        |&r| r as u64,
        c11_replayed,
    )
}

/// A recorded C11 result: a failure is returned without the call.
fn c11_replayed(recorded: u64) -> Replayed<c_int> {
    if recorded == THRD_SUCCESS as u64 {
        Replayed::CallReal
    } else {
        Replayed::Return(recorded as c_int)
    }
}

/// `mtx_destroy` and `cnd_destroy` return nothing.
fn c11_destroy<T>(obj: *mut T, site: u64, op: impl FnOnce()) {
    let replayed = |_| Replayed::CallReal;
    pthread::rewrite_object(EventKind::SyncDestroy, obj, site, op, |_| 0, replayed)
}

unsafe extern "C" fn mtx_init_impl(m: *mut pthread_mutex_t, kind: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    c11_init(m, site, || unsafe { crate::real::mtx_init(m, kind) })
}
with_site!(mtx_init => mtx_init_impl, "rdx");

unsafe extern "C" fn cnd_init_impl(c: *mut pthread_cond_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    c11_init(c, site, || unsafe { crate::real::cnd_init(c) })
}
with_site!(cnd_init => cnd_init_impl, "rsi");

unsafe extern "C" fn mtx_destroy_impl(m: *mut pthread_mutex_t, site: u64) {
    // SAFETY: forwarding.
    c11_destroy(m, site, || unsafe { crate::real::mtx_destroy(m) })
}
with_site!(mtx_destroy => mtx_destroy_impl, "rsi");

unsafe extern "C" fn cnd_destroy_impl(c: *mut pthread_cond_t, site: u64) {
    // SAFETY: forwarding.
    c11_destroy(c, site, || unsafe { crate::real::cnd_destroy(c) })
}
with_site!(cnd_destroy => cnd_destroy_impl, "rsi");
