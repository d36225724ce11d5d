//! The event core: every hook and interposed call ends up here, in record
//! and in replay mode alike, so both modes see the same events in the same
//! per-thread order (the index of an event is its position in that order).
//!
//! Each shape is named for where the event falls relative to the real
//! operation; that decides what record holds while it runs and when replay
//! waits and publishes:
//!
//! | shape | the event is logged | replay waits |
//! |---|---|---|
//! | [`log_before_access`] | at the compiler hook, before the access; stripes kept until the next hook | at the hook |
//! | [`log_after_call`] | after the call, stripes held across it (with its result) | before the call |
//! | [`log_after_call_or_recorded`] | the same; replay may return the recorded result instead | before the call |
//! | [`log_after_blocking_call`] | after the call, stripes released before it (it may block) | before the call |
//! | [`log_after_nested_call`] | after the call, whose own events (allocations) come first | before the call, for the event's predecessors too |
//! | [`log_output_before_call`] | before the output, whose own events come after | before the call |
//! | [`log_after_copy`] | after memcpy, both ranges held across it | before the copy |
//! | [`log_event`], [`log_outside_value`] | no call: thread life, exit, time and pid | at the event |

mod outputs;

use rr_lite_trace::plan::flags;
use rr_lite_trace::state::{Divergence, ThreadStatus};
use rr_lite_trace::{EventKind, PRIVATE_CLOCK_STEP};

pub(crate) use outputs::drain_outputs;

use crate::mode::{self, Mode};
use crate::record::{Acquired, PlainAccess};
use crate::replay::{self, DivergenceDetail};
use crate::stripes::{StripeSet, plain_stripe};
use crate::thread::ThreadState;

/// What replay does for an emulated call.
#[derive(Debug)]
pub(crate) enum Replayed<R> {
    /// Return this (built from the recorded result), skip the real call.
    Return(R),
    /// Call the real function; its result must equal the recorded one.
    CallReal,
}

/// Runs `f` on the calling thread's state if the runtime tracks this thread.
#[inline(always)]
pub(crate) fn with_tracked<R>(f: impl FnOnce(&ThreadState, Mode) -> R) -> Option<R> {
    let mode = mode::current();
    if mode == Mode::Inert {
        return None;
    }
    let Some(t) = crate::fast_tls::registered() else {
        let _ = untracked_thread(mode);
        return None;
    };
    t.is_tracked().then(|| f(t, mode))
}

/// Whether the calling thread has logged its exit event while recording or
/// replaying: what it runs now is glibc's per-thread clean-up, unrecorded.
pub(crate) fn in_ended_thread() -> bool {
    if mode::current() == Mode::Inert {
        return false;
    }
    crate::fast_tls::registered().is_some_and(|t| t.has_ended())
}

/// A hook or wrapper ran on a thread the runtime never registered (started
/// by a path it does not interpose, e.g. a raw `clone`, or past its thread
/// table). Its events cannot be recorded or ordered, and dropping them
/// silently would make a replay that looks right but is not: record marks
/// the trace (the recorder then refuses to call it replayable), replay
/// reports a divergence.
/// Returns [`LEFT_IN_RAX`], for the access hooks.
#[cold]
#[inline(never)]
fn untracked_thread(mode: Mode) -> u64 {
    use core::sync::atomic::{AtomicBool, Ordering};
    static NOTED: AtomicBool = AtomicBool::new(false);
    if NOTED.swap(true, Ordering::AcqRel) {
        return LEFT_IN_RAX;
    }
    if mode == Mode::Replay {
        replay::diverge_untracked();
    }
    crate::sys::warn(&[
        b"a thread rr-lite did not start ran instrumented code: its accesses are not recorded \
          and the trace is marked incomplete",
    ]);
    crate::problems::note(&[
        b"a thread that rr-lite did not start (not through pthread_create or thrd_create: \
          a SIGEV_THREAD timer's or notification's thread, or one a library started itself) \
          ran instrumented code: its accesses are not in the trace",
    ]);
    LEFT_IN_RAX
}

/// Runs `f` on the calling thread's state, known to be tracked (a
/// `with_tracked` check just passed): through the fast slot, not
/// `thread_local!`.
#[inline(always)]
fn on_tracked_thread<R>(f: impl FnOnce(&ThreadState) -> R) -> R {
    let state = crate::fast_tls::current();
    debug_assert!(!state.is_null(), "only called for registered threads");
    // SAFETY: as in `fast_tls::registered`: the slot holds this thread's
    // own state, which lives as long as the thread; not null here, since
    // the caller's `with_tracked` check found it.
    f(unsafe { &*state })
}

/// Runs `f` marked busy (nothing it calls re-enters the runtime).
#[inline(always)]
fn busy<R>(t: &ThreadState, f: impl FnOnce() -> R) -> R {
    t.enter();
    let r = f();
    t.leave();
    r
}

/// Runs a real call whose inside is not events (the runtime stands for the
/// whole call with one event of its own): the thread is marked busy while
/// in it, so that the calls it makes are not logged.
pub(crate) fn quietly<R>(op: impl FnOnce() -> R) -> R {
    match with_tracked(|_, mode| mode) {
        Some(_) => on_tracked_thread(|t| busy(t, op)),
        None => op(),
    }
}

/// The end of the thread's previous event: record unlocks its stripes,
/// replay publishes its progress. At function entry/exit and before any
/// call that may block.
pub(crate) fn finish_previous(t: &ThreadState, mode: Mode) {
    match mode {
        Mode::Record => t.record.release_held(),
        Mode::Replay => replay::publish_pending(&t.replay),
        Mode::Inert => {}
    }
}

/// [`finish_previous`] for the calling thread.
#[inline]
pub(crate) fn release() {
    with_tracked(|t, mode| busy(t, || finish_previous(t, mode)));
}

/// A hook that is not an event (function entry and exit): record gives
/// back the last access's stripes, or keeps them for the quantum
/// (`crate::quantum`); replay publishes its progress.
#[inline]
pub(crate) fn pass_hook() {
    with_tracked(|t, mode| {
        busy(t, || match mode {
            Mode::Record => t.record.pass_hook(),
            _ => finish_previous(t, mode),
        })
    });
}

/// Before a real call that may block and is not itself an event (sleep,
/// read, poll): record releases the thread's stripes; replay publishes all
/// its events as done.
pub(crate) fn before_blocking() {
    before_wait(replay::publish_all);
}

/// Record: gives back the stripes and tells the chaos scheduler; replay:
/// `publish` (all the thread's events done, passing its turn on).
fn before_wait(publish: fn(&replay::ReplayThread)) {
    with_tracked(|t, mode| {
        busy(t, || match mode {
            Mode::Replay => publish(&t.replay),
            _ => {
                finish_previous(t, mode);
                crate::chaos::blocking(t.id.get());
            }
        })
    });
}

/// [`before_blocking`] where the thread goes back into a library's own
/// wait that the runtime does not see (an OpenMP member returning to its
/// runtime's dock): replay does not stop there even after the thread's last
/// recorded event, since the library still has work to do (the team's final
/// barrier the starting thread waits for).
pub(crate) fn before_hidden_wait() {
    before_wait(replay::publish_all_and_go_on);
}

