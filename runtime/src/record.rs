//! The record-mode event core: every hook and interposed call ends up here.
//!
//! Three shapes of event:
//! - [`access`]: a compiler hook; the access itself runs after the hook
//!   returns, so the stripes stay locked until the thread's next hook;
//! - [`around`]: an interposed call performed while the stripes are held
//!   (unlock, signal, malloc, output, trylock...), logged with its result;
//! - [`after_blocking`]: a call that may block (lock, wait, join); the
//!   thread's stripes are released first, the event is logged once the call
//!   has returned.

use rr_lite_trace::EventKind;
use rr_lite_trace::codec::Entry;

use crate::mode;
use crate::stripes::StripeSet;
use crate::thread::{THREAD, ThreadState};

/// Runs `f` on the calling thread's state if the runtime records this thread.
#[inline(always)]
pub fn with_tracked<R>(f: impl FnOnce(&ThreadState) -> R) -> Option<R> {
    if !mode::recording() {
        return None;
    }
    THREAD.with(|t| t.is_tracked().then(|| f(t)))
}

/// Unlocks the stripes the thread keeps from its previous hook.
pub fn release_held(t: &ThreadState) {
    let held = t.held.get();
    if !held.is_empty() {
        held.unlock();
        t.held.set(StripeSet::EMPTY);
    }
}

/// Appends an entry whose stripes the thread holds.
fn append(t: &ThreadState, kind: EventKind, addr: u64, size: u64, site: u64, payload: u64) {
    let clock = if kind == EventKind::Time {
        // A value read from outside: nothing writes its pseudo-address, so
        // it needs no lock, only a place in program order.
        t.clock.get() + 1
    } else {
        StripeSet::for_access(addr, size).advance_clock(t.clock.get())
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

/// A compiler-instrumented access: log it and keep its stripes locked
/// until the thread's next hook.
#[inline]
pub fn access(kind: EventKind, addr: u64, size: u64, site: u64) {
    with_tracked(|t| {
        t.enter();
        release_held(t);
        let set = StripeSet::for_access(addr, size);
        set.lock();
        t.held.set(set);
        append(t, kind, addr, size, site, 0);
        t.leave();
    });
}

/// Releases the thread's stripes at a hook that is not an access
/// (function entry/exit) or before a call that may block.
#[inline]
pub fn release() {
    with_tracked(|t| {
        t.enter();
        release_held(t);
        t.leave();
    });
}

/// Which stripes an [`around`] call locked, and how to give them back.
enum Acquired {
    /// Became the thread's held set (everything else was released first).
    Top,
    /// Locked on top of the held set, inside an output call.
    Nested(StripeSet),
}

fn acquire(t: &ThreadState, addr: u64, size: u64) -> Acquired {
    let want = StripeSet::for_access(addr, size);
    if let Some(stripe) = want.single().filter(|_| t.output_depth.get() > 0) {
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
        Acquired::Nested(set) => set.unlock(),
    }
}

/// Performs `op` while holding the stripes of `addr`, then logs the event
/// with `payload(&result)` and releases. Untracked threads just run `op`.
#[inline]
pub fn around<R>(
    kind: EventKind,
    addr: u64,
    size: u64,
    site: u64,
    op: impl FnOnce() -> R,
    payload: impl FnOnce(&R) -> u64,
) -> R {
    let Some(acquired) = with_tracked(|t| {
        t.enter();
        let a = acquire(t, addr, size);
        t.leave();
        a
    }) else {
        return op();
    };
    let result = op();
    THREAD.with(|t| {
        t.enter();
        append(t, kind, addr, size, site, payload(&result));
        give_back(t, acquired);
        t.leave();
    });
    result
}

/// Releases the thread's stripes, performs `op` (which may block), then logs
/// the event it produced, if any (`event(&result)` returns `(kind, addr,
/// payload)` or None when the call failed and nothing happened).
#[inline]
pub fn after_blocking<R>(
    site: u64,
    op: impl FnOnce() -> R,
    event: impl FnOnce(&R) -> Option<(EventKind, u64, u64)>,
) -> R {
    release();
    let result = op();
    if let Some((kind, addr, payload)) = event(&result) {
        around(kind, addr, 0, site, || (), |_| payload);
    }
    result
}

/// Logs an event that needs no call around it (thread start/exit, exit
/// status, fatal signal), releasing the stripes afterwards.
pub fn event(kind: EventKind, addr: u64, size: u64, site: u64, payload: u64) {
    around(kind, addr, size, site, || (), |_| payload);
}

/// memcpy/memmove: a range read and a range write, performed while the
/// stripes of both ranges are held.
pub fn copy<R>(src: u64, dst: u64, len: u64, site: u64, op: impl FnOnce() -> R) -> R {
    let locked = with_tracked(|t| {
        t.enter();
        release_held(t);
        let mut set = StripeSet::for_access(src, len);
        set.add_access(dst, len);
        set.lock();
        t.held.set(set);
        t.leave();
    });
    if locked.is_none() {
        return op();
    }
    let result = op();
    THREAD.with(|t| {
        t.enter();
        append(t, EventKind::ReadRange, src, len, site, 0);
        append(t, EventKind::WriteRange, dst, len, site, 0);
        release_held(t);
        t.leave();
    });
    result
}

/// A value from outside (time, pid): logged in program order, no lock.
pub fn observed(site: u64, value: u64) {
    with_tracked(|t| {
        t.enter();
        append(
            t,
            EventKind::Time,
            rr_lite_trace::pseudo::CLOCK,
            0,
            site,
            value,
        );
        t.leave();
    });
}
