//! Hidden library state (rand), values from outside (time, pid), process
//! exit, and calls that may block without being events (sleep, poll...),
//! which must release the thread's stripes first.

use core::ffi::{c_int, c_uint, c_void};

use libc::{clockid_t, timespec, timeval};
use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Replayed, log_after_call, log_after_call_or_recorded};
use crate::real;
use crate::site::{with_site, with_site_here};

/// rand() and friends: replay returns the recorded value (the hidden state
/// is the library's, so its order is the recorded one).
fn random_event<R>(
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
    from: fn(u64) -> R,
) -> R {
    log_after_call_or_recorded(
        EventKind::Random,
        pseudo::RANDOM,
        0,
        site,
        op,
        payload,
        |p| Replayed::Return(from(p)),
    )
}

extern "C" fn rand_impl(site: u64) -> c_int {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::rand() },
        |&r| r as u64,
        |p| p as c_int,
    )
}
with_site!(rand => rand_impl, "rdi");

/// `std::random_device`'s numbers (libstdc++ `_M_getval`, which the
/// header's `operator()` calls): with the default token on a CPU that has
/// them, the RDRAND/RDSEED instructions, which no hook sees (a replay
/// printed another number, silently); else a read of `/dev/urandom` or
/// `getentropy`. One random event for the call: its inside runs quietly
/// (its reads are no events), and replay returns the recorded number
/// without calling it.
fn random_device_value(
    device: *mut c_void,
    site: u64,
    real: unsafe fn(*mut c_void) -> c_uint,
) -> c_uint {
    random_event(
        site,
        // SAFETY: forwarding the program's random_device.
        || events::quietly(|| unsafe { real(device) }),
        |&r| u64::from(r),
        |p| p as c_uint,
    )
}

extern "C" fn random_device_getval_impl(device: *mut c_void, site: u64) -> c_uint {
    random_device_value(device, site, real::_ZNSt13random_device9_M_getvalEv)
}
with_site!(_ZNSt13random_device9_M_getvalEv => random_device_getval_impl, "rsi");

extern "C" fn random_device_getval_pretr1_impl(device: *mut c_void, site: u64) -> c_uint {
    random_device_value(device, site, real::_ZNSt13random_device16_M_getval_pretr1Ev)
}
with_site!(_ZNSt13random_device16_M_getval_pretr1Ev => random_device_getval_pretr1_impl, "rsi");

/// libstdc++'s `ctype<char>` fills its widen and narrow tables on first use,
/// inside the library, where no hook sees it, while the header code the
/// program inlines reads each table's flag and then the table or the call:
/// a thread that found a table filled at record and not yet at replay took
/// the other path (four threads' first `cout << ... << endl`: one recording
/// in four or ten diverged). Each filling call is a write of its flag and
/// table, so the reads that found them filled come after it, as recorded.
/// Offsets and lengths in the object (its layout is part of libstdc++'s ABI):
/// `_M_widen_ok` and `_M_widen[256]`, `_M_narrow[256]` and `_M_narrow_ok`.
const CTYPE_WIDEN: (u64, u64) = (56, 257);
const CTYPE_NARROW: (u64, u64) = (313, 257);

fn ctype_table_filled(
    ctype: *const c_void,
    (offset, len): (u64, u64),
    site: u64,
    op: impl FnOnce(),
) {
    // Its inside (a memcpy of the table it builds) is no event: this one
    // stands for it.
    let op = || events::quietly(op);
    log_after_call(
        EventKind::WriteRange,
        ctype as u64 + offset,
        len,
        site,
        op,
        |_| 0,
    );
}

extern "C" fn ctype_widen_init_impl(ctype: *const c_void, site: u64) {
    // SAFETY: forwarding the program's facet.
    ctype_table_filled(ctype, CTYPE_WIDEN, site, || unsafe {
        real::_ZNKSt5ctypeIcE13_M_widen_initEv(ctype)
    })
}
with_site!(_ZNKSt5ctypeIcE13_M_widen_initEv => ctype_widen_init_impl, "rsi");

