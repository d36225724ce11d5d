//! When a stripe's holder is blocked where the runtime cannot see it, the
//! stripe is handed over to a waiter instead of stalling it indefinitely.
//!
//! A thread keeps the stripes of its last access until its next hook; by
//! then the access has executed. A thread that calls into code the runtime
//! does not see (an uninstrumented library: libgomp's barriers, a raw futex
//! in a helper) and blocks there keeps its stripes, and a thread that needs
//! one would wait for as long as the holder sleeps, forever if the holder
//! waits for it. So a waiter that has waited longer than [`HANDOVER_AFTER_NS`]
//! looks at the holder: if it sleeps in the kernel (state `S` in
//! `/proc/self/task/TID/stat`) outside the runtime, the holder's access is
//! done (nothing separates a hook from its access but the access itself; an
//! access stalled in a page fault sleeps in state `D` and is left alone), and
//! the waiter releases the stripe on the holder's behalf. The holder's own
//! release later finds the stripe no longer its own and skips it.
//!
//! Causality: the sleeper was likely woken by the thread that took its
//! stripe (or by one of the threads running meanwhile), through a call the
//! runtime did not see, so nothing orders its next events after theirs. A
//! thread that finds at its next hook that a stripe was taken from it takes a
//! clock past every clock any thread has published ([`clock_past_all`]), so
//! the merged order stays consistent with the wake-up.
//!
//! "Outside the runtime" is what the guard word says: a thread sets it while
//! it parks on a stripe (it may hold others, for an access not yet logged)
//! and while it performs a real call with its stripes held on purpose (an
//! output, memcpy, a lock-like call whose event is logged after it).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::sys::MAX_THREADS;

/// How long a waiter waits before looking at the holder.
pub(crate) const HANDOVER_AFTER_NS: u64 = 10_000_000;

/// One cache line per thread: each publishes its clock at every event.
#[derive(Debug)]
#[repr(align(64))]
struct Holder {
    kernel_tid: AtomicU32,
    /// Non-zero while the thread must keep its stripes even when asleep.
    guard: AtomicU32,
    /// The clock of the thread's last logged event (a waiter for a kept
    /// stripe spins while its holder's moves: `crate::stripes`).
    clock: AtomicU64,
    /// Stripe + 1 of the read-shared stripe the thread last read without
    /// its lock, 0 if none: cleared at a hook that finds the stripe no
    /// longer shared or that may wait (the read is done by the next hook:
    /// `crate::stripes`, read-shared stripes).
    reading: AtomicU32,
}

static HOLDERS: [Holder; MAX_THREADS] = [const {
    Holder {
        kernel_tid: AtomicU32::new(0),
        guard: AtomicU32::new(0),
        clock: AtomicU64::new(0),
        reading: AtomicU32::new(0),
    }
}; MAX_THREADS];
/// One past the highest logical id registered so far.
static REGISTERED: AtomicU32 = AtomicU32::new(0);

/// Remembers the kernel thread id of logical thread `id` (at registration).
pub(crate) fn set_kernel_tid(id: u32, tid: u32) {
    if let Some(h) = HOLDERS.get(id as usize) {
        h.kernel_tid.store(tid, Ordering::Release);
        h.guard.store(0, Ordering::Release);
        h.reading.store(0, Ordering::Release);
        REGISTERED.fetch_max(id + 1, Ordering::AcqRel);
    }
}

/// Where thread `id` publishes the clock of its last logged event (at
/// every event: the thread keeps this reference rather than its id, which
/// would cost a bounds check and an index each time). An id past the table
/// publishes nowhere anyone looks.
pub(crate) fn clock_slot(id: u32) -> &'static AtomicU64 {
    HOLDERS.get(id as usize).map_or(&NOWHERE, |h| &h.clock)
}

/// [`clock_slot`] of a thread without an id yet.
pub(crate) static NOWHERE: AtomicU64 = AtomicU64::new(0);

/// The clock of thread `id`'s last logged event.
pub(crate) fn clock_of(id: u32) -> u64 {
    HOLDERS
        .get(id as usize)
        .map_or(0, |h| h.clock.load(Ordering::Relaxed))
}

/// The newest clock any thread has published (for a thread whose stripe
/// was taken over while it slept: see the module doc).
pub(crate) fn clock_past_all() -> u64 {
    let registered = REGISTERED.load(Ordering::Acquire) as usize;
    HOLDERS[..registered.min(MAX_THREADS)]
        .iter()
        .map(|h| h.clock.load(Ordering::Acquire))
        .max()
        .unwrap_or(0)
}

