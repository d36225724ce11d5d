//! Per-thread state and the table of threads by logical id.
//!
//! Logical ids: 0 is the main thread, then creation order (taken by the
//! creating thread inside pthread_create, under the recorded create event,
//! so replay can hand out the same ids).

use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::log::LogWriter;
use crate::replay::{Pending, Plan};
use crate::stripes::StripeSet;

pub const NO_THREAD: u32 = u32::MAX;
/// Most threads one recording can have (over its whole life).
pub const MAX_THREADS: usize = 1 << 14;
const READ_LOCKS: usize = 8;

/// What the runtime keeps for the calling thread. Only the owning thread
/// touches it; `busy` keeps the runtime from re-entering itself (the runtime
/// calls memcpy, the signal handler may interrupt a hook).
#[derive(Debug)]
pub struct ThreadState {
    pub id: Cell<u32>,
    busy: Cell<u32>,
    pub exited: Cell<bool>,
    /// Entries logged so far (the next entry's per-thread index).
    pub index: Cell<u64>,
    pub clock: Cell<u64>,
    /// Stripes kept locked until the next hook.
    pub held: Cell<StripeSet>,
    /// Above zero inside an interposed call that keeps its stripe locked
    /// across the real call (output, pthread_create), so that an allocator
    /// call made inside it (stdio's buffer, the new thread's DTV) nests
    /// instead of releasing that stripe.
    pub nest_depth: Cell<u32>,
    /// Read-write locks this thread holds for reading (to tell the two
    /// kinds of pthread_rwlock_unlock apart).
    read_locks: Cell<[usize; READ_LOCKS]>,
    log: UnsafeCell<LogWriter>,
    /// Set once a log write failed (disk full): reported once.
    pub log_failed: Cell<bool>,
    /// Replay: this thread's plan, the next point and its event index.
    pub plan: Cell<Plan>,
    pub cursor: Cell<u64>,
    pub next_point: Cell<u64>,
    /// Replay: the next point's waits are already done (blocking calls wait
    /// before the real call, then count the event).
    pub waited: Cell<bool>,
    /// Replay: what the last point asks to publish once it has completed.
    pub pending: Cell<Pending>,
    /// Replay: hash of the events so far (compared at thread exit).
    pub hash: Cell<u64>,
}

impl ThreadState {
    const fn new() -> ThreadState {
        ThreadState {
            id: Cell::new(NO_THREAD),
            busy: Cell::new(0),
            exited: Cell::new(false),
            index: Cell::new(0),
            clock: Cell::new(0),
            held: Cell::new(StripeSet::EMPTY),
            nest_depth: Cell::new(0),
            read_locks: Cell::new([0; READ_LOCKS]),
            log: UnsafeCell::new(LogWriter::CLOSED),
            log_failed: Cell::new(false),
            plan: Cell::new(Plan::NONE),
            cursor: Cell::new(0),
            next_point: Cell::new(u64::MAX),
            waited: Cell::new(false),
            pending: Cell::new(Pending::Nothing),
            hash: Cell::new(0),
        }
    }

    /// A registered, live thread not already inside the runtime.
    #[inline(always)]
    pub fn is_tracked(&self) -> bool {
        self.id.get() != NO_THREAD && self.busy.get() == 0 && !self.exited.get()
    }

    pub fn enter(&self) {
        self.busy.set(self.busy.get() + 1);
    }

    pub fn leave(&self) {
        self.busy.set(self.busy.get() - 1);
    }

    pub fn is_busy(&self) -> bool {
        self.busy.get() != 0
    }

    /// Runs `f` with the log writer. Callers hold `busy`, so `f` cannot be
    /// re-entered on this thread (hooks and the signal handler check it).
    pub fn with_log<R>(&self, f: impl FnOnce(&mut LogWriter) -> R) -> R {
        debug_assert!(self.is_busy());
        // SAFETY: thread-local, and `busy` excludes every re-entrant path, so
        // this is the only reference.
        f(unsafe { &mut *self.log.get() })
    }

    pub fn note_read_lock(&self, lock: usize) {
        let mut locks = self.read_locks.get();
        if let Some(slot) = locks.iter_mut().find(|l| **l == 0) {
            *slot = lock;
        }
        self.read_locks.set(locks);
    }