extern "C" fn ctype_narrow_init_impl(ctype: *const c_void, site: u64) {
    // SAFETY: forwarding the program's facet.
    ctype_table_filled(ctype, CTYPE_NARROW, site, || unsafe {
        real::_ZNKSt5ctypeIcE14_M_narrow_initEv(ctype)
    })
}
with_site!(_ZNKSt5ctypeIcE14_M_narrow_initEv => ctype_narrow_init_impl, "rsi");

/// `std::exception_ptr` counts the references to its exception in the
/// exception's header, and libstdc++ changes the count inside `_M_addref`
/// and `_M_release`, and drops a caught exception's reference (a rethrown
/// `exception_ptr`'s too) in `__cxa_end_catch`, all where no hook sees it;
/// whichever thread drops the last reference destroys the exception (its
/// destructor, its free). Two threads dropping references at once did so
/// in another order at replay, and the other thread ran the destructor
/// (taskflow's exception examples: a worker's future result and main's
/// catch; a reduction diverged in every recording). Each such call is an
/// event on one pseudo-address for all exceptions (the object is not
/// known at the end of a catch), before it and again after it, held across
/// it (what it runs nests), so references come and go in the recorded
/// order. (One event after the call did not do: replay waits, before a
/// call, for what its first event waits for, and in the thread that
/// destroys the exception that is the destructor's.)
fn exception_reference(site: u64, op: impl FnOnce()) {
    events::log_around_call(EventKind::Rmw, pseudo::EXCEPTIONS, 0, site, true, op)
}

extern "C" fn exception_ptr_addref_impl(ptr: *mut c_void, site: u64) {
    // SAFETY: forwarding the program's exception_ptr.
    exception_reference(site, || unsafe {
        real::_ZNSt15__exception_ptr13exception_ptr9_M_addrefEv(ptr)
    })
}
with_site!(_ZNSt15__exception_ptr13exception_ptr9_M_addrefEv => exception_ptr_addref_impl, "rsi");

extern "C" fn exception_ptr_release_impl(ptr: *mut c_void, site: u64) {
    // SAFETY: forwarding the program's exception_ptr.
    exception_reference(site, || unsafe {
        real::_ZNSt15__exception_ptr13exception_ptr10_M_releaseEv(ptr)
    })
}
with_site!(_ZNSt15__exception_ptr13exception_ptr10_M_releaseEv => exception_ptr_release_impl, "rsi");

extern "C" fn cxa_end_catch_impl(site: u64) {
    // SAFETY: the program's own end of a catch, forwarded.
    exception_reference(site, || unsafe { real::__cxa_end_catch() })
}
with_site!(__cxa_end_catch => cxa_end_catch_impl, "rdi");

/// `arc4random` and `arc4random_uniform` (glibc 2.36): numbers from the
/// kernel's randomness, different in every run.
extern "C" fn arc4random_impl(site: u64) -> u32 {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::arc4random() },
        |&r| u64::from(r),
        |p| p as u32,
    )
}
with_site!(arc4random => arc4random_impl, "rdi");

extern "C" fn arc4random_uniform_impl(bound: u32, site: u64) -> u32 {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::arc4random_uniform(bound) },
        |&r| u64::from(r),
        |p| p as u32,
    )
}
with_site!(arc4random_uniform => arc4random_uniform_impl, "rsi");

extern "C" fn random_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::random() },
        |&r| r as u64,
        |p| p as libc::c_long,
    )
}
with_site!(random => random_impl, "rdi");

extern "C" fn lrand48_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::lrand48() },
        |&r| r as u64,
        |p| p as libc::c_long,
    )
}
with_site!(lrand48 => lrand48_impl, "rdi");

extern "C" fn mrand48_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::mrand48() },
        |&r| r as u64,
        |p| p as libc::c_long,
    )
}
with_site!(mrand48 => mrand48_impl, "rdi");

extern "C" fn drand48_impl(site: u64) -> f64 {
    // SAFETY: forwarding.
    random_event(
        site,
        || unsafe { real::drand48() },
        |r| r.to_bits(),
        f64::from_bits,
    )
}
with_site!(drand48 => drand48_impl, "rdi");