/// Thread `id` is about to read `stripe` (read-shared) without its lock:
/// published before the caller looks at the stripe's mode again, with a
/// full fence between, so that a thread ending the stripe's sharing either
/// sees this or is seen (`crate::stripes::Stripe::end_sharing`).
pub(crate) fn start_reading(id: u32, stripe: u32) {
    if let Some(h) = HOLDERS.get(id as usize) {
        // Release: it may replace the mark of the stripe read before, whose
        // waiter must then see this thread's clock (see `stop_reading`).
        h.reading.store(stripe + 1, Ordering::Release);
        core::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// Thread `id`'s read of a read-shared stripe is done (at its next hook).
/// Release: a thread waiting for it then sees the clock it published.
pub(crate) fn stop_reading(id: u32) {
    if let Some(h) = HOLDERS.get(id as usize) {
        h.reading.store(0, Ordering::Release);
    }
}

/// Waits until no thread but `me` is between a read of `stripe` without
/// its lock and its next hook (the caller has just ended the stripe's
/// sharing, with a full fence). A reader asleep outside the runtime, or
/// gone, has done its read (see the module doc). Readers reach their next
/// hook within an access, so this spins, then yields; the thread state is
/// looked at only after [`READER_CHECK_AFTER_NS`].
pub(crate) fn wait_for_readers(stripe: u32, me: u32) {
    let registered = REGISTERED.load(Ordering::Acquire) as usize;
    for (id, h) in HOLDERS[..registered.min(MAX_THREADS)].iter().enumerate() {
        if id != me as usize && h.reading.load(Ordering::Acquire) == stripe + 1 {
            wait_for_reader(id as u32, h, stripe + 1);
        }
    }
}

/// How long a thread ending a stripe's sharing waits for a reader before
/// it looks whether the reader sleeps (a reader that runs reaches its next
/// hook within an access; one descheduled needs its turn on a core).
const READER_CHECK_AFTER_NS: u64 = 200_000;
/// Backoff rounds (exponential, up to 64 pauses each) before yielding.
const READER_SPIN_ROUNDS: u32 = 10;

#[cold]
fn wait_for_reader(id: u32, h: &Holder, tag: u32) {
    let backoff = crossbeam_utils::Backoff::new();
    let mut spins = 0;
    let mut since = None;
    while h.reading.load(Ordering::Acquire) == tag {
        // (`Backoff::spin` alone never reports completion.)
        if spins < READER_SPIN_ROUNDS {
            spins += 1;
            backoff.spin();
            continue;
        }
        let start = *since.get_or_insert_with(crate::sys::monotonic_ns);
        if crate::sys::monotonic_ns().saturating_sub(start) > READER_CHECK_AFTER_NS
            && reader_away(id, h)
        {
            return;
        }
        // SAFETY: no arguments. A raw call: the runtime's own yield
        // wrapper would end the caller's event.
        unsafe { libc::syscall(libc::SYS_sched_yield) };
    }
}

/// The reader's access is done though it has not reached its next hook:
/// it sleeps in the kernel outside the runtime, or its thread is gone.
fn reader_away(id: u32, h: &Holder) -> bool {
    let tid = h.kernel_tid.load(Ordering::Acquire);
    tid == 0 || !crate::sys::thread_exists(tid) || asleep_outside_runtime(id)
}

/// The kernel thread id of logical thread `id`, 0 if unknown.
pub(crate) fn kernel_tid(id: u32) -> u32 {
    HOLDERS
        .get(id as usize)
        .map_or(0, |h| h.kernel_tid.load(Ordering::Acquire))
}

/// Runs `f` with thread `id`'s stripes protected from handover.
#[inline]
pub(crate) fn guarded<R>(id: u32, f: impl FnOnce() -> R) -> R {
    enter_guard(id);
    let r = f();
    leave_guard(id);
    r
}

/// [`guarded`] opened (for a stretch that spans callbacks).
pub(crate) fn enter_guard(id: u32) {
    if let Some(h) = HOLDERS.get(id as usize) {
        h.guard.fetch_add(1, Ordering::SeqCst);
    }
}

/// Closes [`enter_guard`].
pub(crate) fn leave_guard(id: u32) {
    if let Some(h) = HOLDERS.get(id as usize) {
        h.guard.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Thread `id` sleeps in the kernel outside the runtime: its last access
/// is done and its stripes may be handed over.
pub(crate) fn asleep_outside_runtime(id: u32) -> bool {
    let Some(h) = HOLDERS.get(id as usize) else {
        return false;
    };
    let tid = h.kernel_tid.load(Ordering::Acquire);
    if tid == 0 || h.guard.load(Ordering::SeqCst) != 0 {
        return false;
    }
    // Read twice with the guard checked in between: the holder may have
    // woken, re-entered the runtime and parked again meanwhile.
    kernel_state(tid) == Some(b'S') && h.guard.load(Ordering::SeqCst) == 0
}

/// Thread `id` sleeps in the kernel (state `S` or `D`), inside the
/// runtime or not: it is blocked, not merely waiting for a processor.
pub(crate) fn sleeps_in_kernel(id: u32) -> bool {
    let tid = kernel_tid(id);
    tid != 0 && matches!(kernel_state(tid), Some(b'S' | b'D'))
}

/// The state letter of kernel thread `tid` of this process.
fn kernel_state(tid: u32) -> Option<u8> {
    let mut path = [0u8; 48];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 20];
    let d = crate::sys::decimal(u64::from(tid), &mut digits);
    path[prefix.len()..prefix.len() + d.len()].copy_from_slice(d);
    let end = prefix.len() + d.len();
    path[end..end + 5].copy_from_slice(b"/stat");
    let mut buf = [0u8; 512];
    // `path` is NUL-terminated (zero-filled); open for a moment only, out
    // of the program's way (crate::descriptors). The caller waits for
    // another thread, maybe the lock's holder: if the lock is busy, the
    // state is unknown (no handover this time).
    let n = crate::descriptors::try_locked(|| {
        let fd = crate::sys::open_raw(&path, libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return -1;
        }
        let n = crate::sys::read_raw(fd, &mut buf);
        crate::sys::close_raw(fd);
        n
    })?;
    let text = buf.get(..usize::try_from(n).ok()?)?;
    // "tid (comm) S ...": the command may hold spaces and parentheses, so
    // the state is the first letter after the last ')'.
    let close = text.iter().rposition(|&b| b == b')')?;
    text[close + 1..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}
