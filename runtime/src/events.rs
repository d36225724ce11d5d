//! The event core: every hook and interposed call ends up here, in record
//! and in replay mode alike, so both modes see the same events in the same
//! per-thread order (the index of an event is its position in that order).
//!
//! Shapes of event:
//! - [`access`]: a compiler hook; the access runs after the hook returns, so
//!   record keeps the stripes (replay: the publication) until the next hook;
//! - [`around`]: an interposed call performed in both modes while the event
//!   is held (unlock, signal, malloc, atomics...), logged with its result;
//! - [`emulated`]: like `around`, but replay may return the recorded result
//!   instead of calling the real function (trylock, rand, cond wake...);
//! - [`blocking`]: a call that may block (lock, join, wait); record releases
//!   first and logs after; replay waits for the recorded predecessors first,
//!   so the real call takes the lock in the recorded order;
//! - [`output`]: logged before the real call, which may itself allocate
//!   (stdio's buffer), so the nested allocation comes after in both modes;
//! - [`event`], [`observed`], [`copy`]: thread life, values from outside,
//!   memcpy.

use rr_lite_trace::EventKind;
use rr_lite_trace::codec::Entry;
use rr_lite_trace::plan::{Divergence, ThreadStatus, flags};

use crate::mode::{self, Mode};
use crate::replay;
use crate::stripes::StripeSet;
use crate::thread::ThreadState;

/// What replay does for an emulated call.
#[derive(Debug)]
pub enum Replayed<R> {
    /// Return this (built from the recorded result), skip the real call.
    Return(R),
    /// Call the real function; its result must equal the recorded one.
    CallReal,
}

/// Runs `f` on the calling thread's state if the runtime tracks this thread.
#[inline(always)]
pub fn with_tracked<R>(f: impl FnOnce(&ThreadState, Mode) -> R) -> Option<R> {
    let mode = mode::current();
    if mode == Mode::Inert {
        return None;
    }
    let state = crate::fast_tls::current();
    if state.is_null() {
        return None;
    }
    // SAFETY: the slot holds this thread's own ThreadState (set at
    // registration), which lives as long as the thread and is only used by
    // it.
    let t = unsafe { &*state };
    t.is_tracked().then(|| f(t, mode))
}

