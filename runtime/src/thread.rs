//! Per-thread state and the table of threads by logical id.
//!
//! Logical ids: 0 is the main thread, then creation order (taken by the
//! creating thread inside pthread_create, under the recorded create event,
//! so replay can hand out the same ids).

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::record::RecordThread;
use crate::replay::ReplayThread;
use crate::sys::MAX_THREADS;

pub(crate) const NO_THREAD: u32 = u32::MAX;
/// `ThreadState::untracked` bits beside the busy count (the low bits).
const UNREGISTERED: u32 = 1 << 31;
const EXITED: u32 = 1 << 30;
const BUSY: u32 = EXITED - 1;
/// The main thread's logical id.
pub(crate) const MAIN_THREAD: u32 = 0;
const READ_LOCKS: usize = 8;

/// What the runtime keeps for the calling thread: what both modes need,
/// and each mode's own part. Only the owning thread touches it; `busy` keeps
/// the runtime from re-entering itself (the runtime calls memcpy, the signal
/// handler may interrupt a hook).
#[derive(Debug)]
pub(crate) struct ThreadState {
    pub(crate) id: Cell<u32>,
    /// Zero while the thread is tracked: registered ([`UNREGISTERED`]
    /// clear), not ended ([`EXITED`] clear) and not inside the runtime
    /// (the busy count in the low bits). One word, so that every hook
    /// checks all three with one compare.
    untracked: Cell<u32>,
    /// Read-write locks this thread holds for reading (to tell the two
    /// kinds of pthread_rwlock_unlock apart).
    read_locks: Cell<[usize; READ_LOCKS]>,
    pub(crate) record: RecordThread,
    pub(crate) replay: ReplayThread,
    /// The thread's recorded input (record and replay).
    pub(crate) input: crate::input::ThreadInput,
}

/// Where the replay fast path of the access hooks (written in assembly,
/// `crate::replay::counting_entry!`) finds the fields it reads.
pub(crate) mod offsets {
    use super::ThreadState;
    /// `ThreadState::untracked`, a `u32` (zero while tracked).
    pub(crate) const UNTRACKED: usize = core::mem::offset_of!(ThreadState, untracked);
    /// `ThreadState::replay`.
    pub(crate) const REPLAY: usize = core::mem::offset_of!(ThreadState, replay);
    const _: () = assert!(size_of::<core::cell::Cell<u32>>() == 4);
}

impl ThreadState {
    const fn new() -> ThreadState {
        ThreadState {
            id: Cell::new(NO_THREAD),
            untracked: Cell::new(UNREGISTERED),
            read_locks: Cell::new([0; READ_LOCKS]),
            record: RecordThread::new(),
            replay: ReplayThread::new(),
            input: crate::input::ThreadInput::new(),
        }
    }

    /// A registered, live thread not already inside the runtime.
    #[inline(always)]
    pub(crate) fn is_tracked(&self) -> bool {
        self.untracked.get() == 0
    }

    /// Gives the thread its logical id: it is tracked from now on (unless
    /// busy).
    pub(crate) fn register(&self, id: u32) {
        debug_assert_ne!(id, NO_THREAD);
        self.id.set(id);
        self.untracked.set(self.untracked.get() & !UNREGISTERED);
    }

    /// Registered, and not yet ended.
    pub(crate) fn is_live(&self) -> bool {
        self.untracked.get() & (UNREGISTERED | EXITED) == 0
    }

    /// Its exit event is logged: what it still runs is glibc's clean-up.
    pub(crate) fn has_ended(&self) -> bool {
        self.untracked.get() & EXITED != 0
    }

    /// The thread has ended its part: no hook of it is tracked any more.
    pub(crate) fn mark_exited(&self) {
        self.untracked.set(self.untracked.get() | EXITED);
    }

    pub(crate) fn enter(&self) {
        debug_assert!(self.untracked.get() & BUSY < BUSY, "busy count overflows");
        self.untracked.set(self.untracked.get() + 1);
    }

    pub(crate) fn leave(&self) {
        debug_assert!(self.untracked.get() & BUSY > 0, "left more than entered");
        self.untracked.set(self.untracked.get() - 1);
    }

