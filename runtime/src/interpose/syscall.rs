//! `syscall(number, ...)`, the C library's door to any system call by
//! number. Programs use it for calls glibc had no wrapper for
//! (`syscall(SYS_gettid)` before glibc 2.30, `SYS_getrandom` before 2.25),
//! and those return values that differ from run to run: a replay printing
//! another thread id was a silent difference. The calls whose wrappers the
//! runtime records are recorded the same way here; every other number
//! (libomp's and libstdc++'s futex calls among them), and every call from
//! the runtime's own code, is made as glibc makes it: the `syscall`
//! instruction, `errno` set from a negative result; a signal sent by
//! process or thread id gets the real ids at replay (`crate::ids`).

use core::ffi::{c_long, c_uint};

use libc::{clockid_t, size_t, timespec, timeval};

use rr_lite_trace::EventKind;

use super::{input, misc};
use crate::events::{self, Replayed};

/// The entry: the C signature is `long syscall(long number, ...)`, the
/// number and up to six arguments, the sixth on the stack above the return
/// address. The return address (the call's site) and the sixth argument
/// are not in registers, so the fifth (`r9`) is pushed and `r9` points at
/// it, the site and the sixth above it: [`syscall_impl`]'s `frame`. (A
/// caller passing fewer arguments leaves the slot of the sixth holding
/// whatever its frame has there, which is read and not used: glibc's
/// `syscall` reads it too.)
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn syscall() {
    core::arch::naked_asm!(
        "push r9",
        "mov r9, rsp",
        "call {imp}",
        "add rsp, 8",
        "ret",
        imp = sym syscall_impl,
    )
}

/// [`syscall`] with its fifth argument, site and sixth argument at `frame`.
extern "C" fn syscall_impl(
    number: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    frame: *const c_long,
) -> c_long {
    // SAFETY: `frame` points at the three words the entry laid out: the
    // pushed fifth argument, the return address and the caller's sixth.
    let (a5, site, a6) = unsafe { (*frame, *frame.add(1) as u64, *frame.add(2)) };
    let args = [a1, a2, a3, a4, a5, a6];
    if crate::own_code::contains(site) {
        return raw(number, args);
    }
    program_call(number, args, site)
}

/// A call the program made. Not inlined: the runtime's own calls (some on
/// the program's stack, such as a new thread's before it moves to the
/// runtime's stack) then use only [`syscall_impl`]'s small frame, and leave
/// nothing where the program's code looks (`replay_stale_stack.c`: record
/// mode's calls left return addresses 4 KiB down a new thread's stack once
/// this path grew).
#[inline(never)]
fn program_call(number: c_long, args: [c_long; 6], site: u64) -> c_long {
    recorded(number, args, site).unwrap_or_else(|| raw(number, with_real_ids(number, args)))
}

/// `args` of a call that sends a signal by process or thread id with the
/// ids the program was handed at replay made real (`crate::ids`, as the
/// `kill` and `tgkill` wrappers do); other calls' as they are.
fn with_real_ids(number: c_long, mut a: [c_long; 6]) -> [c_long; 6] {
    let pid = |id: c_long| c_long::from(crate::ids::real_pid(id as libc::pid_t));
    let tid = |id: c_long| c_long::from(crate::ids::real_tid(id as libc::pid_t));
    let either = |id: c_long| c_long::from(crate::ids::real_id(id as libc::pid_t));
    match number {
        libc::SYS_kill | libc::SYS_rt_sigqueueinfo => a[0] = pid(a[0]),
        libc::SYS_tgkill | libc::SYS_rt_tgsigqueueinfo => (a[0], a[1]) = (pid(a[0]), tid(a[1])),
        libc::SYS_tkill => a[0] = tid(a[0]),
        // The scheduler's calls by thread or process id (`misc::real_id`).
        libc::SYS_setpriority | libc::SYS_getpriority if a[0] == libc::PRIO_PROCESS as c_long => {
            a[1] = either(a[1])
        }
        libc::SYS_sched_setaffinity
        | libc::SYS_sched_setscheduler
        | libc::SYS_sched_getscheduler
        | libc::SYS_sched_setparam
        | libc::SYS_sched_getparam
        | libc::SYS_sched_setattr
        | libc::SYS_sched_getattr => a[0] = either(a[0]),
        _ => {}
    }
    a
}