/// A real call that may block until time passes or input arrives, and is
/// not itself an event (sleep, poll, read): record releases the thread's
/// stripes; replay publishes everything and marks the thread sleeping,
/// which neither the watchdog nor a turn skip takes for stuck.
pub(crate) fn sleeping_call<R>(op: impl FnOnce() -> R) -> R {
    call_between_events(ThreadStatus::Sleeping, op)
}

/// A real call that may block and is not itself an event, with no order to
/// keep (a barrier whose arrival and departure are events of their own):
/// record releases the thread's stripes, replay publishes everything and
/// marks the thread blocked for the watchdog. Replay waits for the
/// predecessors of the next event only after the call, since the call
/// itself waits for the other threads.
pub(crate) fn blocking_call<R>(op: impl FnOnce() -> R) -> R {
    call_between_events(ThreadStatus::Blocked, op)
}

/// [`blocking_call`] for a library's own waiting and waking that is not an
/// event (libomp's mutexes and condition variables), which may also happen
/// inside a call whose event keeps its stripe on purpose (a libomp entry
/// point): there, record keeps the stripes, which the call is not waiting
/// for. What woke the thread is not an event either: its next event takes
/// a clock past every thread's, so that the merged order (sequential
/// replay) puts it after what came before the wake-up.
pub(crate) fn hidden_blocking_call<R>(op: impl FnOnce() -> R) -> R {
    let nested = with_tracked(|t, mode| mode == Mode::Record && t.record.is_nested());
    let result = if nested == Some(true) {
        op()
    } else {
        blocking_call(op)
    };
    after_hidden_sync_with_all();
    result
}

/// A real call between two events, with the thread's replay status
/// `status` while in it.
fn call_between_events<R>(status: ThreadStatus, op: impl FnOnce() -> R) -> R {
    match with_tracked(|_, mode| mode) {
        Some(Mode::Replay) => on_tracked_thread(|t| {
            busy(t, || replay::publish_all(&t.replay));
            in_real_call_as(t, status, op)
        }),
        Some(_) => {
            before_blocking();
            op()
        }
        None => op(),
    }
}

/// Runs a real call that may block before the thread's next event (the FILE
/// lock before an output): record releases the thread's stripes first;
/// replay also waits for the recorded predecessors of that next event, so
/// the call happens in the recorded order, and marks the thread blocked for
/// the watchdog while in it.
pub(crate) fn before_next_event<R>(op: impl FnOnce() -> R) -> R {
    match with_tracked(|_, mode| mode) {
        Some(Mode::Replay) => on_tracked_thread(|t| {
            busy(t, || {
                replay::publish_all(&t.replay);
                replay::wait_next(&t.replay);
            });
            in_real_call(t, op)
        }),
        Some(_) => {
            before_blocking();
            op()
        }
        None => op(),
    }
}

/// Replay: runs a real call that may block with the thread marked blocked
/// (the watchdog counts it as stuck only if everything else is).
fn in_real_call<R>(t: &ThreadState, op: impl FnOnce() -> R) -> R {
    in_real_call_as(t, ThreadStatus::Blocked, op)
}

/// Replay: runs a real call with the thread's status `status` meanwhile.
fn in_real_call_as<R>(t: &ThreadState, status: ThreadStatus, op: impl FnOnce() -> R) -> R {
    busy(t, || replay::set_status(&t.replay, status));
    let r = op();
    busy(t, || replay::set_status(&t.replay, ThreadStatus::Running));
    r
}

/// What every access hook leaves in `rax` for its caller, which declared
/// it `void`: the same in every mode. A program that reads `rax` after a
/// call of an instrumented function whose last act was a hook (NPB IS
/// calls its `double timer_read()` undeclared, taking an `int`) then reads
/// the same at record and at replay, whose hooks return from other code
/// (it printed another time at every replay). Every path returns it, so
/// that the hooks still tail-call the record half.
pub(crate) const LEFT_IN_RAX: u64 = 0;

/// A compiler-instrumented access: logged at the hook; the access runs
/// after the hook returns, so record keeps the stripes (replay: the
/// publication) until the thread's next hook. Returns [`LEFT_IN_RAX`].
#[inline]
pub(crate) fn log_before_access(kind: EventKind, addr: u64, size: u64, site: u64) -> u64 {
    at_access(kind, addr, site, |t| {
        record_access(t, kind, addr, size, site)
    })
}

/// [`log_before_access`] for a hook whose kind and size are constants (the
/// compiler's sized hooks, `KIND` an `EventKind` code): its record half is
/// compiled once per hook with both folded in, so the compact tag, the
/// single-stripe test and whether it writes cost nothing at run time.
#[inline(always)]
pub(crate) fn log_sized_access<const KIND: u8, const SIZE: u64>(addr: u64, site: u64) -> u64 {
    at_access(kind_of(KIND), addr, site, |t| {
        record_sized_access::<KIND, SIZE>(t, addr, site)
    })
}

/// What every access hook does: replay counts the access inline; record
/// calls `record`, one out-of-line call. Returns [`LEFT_IN_RAX`].
#[inline(always)]
fn at_access(
    kind: EventKind,
    addr: u64,
    site: u64,
    record: impl FnOnce(&ThreadState) -> u64,
) -> u64 {
    // (`with_tracked` spelled out: its call of `untracked_thread` before
    // returning made every hook save a register for it.)
    let mode = mode::current();
    if mode == Mode::Inert {
        return LEFT_IN_RAX;
    }
    let Some(t) = crate::fast_tls::registered() else {
        return untracked_thread(mode);
    };
    if !t.is_tracked() {
        return LEFT_IN_RAX;
    }
    if mode == Mode::Replay {
        // Nothing below calls an interposed function (waits are raw futex
        // calls), so the thread need not be marked busy.
        replay::count_access(&t.replay, kind, addr, site);
        return LEFT_IN_RAX;
    }
    record(t)
}

/// The `EventKind` of a hook's constant code (folded where it is inlined).
#[inline(always)]
fn kind_of(code: u8) -> EventKind {
    let kind = EventKind::from_code(code);
    debug_assert!(kind.is_some(), "hook with an unknown kind code {code}");
    kind.unwrap_or(EventKind::Read)
}

/// The record half of [`log_sized_access`], out of line (as
/// [`record_access`]), once per kind and size.
#[inline(never)]
fn record_sized_access<const KIND: u8, const SIZE: u64>(
    t: &ThreadState,
    addr: u64,
    site: u64,
) -> u64 {
    record_access_here(t, kind_of(KIND), addr, SIZE, site);
    LEFT_IN_RAX
}

/// The record half of [`log_before_access`], out of line: the replay half,
/// a few instructions, is then inlined into every hook (with both inline,
/// neither was, and a replayed event paid a call and its arguments' trip
/// through memory).
#[inline(never)]
fn record_access(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64) -> u64 {
    record_access_here(t, kind, addr, size, site);
    LEFT_IN_RAX
}

/// What [`record_access`] and [`record_sized_access`] do, inlined into
/// each (no closure: one would be compiled once for every kind and size).
#[inline(always)]
fn record_access_here(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64) {
    t.enter();
    log_plain_access(t, kind, addr, size, site);
    t.leave();
}

