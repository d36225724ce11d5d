//! Critical sections that need no order (`SplitOptions::float_sections`).
//!
//! The pair finder links each mutex lock to the unlock before it: replay
//! then takes every mutex in the recorded order, and each time a mutex
//! changes threads is a kept wait. When the two critical sections touch
//! different data (BARNES's cell locks, hashed into a fixed array of
//! mutexes; a condition wait's re-lock whose section only unlocks) that
//! order is not needed: the mutex, which stays real at replay, keeps the
//! sections apart, and the data inside them have their own pairs.
//!
//! # Algorithm
//!
//! At a lock `L` of mutex `m` by thread `t`, the pairs to `L` from every
//! other thread's last unlock of `m` that `t` does not already come after
//! (less those another of them comes after) are *held back*: taken out of
//! `L`'s candidates, not joined into `t`'s clock, and given to the
//! collector as nested waits of `L` (for the sequential order only). The
//! section is then *open*, and its events go through the reduction as
//! usual. It *floats* (the held-back pairs are dropped for good) if every
//! event up to and including its unlock of `m` is a plain memory access
//! ([`inert`]) that keeps no pair, and [`SectionCode`] says the code
//! between the lock's and the unlock's call sites is all instrumented: the
//! holder then never waits, blocks or touches state the trace cannot see
//! while it holds `m`. Otherwise it is *promoted* at its first other event
//! `E`: `L` keeps the held-back pairs, `t` joins their clocks after `E`
//! (its events between `L` and `E` published smaller clocks: other threads
//! only keep more pairs from them), and `E`'s own kept pairs that they
//! imply are dropped. So a promoted section waits for every section of `m`
//! before it, floated or not, as recorded.
//!
//! State: per mutex, each thread's last unlock (as many as threads that
//! unlocked it); per thread, its open section and the pairs held back.
//!
//! Replay cannot deadlock on a floated section: a thread blocked on the
//! real mutex waits either for a floated holder, which runs to its unlock
//! without waiting, or for a promoted holder whose section the recording
//! had earlier (a promoted section waits for all earlier ones), which is
//! itself stuck only at an event the recording had still earlier. Going
//! back in the recorded order at every step, a cycle cannot close.
//!
//! A mutex that is ever tried (`MutexTryLock`: trylocks, failed locks,
//! one-time initialisation's claims) never floats from then on, and each
//! of its tries and locks keeps the pairs from every earlier section: a
//! floated section taken early would change what a try returns. Sequential
//! replay runs the sections in the recorded order: the held-back pairs are
//! nested waits of `L` (`crate::recorded`), which the total order keeps and
//! the plans do not.
//!
//! # Invariants
//! - at most one open section per thread, and only while it holds `m`;
//! - a promoted section's pairs end at its lock and start at unlocks of
//!   other threads that the recording had before it;
//! - a floated section kept no pair after its lock.

use std::collections::HashMap;

use rr_lite_trace::{EventKind, RecordedEvent};

use crate::pairs::{DependencyKind, DependencyPair, EventRef};
use crate::reduce::VectorClocks;

/// Plain memory accesses: what a floated section may contain.
pub(crate) fn inert(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::Read
            | EventKind::Write
            | EventKind::Rmw
            | EventKind::ReadRange
            | EventKind::WriteRange
            | EventKind::AtomicLoad
            | EventKind::AtomicStore
    )
}

#[derive(Debug, Default)]
struct MutexState {
    /// Each thread's last unlock of it.
    unlocks: Vec<EventRef>,
    /// A try of it was seen: it no longer floats.
    tried: bool,
}

impl MutexState {
    /// Pairs to `to` from every other thread's last unlock that `to`'s
    /// thread does not already come after, less those another of them
    /// comes after (while every section keeps its order, that leaves the
    /// one unlock before `to`, as the pair finder has it).
    fn unknown_unlocks(&self, to: EventRef, clocks: &VectorClocks) -> Vec<DependencyPair> {
        let unknown: Vec<EventRef> = (self.unlocks.iter())
            .filter(|u| u.thread != to.thread && !clocks.knows(to.thread, **u))
            .copied()
            .collect();
        let dominated = |u: &EventRef| {
            (unknown.iter()).any(|v| v != u && clocks.component(*v, u.thread) > u.index)
        };
        (unknown.iter())
            .filter(|u| !dominated(u))
            .map(|&from| DependencyPair {
                from,
                to,
                kind: DependencyKind::Waw,
            })
            .collect()
    }
}