    pub(crate) fn note_read_lock(&self, lock: usize) {
        let mut locks = self.read_locks.get();
        if let Some(slot) = locks.iter_mut().find(|l| **l == 0) {
            *slot = lock;
        }
        self.read_locks.set(locks);
    }

    /// True (and forgotten) if `lock` was held for reading.
    pub(crate) fn take_read_lock(&self, lock: usize) -> bool {
        let mut locks = self.read_locks.get();
        let found = locks.iter_mut().find(|l| **l == lock).map(|slot| *slot = 0);
        self.read_locks.set(locks);
        found.is_some()
    }
}

thread_local! {
    pub(crate) static THREAD: ThreadState = const { ThreadState::new() };
}

/// One created thread: who it is, and what it will run.
#[derive(Debug)]
struct ThreadSlot {
    /// Set (and futex-woken) once the thread has logged its exit.
    exited: AtomicU32,
    /// Set inside the thread's last event, on glibc's stack cache: from
    /// then on only glibc's teardown runs on it, which may hand its stack
    /// back to the cache.
    stack_handed_back: AtomicU32,
    /// Set once the kernel has seen the thread end after that.
    gone: AtomicU32,
    pthread: AtomicU64,
    start: AtomicUsize,
    arg: AtomicUsize,
    parent: AtomicU32,
}

static SLOTS: [ThreadSlot; MAX_THREADS] = [const {
    ThreadSlot {
        exited: AtomicU32::new(0),
        stack_handed_back: AtomicU32::new(0),
        gone: AtomicU32::new(0),
        pthread: AtomicU64::new(0),
        start: AtomicUsize::new(0),
        arg: AtomicUsize::new(0),
        parent: AtomicU32::new(NO_THREAD),
    }
}; MAX_THREADS];

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Reserves the next logical id for a thread about to be created.
pub(crate) fn reserve_id(parent: u32, start: usize, arg: usize) -> Option<u32> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    claim_id(id, parent, start, arg)
}

/// Takes a given id (replay: the id the recording gave this thread).
pub(crate) fn claim_id(id: u32, parent: u32, start: usize, arg: usize) -> Option<u32> {
    NEXT_ID.fetch_max(id + 1, Ordering::Relaxed);
    let slot = SLOTS.get(id as usize)?;
    slot.exited.store(0, Ordering::Relaxed);
    slot.stack_handed_back.store(0, Ordering::Relaxed);
    slot.gone.store(0, Ordering::Relaxed);
    crate::handover::set_kernel_tid(id, 0);
    slot.start.store(start, Ordering::Relaxed);
    slot.arg.store(arg, Ordering::Relaxed);
    slot.parent.store(parent, Ordering::Relaxed);
    Some(id)
}

/// The start routine, its argument and the parent of thread `id`.
pub(crate) fn start_of(id: u32) -> (usize, usize, u32) {
    let slot = &SLOTS[id as usize];
    (
        slot.start.load(Ordering::Relaxed),
        slot.arg.load(Ordering::Relaxed),
        slot.parent.load(Ordering::Relaxed),
    )
}

/// Marks thread `id`'s exit as logged and wakes joiners waiting for it.
pub(crate) fn mark_exited(id: u32) {
    if let Some(slot) = SLOTS.get(id as usize) {
        slot.exited.store(1, Ordering::Release);
        crate::sys::futex_wake_all(&slot.exited);
    }
}

/// Thread `id` has logged its exit.
pub(crate) fn has_exited(id: u32) -> bool {
    SLOTS
        .get(id as usize)
        .is_some_and(|slot| slot.exited.load(Ordering::Acquire) != 0)
}

/// Waits until thread `id` has logged its exit, or is gone without doing
/// so (cancelled): the real join then decides.
pub(crate) fn wait_exited(id: u32) {
    let Some(slot) = SLOTS.get(id as usize) else {
        return;
    };
    while slot.exited.load(Ordering::Acquire) == 0 {
        let tid = crate::handover::kernel_tid(id);
        if tid != 0 && !crate::sys::thread_exists(tid) {
            return;
        }
        crate::sys::futex_wait(&slot.exited, 0, 50_000_000);
    }
}

/// Threads whose stack was handed back and which the kernel may not have
/// ended yet.
static ENDING: AtomicU32 = AtomicU32::new(0);