/// Locks and logs a plain access, the thread marked busy: the fast path
/// inline (a stripe the thread holds from an earlier access, or a
/// read-shared one), the rest out of line.
#[inline(always)]
fn log_plain_access(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64) {
    let quantum = t.record.fast_quantum();
    if quantum != 0
        && let Some(stripe) = StripeSet::single_data_stripe(addr, size).map(plain_stripe)
    {
        let access = PlainAccess {
            kind,
            addr,
            size,
            site,
        };
        if !logged_on_the_fast_path(t, access, stripe, quantum) {
            // (The fast path tried already: straight to the general one.)
            log_plain_access_generally(t, kind, addr, size, site);
        }
        return;
    }
    log_plain_access_slowly(t, kind, addr, size, site);
}

/// The fast path of a plain access on one `stripe` under `quantum`: a
/// read of a read-shared stripe without its lock, or the stripe the
/// thread holds from an earlier access. False (nothing logged, the last
/// lock-free read over) if neither applies.
#[inline(always)]
fn logged_on_the_fast_path(
    t: &ThreadState,
    access: PlainAccess,
    stripe: u32,
    quantum: u32,
) -> bool {
    let writes = access.kind.access() != rr_lite_trace::Access::Read;
    if !writes && t.record.try_shared_read(stripe, quantum, access) {
        return true;
    }
    // The last read without a lock is done: its mark stays while the
    // stripe is still read-shared (no fence when the thread reads it
    // again).
    t.record.stop_reading_unless_shared();
    if !t.record.hold_access_fast(stripe, quantum, writes) {
        return false;
    }
    t.record
        .append_on_stripe(stripe, access, PRIVATE_CLOCK_STEP);
    true
}

/// [`log_plain_access`] off its gate: under chaos, inside calls, without
/// the quantum, or for an access on several stripes.
#[cold]
#[inline(never)]
fn log_plain_access_slowly(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64) {
    let access = PlainAccess {
        kind,
        addr,
        size,
        site,
    };
    // (The quantum, and the access's stripe if it has a single one.)
    let quantum = t.record.quantum();
    if quantum.is_some() {
        t.record.chaos_point();
    }
    // (Its region's stripe while the region is whole: `crate::stripes`.)
    match quantum.zip(StripeSet::single_data_stripe(addr, size).map(plain_stripe)) {
        Some((quantum, stripe)) => {
            if logged_on_the_fast_path(t, access, stripe, quantum) {
                return;
            }
        }
        None => t.record.stop_reading_unless_shared(),
    }
    log_plain_access_generally(t, kind, addr, size, site);
}

/// The general path of a plain access, the fast path having said no (or
/// not applying): the last lock-free read is over, the access's stripes
/// are locked and the access logged on them. (The access's fields as
/// arguments: a `PlainAccess` passed by value was stored on the stack at
/// every access, before the fast path's look. Inline: out of line, it
/// made recording radix and racy_share 3-5 % slower, for the same
/// instructions.)
#[inline(always)]
fn log_plain_access_generally(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64) {
    let writes = kind.access() != rr_lite_trace::Access::Read;
    // (Cleared before anything that may wait: see `stop_reading`.)
    t.record.stop_reading();
    let set = t
        .record
        .hold_access(StripeSet::for_access(addr, size), writes);
    match set.single() {
        // The fast path's clock and compact append (the same bytes as the
        // general append, which builds an entry and looks at its kind
        // again: 200 instructions more, on a tenth of a loop's accesses).
        Some(stripe) => {
            let access = PlainAccess {
                kind,
                addr,
                size,
                site,
            };
            t.record.append_on_taken_stripe(stripe, access);
        }
        None => t.record.append_on(set, kind, addr, size, site, 0),
    }
}

/// Replay: the recording crashed inside the call about to be made (see
/// `replay::crash_is_next`); waits for the crash's predecessors, so the
/// call sees what it saw then.
fn crashed_inside(t: &ThreadState) -> bool {
    busy(t, || {
        let crash = replay::crash_is_next(&t.replay);
        if crash {
            replay::publish_all(&t.replay);
            replay::wait_next(&t.replay);
        }
        crash
    })
}

/// The start the shapes around a real call `op` share: an untracked
/// thread just calls it; in replay, a recording that crashed inside the
/// call runs it as then (after the crash's predecessors). Otherwise
/// `shape(thread, mode, op)`.
fn around_call<R, F: FnOnce() -> R>(op: F, shape: impl FnOnce(&ThreadState, Mode, F) -> R) -> R {
    let Some(mode) = with_tracked(|_, mode| mode) else {
        return op();
    };
    on_tracked_thread(|t| {
        if mode != Mode::Record && crashed_inside(t) {
            return replay::guarded(&t.replay, op);
        }
        shape(t, mode, op)
    })
}

/// An interposed call performed for real in both modes, while its event is
/// held; logged after it with `payload(&result)`.
#[inline]
pub(crate) fn log_after_call<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
) -> R {
    log_after_call_or_recorded(kind, addr, size, site, op, payload, |_| Replayed::CallReal)
}

/// An operation on one stripe that the hook performs itself, `op` (of
/// `size` bytes at `addr`): an atomic operation of the compiler's hooks, or
/// a spin lock's unlock. Performed and logged as [`log_after_call`] does,
/// except that under the recording quantum its stripe is held as a plain
/// access's is: kept past the next hook while the thread reuses it and
/// another thread held it last (`RecordThread::hold_access`), instead of
/// given back at once with everything the thread kept. Why: threads
/// handing data over through atomics (a ring buffer's head and tail, a
/// spin flag) or taking turns on a spin lock would otherwise take turns at
/// every operation while recording, and replay would have to reproduce
/// every turn as a wait.
pub(crate) fn log_keeping_stripe<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    op: impl FnOnce() -> R,
) -> R {
    let Some((t, set)) = hold_for_operation(addr, size, kind != EventKind::AtomicLoad) else {
        return log_after_call(kind, addr, size, site, op, |_| 0);
    };
    let result = t.record.guarded(op);
    busy(t, || t.record.append_on(set, kind, addr, size, site, 0));
    result
}

/// Record, under the quantum: a spin lock at `addr` taken by trying it
/// (`try_lock`, EBUSY while another thread holds it) while holding its
/// stripe, again and again, giving the stripe back between tries (the
/// lock's holder needs it to unlock), as glibc's lock spins; the lock event
/// is logged on the stripe, which stays held as a plain access's does
/// ([`log_keeping_stripe`]). A thread that unlocks and locks again within
/// its quantum then keeps the lock, as a thread does within its time slice,
/// instead of every acquisition alternating between the threads (a wait
/// each at replay). None: not recording under the quantum; the caller
/// takes the usual path.
pub(crate) fn record_spin_lock(addr: u64, site: u64, try_lock: impl Fn() -> i32) -> Option<i32> {
    if crate::chaos::serialises() {
        // The turn's own lock handling (`attempt_under_pct`): a spinner
        // holding the turn would keep the holder from its unlock.
        return None;
    }
    let (t, mut held) = hold_for_operation(addr, 0, true)?;
    let mut tries = 0u32;
    loop {
        let r = t.record.guarded(&try_lock);
        if r != libc::EBUSY {
            let payload = r as u64;
            busy(t, || {
                t.record
                    .append_on(held, EventKind::SpinLock, addr, 0, site, payload)
            });
            return Some(r);
        }
        busy(t, || t.record.release_held());
        tries = tries.wrapping_add(1);
        if tries.is_multiple_of(SPIN_LOCK_TRIES_PER_YIELD) {
            // SAFETY: sched_yield has no preconditions (raw: not our
            // wrapper).
            unsafe { libc::syscall(libc::SYS_sched_yield) };
        } else {
            core::hint::spin_loop();
        }
        // (Under the conditions of the first hold, it holds again; were it
        // not to, nothing is logged yet and the caller starts over.)
        held = hold_to_keep(t, addr, 0, true)?;
    }
}