/// Runs `f` on the calling thread's state, known to be tracked (a
/// `with_tracked` check just passed): through the fast slot, not
/// `thread_local!`.
#[inline(always)]
fn on_tracked_thread<R>(f: impl FnOnce(&ThreadState) -> R) -> R {
    let state = crate::fast_tls::current();
    debug_assert!(!state.is_null(), "only called for registered threads");
    // SAFETY: as in `with_tracked`: this thread's own, registered state.
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

/// Unlocks the stripes the thread keeps from its previous hook.
pub fn release_held(t: &ThreadState) {
    let held = t.held.get();
    if !held.is_empty() {
        held.raise_clock(t.clock.get());
        held.unlock();
        t.held.set(StripeSet::EMPTY);
    }
}

/// Record: appends an entry whose stripes the thread holds.
fn append(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64, payload: u64) {
    append_on(
        t,
        StripeSet::for_access(addr, size),
        kind,
        addr,
        size,
        site,
        payload,
    );
}

/// [`append`] when the caller already has the entry's stripe set.
fn append_on(
    t: &ThreadState,
    set: StripeSet,
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    payload: u64,
) {
    let clock = if kind == EventKind::Time {
        // A value read from outside: nothing writes its pseudo-address, so
        // it needs no lock, only a place in program order.
        t.clock.get() + 1
    } else {
        set.advance_clock(t.clock.get())
    };
    t.clock.set(clock);
    t.index.set(t.index.get() + 1);
    let entry = Entry {
        clock,
        kind,
        addr,
        size,
        site,
        payload,
    };
    let ok = t.with_log(|log| log.append(&entry));
    if !ok && !t.log_failed.replace(true) {
        crate::sys::warn(&[b"cannot write the thread log (disk full?): the trace is incomplete"]);
    }
}

/// Record: which stripes an interposed call locked, and how to give them back.
enum Acquired {
    /// Became the thread's held set (everything else was released first).
    Top,
    /// Locked on top of the held set, inside an output call.
    Nested(StripeSet),
}

fn acquire(t: &ThreadState, addr: u64, size: u64) -> Acquired {
    let want = StripeSet::for_access(addr, size);
    if let Some(stripe) = want.single().filter(|_| t.nest_depth.get() > 0) {
        if t.held.get().contains(stripe) {
            return Acquired::Nested(StripeSet::EMPTY);
        }
        want.lock();
        return Acquired::Nested(want);
    }
    release_held(t);
    want.lock();
    t.held.set(want);
    Acquired::Top
}

fn give_back(t: &ThreadState, acquired: Acquired) {
    match acquired {
        Acquired::Top => release_held(t),
        Acquired::Nested(set) => {
            set.raise_clock(t.clock.get());
            set.unlock();
        }
    }
}

/// The end of the thread's previous event: record unlocks its stripes,
/// replay publishes its progress. At function entry/exit and before any
/// call that may block.
pub fn finish_previous(t: &ThreadState, mode: Mode) {
    match mode {
        Mode::Record => release_held(t),
        Mode::Replay => replay::publish_pending(t),
        Mode::Inert => {}
    }
}

/// [`finish_previous`] for the calling thread.
#[inline]
pub fn release() {
    with_tracked(|t, mode| busy(t, || finish_previous(t, mode)));
}

/// Before a real call that may block and is not itself an event (sleep,
/// read, poll): record releases the thread's stripes; replay publishes all
/// its events as done.
pub fn before_blocking() {
    with_tracked(|t, mode| {
        busy(t, || match mode {
            Mode::Replay => replay::publish_all(t),
            _ => finish_previous(t, mode),
        })
    });
}

/// Runs a real call that may block before the thread's next event (the FILE
/// lock before an output): record releases the thread's stripes first;
/// replay also waits for the recorded predecessors of that next event, so
/// the call happens in the recorded order, and marks the thread blocked for
/// the watchdog while in it.
pub fn before_next_event<R>(op: impl FnOnce() -> R) -> R {
    match with_tracked(|_, mode| mode) {
        Some(Mode::Replay) => on_tracked_thread(|t| {
            busy(t, || {
                replay::publish_all(t);
                replay::wait_next(t);
                replay::set_status(t, ThreadStatus::Blocked);
            });
            let r = op();
            busy(t, || replay::set_status(t, ThreadStatus::Running));
            r
        }),
        Some(mode) => {
            with_tracked(|t, _| busy(t, || finish_previous(t, mode)));
            op()
        }
        None => op(),
    }
}

/// A compiler-instrumented access.
#[inline]
pub fn access(kind: EventKind, addr: u64, size: u64, site: u64) {
    with_tracked(|t, mode| {
        if mode == Mode::Replay {
            // Nothing below calls an interposed function (waits are raw
            // futex calls), so the thread need not be marked busy.
            replay::publish_pending(t);
            replay::count(t, kind, addr, site);
            return;
        }
        busy(t, || {
            finish_previous(t, mode);
            if mode == Mode::Record {
                let set = StripeSet::for_access(addr, size);
                set.lock();
                t.held.set(set);
                append_on(t, set, kind, addr, size, site, 0);
            } else {
                replay::count(t, kind, addr, site);
            }
        })
    });
}

/// An interposed call performed for real in both modes, while its event is
/// held; logged with `payload(&result)`.
#[inline]
pub fn around<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
) -> R {
    emulated(kind, addr, size, site, op, payload, |_| Replayed::CallReal)
}

/// An interposed call whose result replay may take from the recording:
/// `replayed(recorded payload)` decides.
pub fn emulated<R>(
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
            let acquired = busy(t, || acquire(t, addr, size));
            let result = op();
            busy(t, || {
                append(t, kind, addr, size, site, payload(&result));
                give_back(t, acquired);
            });
            result
        }),
        Some(_) => on_tracked_thread(|t| {
            let point = busy(t, || {
                replay::publish_pending(t);
                replay::count(t, kind, addr, site)
            });
            let recorded = point
                .filter(|p| p.flags & flags::PAYLOAD != 0)
                .map(|p| p.payload);
            let result = match recorded.map(replayed) {
                Some(Replayed::Return(r)) => r,
                Some(Replayed::CallReal) | None => {
                    let r = op();
                    check_result(t, kind, addr, site, recorded, payload(&r));
                    r
                }
            };
            busy(t, || replay::publish_pending(t));
            result
        }),
    }
}

/// Replay: a real call's result must be the recorded one (heap addresses,
/// trylock outcomes...).
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
        busy(t, || {
            replay::diverge(t, what, kind as u8, addr, kind as u8, addr, site, actual)
        });
    }
}