    /// True (and forgotten) if `lock` was held for reading.
    pub fn take_read_lock(&self, lock: usize) -> bool {
        let mut locks = self.read_locks.get();
        let found = locks.iter_mut().find(|l| **l == lock).map(|slot| *slot = 0);
        self.read_locks.set(locks);
        found.is_some()
    }
}

thread_local! {
    pub static THREAD: ThreadState = const { ThreadState::new() };
}

/// One created thread: who it is, and what it will run.
#[derive(Debug)]
struct ThreadSlot {
    /// Set (and futex-woken) once the thread has logged its exit.
    exited: AtomicU32,
    kernel_tid: AtomicU32,
    pthread: AtomicU64,
    start: AtomicUsize,
    arg: AtomicUsize,
    parent: AtomicU32,
}

static SLOTS: [ThreadSlot; MAX_THREADS] = [const {
    ThreadSlot {
        exited: AtomicU32::new(0),
        kernel_tid: AtomicU32::new(0),
        pthread: AtomicU64::new(0),
        start: AtomicUsize::new(0),
        arg: AtomicUsize::new(0),
        parent: AtomicU32::new(NO_THREAD),
    }
}; MAX_THREADS];

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Reserves the next logical id for a thread about to be created.
pub fn reserve_id(parent: u32, start: usize, arg: usize) -> Option<u32> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    claim_id(id, parent, start, arg)
}

/// Takes a given id (replay: the id the recording gave this thread).
pub fn claim_id(id: u32, parent: u32, start: usize, arg: usize) -> Option<u32> {
    NEXT_ID.fetch_max(id + 1, Ordering::Relaxed);
    let slot = SLOTS.get(id as usize)?;
    slot.exited.store(0, Ordering::Relaxed);
    slot.kernel_tid.store(0, Ordering::Relaxed);
    slot.start.store(start, Ordering::Relaxed);
    slot.arg.store(arg, Ordering::Relaxed);
    slot.parent.store(parent, Ordering::Relaxed);
    Some(id)
}

/// The start routine, its argument and the parent of thread `id`.
pub fn start_of(id: u32) -> (usize, usize, u32) {
    let slot = &SLOTS[id as usize];
    (
        slot.start.load(Ordering::Relaxed),
        slot.arg.load(Ordering::Relaxed),
        slot.parent.load(Ordering::Relaxed),
    )
}

/// Marks thread `id`'s exit as logged and wakes joiners waiting for it.
pub fn mark_exited(id: u32) {
    if let Some(slot) = SLOTS.get(id as usize) {
        slot.exited.store(1, Ordering::Release);
        crate::sys::futex_wake_all(&slot.exited);
    }
}

/// Waits until thread `id` has logged its exit, or is gone without doing
/// so (cancelled): the real join then decides.
pub fn wait_exited(id: u32) {
    let Some(slot) = SLOTS.get(id as usize) else {
        return;
    };
    while slot.exited.load(Ordering::Acquire) == 0 {
        let tid = slot.kernel_tid.load(Ordering::Acquire);
        // SAFETY: signal 0 only checks that the thread exists.
        let gone = tid != 0
            && unsafe { libc::syscall(libc::SYS_tgkill, crate::sys::getpid_raw(), tid, 0) } != 0;
        if gone {
            return;
        }
        crate::sys::futex_wait(&slot.exited, 0, 50_000_000);
    }
}

/// Records the kernel id of the calling thread, logical id `id`.
pub fn set_kernel_tid(id: u32) {
    if let Some(slot) = SLOTS.get(id as usize) {
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        slot.kernel_tid.store(tid, Ordering::Release);
    }
}

pub fn set_pthread(id: u32, pthread: u64) {
    if let Some(slot) = SLOTS.get(id as usize) {
        slot.pthread.store(pthread, Ordering::Release);
    }
}

/// The logical id of a pthread_t (threads created through the runtime).
/// pthread_t values are reused after a join, so the newest match wins.
pub fn id_of_pthread(pthread: u64) -> Option<u32> {
    let created = NEXT_ID.load(Ordering::Relaxed).min(MAX_THREADS as u32);
    (0..created)
        .rev()
        .find(|&id| SLOTS[id as usize].pthread.load(Ordering::Acquire) == pthread)
}