/// Recording, after a trylock-like call: it found the lock busy or
/// took it (`RecordThread::lock_tried`: a thread looping on a busy lock
/// gives way every few tries, holding nothing).
pub(crate) fn lock_tried(found_busy: bool) {
    let _ = with_tracked(|t, mode| {
        if mode == Mode::Record {
            busy(t, || t.record.lock_tried(found_busy));
        }
    });
}

/// Holds the stripe of an operation on `size` bytes at `addr` that the
/// hook performs itself, as a plain access's stripe (`writes`: the
/// operation writes), if this thread records under the quantum, which may
/// keep it ([`log_keeping_stripe`], [`record_spin_lock`]). Returns the set
/// held (the region's stripe, maybe: `crate::stripes`); None, holding
/// nothing new, without the quantum (or inside a call that keeps its
/// stripe) or for an operation on several stripes. A stripe the thread
/// holds already (the last access's, a recent or a kept one) takes the
/// plain access's fast path (`RecordThread::hold_access_fast`, which does
/// what `hold_access` would then): an atomic or a lock on the thread's own
/// data paid the general path's retiring and taking again, some 200
/// instructions. The entry still takes a synced clock step (`append_on`),
/// which any entry may: only a plain access's is a private one
/// (ARCHITECTURE.md, "Private steps").
fn hold_to_keep(t: &ThreadState, addr: u64, size: u64, writes: bool) -> Option<StripeSet> {
    busy(t, || {
        // (A non-zero gate: the quantum applies, and no chaos point.)
        let quantum = t.record.fast_quantum();
        if quantum != 0
            && let Some(stripe) = StripeSet::single_data_stripe(addr, size.max(1)).map(plain_stripe)
        {
            // (The last access, if a read without a lock, is done.)
            t.record.stop_reading();
            if t.record.hold_access_fast(stripe, quantum, writes) {
                return Some(StripeSet::of_stripe(stripe));
            }
        } else {
            t.record.quantum()?;
        }
        // (The stripe set only off the fast hold, where it cost an atomic
        // 25 instructions; the chaos point only without the gate.)
        let set = StripeSet::for_access(addr, size);
        set.single()?;
        if quantum == 0 {
            t.record.chaos_point();
        }
        t.record.stop_reading();
        Some(t.record.hold_access(set, writes))
    })
}

/// [`hold_to_keep`] on the calling thread if it records: the thread and the
/// set held, with one look at the thread (an atomic or a lock paid some 60
/// instructions for a second look and a stripe set built before the fast
/// hold).
#[inline(always)]
fn hold_for_operation(
    addr: u64,
    size: u64,
    writes: bool,
) -> Option<(&'static ThreadState, StripeSet)> {
    if mode::current() != Mode::Record {
        return None;
    }
    let t = crate::fast_tls::registered().filter(|t| t.is_tracked())?;
    hold_to_keep(t, addr, size, writes).map(|set| (t, set))
}

/// Tries of a busy spin lock between yields of the processor
/// ([`record_spin_lock`]).
const SPIN_LOCK_TRIES_PER_YIELD: u32 = 64;

/// [`log_after_call`] for a call whose result replay may take from the
/// recording: `replayed(recorded payload)` decides.
pub(crate) fn log_after_call_or_recorded<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
    replayed: impl FnOnce(u64) -> Replayed<R>,
) -> R {
    match with_tracked(|_, mode| mode) {
        None => op(),
        Some(Mode::Record) => on_tracked_thread(|t| {
            let acquired = busy(t, || t.record.acquire(addr, size));
            let result = t.record.guarded(op);
            busy(t, || {
                t.record.append(kind, addr, size, site, payload(&result));
                t.record.give_back(acquired);
            });
            result
        }),
        Some(_) => on_tracked_thread(|t| {
            if crashed_inside(t) {
                return replay::guarded(&t.replay, op);
            }
            let point = busy(t, || {
                replay::publish_pending(&t.replay);
                replay::count(&t.replay, kind, addr, site)
            });
            let recorded = if rr_lite_trace::plan::in_results(kind) {
                replay::take_result(&t.replay)
            } else {
                recorded_payload(point)
            };
            let result = match recorded.map(replayed) {
                Some(Replayed::Return(r)) => r,
                Some(Replayed::CallReal) | None => {
                    let r = replay::guarded(&t.replay, op);
                    check_result(t, kind, addr, site, recorded, payload(&r));
                    r
                }
            };
            busy(t, || replay::publish_pending(&t.replay));
            result
        }),
    }
}

/// The recorded result a plan point carries, if it carries one.
fn recorded_payload(point: Option<rr_lite_trace::plan::Point>) -> Option<u64> {
    point
        .filter(|p| p.flags & flags::PAYLOAD != 0)
        .map(|p| p.payload)
}

/// [`check_result`] against the recorded result `point` carries, if any.
fn check_point_result(
    t: &ThreadState,
    kind: EventKind,
    addr: u64,
    site: u64,
    point: Option<rr_lite_trace::plan::Point>,
    actual: u64,
) {
    check_result(t, kind, addr, site, recorded_payload(point), actual);
}

/// Replay: a real call's result must be the recorded one (heap addresses,
/// trylock outcomes, descriptor numbers...).
fn check_result(
    t: &ThreadState,
    kind: EventKind,
    addr: u64,
    site: u64,
    recorded: Option<u64>,
    actual: u64,
) {
    let Some(expected) = recorded else { return };
    if expected != actual {
        let what = if kind == EventKind::Alloc {
            Divergence::HeapAddress
        } else {
            Divergence::Result
        };
        let detail = DivergenceDetail {
            expected_kind: kind as u8,
            expected_addr: addr,
            actual_kind: kind as u8,
            actual_addr: addr,
            site,
            expected_value: expected,
            actual_value: actual,
            counted: true,
        };
        busy(t, || replay::diverge(&t.replay, what, &detail));
    }
}

/// The kinds of event a lock-like call logs: `taken` when its payload is
/// 0 (it took the lock, or the kind carries any result), `failed` else. A
/// mutex lock that fails (EINVAL on a destroyed mutex, EDEADLK, EOWNERDEAD)
/// changes nothing but must still replay as a failure, so it is logged
/// with its error under the trylock kind, which carries a result.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockKinds {
    pub(crate) taken: EventKind,
    pub(crate) failed: EventKind,
}

impl LockKinds {
    /// One kind whatever the result.
    pub(crate) const fn one(kind: EventKind) -> Self {
        LockKinds {
            taken: kind,
            failed: kind,
        }
    }

    /// The kind of the event whose payload is `payload`.
    fn of(self, payload: u64) -> EventKind {
        if payload == 0 {
            self.taken
        } else {
            self.failed
        }
    }

    fn has(self, code: u8) -> bool {
        code == self.taken as u8 || code == self.failed as u8
    }