extern "C" fn srand_impl(seed: c_uint, site: u64) {
    // SAFETY: forwarding.
    log_after_call(
        EventKind::Random,
        pseudo::RANDOM,
        0,
        site,
        || unsafe { real::srand(seed) },
        |_| u64::from(seed),
    )
}
with_site!(srand => srand_impl, "rsi");

extern "C" fn srandom_impl(seed: c_uint, site: u64) {
    // SAFETY: forwarding.
    log_after_call(
        EventKind::Random,
        pseudo::RANDOM,
        0,
        site,
        || unsafe { real::srandom(seed) },
        |_| u64::from(seed),
    )
}
with_site!(srandom => srandom_impl, "rsi");

pub(crate) extern "C" fn time_impl(t: *mut libc::time_t, site: u64) -> libc::time_t {
    // SAFETY: forwarding with no output pointer; the value is stored below.
    let now = events::log_clock_value(site, || unsafe { real::time(core::ptr::null_mut()) } as u64)
        as libc::time_t;
    if !t.is_null() {
        // SAFETY: the caller's output pointer.
        unsafe { *t = now };
    }
    now
}
with_site!(time => time_impl, "rsi");

const NANOS: u64 = 1_000_000_000;
const MICROS: u64 = 1_000_000;

pub(crate) extern "C" fn clock_gettime_impl(
    clock: clockid_t,
    ts: *mut timespec,
    site: u64,
) -> c_int {
    let mut result = 0;
    let ns = events::log_clock_value(site, || {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: forwarding into a local.
        result = unsafe { real::clock_gettime(clock, &mut now) };
        (now.tv_sec as u64)
            .wrapping_mul(NANOS)
            .wrapping_add(now.tv_nsec as u64)
    });
    if result == 0 && !ts.is_null() {
        // SAFETY: the caller's output pointer.
        unsafe {
            *ts = timespec {
                tv_sec: (ns / NANOS) as libc::time_t,
                tv_nsec: (ns % NANOS) as libc::c_long,
            }
        };
    }
    result
}
with_site!(clock_gettime => clock_gettime_impl, "rdx");

pub(crate) extern "C" fn gettimeofday_impl(tv: *mut timeval, tz: *mut c_void, site: u64) -> c_int {
    let mut result = 0;
    let us = events::log_clock_value(site, || {
        let mut now = timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: forwarding into a local.
        result = unsafe { real::gettimeofday(&mut now, tz) };
        (now.tv_sec as u64)
            .wrapping_mul(MICROS)
            .wrapping_add(now.tv_usec as u64)
    });
    if result == 0 && !tv.is_null() {
        // SAFETY: the caller's output pointer.
        unsafe {
            *tv = timeval {
                tv_sec: (us / MICROS) as libc::time_t,
                tv_usec: (us % MICROS) as libc::suseconds_t,
            }
        };
    }
    result
}
with_site!(gettimeofday => gettimeofday_impl, "rdx");

/// `clock()`: the process's processor time, which glibc reads inside libc
/// (not through the interposed clock_gettime).
extern "C" fn clock_impl(site: u64) -> libc::clock_t {
    // SAFETY: forwarding.
    events::log_clock_value(site, || unsafe { real::clock() } as u64) as libc::clock_t
}
with_site!(clock => clock_impl, "rdi");

