//! The runtime's own descriptors, kept out of the program's way.
//!
//! The kernel gives out the lowest free descriptor number, so the number a
//! program's `open()` returns depends on every descriptor open at that
//! moment, the runtime's included. The runtime keeps different files open
//! in record and in replay (thread logs, plans, the state file), so two
//! rules keep the program's numbers the same in both modes:
//!
//! - the descriptors the runtime keeps (record: each thread's log, which
//!   grows a chunk at a time) are moved above [`floor`]; every other one
//!   is closed as soon as its file is mapped or read;
//! - the runtime opens files only inside [`locked`], which the program's
//!   descriptor calls also take around the real call (interpose/fd.rs), so
//!   no program call can be given, or miss, the low number the runtime
//!   holds for that moment.
//!
//! The lock is held only across a few system calls (the runtime's) or one
//! real call that cannot block (the program's: calls that may block, such
//! as accept, do not take it), and a thread may take it again while it
//! holds it (a stripe wait inside fopen's allocation reads /proc). A thread
//! that waits for another (a stripe, a replay predecessor) only tries it.
//!
//! Such a real call can still wait inside, at the events of its own
//! allocations (localtime reading the time zone file, fopen): a replayed
//! malloc waits for the recorded previous heap event, a recorded one for
//! the heap's stripe. The thread waited for may need the lock first (a new
//! thread maps its replay plan under it, a thread's first input read opens
//! its input file), so a thread lends the lock while it parks
//! ([`lent_while`]) and takes it back before it goes on: no thread sleeps
//! holding it. Lending changes no descriptor number: the lender runs none
//! of the program's code until it has the lock back, and another thread's
//! descriptor call is an event on the descriptor table, which the lender's
//! call holds (record: its stripe, kept across the call) or is ordered
//! after (replay: the call's closing event), so it cannot run in the
//! middle of the lender's call in either mode.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::sys;

/// Where the runtime's kept descriptors go (as rr does), unless the
/// descriptor limit is too low for it: then half the limit.
const WANTED_FLOOR: u64 = 1000;

/// 0 free, 1 held, 2 held with waiters.
static WORD: AtomicU32 = AtomicU32::new(0);
/// Kernel id of the thread holding the lock (0: none).
static OWNER: AtomicU32 = AtomicU32::new(0);

/// Runs `op` holding the descriptor lock (see the module doc).
pub(crate) fn locked<R>(op: impl FnOnce() -> R) -> R {
    let taken = lock();
    let result = op();
    unlock(taken);
    result
}

/// [`locked`] opened, for a stretch that spans calls back into the program
/// (`interpose::walk`): whether this call took the lock (not when the
/// thread held it already), for [`unlock`].
pub(crate) fn lock() -> bool {
    let me = sys::gettid_raw();
    if OWNER.load(Ordering::Acquire) == me {
        // Taken again by its holder: the outer call releases it.
        return false;
    }
    acquire();
    OWNER.store(me, Ordering::Release);
    true
}

/// Closes [`lock`].
pub(crate) fn unlock(taken: bool) {
    if taken {
        OWNER.store(0, Ordering::Release);
        release();
    }
}

/// Runs `park`, a wait for another thread, with the lock given back for
/// its duration if this thread holds it, and taken again afterwards (see
/// the module doc): the thread it waits for may need the lock to get
/// there.
pub(crate) fn lent_while<R>(park: impl FnOnce() -> R) -> R {
    // Only a holder lends: a thread that does not hold the lock (nearly
    // every parking thread) pays one load, not a gettid.
    if OWNER.load(Ordering::Acquire) == 0 {
        return park();
    }
    let me = sys::gettid_raw();
    if OWNER.load(Ordering::Acquire) != me {
        return park();
    }
    OWNER.store(0, Ordering::Release);
    release();
    let result = park();
    acquire();
    OWNER.store(me, Ordering::Release);
    result
}

/// In the child of a fork, where only the forking thread lives: a lock
/// another thread of the parent held is nobody's.
pub(crate) fn forget_holder() {
    OWNER.store(0, Ordering::Relaxed);
    WORD.store(0, Ordering::Release);
}

/// Runs `op` holding the descriptor lock if it is free (or this thread's):
/// for a check that can be skipped, made by a thread that may wait for the
/// lock's holder (see `crate::handover`). None if the lock was busy.
pub(crate) fn try_locked<R>(op: impl FnOnce() -> R) -> Option<R> {
    let me = sys::gettid_raw();
    if OWNER.load(Ordering::Acquire) == me {
        return Some(op());
    }
    WORD.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .ok()?;
    OWNER.store(me, Ordering::Release);
    let result = op();
    OWNER.store(0, Ordering::Release);
    release();
    Some(result)
}

fn acquire() {
    if WORD
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return;
    }
    while WORD.swap(2, Ordering::Acquire) != 0 {
        sys::futex_wait(&WORD, 2, 100_000_000);
    }
}

fn release() {
    if WORD.swap(0, Ordering::Release) == 2 {
        sys::futex_wake_all(&WORD);
    }
}