    /// Whether the lock, once taken, is its thread's alone (a mutex, a
    /// write lock, a spin lock): what [`attempt_keeping_stripe`] keeps. A
    /// read lock is shared, and keeping its stripe made the other readers
    /// wait for it (four threads read-locking one rwlock recorded about
    /// 14 % slower); a semaphore's units go to whoever waits, and its posts do
    /// not keep.
    fn is_exclusive(self) -> bool {
        matches!(
            self.taken,
            EventKind::MutexLock | EventKind::RwWriteLock | EventKind::SpinLock
        )
    }
}

/// A call that may block: record releases the thread's stripes, performs
/// `op`, then logs a `kind` event on `addr` if `event(&result)` gives its
/// payload (None: the call failed and nothing happened). Replay waits for
/// the recorded predecessors of the thread's next event first, so the real
/// call (a lock) happens in the recorded order; `replayed` may return the
/// recorded result instead of calling the real function.
pub(crate) fn log_after_blocking_call<R>(
    kind: EventKind,
    addr: u64,
    site: u64,
    op: impl FnOnce() -> R,
    event: impl Fn(&R) -> Option<u64>,
    replayed: impl FnOnce(u64) -> Replayed<R>,
) -> R {
    let no_attempt: Option<fn() -> Option<R>> = None;
    log_after_lock_call(
        LockKinds::one(kind),
        addr,
        site,
        no_attempt,
        op,
        event,
        replayed,
    )
}

/// [`log_after_blocking_call`] for a lock that `attempt` can take without
/// blocking (a trylock; None when the lock is busy). Record tries it
/// first while it holds the event's stripe, as an unlock or a destroy of
/// the lock is performed: a lock taken without waiting is then logged
/// exactly where it took effect among the other calls on that lock (one
/// racing with a destroy found the mutex valid or destroyed in the logged
/// order). Under PCT chaos, a busy lock is tried again whenever a lock is
/// released, and the turn given away only meanwhile: in PCT a thread blocks
/// on a held lock only, and handing the turn on at every lock would cost
/// two context switches each.
pub(crate) fn log_after_lock_call<R>(
    kinds: LockKinds,
    addr: u64,
    site: u64,
    mut attempt: Option<impl FnMut() -> Option<R>>,
    op: impl FnOnce() -> R,
    event: impl Fn(&R) -> Option<u64>,
    replayed: impl FnOnce(u64) -> Replayed<R>,
) -> R {
    match with_tracked(|_, mode| mode) {
        None => op(),
        Some(Mode::Record) => {
            let mut lock_try = attempt.as_mut().map(|attempt| LockTry {
                kinds,
                addr,
                site,
                attempt,
                event: &event,
            });
            if let Some(result) = lock_try.as_mut().and_then(attempt_keeping_stripe) {
                return result;
            }
            // A point where chaos may let others run first: before the call
            // that may block, not only at its event, logged after it.
            on_tracked_thread(|t| busy(t, || t.record.release_at_schedule_point(true)));
            if let Some(result) = lock_try.as_mut().and_then(attempt_holding_event) {
                return result;
            }
            let taken = match attempt {
                Some(attempt) if crate::chaos::serialises() => attempt_under_pct(attempt),
                _ => None,
            };
            let result = taken.unwrap_or_else(|| {
                before_blocking();
                on_tracked_thread(|t| t.record.blocking_call(op))
            });
            if let Some(payload) = event(&result) {
                log_after_call(kinds.of(payload), addr, 0, site, || (), |_| payload);
            }
            result
        }
        Some(_) => on_tracked_thread(|t| {
            if crashed_inside(t) {
                return in_real_call(t, op);
            }
            let next = busy(t, || {
                replay::publish_all(&t.replay);
                replay::wait_next(&t.replay)
            });
            let recorded = next
                .filter(|p| kinds.has(p.kind) && p.flags & flags::PAYLOAD != 0)
                .map(|p| p.payload);
            let result = match recorded.map(|payload| (payload, replayed(payload))) {
                Some((payload, Replayed::Return(r))) => {
                    busy(t, || {
                        replay::count(&t.replay, kinds.of(payload), addr, site)
                    });
                    r
                }
                Some((_, Replayed::CallReal)) | None => {
                    let r = in_real_call(t, op);
                    if let Some(payload) = event(&r) {
                        let kind = kinds.of(payload);
                        busy(t, || replay::count(&t.replay, kind, addr, site));
                        check_result(t, kind, addr, site, recorded, payload);
                    }
                    r
                }
            };
            busy(t, || replay::publish_pending(&t.replay));
            result
        }),
    }
}

/// A lock's try in record ([`log_after_lock_call`]): the trylock `attempt`
/// (None: the lock is busy), the kinds, address and site of its event, and
/// `event`, the payload of a result (None: nothing to log).
struct LockTry<'a, A, E> {
    kinds: LockKinds,
    addr: u64,
    site: u64,
    attempt: &'a mut A,
    event: &'a E,
}

/// Record under the quantum: `attempt` (a trylock of an exclusive lock,
/// [`LockKinds::is_exclusive`]) holding the stripe of
/// the lock's event as an atomic operation holds its own, kept after it
/// ([`log_keeping_stripe`]), and the event logged on it if the lock was
/// taken or failed for good. The thread keeps the stripes of its last
/// accesses: a lock that is free costs what an atomic does, and the
/// critical section's accesses find their stripes still held (giving
/// everything back at every lock made each of them take its stripes
/// again), and a thread that unlocks and locks again within its quantum
/// keeps the lock, as in a time slice. None (nothing logged): not under
/// the quantum ([`hold_to_keep`]), under PCT or `--serialize` (one thread
/// runs at a time, and a busy lock gives the turn away), or the lock
/// is busy; the caller then gives every stripe back before it blocks.
fn attempt_keeping_stripe<R>(
    l: &mut LockTry<'_, impl FnMut() -> Option<R>, impl Fn(&R) -> Option<u64>>,
) -> Option<R> {
    if !l.kinds.is_exclusive() || crate::chaos::serialises() {
        return None;
    }
    // (A recording thread: `log_after_lock_call` looked.)
    on_tracked_thread(|t| {
        let held = hold_to_keep(t, l.addr, 0, true)?;
        let taken = t.record.guarded(&mut *l.attempt)?;
        if let Some(payload) = (l.event)(&taken) {
            let kind = l.kinds.of(payload);
            busy(t, || {
                t.record.append_on(held, kind, l.addr, 0, l.site, payload)
            });
        }
        Some(taken)
    })
}

/// Record: `attempt` (a trylock) while the stripe of the lock's event is
/// held, logging the event if it took the lock or failed for good. None:
/// the lock is busy, nothing logged.
fn attempt_holding_event<R>(
    l: &mut LockTry<'_, impl FnMut() -> Option<R>, impl Fn(&R) -> Option<u64>>,
) -> Option<R> {
    on_tracked_thread(|t| {
        let acquired = busy(t, || t.record.acquire(l.addr, 0));
        let tried = t.record.guarded(&mut *l.attempt);
        busy(t, || {
            if let Some(payload) = tried.as_ref().and_then(l.event) {
                t.record
                    .append(l.kinds.of(payload), l.addr, 0, l.site, payload);
            }
            t.record.give_back(acquired);
        });
        tried
    })
}