/// `omp_get_wtime` (either OpenMP library): seconds since a fixed point in
/// the past, the value a clock event read from the monotonic clock. The
/// libraries' own versions read the clock inside the library, where libomp
/// is not seen at all (its clock reads are timing-only: `crate::own_code`),
/// so a program printing the time replayed with another number.
extern "C" fn omp_get_wtime_impl(site: u64) -> f64 {
    let ns = events::log_clock_value(site, || {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: forwarding into a local.
        unsafe { real::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        (now.tv_sec as u64)
            .wrapping_mul(NANOS)
            .wrapping_add(now.tv_nsec as u64)
    });
    ns as f64 / NANOS as f64
}
with_site!(omp_get_wtime => omp_get_wtime_impl, "rdi");

/// Several values read at once from outside: the call's, then each value,
/// one clock event apiece (at replay, each the recorded one).
fn clock_values<const N: usize>(site: u64, read: impl FnOnce(&mut [u64; N])) -> [u64; N] {
    let mut now = [0u64; N];
    let mut read = Some(read);
    let mut out = [0u64; N];
    for (i, value) in out.iter_mut().enumerate() {
        *value = events::log_clock_value(site, || {
            if let Some(read) = read.take() {
                read(&mut now);
            }
            now[i]
        });
    }
    out
}

/// `times()`: the return value and the four times, read inside libc.
extern "C" fn times_impl(buf: *mut libc::tms, site: u64) -> libc::clock_t {
    let [ret, user, system, children_user, children_system] = clock_values(site, |now| {
        let mut t = libc::tms {
            tms_utime: 0,
            tms_stime: 0,
            tms_cutime: 0,
            tms_cstime: 0,
        };
        // SAFETY: forwarding into a local.
        let r = unsafe { real::times(&mut t) };
        *now = [
            r as u64,
            t.tms_utime as u64,
            t.tms_stime as u64,
            t.tms_cutime as u64,
            t.tms_cstime as u64,
        ];
    });
    if !buf.is_null() && ret as libc::clock_t != -1 {
        // SAFETY: the caller's output pointer.
        unsafe {
            *buf = libc::tms {
                tms_utime: user as libc::clock_t,
                tms_stime: system as libc::clock_t,
                tms_cutime: children_user as libc::clock_t,
                tms_cstime: children_system as libc::clock_t,
            }
        };
    }
    ret as libc::clock_t
}
with_site!(times => times_impl, "rsi");

/// C11 `timespec_get`: glibc reads the clock inside libc.
extern "C" fn timespec_get_impl(ts: *mut timespec, base: c_int, site: u64) -> c_int {
    let [ret, ns] = clock_values(site, |now| {
        let mut t = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: forwarding into a local.
        let r = unsafe { real::timespec_get(&mut t, base) };
        *now = [
            r as u64,
            (t.tv_sec as u64)
                .wrapping_mul(NANOS)
                .wrapping_add(t.tv_nsec as u64),
        ];
    });
    if ret != 0 && !ts.is_null() {
        // SAFETY: the caller's output pointer.
        unsafe {
            *ts = timespec {
                tv_sec: (ns / NANOS) as libc::time_t,
                tv_nsec: (ns % NANOS) as libc::c_long,
            }
        };
    }
    ret as c_int
}
with_site!(timespec_get => timespec_get_impl, "rdx");

/// A call that fills a plain struct of `$ty` at `$out` (null allowed) and
/// returns 0 on success, with values from outside: the result and the
/// struct's 8-byte words, each a clock value (at replay, the recorded ones).
/// `$call` makes the real call into `$local`, a pointer to a zeroed local.
macro_rules! recorded_struct {
    ($site:expr, $out:expr, $ty:ty, |$local:ident| $call:expr) => {{
        const WORDS: usize = core::mem::size_of::<$ty>() / 8;
        let values = clock_values::<{ WORDS + 1 }>($site, |now| {
            // SAFETY: the struct is plain integers; all zeroes is a valid value.
            let mut value: $ty = unsafe { core::mem::zeroed() };
            let $local: *mut $ty = &mut value;
            now[0] = $call as u64;
            // SAFETY: the struct is WORDS 8-byte words (transmute checks the size).
            let words: [u64; WORDS] = unsafe { core::mem::transmute(value) };
            now[1..].copy_from_slice(&words);
        });
        let ret = values[0] as c_int;
        let out: *mut $ty = $out;
        if ret == 0 && !out.is_null() {
            let mut words = [0u64; WORDS];
            words.copy_from_slice(&values[1..]);
            // SAFETY: the caller's output pointer; the words make the struct.
            unsafe { *out = core::mem::transmute::<[u64; WORDS], $ty>(words) };
        }
        ret
    }};
}

/// `getrusage()`: the result and the whole `struct rusage` (its times and
/// its counters all differ from run to run).
extern "C" fn getrusage_impl(who: c_int, usage: *mut libc::rusage, site: u64) -> c_int {
    // SAFETY: forwarding into a local.
    recorded_struct!(site, usage, libc::rusage, |r| unsafe {
        real::getrusage(who, r)
    })
}
with_site!(getrusage => getrusage_impl, "rdx");

/// `getloadavg()`: the result and the three load averages (glibc reads
/// `/proc/loadavg` inside libc, through calls the runtime does not see).
extern "C" fn getloadavg_impl(loadavg: *mut f64, nelem: c_int, site: u64) -> c_int {
    if nelem < 0 {
        // SAFETY: forwarding (EINVAL, the same in every run).
        return unsafe { real::getloadavg(loadavg, nelem) };
    }
    let values = clock_values::<4>(site, |now| {
        let mut loads = [0f64; 3];
        // SAFETY: forwarding into a local of three (glibc fills at most 3).
        now[0] = unsafe { real::getloadavg(loads.as_mut_ptr(), nelem.min(3)) } as u64;
        for (word, load) in now[1..].iter_mut().zip(loads) {
            *word = load.to_bits();
        }
    });
    let ret = values[0] as c_int;
    if !loadavg.is_null() {
        for (i, &bits) in values[1..].iter().enumerate().take(ret.max(0) as usize) {
            // SAFETY: the caller's array of `nelem` (at least `ret`) doubles.
            unsafe { *loadavg.add(i) = f64::from_bits(bits) };
        }
    }
    ret
}
with_site!(getloadavg => getloadavg_impl, "rdx");

/// `sysinfo()`: the result and the whole `struct sysinfo` (uptime, load
/// averages, free memory, process count: all differ from run to run).
extern "C" fn sysinfo_impl(info: *mut libc::sysinfo, site: u64) -> c_int {
    // SAFETY: forwarding into a local.
    recorded_struct!(site, info, libc::sysinfo, |s| unsafe { real::sysinfo(s) })
}
with_site!(sysinfo => sysinfo_impl, "rsi");

pub(crate) extern "C" fn getpid_impl(site: u64) -> libc::pid_t {
    // SAFETY: forwarding.
    let pid = events::log_outside_value(site, || unsafe { real::getpid() } as u64) as libc::pid_t;
    crate::ids::handed_pid(pid);
    pid
}
with_site!(getpid => getpid_impl, "rdi");

pub(crate) extern "C" fn getppid_impl(site: u64) -> libc::pid_t {
    // SAFETY: forwarding.
    events::log_outside_value(site, || unsafe { real::getppid() } as u64) as libc::pid_t
}
with_site!(getppid => getppid_impl, "rdi");

/// The kernel's id of the calling thread (glibc 2.30's wrapper; a raw
/// `syscall(SYS_gettid)` is not seen).
pub(crate) extern "C" fn gettid_impl(site: u64) -> libc::pid_t {
    // SAFETY: forwarding.
    let tid = events::log_outside_value(site, || unsafe { real::gettid() } as u64) as libc::pid_t;
    crate::ids::handed_tid(tid);
    tid
}
with_site!(gettid => gettid_impl, "rdi");

// Signals sent by process or thread id: at replay the program knows the
// recorded ids (`crate::ids`), which name another process, or none, on
// the machine that replays. No event: what the signal does is the
// program's, as without these wrappers.

#[unsafe(no_mangle)]
pub extern "C" fn kill(pid: libc::pid_t, sig: c_int) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::kill(crate::ids::real_pid(pid), sig) }
}

