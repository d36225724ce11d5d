//! Hidden library state (rand), values from outside (time, pid), process
//! exit, and calls that may block without being events (sleep, poll...),
//! which must release the thread's stripes first.

use core::ffi::{c_int, c_uint, c_void};

use libc::{clockid_t, timespec, timeval};
use rr_lite_trace::{EventKind, pseudo};

use crate::hooks::with_site;
use crate::real;
use crate::record::{self, around};

fn random_event<R>(site: u64, op: impl FnOnce() -> R, payload: impl FnOnce(&R) -> u64) -> R {
    around(EventKind::Random, pseudo::RANDOM, 0, site, op, payload)
}

extern "C" fn rand_impl(site: u64) -> c_int {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::rand() }, |&r| r as u64)
}
with_site!(rand => rand_impl, "rdi");

extern "C" fn random_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::random() }, |&r| r as u64)
}
with_site!(random => random_impl, "rdi");

extern "C" fn lrand48_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::lrand48() }, |&r| r as u64)
}
with_site!(lrand48 => lrand48_impl, "rdi");

extern "C" fn mrand48_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::mrand48() }, |&r| r as u64)
}
with_site!(mrand48 => mrand48_impl, "rdi");

extern "C" fn drand48_impl(site: u64) -> f64 {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::drand48() }, |r| r.to_bits())
}
with_site!(drand48 => drand48_impl, "rdi");

extern "C" fn srand_impl(seed: c_uint, site: u64) {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::srand(seed) }, |_| u64::from(seed))
}
with_site!(srand => srand_impl, "rsi");

extern "C" fn srandom_impl(seed: c_uint, site: u64) {
    // SAFETY: forwarding.
    random_event(site, || unsafe { real::srandom(seed) }, |_| u64::from(seed))
}
with_site!(srandom => srandom_impl, "rsi");

extern "C" fn time_impl(t: *mut libc::time_t, site: u64) -> libc::time_t {
    // SAFETY: forwarding.
    let r = unsafe { real::time(t) };
    record::observed(site, r as u64);
    r
}
with_site!(time => time_impl, "rsi");

extern "C" fn clock_gettime_impl(clock: clockid_t, ts: *mut timespec, site: u64) -> c_int {
    // SAFETY: forwarding.
    let r = unsafe { real::clock_gettime(clock, ts) };
    if r == 0 && !ts.is_null() {
        // SAFETY: filled in by the successful call.
        let ts = unsafe { *ts };
        record::observed(
            site,
            (ts.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(ts.tv_nsec as u64),
        );
    }
    r
}
with_site!(clock_gettime => clock_gettime_impl, "rdx");

extern "C" fn gettimeofday_impl(tv: *mut timeval, tz: *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding.
    let r = unsafe { real::gettimeofday(tv, tz) };
    if r == 0 && !tv.is_null() {
        // SAFETY: filled in by the successful call.
        let tv = unsafe { *tv };
        record::observed(
            site,
            (tv.tv_sec as u64)
                .wrapping_mul(1_000_000)
                .wrapping_add(tv.tv_usec as u64),
        );
    }
    r
}
with_site!(gettimeofday => gettimeofday_impl, "rdx");

extern "C" fn getpid_impl(site: u64) -> libc::pid_t {
    // SAFETY: forwarding.
    let pid = unsafe { real::getpid() };
    record::observed(site, pid as u64);
    pid
}
with_site!(getpid => getpid_impl, "rdi");

extern "C" fn exit_impl(status: c_int, site: u64) {
    crate::init::log_process_exit(status, site);
    // SAFETY: forwarding; does not return.
    unsafe { real::exit(status) }
}
with_site!(exit => exit_impl, "rsi");

extern "C" fn exit_now_impl(status: c_int, site: u64) {
    crate::init::log_process_exit(status, site);
    // SAFETY: forwarding; does not return.
    unsafe { real::_exit(status) }
}
with_site!(_exit => exit_now_impl, "rsi");
with_site!(_Exit => exit_now_impl, "rsi");

/// Wrappers that only release the thread's stripes before a call that may
/// block or wait for another thread.
macro_rules! releasing {
    ($(fn $name:ident($($arg:ident: $t:ty),*) -> $ret:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $t),*) -> $ret {
            record::release();
            // SAFETY: forwarding.
            unsafe { real::$name($($arg),*) }
        }
    )*};
}

releasing! {
    fn sleep(s: c_uint) -> c_uint;
    fn usleep(us: libc::useconds_t) -> c_int;
    fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    fn clock_nanosleep(clock: clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    fn sched_yield() -> c_int;
    fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout: c_int) -> c_int;
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *mut timeval) -> c_int;
    fn pause() -> c_int;
}
