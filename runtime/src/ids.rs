//! The process and thread ids a replayed program was handed (the recorded
//! ones: `getpid`, `gettid` and their `syscall` numbers replay recorded
//! values) against the real ones, so that a signal the program sends to
//! itself or to one of its threads (`kill(getpid(), ...)`, `tgkill`)
//! reaches it, and not whichever process has the recorded id on the
//! machine that replays: a trace may come from someone else.
//!
//! Written only at replay, by the thread that was handed the id; read by
//! any thread that sends a signal. Each mapping is one word (recorded id
//! in the high half, real in the low), so a reader sees a whole one.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::mode::{self, Mode};

/// The process's mapping, 0 if none (not replaying, or the same id).
static PROCESS: AtomicU64 = AtomicU64::new(0);

/// Slots of the threads' mappings (open addressing by recorded id): more
/// than a recording can have threads ([`crate::sys::MAX_THREADS`]).
const THREAD_SLOTS: usize = 2 * crate::sys::MAX_THREADS;
static THREADS: [AtomicU64; THREAD_SLOTS] = [const { AtomicU64::new(0) }; THREAD_SLOTS];

fn word(recorded: libc::pid_t, real: libc::pid_t) -> u64 {
    (u64::from(recorded as u32) << 32) | u64::from(real as u32)
}

fn recorded_of(word: u64) -> libc::pid_t {
    (word >> 32) as u32 as libc::pid_t
}

fn real_of(word: u64) -> libc::pid_t {
    word as u32 as libc::pid_t
}

fn replaying() -> bool {
    mode::current() == Mode::Replay
}

/// The program was handed `recorded` as the process's id (by `getpid`).
pub(crate) fn handed_pid(recorded: libc::pid_t) {
    if !replaying() {
        return;
    }
    // SAFETY: getpid cannot fail (the real one: the interposed one would
    // replay a value and count an event).
    let real = unsafe { crate::real::getpid() };
    if real != recorded {
        PROCESS.store(word(recorded, real), Ordering::Relaxed);
    }
}

/// The calling thread was handed `recorded` as its id (by `gettid`).
pub(crate) fn handed_tid(recorded: libc::pid_t) {
    if !replaying() || recorded <= 0 {
        return;
    }
    let real = crate::sys::gettid_raw() as libc::pid_t;
    if real == recorded {
        return;
    }
    let mine = word(recorded, real);
    for slot in probe(recorded) {
        match slot.compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            // (The same thread asked again, or a thread that reused the
            // id: the latest holder is the one a signal is meant for.)
            Err(held) if recorded_of(held) == recorded => {
                slot.store(mine, Ordering::Release);
                return;
            }
            Err(_) => {}
        }
    }
}

/// The slots a recorded thread id may be in, in probing order.
fn probe(recorded: libc::pid_t) -> impl Iterator<Item = &'static AtomicU64> {
    let start = (recorded as u32 as usize).wrapping_mul(0x9e37_79b9) % THREAD_SLOTS;
    (0..THREAD_SLOTS).map(move |i| &THREADS[(start + i) % THREAD_SLOTS])
}

/// The real process id for `pid` as the program passes it to `kill` (a
/// negative one names a process group: the recorded process's own is
/// mapped too); `pid` itself if it is not the recorded process's.
pub(crate) fn real_pid(pid: libc::pid_t) -> libc::pid_t {
    let mapping = PROCESS.load(Ordering::Relaxed);
    if mapping == 0 || pid == 0 || pid == -1 {
        return pid;
    }
    let (recorded, real) = (recorded_of(mapping), real_of(mapping));
    match pid {
        p if p == recorded => real,
        p if p == -recorded => -real,
        p => p,
    }
}

/// The real thread id for `tid` as the program passes it to `tgkill`;
/// `tid` itself if no thread was handed it.
pub(crate) fn real_tid(tid: libc::pid_t) -> libc::pid_t {
    if tid <= 0 || !replaying() {
        return tid;
    }
    for slot in probe(tid) {
        let held = slot.load(Ordering::Acquire);
        if held == 0 {
            return tid;
        }
        if recorded_of(held) == tid {
            return real_of(held);
        }
    }
    tid
}

/// The real thread or process for `id` as the program knows it, for the
/// calls that take either (`setpriority`, the `sched_*` calls).
pub(crate) fn real_id(id: libc::pid_t) -> libc::pid_t {
    match real_tid(id) {
        same if same == id => real_pid(id),
        real => real,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_hold_both_ids() {
        let w = word(4_194_000, 77);
        assert_eq!((recorded_of(w), real_of(w)), (4_194_000, 77));
    }

    #[test]
    fn ids_not_handed_are_left_alone() {
        // (Not replaying in unit tests: nothing is mapped.)
        assert_eq!(real_pid(1234), 1234);
        assert_eq!(real_pid(-1), -1);
        assert_eq!(real_tid(4321), 4321);
    }
}