/// The lowest number the runtime's kept descriptors take.
fn floor() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit64 on this process (pid 0) only writes the rlimit
    // struct it is given; raw, like every system call of the runtime.
    let r = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0,
            libc::RLIMIT_NOFILE,
            core::ptr::null::<libc::rlimit>(),
            &mut limit as *mut libc::rlimit,
        )
    };
    if r != 0 {
        return WANTED_FLOOR;
    }
    WANTED_FLOOR.min(limit.rlim_cur / 2)
}

/// Moves `fd`, a descriptor the runtime keeps open, above the floor and
/// closes the low one. Call inside [`locked`], with the open that made it.
/// Returns the descriptor to keep (`fd` itself if it cannot be moved).
pub(crate) fn keep_above_floor(fd: i32) -> i32 {
    if fd < 0 {
        return fd;
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates our own descriptor; raw, not the
    // program's fcntl wrapper.
    let high = unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, floor()) };
    if high < 0 {
        static WARNED: AtomicBool = AtomicBool::new(false);
        if !WARNED.swap(true, Ordering::Relaxed) {
            sys::warn(&[
                b"cannot move the runtime's descriptors out of the program's range \
                  (descriptor limit too low?): its descriptor numbers may differ at replay",
            ]);
        }
        return fd;
    }
    sys::close_raw(fd);
    high as i32
}

/// Renumbers `fd`, just given to the program by a call that may block
/// (and so ran without the lock: a FIFO's open, accept), to the lowest
/// free number if that is lower, under the lock. The kernel gave out the
/// lowest number free when the call returned, which a descriptor the
/// runtime held for a moment then (a thread's input file created at its
/// first read, say) may have pushed up in one mode and not the other;
/// renumbered, the number is the lowest free once the runtime's own are
/// closed, in record and in replay alike. A descriptor the program frees
/// in that moment in another thread was a race on the numbers anyway
/// (README, limits).
pub(crate) fn lowest_free_number(fd: i32) -> i32 {
    if fd < 0 {
        return fd;
    }
    // (errno as the program's call left it: the raw calls here may set it.)
    let errno = sys::errno();
    let renumbered = locked(|| {
        // SAFETY: raw fcntl calls on the descriptor the program was just
        // given (not the program's fcntl wrapper, not an event).
        let lower = unsafe {
            let flags = libc::syscall(libc::SYS_fcntl, fd, libc::F_GETFD);
            let dup = if flags >= 0 && flags & i64::from(libc::FD_CLOEXEC) != 0 {
                libc::F_DUPFD_CLOEXEC
            } else {
                libc::F_DUPFD
            };
            libc::syscall(libc::SYS_fcntl, fd, dup, 0)
        };
        match i32::try_from(lower) {
            Ok(lower) if lower >= 0 && lower < fd => {
                sys::close_raw(fd);
                lower
            }
            Ok(lower) => {
                sys::close_raw(lower);
                fd
            }
            Err(_) => fd,
        }
    });
    sys::set_errno(errno);
    renumbered
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn open_null(cloexec: bool) -> i32 {
        let flags = libc::O_RDONLY | if cloexec { libc::O_CLOEXEC } else { 0 };
        sys::open_raw(b"/dev/null\0", flags)
    }

    fn is_cloexec(fd: i32) -> bool {
        // SAFETY: F_GETFD on a descriptor the test owns.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        flags >= 0 && flags & libc::FD_CLOEXEC != 0
    }

    #[test]
    fn a_blocking_calls_descriptor_moves_to_the_lowest_free_number() {
        for cloexec in [false, true] {
            let hole = open_null(false);
            let given = open_null(cloexec);
            assert!(hole >= 0 && given > hole);
            sys::close_raw(hole);
            let renumbered = lowest_free_number(given);
            // (Another test's thread may take the hole meanwhile: then a
            // number below `given` or `given` itself.)
            assert!(renumbered <= given);
            assert_eq!(is_cloexec(renumbered), cloexec, "flags kept");
            if renumbered != given {
                // SAFETY: F_GETFD on a descriptor number, open or closed.
                let flags = unsafe { libc::fcntl(given, libc::F_GETFD) };
                assert_eq!(flags, -1, "old one closed");
            }
            sys::close_raw(renumbered);
        }
        assert_eq!(lowest_free_number(-1), -1);
    }

    /// The holder parks until another thread has taken the lock: without
    /// lending, the other thread waits for the holder and the park runs
    /// out its time.
    #[test]
    fn a_parked_holder_lends_the_lock_to_the_thread_it_waits_for() {
        let done = Arc::new(AtomicBool::new(false));
        let (lent, other) = locked(|| {
            let flag = Arc::clone(&done);
            let other = std::thread::spawn(move || locked(|| flag.store(true, Ordering::Release)));
            let lent = lent_while(|| {
                let until = Instant::now() + Duration::from_secs(10);
                while !done.load(Ordering::Acquire) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                done.load(Ordering::Acquire)
            });
            let me = sys::gettid_raw();
            assert_eq!(
                OWNER.load(Ordering::Acquire),
                me,
                "taken back after the park"
            );
            (lent, other)
        });
        other.join().unwrap();
        assert!(
            lent,
            "the other thread never got the lock while its holder parked"
        );
        assert_eq!(OWNER.load(Ordering::Acquire), 0);
    }
}