/// Marks thread `id`'s stack as handed back (inside its thread-stacks
/// event, so that whoever is ordered after that event sees the mark).
pub(crate) fn mark_stack_handed_back(id: u32) {
    if let Some(slot) = SLOTS.get(id as usize) {
        ENDING.fetch_add(1, Ordering::AcqRel);
        slot.stack_handed_back.store(1, Ordering::Release);
    }
}

/// Waits until every thread whose stack was handed back has really ended.
///
/// glibc reuses a cached thread stack only once the kernel has cleared its
/// thread's id, which happens after the thread's last event, at a moment
/// nothing records. pthread_create makes an allocation (a new thread
/// control block) only when it finds no reusable stack, so which of the
/// two happens must not depend on that moment: it runs, in record and
/// replay alike, once every thread ordered before it on the stack cache is
/// gone. Main (id 0) is never waited for: its stack is not glibc's.
pub(crate) fn wait_until_handed_back_stacks_are_free() {
    if ENDING.load(Ordering::Acquire) == 0 {
        return;
    }
    let created = NEXT_ID.load(Ordering::Relaxed).min(MAX_THREADS as u32);
    for id in 1..created {
        let slot = &SLOTS[id as usize];
        if slot.stack_handed_back.load(Ordering::Acquire) == 0
            || slot.gone.load(Ordering::Acquire) != 0
        {
            continue;
        }
        wait_gone(id);
        if slot.gone.swap(1, Ordering::AcqRel) == 0 {
            ENDING.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Waits until the kernel no longer knows thread `id` (its exit is short
/// once its last event is logged: only glibc's teardown is left).
fn wait_gone(id: u32) {
    let tid = crate::handover::kernel_tid(id);
    if tid == 0 {
        return;
    }
    let mut spins = 0u32;
    // Raw system calls: the runtime's own sleep and yield wrappers would
    // end the event this runs in (record releases its stripes, replay
    // publishes it as done).
    while crate::sys::thread_exists(tid) {
        spins += 1;
        if spins < 64 {
            // SAFETY: no arguments.
            unsafe { libc::syscall(libc::SYS_sched_yield) };
        } else {
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000,
            };
            // SAFETY: a valid timespec; an interrupted sleep just loops.
            unsafe {
                libc::syscall(
                    libc::SYS_nanosleep,
                    &pause as *const libc::timespec,
                    core::ptr::null_mut::<libc::timespec>(),
                )
            };
        }
    }
}

/// Records the kernel id of the calling thread, logical id `id`.
pub(crate) fn set_kernel_tid(id: u32) {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    crate::handover::set_kernel_tid(id, tid);
}

/// Thread `id` is `pthread` (its creator and the thread itself each say
/// so, whichever comes first). glibc hands a new thread the descriptor of
/// one that is gone (joined, or detached and ended), so any other thread
/// still named `pthread` is that one: it is named so no longer. By logical
/// id alone the newest would not do: ids are taken before the creators
/// take their turns, so a thread with a lower id can be created later and
/// get the descriptor of one with a higher id (a recursive `std::async`
/// joined the gone thread's id, and then, holding the stack cache's
/// stripe, waited in the real join for a thread that needed that stripe to
/// end: record hung).
pub(crate) fn set_pthread(id: u32, pthread: u64) {
    let Some(slot) = SLOTS.get(id as usize) else {
        return;
    };
    let created = NEXT_ID.load(Ordering::Relaxed).min(MAX_THREADS as u32);
    for (other, gone) in SLOTS.iter().enumerate().take(created as usize) {
        if other != id as usize {
            let _ = gone
                .pthread
                .compare_exchange(pthread, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
    slot.pthread.store(pthread, Ordering::Release);
}

/// The logical id of a pthread_t (threads created through the runtime):
/// the one thread named so ([`set_pthread`]).
pub(crate) fn id_of_pthread(pthread: u64) -> Option<u32> {
    let created = NEXT_ID.load(Ordering::Relaxed).min(MAX_THREADS as u32);
    (0..created)
        .rev()
        .find(|&id| SLOTS[id as usize].pthread.load(Ordering::Acquire) == pthread)
}