#[unsafe(no_mangle)]
pub extern "C" fn tgkill(tgid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> c_int {
    let (tgid, tid) = (crate::ids::real_pid(tgid), crate::ids::real_tid(tid));
    // SAFETY: forwarding.
    unsafe { real::tgkill(tgid, tid, sig) }
}

#[unsafe(no_mangle)]
pub extern "C" fn sigqueue(pid: libc::pid_t, sig: c_int, value: libc::sigval) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::sigqueue(crate::ids::real_pid(pid), sig, value) }
}

// The scheduler's calls that name a thread or process by id: at replay the
// program knows the recorded ids, and a recorded thread id may name another
// process on the machine that replays (setpriority on it, as root, reniced
// that process). No event, as above.

fn real_who(which: c_int, who: libc::id_t) -> libc::id_t {
    if which == libc::PRIO_PROCESS as c_int {
        crate::ids::real_id(who as libc::pid_t) as libc::id_t
    } else {
        who
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn setpriority(which: c_int, who: libc::id_t, prio: c_int) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::setpriority(which, real_who(which, who), prio) }
}

#[unsafe(no_mangle)]
pub extern "C" fn getpriority(which: c_int, who: libc::id_t) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::getpriority(which, real_who(which, who)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn sched_setaffinity(
    pid: libc::pid_t,
    size: libc::size_t,
    mask: *const libc::cpu_set_t,
) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::sched_setaffinity(crate::ids::real_id(pid), size, mask) }
}