/// Says whether a section whose lock was called from the first site and
/// its unlock from the second runs only instrumented code, so that every
/// shared access in it is an event (`rr_lite_symbols::SectionCode`). A
/// section floats only where it says yes.
pub struct SectionCode(pub Box<dyn FnMut(u64, u64) -> bool + Send>);

impl std::fmt::Debug for SectionCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SectionCode")
    }
}

#[derive(Debug, Clone)]
struct OpenSection {
    mutex: u64,
    /// Where its lock was called from.
    lock_site: u64,
    /// The pairs held back from its lock.
    held_back: Vec<DependencyPair>,
}

/// The sections' state over the global order (module doc).
#[derive(Debug)]
pub(crate) struct Sections {
    code: SectionCode,
    /// Its answers so far, by (lock site, unlock site).
    answers: HashMap<(u64, u64), bool>,
    mutexes: HashMap<u64, MutexState>,
    /// By thread.
    open: Vec<Option<OpenSection>>,
    /// Sections open now.
    open_count: usize,
    /// A section to promote once the current event is reduced.
    promote_after: Option<OpenSection>,
    /// Pairs of promoted sections, each ending at its lock.
    pub(crate) late: Vec<DependencyPair>,
    pub(crate) floated: u64,
    pub(crate) promoted: u64,
}

impl Sections {
    pub(crate) fn new(code: SectionCode) -> Sections {
        Sections {
            code,
            answers: HashMap::new(),
            mutexes: HashMap::new(),
            open: Vec::new(),
            open_count: 0,
            promote_after: None,
            late: Vec::new(),
            floated: 0,
            promoted: 0,
        }
    }

    /// What says which code is instrumented, for a new pass.
    pub(crate) fn into_code(self) -> SectionCode {
        self.code
    }

    /// Calls `f` with every event the sections hold: each mutex's last
    /// unlocks, and the sources of the pairs held back from open sections.
    pub(crate) fn for_each_event(&self, f: &mut impl FnMut(EventRef)) {
        let unlocks = self.mutexes.values().flat_map(|m| &m.unlocks);
        unlocks.for_each(|&u| f(u));
        let open = self.open.iter().flatten().chain(&self.promote_after);
        let held_back = open.flat_map(|section| &section.held_back);
        held_back.for_each(|p| f(p.from));
    }

    /// Whether the code between the two sites is all instrumented.
    fn instrumented(&mut self, lock_site: u64, unlock_site: u64) -> bool {
        let code = &mut self.code.0;
        *self
            .answers
            .entry((lock_site, unlock_site))
            .or_insert_with(|| code(lock_site, unlock_site))
    }

    /// Whether event `e` concerns the sections: a lock, an unlock or a try,
    /// or any event while a section is open.
    #[inline(always)]
    pub(crate) fn watching(&self, e: &RecordedEvent) -> bool {
        self.open_count != 0
            || matches!(
                e.kind,
                EventKind::MutexLock | EventKind::MutexUnlock | EventKind::MutexTryLock
            )
    }

    fn open_slot(&mut self, t: u32) -> &mut Option<OpenSection> {
        let t = t as usize;
        if self.open.len() <= t {
            self.open.resize(t + 1, None);
        }
        &mut self.open[t]
    }

    fn take_open(&mut self, t: u32) -> Option<OpenSection> {
        let section = self.open_slot(t).take();
        self.open_count -= usize::from(section.is_some());
        section
    }