/// A call that may block: record releases the thread's stripes, performs
/// `op`, then logs a `kind` event on `addr` if `event(&result)` gives its
/// payload (None: the call failed and nothing happened). Replay waits for
/// the recorded predecessors of the thread's next event first, so the real
/// call (a lock) happens in the recorded order; `replayed` may return the
/// recorded result instead of calling the real function.
pub fn blocking<R>(
    kind: EventKind,
    addr: u64,
    site: u64,
    op: impl FnOnce() -> R,
    event: impl FnOnce(&R) -> Option<u64>,
    replayed: impl FnOnce(u64) -> Replayed<R>,
) -> R {
    match with_tracked(|_, mode| mode) {
        None => op(),
        Some(Mode::Record) => {
            release();
            let result = op();
            if let Some(payload) = event(&result) {
                around(kind, addr, 0, site, || (), |_| payload);
            }
            result
        }
        Some(_) => on_tracked_thread(|t| {
            let next = busy(t, || {
                replay::publish_all(t);
                replay::wait_next(t)
            });
            let recorded = next
                .filter(|p| p.kind == kind as u8 && p.flags & flags::PAYLOAD != 0)
                .map(|p| p.payload);
            let result = match recorded.map(replayed) {
                Some(Replayed::Return(r)) => {
                    busy(t, || replay::count(t, kind, addr, site));
                    r
                }
                Some(Replayed::CallReal) | None => {
                    busy(t, || replay::set_status(t, ThreadStatus::Blocked));
                    let r = op();
                    busy(t, || replay::set_status(t, ThreadStatus::Running));
                    if let Some(payload) = event(&r) {
                        busy(t, || replay::count(t, kind, addr, site));
                        check_result(t, kind, addr, site, recorded, payload);
                    }
                    r
                }
            };
            busy(t, || replay::publish_pending(t));
            result
        }),
    }
}

/// An event with no call around it (thread start/exit, the unlock half of
/// a cond wait, barrier arrival, exit status, fatal signal). Returns the
/// recorded payload in replay (the child id of a thread-create), else
/// `payload`.
pub fn event(kind: EventKind, addr: u64, size: u64, site: u64, payload: u64) -> u64 {
    emulated(kind, addr, size, site, || payload, |&p| p, Replayed::Return)
}

/// Replay: the recorded payload of the thread's next event of `kind` (the
/// child id of a thread-create, before the call, whose own events such as
/// the child's DTV allocation come first).
pub fn next_recorded(kind: EventKind) -> Option<u64> {
    with_tracked(|t, mode| {
        if mode != Mode::Replay {
            return None;
        }
        busy(t, || replay::stop_at_recorded_end(t));
        replay::find_ahead(t, kind).map(|p| p.payload)
    })
    .flatten()
}