#[unsafe(no_mangle)]
pub extern "C" fn sched_setscheduler(
    pid: libc::pid_t,
    policy: c_int,
    param: *const libc::sched_param,
) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::sched_setscheduler(crate::ids::real_id(pid), policy, param) }
}

#[unsafe(no_mangle)]
pub extern "C" fn sched_getscheduler(pid: libc::pid_t) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::sched_getscheduler(crate::ids::real_id(pid)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn sched_setparam(pid: libc::pid_t, param: *const libc::sched_param) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::sched_setparam(crate::ids::real_id(pid), param) }
}

#[unsafe(no_mangle)]
pub extern "C" fn sched_getparam(pid: libc::pid_t, param: *mut libc::sched_param) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::sched_getparam(crate::ids::real_id(pid), param) }
}

/// exit() runs the program's exit handlers, which may still do recorded
/// work: the exit event is logged by our own handler, registered first and
/// so run last (see init::at_exit); here only the site is kept for it.
extern "C" fn exit_impl(status: c_int, site: u64) {
    crate::init::note_exit_site(site);
    // SAFETY: forwarding; does not return.
    unsafe { real::exit(status) }
}
// The program's exit handlers run inside: on its own stack.
with_site_here!(exit => exit_impl, "rsi");

/// _exit() runs no handlers: log the exit here.
extern "C" fn exit_now_impl(status: c_int, site: u64) {
    crate::init::log_process_exit(status, site);
    // SAFETY: forwarding; does not return.
    unsafe { real::_exit(status) }
}
with_site!(_exit => exit_now_impl, "rsi");
with_site!(_Exit => exit_now_impl, "rsi");

/// Wrappers that make the real call inside `$around` (an `events` shape
/// for a call that is no event).
macro_rules! forwarded_within {
    ($around:path: $(fn $name:ident($($arg:ident: $t:ty),*) -> $ret:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $t),*) -> $ret {
            // SAFETY: forwarding.
            $around(|| unsafe { real::$name($($arg),*) })
        }
    )*};
}

// Calls that may block or wait for another thread: the thread's stripes
// are released first.
forwarded_within! { events::sleeping_call:
    fn sleep(s: c_uint) -> c_uint;
    fn usleep(us: libc::useconds_t) -> c_int;
    fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    fn clock_nanosleep(clock: clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    fn sched_yield() -> c_int;
    fn thrd_sleep(duration: *const timespec, remaining: *mut timespec) -> c_int;
    fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout: c_int) -> c_int;
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *mut timeval) -> c_int;
}

// Calls that wait for a signal, which another thread of the program may
// send (`pthread_kill`, as pbzip2's main thread wakes its signal thread
// once its workers are joined): the sending is no event, so the waiter's
// next event takes a clock past every thread's
// (`events::hidden_blocking_call`). Without that, its first event after
// waking (a read of the signal number, on its own stack: a private step)
// came early in the merged order, the other threads' exits were made to
// wait for it, and replay deadlocked before the sender sent.
forwarded_within! { events::hidden_blocking_call:
    fn pause() -> c_int;
    fn sigsuspend(mask: *const libc::sigset_t) -> c_int;
    fn sigwait(set: *const libc::sigset_t, sig: *mut c_int) -> c_int;
    fn sigwaitinfo(set: *const libc::sigset_t, info: *mut libc::siginfo_t) -> c_int;
    fn sigtimedwait(set: *const libc::sigset_t, info: *mut libc::siginfo_t, timeout: *const timespec) -> c_int;
}