    /// Before event `e` (`event`) is reduced, with its cross-thread
    /// `candidates`. At a lock: the pairs from the other threads' last
    /// unlocks that it does not already come after are held back (taken
    /// out of `candidates`, returned) and its section opens, or, for a
    /// mutex that was tried, they join `candidates`; at a try, they join
    /// them.
    pub(crate) fn before(
        &mut self,
        e: &RecordedEvent,
        event: EventRef,
        candidates: &mut Vec<DependencyPair>,
        clocks: &VectorClocks,
    ) -> Vec<DependencyPair> {
        let open = self.open_slot(e.thread).is_some();
        if open && !inert(e.kind) && e.kind != EventKind::MutexUnlock {
            // A lock, a call or an exit inside the open section.
            self.promote_after = self.take_open(e.thread);
        }
        if !matches!(e.kind, EventKind::MutexLock | EventKind::MutexTryLock) {
            return Vec::new();
        }
        let state = self.mutexes.entry(e.addr).or_default();
        state.tried |= e.kind == EventKind::MutexTryLock;
        let pairs = state.unknown_unlocks(event, clocks);
        if state.tried || pairs.is_empty() {
            candidates.extend_from_slice(&pairs);
            return Vec::new();
        }
        candidates.retain(|p| !pairs.iter().any(|h| h.from == p.from));
        *self.open_slot(e.thread) = Some(OpenSection {
            mutex: e.addr,
            lock_site: e.site,
            held_back: pairs.clone(),
        });
        self.open_count += 1;
        pairs
    }

    /// After event `e` (`event`) is reduced; its kept pairs are
    /// `kept[kept_before..]`; `opened`: whether [`Self::before`] opened its
    /// section. `events_seen` as [`VectorClocks::reduce`] takes it.
    pub(crate) fn after(
        &mut self,
        e: &RecordedEvent,
        event: EventRef,
        (kept, kept_before): (&mut Vec<DependencyPair>, usize),
        opened: bool,
        clocks: &mut VectorClocks,
        events_seen: &[u64],
    ) {
        let at = Here {
            event,
            kept_before,
            events_seen,
        };
        if let Some(section) = self.promote_after.take() {
            self.promote(section, clocks, kept, &at);
        }
        let kept_here = kept.len() != kept_before;
        let unlocked = e.kind == EventKind::MutexUnlock;
        let section = self.take_open_if(e.thread, |_| {
            unlocked || (!opened && (kept_here || !inert(e.kind)))
        });
        if let Some(section) = section {
            let floats = unlocked
                && section.mutex == e.addr
                && !kept_here
                && self.instrumented(section.lock_site, e.site);
            if floats {
                self.floated += 1;
            } else {
                self.promote(section, clocks, kept, &at);
            }
        }
        if unlocked {
            let state = self.mutexes.entry(e.addr).or_default();
            match state.unlocks.iter_mut().find(|u| u.thread == e.thread) {
                Some(u) => *u = event,
                None => state.unlocks.push(event),
            }
        }
    }

    fn take_open_if(
        &mut self,
        t: u32,
        take: impl FnOnce(&OpenSection) -> bool,
    ) -> Option<OpenSection> {
        if self.open_slot(t).as_ref().is_some_and(take) {
            self.take_open(t)
        } else {
            None
        }
    }

    /// At the end of the global order: a section still open (its thread
    /// never unlocked) is promoted, since a thread blocked on its mutex at
    /// replay would wait for it for ever.
    pub(crate) fn finish(&mut self) {
        self.open_count = 0;
        for section in std::mem::take(&mut self.open).into_iter().flatten() {
            self.promoted += 1;
            self.late.extend_from_slice(&section.held_back);
        }
    }

    /// Keeps the pairs held back from `section`'s lock after all; its
    /// thread joins their clocks after the current event, whose own kept
    /// pairs that they imply are dropped (the lock now waits for them).
    fn promote(
        &mut self,
        section: OpenSection,
        clocks: &mut VectorClocks,
        kept: &mut Vec<DependencyPair>,
        at: &Here<'_>,
    ) {
        debug_assert!(
            section
                .held_back
                .iter()
                .all(|p| p.to.thread == at.event.thread)
        );
        self.promoted += 1;
        let sources: Vec<EventRef> = section.held_back.iter().map(|p| p.from).collect();
        clocks.join_late(at.event, &sources, at.events_seen);
        let implied = |p: &DependencyPair| {
            (sources.iter()).any(|s| clocks.component(*s, p.from.thread) > p.from.index)
        };
        let own: Vec<DependencyPair> = kept
            .drain(at.kept_before..)
            .filter(|p| !implied(p))
            .collect();
        kept.extend(own);
        self.late.extend(section.held_back);
    }
}

/// The event being analysed, for [`Sections::after`].
struct Here<'a> {
    event: EventRef,
    kept_before: usize,
    events_seen: &'a [u64],
}