/// PCT: tries the lock; while it is held and another thread can run,
/// waits for a lock to be released and tries again. None: the caller
/// blocks in the real call.
fn attempt_under_pct<R>(mut attempt: impl FnMut() -> Option<R>) -> Option<R> {
    loop {
        // A trylock can be tried again: it only takes the lock or fails.
        if let Some(r) = attempt() {
            return Some(r);
        }
        let waited = with_tracked(|t, _| busy(t, || crate::chaos::wait_for_lock(t.id.get())));
        if waited != Some(true) {
            return None;
        }
    }
}

/// An event with no call around it (thread start/exit, the unlock half of
/// a cond wait, barrier arrival, exit status, fatal signal). Returns the
/// recorded payload in replay (the child id of a thread-create), else
/// `payload`.
pub(crate) fn log_event(kind: EventKind, addr: u64, size: u64, site: u64, payload: u64) -> u64 {
    log_after_call_or_recorded(kind, addr, size, site, || payload, |&p| p, Replayed::Return)
}

/// Replay: the recorded payload of the thread's next event of `kind` (the
/// child id of a thread-create, before the call, whose own events such as
/// the child's DTV allocation come first).
pub(crate) fn next_recorded(kind: EventKind) -> Option<u64> {
    with_tracked(|t, mode| {
        if mode != Mode::Replay {
            return None;
        }
        busy(t, || replay::stop_at_recorded_end(&t.replay));
        replay::find_ahead(&t.replay, kind).map(|p| p.payload)
    })
    .flatten()
}

/// Output on a descriptor's pseudo-address: logged before the real call,
/// whose own allocations (stdio's buffer) nest inside it and come after.
pub(crate) fn log_output_before_call<R>(
    addr: u64,
    len: u64,
    site: u64,
    op: impl FnOnce() -> R,
) -> R {
    log_around_call(EventKind::Output, addr, len, site, false, op)
}

/// An event logged before its real call, whose stripe is kept across the
/// call; the call's own events (allocations inside it) nest, logged after
/// it in both modes. With `closing`, a second event of `kind` on
/// `addr` after the call, logged before the stripe is given back: replay
/// counts an event done at the thread's next event, which may be one
/// nested in the call, so it is the closing event that makes the next call
/// on `addr` wait until this one has returned, as recorded.
pub(crate) fn log_around_call<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    closing: bool,
    op: impl FnOnce() -> R,
) -> R {
    around_call_events(kind, addr, size, site, closing.then_some(|_: &R| 0), op)
}

/// [`log_around_call`] with its closing event, whose payload is
/// `result(&call's result)`, checked at replay: a call made in the recorded
/// order among the calls on `addr`, whose result depends on that order and
/// which may allocate or free inside (an OpenMP work-sharing call).
pub(crate) fn log_around_call_checked<R>(
    kind: EventKind,
    addr: u64,
    site: u64,
    op: impl FnOnce() -> R,
    result: impl FnOnce(&R) -> u64,
) -> R {
    around_call_events(kind, addr, 0, site, Some(result), op)
}

fn around_call_events<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    closing: Option<impl FnOnce(&R) -> u64>,
    op: impl FnOnce() -> R,
) -> R {
    let Some(mode) = with_tracked(|_, mode| mode) else {
        return op();
    };
    on_tracked_thread(|t| {
        if mode != Mode::Record {
            busy(t, || {
                replay::publish_pending(&t.replay);
                replay::count(&t.replay, kind, addr, site);
            });
            let result = replay::guarded(&t.replay, op);
            let point = busy(t, || {
                replay::publish_pending(&t.replay);
                closing
                    .is_some()
                    .then(|| replay::count(&t.replay, kind, addr, site))
                    .flatten()
            });
            if let Some(payload) = closing {
                check_point_result(t, kind, addr, site, point, payload(&result));
            }
            return result;
        }
        let output = kind == EventKind::Output;
        if output {
            outputs::begin_output(t);
        }
        let acquired = busy(t, || {
            let a = t.record.acquire(addr, size);
            t.record.append(kind, addr, size, site, 0);
            a
        });
        let result = t.record.nested(op);
        busy(t, || {
            if let Some(payload) = closing {
                t.record.append(kind, addr, size, site, payload(&result));
            }
            t.record.give_back(acquired)
        });
        if output {
            outputs::end_output();
        }
        result
    })
}

/// A stretch of a library's own code that is one event on `addr` as a
/// whole although the library calls back into the program in the middle
/// (ftw's directory descriptors, between its calls of the program's
/// function): [`log_around_call`] cut at the callbacks. Begun before the
/// library's code runs and again when a callback returns; ended when a
/// callback is called and when the library returns. Record keeps the
/// stripe across the stretch, the library's own events (allocations) nest;
/// replay counts an event at both ends, so the other threads' events on
/// `addr` come before or after the whole stretch, as recorded.
pub(crate) struct Stretch {
    kind: EventKind,
    addr: u64,
    site: u64,
    /// Record: what the opening event locked.
    acquired: Option<crate::record::Acquired>,
}

/// Opens a [`Stretch`]; None on a thread the runtime does not track.
pub(crate) fn stretch_begin(kind: EventKind, addr: u64, site: u64) -> Option<Stretch> {
    let mode = with_tracked(|_, mode| mode)?;
    Some(on_tracked_thread(|t| {
        let acquired = if mode == Mode::Record {
            let acquired = busy(t, || {
                let a = t.record.acquire(addr, 0);
                t.record.append(kind, addr, 0, site, 0);
                a
            });
            t.record.enter_nested();
            Some(acquired)
        } else {
            busy(t, || {
                replay::publish_pending(&t.replay);
                replay::count(&t.replay, kind, addr, site);
            });
            crate::handover::enter_guard(t.id.get());
            None
        };
        Stretch {
            kind,
            addr,
            site,
            acquired,
        }
    }))
}

/// Closes a [`Stretch`].
pub(crate) fn stretch_end(stretch: Stretch) {
    let Stretch {
        kind,
        addr,
        site,
        acquired,
    } = stretch;
    on_tracked_thread(|t| match acquired {
        Some(acquired) => {
            t.record.leave_nested();
            busy(t, || {
                t.record.append(kind, addr, 0, site, 0);
                t.record.give_back(acquired)
            });
        }
        None => {
            crate::handover::leave_guard(t.id.get());
            busy(t, || {
                replay::publish_pending(&t.replay);
                replay::count(&t.replay, kind, addr, site);
            });
        }
    });
}

/// Record: the thread has just passed a synchronisation the runtime cannot
/// see and that may involve every thread (a member starting its part of an
/// OpenMP region, released from libgomp's dock): its next event takes a
/// clock past every thread's, so the merged order puts it after everything
/// that may have come before.
pub(crate) fn after_hidden_sync_with_all() {
    if mode::current() == Mode::Record {
        with_tracked(|t, _| busy(t, || t.record.clock_past_all_threads()));
    }
}

/// Record, before a real pthread_join: glibc frees the joined thread's
/// memory inside the join, once that thread has really exited; those frees
/// are events, and must come after the thread's exit event in the global
/// order. So wait until the thread has logged its exit, and take a clock
/// past it (nothing else orders them: the kernel does, through the join).
pub(crate) fn after_exit_of(thread: u32, exit_addr: u64) {
    if mode::current() != Mode::Record {
        return;
    }
    // The joined thread may need a stripe this one keeps (and the turn,
    // under chaos scheduling, unless it has ended already).
    if crate::thread::has_exited(thread) {
        release();
    } else {
        release();
        with_tracked(|t, _| busy(t, || crate::chaos::joining(t.id.get(), thread)));
    }
    crate::thread::wait_exited(thread);
    with_tracked(|t, _| busy(t, || t.record.clock_past(exit_addr)));
}

