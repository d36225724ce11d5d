//! The recording quantum: a thread keeps the stripes of its plain accesses
//! for up to `QUANTUM` of its hooks instead of giving each back at its next
//! hook.
//!
//! Why: with every stripe handed back at the next hook, threads that share
//! a granule take turns on it every few accesses while recording, and the
//! replay must reproduce every one of those turns as a wait. A thread that
//! keeps a stripe for a quantum records a legal global order (it holds the
//! stripe for every access it logs on it, so the ordering rule of
//! `crate::record` is unchanged) with one turn per quantum instead.
//!
//! Rules that keep this safe:
//! - only plain accesses keep stripes (the compiler's hooks): an
//!   interposed call, a blocking call, thread end and a chaos-scheduled
//!   recording give back everything first, as before;
//! - a thread that keeps stripes never waits for another: it takes a new
//!   stripe only if it is free now (`try_lock`), else gives back all it
//!   keeps and then waits, so two threads never wait for each other's kept
//!   stripes;
//! - a kept stripe goes back after `QUANTUM` hooks of its holder, or when
//!   more than [`MAX_KEPT`] are kept (oldest first), so a waiter waits for
//!   at most a quantum of the holder's hooks;
//! - before logging on a kept stripe the thread checks it still holds it
//!   (a waiter takes over the stripes of a holder asleep outside the
//!   runtime: `crate::handover`).
//!
//! Invariants (debug-asserted): at most [`MAX_KEPT`] stripes kept, none
//! twice; nothing kept inside a call that keeps its own stripes.

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering};

/// The environment variable the recorder sets: hooks per quantum, 0 for
/// none (every stripe back at the next hook).
pub(crate) const QUANTUM_ENV: &core::ffi::CStr = c"RR_LITE_QUANTUM";

/// Most stripes a thread keeps besides those of its last access.
pub(crate) const MAX_KEPT: usize = 8;

static QUANTUM: AtomicU32 = AtomicU32::new(0);

/// Hooks per quantum (0: off).
#[inline]
pub(crate) fn get() -> u32 {
    QUANTUM.load(Ordering::Relaxed)
}

/// Reads `RR_LITE_QUANTUM` (record mode, at start-up). Chaos scheduling
/// wants fine-grained turns, so it turns the quantum off.
pub(crate) fn configure(value: Option<&[u8]>) {
    if crate::chaos::enabled() {
        return;
    }
    let parsed = value.filter(|v| !v.is_empty()).map(|v| {
        v.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit()
                .then_some(())
                .and(n.checked_mul(10)?.checked_add(u32::from(d - b'0')))
        })
    });
    match parsed {
        None => {}
        Some(Some(n)) => QUANTUM.store(n, Ordering::Relaxed),
        Some(None) => crate::sys::warn(&[
            b"RR_LITE_QUANTUM must be a number of hooks: recording without a quantum",
        ]),
    }
}

/// The stripes a thread keeps, each with the hook count at which it took
/// it. Only the owning thread touches it.
#[derive(Debug)]
pub(crate) struct Kept {
    stripes: Cell<[u32; MAX_KEPT]>,
    since: Cell<[u32; MAX_KEPT]>,
    len: Cell<usize>,
    /// The thread's hooks so far (wrapping).
    hooks: Cell<u32>,
}

impl Kept {
    pub(crate) const fn new() -> Kept {
        Kept {
            stripes: Cell::new([0; MAX_KEPT]),
            since: Cell::new([0; MAX_KEPT]),
            len: Cell::new(0),
            hooks: Cell::new(0),
        }
    }

    /// Counts a hook; returns the new count.
    #[inline]
    pub(crate) fn tick(&self) -> u32 {
        let now = self.hooks.get().wrapping_add(1);
        self.hooks.set(now);
        now
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// Removes `stripe` if kept; returns when it was taken.
    #[inline]
    pub(crate) fn take(&self, stripe: u32) -> Option<u32> {
        let len = self.len.get();
        let stripes = self.stripes.get();
        let at = stripes[..len].iter().position(|&s| s == stripe)?;
        let since = self.since.get()[at];
        self.remove(at);
        Some(since)
    }

    fn remove(&self, at: usize) {
        let len = self.len.get();
        let mut stripes = self.stripes.get();
        let mut since = self.since.get();
        stripes.copy_within(at + 1..len, at);
        since.copy_within(at + 1..len, at);
        self.stripes.set(stripes);
        self.since.set(since);
        self.len.set(len - 1);
    }

    /// Keeps `stripe`, taken at hook `since`; returns the stripe it pushed
    /// out (the oldest) when full.
    pub(crate) fn insert(&self, stripe: u32, since: u32) -> Option<u32> {
        debug_assert!(
            !self.stripes.get()[..self.len.get()].contains(&stripe),
            "a stripe kept twice"
        );
        let evicted = (self.len.get() == MAX_KEPT).then(|| {
            let oldest = self.stripes.get()[0];
            self.remove(0);
            oldest
        });
        let len = self.len.get();
        let mut stripes = self.stripes.get();
        let mut sinces = self.since.get();
        stripes[len] = stripe;
        sinces[len] = since;
        self.stripes.set(stripes);
        self.since.set(sinces);
        self.len.set(len + 1);
        evicted
    }

    /// Removes and returns a stripe kept for `quantum` hooks or more at
    /// hook `now`.
    pub(crate) fn pop_expired(&self, now: u32, quantum: u32) -> Option<u32> {
        let len = self.len.get();
        let since = self.since.get();
        let at = since[..len]
            .iter()
            .position(|&s| now.wrapping_sub(s) >= quantum)?;
        let stripe = self.stripes.get()[at];
        self.remove(at);
        Some(stripe)
    }

    /// Removes and returns any kept stripe.
    pub(crate) fn pop(&self) -> Option<u32> {
        let len = self.len.get();
        let stripe = *self.stripes.get()[..len].last()?;
        self.len.set(len - 1);
        Some(stripe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_stripes_expire_after_the_quantum_and_the_oldest_goes_first() {
        let kept = Kept::new();
        for s in 0..MAX_KEPT as u32 {
            assert_eq!(kept.insert(s, s), None);
        }
        assert_eq!(kept.insert(100, 9), Some(0));
        assert_eq!(kept.take(3), Some(3));
        assert_eq!(kept.take(3), None);
        assert_eq!(kept.pop_expired(10, 9), Some(1));
        assert_eq!(kept.pop_expired(10, 9), None);
        let mut rest = Vec::new();
        while let Some(s) = kept.pop() {
            rest.push(s);
        }
        rest.sort_unstable();
        assert_eq!(rest, vec![2, 4, 5, 6, 7, 100]);
        assert!(kept.is_empty());
    }

    #[test]
    fn wrapping_hook_counts_still_expire() {
        let kept = Kept::new();
        kept.insert(7, u32::MAX - 1);
        assert_eq!(kept.pop_expired(2, 4), Some(7));
    }
}