/// The result of a call whose wrapper the runtime records, made through
/// that wrapper's recording; None for every other number. Not inlined: the
/// runtime's own `syscall` calls (its futex waits, made on whichever stack
/// it runs on, sometimes the program's at a thread's start) then take no
/// more of the stack than [`syscall_impl`]'s own frame, the same in record
/// and replay (`stack_bytes_the_program_never_wrote_replay`).
#[inline(never)]
fn recorded(number: c_long, a: [c_long; 6], site: u64) -> Option<c_long> {
    Some(match number {
        libc::SYS_gettid => c_long::from(misc::gettid_impl(site)),
        libc::SYS_getpid => c_long::from(misc::getpid_impl(site)),
        libc::SYS_getppid => c_long::from(misc::getppid_impl(site)),
        libc::SYS_getrandom => {
            input::getrandom_impl(a[0] as *mut _, a[1] as size_t, a[2] as c_uint, site) as c_long
        }
        libc::SYS_clock_gettime => c_long::from(misc::clock_gettime_impl(
            a[0] as clockid_t,
            a[1] as *mut timespec,
            site,
        )),
        libc::SYS_gettimeofday => c_long::from(misc::gettimeofday_impl(
            a[0] as *mut timeval,
            a[1] as *mut _,
            site,
        )),
        libc::SYS_time => misc::time_impl(a[0] as *mut libc::time_t, site),
        libc::SYS_futex if crate::own_code::in_program(site) => futex(a, site)?,
        _ => return None,
    })
}

/// A futex wait or wake the program makes itself (libstdc++'s headers make
/// them for C++20's semaphores, latches and `atomic::wait`): an event on
/// the futex word, whose result replay returns. The wait's result decides
/// what the program does next (libstdc++ reads `errno` after -1), and at
/// replay the wait does not sleep: it waits for the events the recorded
/// one came after (the wake, the store that changed the word) and returns
/// the recorded result. Other operations (requeue, priority inheritance)
/// are made as they are, and so are the calls libraries make (libstdc++'s
/// static guards, libomp): their waits pace their own threads, as often as
/// timing makes them, and are not events. Only the executable's calls are:
/// those the headers put in the program's code.
#[inline(never)]
fn futex(a: [c_long; 6], site: u64) -> Option<c_long> {
    const WAIT: c_long = libc::FUTEX_WAIT as c_long;
    const WAKE: c_long = libc::FUTEX_WAKE as c_long;
    const WAIT_BITSET: c_long = libc::FUTEX_WAIT_BITSET as c_long;
    const WAKE_BITSET: c_long = libc::FUTEX_WAKE_BITSET as c_long;
    let op =
        a[1] & !(c_long::from(libc::FUTEX_PRIVATE_FLAG) | c_long::from(libc::FUTEX_CLOCK_REALTIME));
    let word = a[0] as u64;
    // SAFETY: the program's own futex call, as it made it. The kernel's
    // result (-errno on failure) is the payload.
    let call = || unsafe { crate::sys::kernel(libc::SYS_futex, a) };
    let kernel = match op {
        WAIT | WAIT_BITSET => events::log_after_blocking_call(
            EventKind::FutexWait,
            word,
            site,
            call,
            |&r| Some(r as u64),
            |p| Replayed::Return(p as c_long),
        ),
        // Replay wakes for real (a thread may sleep in a wait that is no
        // event: libstdc++'s future waits inside the library, its wakes in
        // the program's headers) and returns the recorded count.
        WAKE | WAKE_BITSET => events::log_after_call_or_recorded(
            EventKind::FutexWake,
            word,
            0,
            site,
            call,
            |&r| r as u64,
            |p| {
                call();
                Replayed::Return(p as c_long)
            },
        ),
        _ => return None,
    };
    Some(if kernel < 0 {
        crate::sys::set_errno(-kernel as i32);
        -1
    } else {
        kernel
    })
}

/// System call `number` with `args`, as glibc's `syscall` makes it: -1
/// with `errno` set for a result in -4095..-1.
fn raw(number: c_long, args: [c_long; 6]) -> c_long {
    // SAFETY: the caller asked for exactly this system call with these
    // arguments (what the C library's `syscall` would do).
    let result = unsafe { crate::sys::kernel(number, args) };
    if (-4095..0).contains(&result) {
        crate::sys::set_errno(-result as i32);
        return -1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_calls_are_made_as_glibc_makes_them() {
        // SAFETY: getpid has no arguments and cannot fail.
        let pid = unsafe { libc::getpid() };
        assert_eq!(raw(libc::SYS_getpid, [0; 6]), c_long::from(pid));
        // close(-1): EBADF, as -1 and errno.
        crate::sys::set_errno(0);
        assert_eq!(raw(libc::SYS_close, [-1, 0, 0, 0, 0, 0]), -1);
        assert_eq!(crate::sys::errno(), libc::EBADF);
    }
}