/// A call whose event must follow everything the real call does: record
/// holds the event's stripe across the call (events inside it nest), then
/// logs it; replay lets the call's own events count first, but waits for
/// the event's predecessors before the call (what it does, such as taking
/// the lowest free descriptor, depends on them) and checks its result. For
/// pthread_create (the child's start must come after the parent's
/// allocations inside pthread_create, which happen before the clone),
/// write (an event logged before the write would survive a crash that came
/// before the write, and replay would write once more), fopen and fclose
/// (their allocation and free nest in them).
pub(crate) fn log_after_nested_call<R>(
    kind: EventKind,
    addr: u64,
    len: u64,
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
) -> R {
    around_call(op, |t, mode, op| {
        if mode != Mode::Record {
            // Wait for the next event's predecessors before the real call
            // (it is this event, or one nested in the call), and stop here
            // if the recording ended before it.
            busy(t, || {
                replay::publish_all(&t.replay);
                replay::wait_next(&t.replay);
                replay::wait_through(&t.replay, kind);
            });
            let result = op();
            let point = busy(t, || replay::count(&t.replay, kind, addr, site));
            check_point_result(t, kind, addr, site, point, payload(&result));
            busy(t, || replay::publish_pending(&t.replay));
            return result;
        }
        let is_output = kind == EventKind::Output;
        if is_output {
            outputs::begin_output(t);
        }
        let acquired = busy(t, || t.record.acquire_before_nested(addr, len));
        let result = t.record.nested(op);
        busy(t, || {
            t.record.append(kind, addr, len, site, payload(&result));
            t.record.give_back(acquired);
        });
        if is_output {
            outputs::end_output();
        }
        result
    })
}

/// memcpy/memmove: a range read and a range write, logged after the copy
/// while the stripes of both ranges are held (record), or counted after
/// both waited (replay).
pub(crate) fn log_after_copy<R>(
    src: u64,
    dst: u64,
    len: u64,
    site: u64,
    op: impl FnOnce() -> R,
) -> R {
    let ranges = [CallRange::read(src, true), CallRange::write(dst, true)];
    log_after_ranges(site, ranges, || [len, len], op)
}

/// One memory range a C library call reads or writes: the kind of its
/// entry (`ReadRange`, `WriteRange`), its start, and whether the call
/// touches it at all, which depends on the call's arguments only, so that
/// replay, which must not read the memory before its waits, counts the
/// same entries.
#[derive(Clone, Copy)]
pub(crate) struct CallRange {
    kind: EventKind,
    addr: u64,
    present: bool,
}

impl CallRange {
    pub(crate) fn read(addr: u64, present: bool) -> CallRange {
        CallRange {
            kind: EventKind::ReadRange,
            addr,
            present,
        }
    }

    /// Whether the call touches the range (see the type's doc).
    pub(crate) fn present(&self) -> bool {
        self.present
    }

    pub(crate) fn write(addr: u64, present: bool) -> CallRange {
        CallRange {
            kind: EventKind::WriteRange,
            addr,
            present,
        }
    }
}

/// A call that reads and writes `ranges` of memory, whose lengths it may
/// find only by reading them (a string's end): `measure` gives them from
/// the memory as it is (at least 1 for a present range). Record: the
/// ranges' stripes are locked, measured again (another thread may have
/// moved a string's end meanwhile: then locked again, as now measured),
/// the call made and the ranges logged after it; replay: counted (waited
/// for), then the call.
pub(crate) fn log_after_ranges<R>(
    site: u64,
    ranges: [CallRange; 2],
    measure: impl Fn() -> [u64; 2],
    op: impl FnOnce() -> R,
) -> R {
    around_call(op, |t, mode, op| {
        let lens = busy(t, || {
            if mode == Mode::Record {
                return hold_measured(t, &ranges, &measure);
            }
            finish_previous(t, mode);
            for r in ranges.iter().filter(|r| r.present) {
                replay::count(&t.replay, r.kind, r.addr, site);
            }
            [0; 2]
        });
        let result = match mode {
            Mode::Record => t.record.guarded(op),
            _ => replay::guarded(&t.replay, op),
        };
        busy(t, || {
            if mode == Mode::Record {
                for (r, len) in ranges.iter().zip(lens).filter(|(r, _)| r.present) {
                    t.record.append(r.kind, r.addr, len, site, 0);
                }
            }
            finish_previous(t, mode);
        });
        result
    })
}

/// Record: locks the stripes of `ranges` as `measure` finds them, until a
/// measure once they are locked agrees; the lengths then (the memory
/// within them cannot change before the call: the stripes are held).
fn hold_measured(
    t: &ThreadState,
    ranges: &[CallRange; 2],
    measure: impl Fn() -> [u64; 2],
) -> [u64; 2] {
    let mut lens = measure();
    loop {
        let mut set = StripeSet::EMPTY;
        for (r, len) in ranges.iter().zip(lens).filter(|(r, _)| r.present) {
            set.add_access(r.addr, len.max(1));
        }
        t.record.hold_next(set);
        let now = measure();
        if now == lens {
            return lens;
        }
        lens = now;
    }
}

/// free() of `freed`, a pointer into the runtime's heap: inside the real
/// call the allocator reads and writes the block's header and its first
/// word (`rr_lite_trace::heap_block_range`: the tag it checks and marks freed, a small
/// block's free-list link), so besides its allocator event the call is a
/// write range there, held across it (record) and waited for before it
/// (replay), like memcpy's ranges: a racy access to freed memory or to the
/// header (a program writing before its block, as SCTBench's ctrace-test
/// does while its other thread frees the block) is ordered against the
/// free, which then checks the header it saw when recording. The range
/// comes from the pointer alone, never from the header, and is logged
/// before the real call (its stripes held from before it to after the
/// call, so the order stays true): a free that aborts on a header the
/// program wrote over has its write range, ordered after that write, then
/// its fatal signal, and replay waits at the range before it makes the
/// call that aborts again. (An over-aligned pointer's own header is
/// covered; its block's, further down, is not.)
pub(crate) fn log_free(freed: u64, site: u64, op: impl FnOnce()) {
    let heap = rr_lite_trace::pseudo::HEAP;
    around_call(op, |t, mode, op| {
        if mode != Mode::Record {
            busy(t, || replay::publish_pending(&t.replay));
            if replay_checked_block(t, freed, site) {
                return replay::guarded(&t.replay, op);
            }
            let point = busy(t, || replay::count(&t.replay, EventKind::Free, heap, site));
            replay::guarded(&t.replay, op);
            check_point_result(t, EventKind::Free, heap, site, point, freed);
            busy(t, || replay::publish_pending(&t.replay));
            return;
        }
        let acquired = busy(t, || hold_heap_and(t, [Some(freed), None]));
        busy(t, || append_block_range(t, freed, site));
        t.record.guarded(op);
        busy(t, || {
            t.record.append(EventKind::Free, heap, 0, site, freed);
            give_back_heap_and(t, acquired);
        });
    })
}