/// Outputs between their start and their log entry (record mode).
static OUTPUTS_IN_FLIGHT: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// Set when the process is about to end (fatal signal, exit): no output
/// starts any more.
static ENDING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Record: an output may start (it will be performed and logged before the
/// process ends), or the process is ending and this thread stops here.
fn begin_output(t: &ThreadState) {
    use core::sync::atomic::Ordering::SeqCst;
    OUTPUTS_IN_FLIGHT.fetch_add(1, SeqCst);
    if ENDING.load(SeqCst) {
        OUTPUTS_IN_FLIGHT.fetch_sub(1, SeqCst);
        busy(t, || release_held(t));
        replay::wait_forever();
    }
}

fn end_output() {
    OUTPUTS_IN_FLIGHT.fetch_sub(1, core::sync::atomic::Ordering::SeqCst);
}

/// Record, before the process ends (fatal signal, exit while threads run):
/// outputs under way finish and are logged, no new one starts. Otherwise a
/// crash could fall between a write and its log entry, and replay would
/// write one byte more or less than the recording. Bounded: a thread stuck
/// in a blocking write does not hold the end back for long.
pub fn drain_outputs() {
    use core::sync::atomic::Ordering::SeqCst;
    if mode::current() != Mode::Record {
        return;
    }
    ENDING.store(true, SeqCst);
    for _ in 0..2000 {
        if OUTPUTS_IN_FLIGHT.load(SeqCst) == 0 {
            return;
        }
        // SAFETY: sched_yield has no preconditions (raw: not our wrapper).
        unsafe { libc::syscall(libc::SYS_sched_yield) };
    }
}

/// Runs a real call during which the thread keeps an event's stripe:
/// events inside it (an allocation) nest instead of releasing that stripe
/// (see `ThreadState::nest_depth`).
fn nested<R>(t: &ThreadState, op: impl FnOnce() -> R) -> R {
    t.nest_depth.set(t.nest_depth.get() + 1);
    let result = op();
    t.nest_depth.set(t.nest_depth.get() - 1);
    result
}

/// Output on a descriptor's pseudo-address: logged before the real call,
/// whose own allocations nest inside it (see `ThreadState::nest_depth`).
pub fn output<R>(addr: u64, len: u64, site: u64, op: impl FnOnce() -> R) -> R {
    let Some(mode) = with_tracked(|_, mode| mode) else {
        return op();
    };
    on_tracked_thread(|t| {
        if mode == Mode::Record {
            begin_output(t);
        }
        let acquired = busy(t, || {
            if mode == Mode::Record {
                let a = acquire(t, addr, len);
                append(t, EventKind::Output, addr, len, site, 0);
                Some(a)
            } else {
                replay::publish_pending(t);
                replay::count(t, EventKind::Output, addr, site);
                None
            }
        });
        let result = nested(t, op);
        busy(t, || match acquired {
            Some(a) => {
                give_back(t, a);
                end_output();
            }
            None => replay::publish_pending(t),
        });
        result
    })
}

/// Record, before a real pthread_join: glibc frees the joined thread's
/// memory inside the join, once that thread has really exited; those frees
/// are events, and must come after the thread's exit event in the global
/// order. So wait until the thread has logged its exit, and take a clock
/// past it (nothing else orders them: the kernel does, through the join).
pub fn after_exit_of(thread: u32, exit_addr: u64) {
    if mode::current() != Mode::Record {
        return;
    }
    // The joined thread may need a stripe this one keeps.
    release();
    crate::thread::wait_exited(thread);
    with_tracked(|t, _| {
        busy(t, || {
            release_held(t);
            let set = StripeSet::for_access(exit_addr, 0);
            set.lock();
            t.clock.set(set.clock().max(t.clock.get()));
            set.unlock();
        })
    });
}

/// A call whose event must follow everything the real call does: record
/// holds the event's stripe across the call (events inside it nest), then
/// logs it; replay lets the call's own events count first. For
/// pthread_create (the child's start must come after the parent's
/// allocations inside pthread_create, which happen before the clone) and
/// write (an event logged before the write would survive a crash that came
/// before the write, and replay would write once more).
pub fn holding<R>(
    kind: EventKind,
    addr: u64,
    len: u64,
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
) -> R {
    let Some(mode) = with_tracked(|_, mode| mode) else {
        return op();
    };
    on_tracked_thread(|t| {
        let is_output = kind == EventKind::Output;
        if mode == Mode::Record && is_output {
            begin_output(t);
        }
        let acquired = busy(t, || match mode {
            Mode::Record => Some(acquire(t, addr, len)),
            _ => {
                // Wait for the next event's predecessors before the real
                // call (it is this event, or one nested in the call), and
                // stop here if the recording ended before it.
                replay::publish_all(t);
                replay::wait_next(t);
                None
            }
        });
        let result = nested(t, op);
        busy(t, || match acquired {
            Some(a) => {
                append(t, kind, addr, len, site, payload(&result));
                give_back(t, a);
                if is_output {
                    end_output();
                }
            }
            None => {
                replay::count(t, kind, addr, site);
                replay::publish_pending(t);
            }
        });
        result
    })
}

/// memcpy/memmove: a range read and a range write, performed while the
/// stripes of both ranges are held (record) or after both waited (replay).
pub fn copy<R>(src: u64, dst: u64, len: u64, site: u64, op: impl FnOnce() -> R) -> R {
    let Some(mode) = with_tracked(|_, mode| mode) else {
        return op();
    };
    on_tracked_thread(|t| {
        busy(t, || {
            finish_previous(t, mode);
            if mode == Mode::Record {
                let mut set = StripeSet::for_access(src, len);
                set.add_access(dst, len);
                set.lock();
                t.held.set(set);
            } else {
                replay::count(t, EventKind::ReadRange, src, site);
                replay::count(t, EventKind::WriteRange, dst, site);
            }
        });
        let result = op();
        busy(t, || {
            if mode == Mode::Record {
                append(t, EventKind::ReadRange, src, len, site, 0);
                append(t, EventKind::WriteRange, dst, len, site, 0);
            }
            finish_previous(t, mode);
        });
        result
    })
}

/// A value from outside (time, pid): record logs `real()`, replay returns
/// the recorded value.
pub fn observed(site: u64, real: impl FnOnce() -> u64) -> u64 {
    let addr = rr_lite_trace::pseudo::CLOCK;
    match with_tracked(|_, mode| mode) {
        None => real(),
        Some(Mode::Record) => {
            let value = real();
            on_tracked_thread(|t| busy(t, || append(t, EventKind::Time, addr, 0, site, value)));
            value
        }
        Some(_) => {
            let point =
                on_tracked_thread(|t| busy(t, || replay::count(t, EventKind::Time, addr, site)));
            match point.filter(|p| p.flags & flags::PAYLOAD != 0) {
                Some(p) => p.payload,
                None => real(),
            }
        }
    }
}