/// Record: locks the heap's stripe and those of `blocks`' headers and
/// first words (`rr_lite_trace::heap_block_range`) for an allocator call. Inside a call
/// that keeps its own stripe (glibc freeing inside pthread_join or
/// fclose), both nest on it; else they become the thread's held set.
fn hold_heap_and(t: &ThreadState, blocks: [Option<u64>; 2]) -> [Acquired; 2] {
    let heap = rr_lite_trace::pseudo::HEAP;
    let mut ranges = blocks
        .into_iter()
        .flatten()
        .map(rr_lite_trace::heap_block_range);
    let Some((at, len)) = ranges.next() else {
        return [
            Acquired::Nested(StripeSet::EMPTY),
            t.record.acquire(heap, 0),
        ];
    };
    let mut set = StripeSet::for_access(at, len);
    for (at, len) in ranges {
        // A set holds four runs: a second block (realloc's new one) whose
        // stripes would leave no room for the heap's is not held (only
        // when both blocks' ranges wrap around the stripe table).
        if set.runs_len() + StripeSet::for_access(at, len).runs_len() < 4 {
            set.add_access(at, len);
        }
    }
    // (No PCT step, as the heap's own events are none: `chaos::is_step`.)
    if t.record.is_nested() {
        [t.record.acquire_set(set, false), t.record.acquire(heap, 0)]
    } else {
        set.add_access(heap, 0);
        [
            Acquired::Nested(StripeSet::EMPTY),
            t.record.acquire_set(set, false),
        ]
    }
}

/// Gives back what [`hold_heap_and`] locked.
fn give_back_heap_and(t: &ThreadState, [first, second]: [Acquired; 2]) {
    t.record.give_back(second);
    t.record.give_back(first);
}

/// Record: logs the write range of block `p`'s header and first word
/// (`rr_lite_trace::heap_block_range`), whose stripes the thread holds.
fn append_block_range(t: &ThreadState, p: u64, site: u64) {
    let (at, len) = rr_lite_trace::heap_block_range(p);
    t.record.append(EventKind::WriteRange, at, len, site, 0);
}

/// Replay: counts the write range of block `p` (waiting for what it waits
/// on first).
fn count_block_range(t: &ThreadState, p: u64, site: u64) {
    let (at, _) = rr_lite_trace::heap_block_range(p);
    busy(t, || {
        replay::count(&t.replay, EventKind::WriteRange, at, site);
    });
}

/// Replay: the range of block `p`, which the coming call checks and may
/// free (free, realloc), counted before the call; whether the recording
/// crashed inside the call then (its header written over), which the
/// caller's call does again (see [`log_free`]).
fn replay_checked_block(t: &ThreadState, p: u64, site: u64) -> bool {
    count_block_range(t, p, site);
    crashed_inside(t)
}

/// `p` if it is a pointer into the runtime's heap (else glibc's, or null).
fn heap_block(p: u64) -> Option<u64> {
    crate::heap::owns(p as usize).then_some(p)
}

/// An allocation (malloc, calloc, the aligned ones, realloc) that the
/// runtime's heap may serve: besides its allocator event on the heap, a
/// write range over the block's header and first word, which the
/// allocator writes (the tag) and reads (a reused block's free-list link)
/// inside the call. So a program writing into a freed block (its header or
/// its first word) is ordered against the allocation that hands the block
/// out again, which finds at replay what it found when recording. `next`
/// is the pointer the call will return (`heap::next_block`), taken again
/// once the heap's stripe is held: the guess taken before can be stale
/// (another thread allocated in between), and then the stripes are taken
/// again. Logged after the call: the allocation, then its range (which
/// replay counts once the allocation's waits have brought the heap to
/// where it was, at the recorded pointer). realloc's `freed`, the block it
/// checks and may free, has its range logged first, as a free's is
/// ([`log_free`]: before the call, which may abort on its header).
pub(crate) fn log_alloc(
    size: u64,
    site: u64,
    freed: Option<u64>,
    next: impl Fn() -> Option<u64>,
    op: impl FnOnce() -> u64,
) -> u64 {
    let heap = rr_lite_trace::pseudo::HEAP;
    around_call(op, |t, mode, op| {
        if mode != Mode::Record {
            return replay_alloc(t, site, freed, op);
        }
        let old = freed.and_then(heap_block);
        let mut guess = next();
        let mut acquired = busy(t, || hold_heap_and(t, [old, guess]));
        while next() != guess {
            busy(t, || give_back_heap_and(t, acquired));
            guess = next();
            acquired = busy(t, || hold_heap_and(t, [old, guess]));
        }
        if let Some(old) = old {
            busy(t, || append_block_range(t, old, site));
        }
        let p = t.record.guarded(op);
        busy(t, || {
            t.record.append(EventKind::Alloc, heap, size, site, p);
            if let Some(p) = heap_block(p) {
                append_block_range(t, p, site);
            }
            give_back_heap_and(t, acquired);
        });
        p
    })
}

/// Replay of [`log_alloc`]: the freed block's range's waits (realloc), the
/// allocation's, then its range's at the recorded pointer, then the real
/// call, whose pointer must be it.
fn replay_alloc(t: &ThreadState, site: u64, freed: Option<u64>, op: impl FnOnce() -> u64) -> u64 {
    let heap = rr_lite_trace::pseudo::HEAP;
    busy(t, || replay::publish_pending(&t.replay));
    if freed
        .and_then(heap_block)
        .is_some_and(|old| replay_checked_block(t, old, site))
    {
        return replay::guarded(&t.replay, op);
    }
    busy(t, || replay::count(&t.replay, EventKind::Alloc, heap, site));
    let recorded = replay::take_result(&t.replay);
    if let Some(p) = recorded.and_then(heap_block) {
        count_block_range(t, p, site);
    }
    let p = replay::guarded(&t.replay, op);
    check_result(t, EventKind::Alloc, heap, site, recorded, p);
    busy(t, || replay::publish_pending(&t.replay));
    p
}

/// A reading of the clock: as [`log_outside_value`], except that libomp's
/// own readings pace its spinning and sleeping threads, as often as timing
/// makes them: those are not events (see `own_code::in_openmp_runtime`).
pub(crate) fn log_clock_value(site: u64, real: impl FnOnce() -> u64) -> u64 {
    if crate::own_code::in_openmp_runtime(site) {
        return real();
    }
    log_outside_value(site, real)
}

/// A value from outside (time, pid): record logs `real()`, replay returns
/// the recorded value (libomp's process id too: it names an environment
/// variable libomp allocates, whose length must not change at replay).
pub(crate) fn log_outside_value(site: u64, real: impl FnOnce() -> u64) -> u64 {
    let addr = rr_lite_trace::pseudo::CLOCK;
    match with_tracked(|_, mode| mode) {
        None => real(),
        Some(Mode::Record) => {
            let value = real();
            on_tracked_thread(|t| {
                busy(t, || t.record.append(EventKind::Time, addr, 0, site, value))
            });
            value
        }
        Some(_) => {
            // (Its point, if any, orders it; the value is the results
            // array's next: `rr_lite_trace::plan::in_results`.)
            let recorded = on_tracked_thread(|t| {
                busy(t, || {
                    replay::count(&t.replay, EventKind::Time, addr, site);
                    replay::take_result(&t.replay)
                })
            });
            recorded.unwrap_or_else(real)
        }
    }
}
