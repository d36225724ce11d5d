//! The vector-clock reduction (`--reduce vc`): drops every cross-thread pair
//! that program order plus the pairs already kept imply.
//!
//! # Algorithm
//!
//! Pairs arrive grouped by their target event `b`, in the global order (a
//! pair is found while its second event is processed). Each thread `t` has a
//! clock `C[t]`: `C[t][u]` is the number of `u`'s events that `t` is known to
//! come after, through program order and the pairs kept so far. `t`'s own
//! component is not stored: at its event `i` it is `i + 1`.
//!
//! The clock an event `a` (of thread `ta`, index `i`) publishes is
//! `V(a) = C[ta]` as it was right after `a`, with `V(a)[ta] = i + 1`. A
//! thread's clock only changes at events that keep a pair, so each thread
//! stores a snapshot at those events only, and `V(a)` is the last snapshot
//! of `ta` at or before `i` (binary search) with the own component set.
//!
//! For the candidates `a -> b` (cross-thread, deduplicated) of event `b` of
//! thread `tb`:
//! 1. drop `a -> b` if `C[tb][ta] > a.index`: `b` already comes after `a`;
//! 2. of the candidates from one thread keep only the latest source: the
//!    earlier ones precede it in program order;
//! 3. drop a remaining candidate `a -> b` if another one `a' -> b` has
//!    `V(a')[ta] > a.index`: `a` precedes `a'`, which `b` will wait for;
//! 4. keep the rest, join each `V(a)` into `C[tb]`, and snapshot `C[tb]` at
//!    `b` if anything was kept.
//!
//! Step 1 is skipped for an event whose call nests events before it
//! (`keep_implied`: fopen's allocation before its descriptor event). Replay
//! waits for such an event's predecessors before the real call, when the
//! nested events have not happened yet; a predecessor implied only through
//! a nested event's pairs would be missed (the call takes a descriptor too
//! early), and waiting for the nested events' pairs instead can deadlock
//! (another thread's allocation between two nested frees depends on the
//! first). Its own candidates all precede the call (record held its stripe
//! across it), so waiting for them up front is safe.
//!
//! The result does not depend on whether the candidates include sources that
//! step 2 would drop, which is what lets the indexed finder collapse read
//! groups under this reduction.
//!
//! # Memory
//!
//! A snapshot is only ever looked up for an event that may still be a
//! pair's source: one the finder's granule states, the critical sections
//! or the barriers hold, or an event of a thread from its current run of
//! private steps on (a thread's exit pairs, `analysis::Progress`). Every
//! other snapshot is dead. When the snapshots have doubled since the last
//! look (and number at least [`MIN_COMPACT_AT`]), the analysis hands
//! [`VectorClocks::compact`] those events, and each thread keeps only the
//! snapshots in force at one of them, so the history is bounded by what the
//! analysis holds (about the granules touched), not by the pairs kept: a
//! 200 M-event trace of racy counters on 128 granules held 419 MB of
//! snapshots before.
//!
//! # Invariants
//!
//! Checked with `debug_assert!` (so in every test run), in the spirit of
//! miri's vector clocks:
//! - **own component**: the snapshot of thread `t` at index `i` has
//!   `[t] == i + 1`;
//! - **monotonicity**: a thread's snapshots grow strictly in index and never
//!   decrease componentwise;
//! - **causality**: no component exceeds the number of events its thread has
//!   had so far (no thread knows of an event that has not happened);
//! - **kept means needed**: a pair `a -> b` is kept only if `C[tb][ta] <=
//!   a.index` just before (unless `keep_implied`);
//! - **soundness**: after `b`, `C[tb][ta] > a.index` for every candidate
//!   `a -> b`, kept or dropped, so every dropped pair is implied;
//! - **compaction is invisible**: a lookup after [`VectorClocks::compact`]
//!   finds the snapshot it found before (debug builds keep the whole
//!   history beside the compacted one and compare; they compact after
//!   every [`MIN_COMPACT_AT`] snapshots, so every test exercises it).

use std::mem::size_of;

use crate::pairs::{DependencyPair, EventRef};

/// Snapshots held (all threads) before the first compaction, and at least
/// between two: small in debug builds, so that the tests compact often.
pub const MIN_COMPACT_AT: usize = if cfg!(debug_assertions) { 16 } else { 1 << 16 };

#[derive(Debug, Default, Clone)]
struct ThreadClock {
    /// `C[t]`, indexed by thread; missing components are 0, the own
    /// component is not maintained.
    current: Vec<u64>,
    /// Events of this thread that changed its clock, increasing.
    snapshot_index: Vec<u64>,
    /// Where each snapshot starts in `snapshot_data`; it ends where the
    /// next one starts.
    snapshot_start: Vec<usize>,
    snapshot_data: Vec<u64>,
}

impl ThreadClock {
    fn snapshot(&self, n: usize) -> &[u64] {
        let start = self.snapshot_start[n];
        let end = self
            .snapshot_start
            .get(n + 1)
            .copied()
            .unwrap_or(self.snapshot_data.len());
        &self.snapshot_data[start..end]
    }

    /// The snapshot in force at `index`, if any.
    fn snapshot_at(&self, index: u64) -> Option<&[u64]> {
        let n = self.snapshot_index.partition_point(|&i| i <= index);
        (n > 0).then(|| self.snapshot(n - 1))
    }

    fn push_snapshot(&mut self, index: u64) {
        self.snapshot_index.push(index);
        self.snapshot_start.push(self.snapshot_data.len());
        self.snapshot_data.extend_from_slice(&self.current);
    }

    fn pop_snapshot_at(&mut self, index: u64) {
        if self.snapshot_index.last() == Some(&index) {
            self.snapshot_index.pop();
            if let Some(start) = self.snapshot_start.pop() {
                self.snapshot_data.truncate(start);
            }
        }
    }

    /// Keeps the snapshots in force at one of `live` (sorted) or at any
    /// index from `floor` on; drops the rest.
    fn retain_in_force(&mut self, live: &[u64], floor: u64) {
        let n = self.snapshot_index.len();
        let mut keep = vec![false; n];
        // (Both sorted: one walk.)
        let mut next = 0;
        for &index in live {
            while next < n && self.snapshot_index[next] <= index {
                next += 1;
            }
            if next > 0 {
                keep[next - 1] = true;
            }
        }
        let from_floor = self.snapshot_index.partition_point(|&i| i <= floor);
        keep[from_floor.saturating_sub(1)..].fill(true);
        let kept = keep.iter().filter(|&&k| k).count();
        let mut index = Vec::with_capacity(kept);
        let mut start = Vec::with_capacity(kept);
        let mut data = Vec::with_capacity(kept * self.current.len());
        for (at, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
            index.push(self.snapshot_index[at]);
            start.push(data.len());
            data.extend_from_slice(self.snapshot(at));
        }
        self.snapshot_index = index;
        self.snapshot_start = start;
        self.snapshot_data = data;
    }

    fn bytes(&self) -> usize {
        (self.current.capacity() + self.snapshot_index.capacity() + self.snapshot_data.capacity())
            * size_of::<u64>()
            + self.snapshot_start.capacity() * size_of::<usize>()
    }
}

/// Vector clocks of every thread, with their history.
#[derive(Debug)]
pub struct VectorClocks {
    threads: Vec<ThreadClock>,
    /// Scratch: which maxima are dominated.
    dominated: Vec<bool>,
    /// Snapshots held, all threads.
    snapshots: usize,
    /// [`Self::wants_compaction`] once `snapshots` reaches this.
    compact_at: usize,
    /// The most [`Self::state_bytes`] held at once, before a compaction.
    peak_bytes: u64,
    /// Debug builds: every snapshot ever taken, never compacted, to check
    /// that compaction changes no lookup (module doc).
    #[cfg(debug_assertions)]
    whole: Vec<ThreadClock>,
}

impl Default for VectorClocks {
    fn default() -> VectorClocks {
        VectorClocks {
            threads: Vec::new(),
            dominated: Vec::new(),
            snapshots: 0,
            compact_at: MIN_COMPACT_AT,
            peak_bytes: 0,
            #[cfg(debug_assertions)]
            whole: Vec::new(),
        }
    }
}

impl VectorClocks {
    pub fn new() -> VectorClocks {
        VectorClocks::default()
    }

    /// Clocks that first compact at `at` snapshots (tests: never, with
    /// `usize::MAX`).
    #[cfg(test)]
    pub(crate) fn compacting_at(at: usize) -> VectorClocks {
        VectorClocks {
            compact_at: at,
            ..VectorClocks::default()
        }
    }

    fn ensure_thread(&mut self, t: u32) {
        let t = t as usize;
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, ThreadClock::default);
        }
    }

    /// `V(of)` as stored: the snapshot of `of`'s thread in force at `of`.
    fn snapshot_of(&self, of: EventRef) -> Option<&[u64]> {
        let found = (self.threads.get(of.thread as usize)).and_then(|t| t.snapshot_at(of.index));
        #[cfg(debug_assertions)]
        {
            let whole = (self.whole.get(of.thread as usize)).and_then(|t| t.snapshot_at(of.index));
            debug_assert_eq!(
                found, whole,
                "compaction dropped the snapshot of {of}, which is still looked up"
            );
        }
        found
    }

    /// `V(of)[component]`: how many events of `component` precede event
    /// `of` (included, for its own thread).
    pub fn component(&self, of: EventRef, component: u32) -> u64 {
        if component == of.thread {
            return of.index + 1;
        }
        self.snapshot_of(of)
            .and_then(|s| s.get(component as usize).copied())
            .unwrap_or(0)
    }

    /// Whether the snapshots have grown enough since the last compaction
    /// for [`Self::compact`] to be worth its walk over the analysis's state.
    #[inline]
    pub(crate) fn wants_compaction(&self) -> bool {
        self.snapshots >= self.compact_at
    }

    /// Drops every snapshot no lookup can reach (module doc, "Memory"):
    /// `live[u]` are the indices of thread `u`'s events that may still be
    /// pairs' sources (in any order), and every event of thread `u` from
    /// `floors[u]` on may be one too (the thread's run of private steps;
    /// threads past `floors` count from 0). The next compaction waits for
    /// the snapshots to double.
    pub(crate) fn compact(&mut self, mut live: Vec<Vec<u64>>, floors: &[u64]) {
        self.peak_bytes = self.peak_bytes.max(self.state_bytes());
        let live_count: usize = live.iter().map(Vec::len).sum();
        live.resize_with(self.threads.len(), Vec::new);
        self.snapshots = 0;
        for (u, (thread, live)) in self.threads.iter_mut().zip(&mut live).enumerate() {
            live.sort_unstable();
            live.dedup();
            thread.retain_in_force(live, floors.get(u).copied().unwrap_or(0));
            self.snapshots += thread.snapshot_index.len();
        }
        // (Past the events the walk found too, so that it stays a small
        // part of the analysis where most granules hold an event.)
        self.compact_at = (2 * self.snapshots + live_count).max(MIN_COMPACT_AT);
    }

    /// No compaction before the snapshots number `at`: the walk's own
    /// memory (a word an event found) would not pay for itself.
    pub(crate) fn postpone_compaction(&mut self, at: usize) {
        self.compact_at = self.compact_at.max(at);
    }

    /// Snapshots held now, all threads.
    pub(crate) fn snapshots(&self) -> usize {
        self.snapshots
    }

    /// True when thread `thread`, before its event `index`'s pairs are
    /// processed, is known to come after event `a`.
    pub(crate) fn knows(&self, thread: u32, a: EventRef) -> bool {
        self.threads
            .get(thread as usize)
            .and_then(|t| t.current.get(a.thread as usize))
            .is_some_and(|&c| c > a.index)
    }

    /// Reduces the cross-thread, deduplicated `candidates` ending at event
    /// `to`, appending the pairs to keep to `kept`. `events_seen[u]` is the
    /// number of events of thread `u` fed so far (`to` included).
    /// `keep_implied`: `to`'s call nests events before it (module doc).
    pub fn reduce(
        &mut self,
        to: EventRef,
        candidates: &mut Vec<DependencyPair>,
        kept: &mut Vec<DependencyPair>,
        events_seen: &[u64],
        keep_implied: bool,
    ) {
        if candidates.is_empty() {
            return;
        }
        debug_assert!(
            candidates
                .iter()
                .all(|p| p.to == to && p.from.thread != to.thread),
            "candidates must be cross-thread pairs ending at {to}"
        );
        self.ensure_thread(to.thread);
        if let [p] = candidates.as_slice() {
            // The common case: one candidate, steps 2 and 3 are moot.
            if keep_implied || !self.knows(to.thread, p.from) {
                self.join_from(to.thread, p.from);
                debug_assert!(self.knows(to.thread, p.from), "join did not order {p:?}");
                kept.push(*p);
                self.snapshot(to, events_seen);
            }
            return;
        }
        let all_candidates = cfg!(debug_assertions).then(|| candidates.clone());

        // 1. Already implied.
        if !keep_implied {
            candidates.retain(|p| !self.knows(to.thread, p.from));
        }
        // 2. Latest source per thread.
        candidates.sort_unstable_by(|x, y| {
            x.from
                .thread
                .cmp(&y.from.thread)
                .then(y.from.index.cmp(&x.from.index))
        });
        candidates.dedup_by_key(|p| p.from.thread);
        // 3. Sources that precede another source.
        self.dominated.clear();
        for (i, p) in candidates.iter().enumerate() {
            let is_dominated = candidates
                .iter()
                .enumerate()
                .any(|(j, q)| j != i && self.component(q.from, p.from.thread) > p.from.index);
            self.dominated.push(is_dominated);
        }
        // 4. Keep and join.
        let mut changed = false;
        for (i, p) in candidates.iter().enumerate() {
            if self.dominated[i] {
                continue;
            }
            debug_assert!(
                keep_implied || !self.knows(to.thread, p.from),
                "kept pair {p:?} is implied"
            );
            self.join_from(to.thread, p.from);
            debug_assert!(self.knows(to.thread, p.from), "join did not order {p:?}");
            kept.push(*p);
            changed = true;
        }
        if changed {
            self.snapshot(to, events_seen);
        }
        if let Some(all) = all_candidates {
            for p in &all {
                debug_assert!(
                    self.knows(to.thread, p.from),
                    "dropped pair {p:?} is not implied by program order and kept pairs"
                );
            }
        }
    }

    /// Joins `V(s)` of every source `s` into the clock of `at`'s thread
    /// after its event `at` (the last it had, whose pairs are reduced):
    /// pairs kept late, ending at an earlier event of the thread
    /// (`crate::sections`). The thread's snapshot at `at` includes them.
    pub(crate) fn join_late(&mut self, at: EventRef, sources: &[EventRef], events_seen: &[u64]) {
        if sources.is_empty() {
            return;
        }
        self.ensure_thread(at.thread);
        for &from in sources {
            self.join_from(at.thread, from);
        }
        let t = &mut self.threads[at.thread as usize];
        let had = t.snapshot_index.len();
        t.pop_snapshot_at(at.index);
        self.snapshots -= had - t.snapshot_index.len();
        #[cfg(debug_assertions)]
        if let Some(whole) = self.whole.get_mut(at.thread as usize) {
            whole.pop_snapshot_at(at.index);
        }
        self.snapshot(at, events_seen);
    }

    /// `C[thread] := max(C[thread], V(from))`.
    fn join_from(&mut self, thread: u32, from: EventRef) {
        self.ensure_thread(from.thread);
        // (Debug builds: the lookup below is the one compaction keeps.)
        #[cfg(debug_assertions)]
        self.snapshot_of(from);
        let Ok([source, target]) = self
            .threads
            .get_disjoint_mut([from.thread as usize, thread as usize])
        else {
            unreachable!("pairs reduced here are cross-thread");
        };
        let own = from.thread as usize;
        let snapshot = source.snapshot_at(from.index).unwrap_or(&[]);
        let len = snapshot.len().max(own + 1);
        if target.current.len() < len {
            target.current.resize(len, 0);
        }
        for (c, &v) in target.current.iter_mut().zip(snapshot) {
            *c = (*c).max(v);
        }
        target.current[own] = target.current[own].max(from.index + 1);
    }

    fn snapshot(&mut self, at: EventRef, events_seen: &[u64]) {
        let t = &mut self.threads[at.thread as usize];
        let own = at.thread as usize;
        if t.current.len() <= own {
            t.current.resize(own + 1, 0);
        }
        t.current[own] = at.index + 1;
        debug_assert!(
            t.current
                .iter()
                .enumerate()
                .all(|(u, &c)| c <= events_seen.get(u).copied().unwrap_or(0)),
            "causality: clock {:?} of thread {} knows events not yet seen {events_seen:?}",
            t.current,
            at.thread
        );
        if let Some(&last) = t.snapshot_index.last() {
            debug_assert!(last < at.index, "snapshots must grow in index");
            let n = t.snapshot_index.len() - 1;
            debug_assert!(
                t.snapshot(n)
                    .iter()
                    .enumerate()
                    .all(|(u, &c)| c <= t.current.get(u).copied().unwrap_or(0)),
                "monotonicity: clock of thread {} decreased",
                at.thread
            );
        }
        t.push_snapshot(at.index);
        self.snapshots += 1;
        #[cfg(debug_assertions)]
        {
            let own = at.thread as usize;
            if self.whole.len() <= own {
                self.whole.resize_with(own + 1, ThreadClock::default);
            }
            self.whole[own]
                .current
                .clone_from(&self.threads[own].current);
            self.whole[own].push_snapshot(at.index);
        }
        debug_assert_eq!(
            self.component(at, at.thread),
            at.index + 1,
            "own component of a snapshot"
        );
    }

    /// Bytes held by the clocks and their history now.
    pub fn state_bytes(&self) -> u64 {
        self.threads.iter().map(ThreadClock::bytes).sum::<usize>() as u64
    }

    /// The most bytes the clocks and their history held at once.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes.max(self.state_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::DependencyKind;

    fn ev(thread: u32, index: u64) -> EventRef {
        EventRef { thread, index }
    }

    fn pair(from: EventRef, to: EventRef) -> DependencyPair {
        DependencyPair {
            from,
            to,
            kind: DependencyKind::Raw,
        }
    }

    /// 0:0 -> 1:0 -> 2:0, then the candidate 0:0 -> 2:1 (implied), reduced
    /// with `keep_implied` for 2:1; the pairs kept.
    fn transitive_chain(keep_implied: bool) -> Vec<DependencyPair> {
        let mut vc = VectorClocks::new();
        let mut kept = Vec::new();
        let steps = [
            (pair(ev(0, 0), ev(1, 0)), vec![1, 1], false),
            (pair(ev(1, 0), ev(2, 0)), vec![1, 1, 1], false),
            (pair(ev(0, 0), ev(2, 1)), vec![1, 1, 2], keep_implied),
        ];
        for (p, seen, keep) in steps {
            vc.reduce(p.to, &mut vec![p], &mut kept, &seen, keep);
        }
        kept
    }

    #[test]
    fn transitive_pair_is_dropped() {
        assert_eq!(transitive_chain(false).len(), 2);
    }

    #[test]
    fn implied_pair_is_kept_for_an_event_nesting_before_it() {
        // 2:1 is a descriptor event whose call nested 2:0: replay waits for
        // its own pairs up front.
        let kept = transitive_chain(true);
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[2], pair(ev(0, 0), ev(2, 1)));
    }

    #[test]
    fn dominated_candidate_is_dropped() {
        // 0:0 -> 1:0 kept; then both 0:0 and 1:0 precede 2:0: only 1:0 is needed.
        let mut vc = VectorClocks::new();
        let mut kept = Vec::new();
        vc.reduce(
            ev(1, 0),
            &mut vec![pair(ev(0, 0), ev(1, 0))],
            &mut kept,
            &[1, 1],
            false,
        );
        let mut c = vec![pair(ev(0, 0), ev(2, 0)), pair(ev(1, 0), ev(2, 0))];
        vc.reduce(ev(2, 0), &mut c, &mut kept, &[1, 1, 1], false);
        assert_eq!(
            kept,
            vec![pair(ev(0, 0), ev(1, 0)), pair(ev(1, 0), ev(2, 0))]
        );
    }

    #[test]
    fn later_events_of_a_source_thread_are_not_known() {
        // 1:0 -> 0:5 kept; 0:5 knows 1:0 but not 1:1.
        let mut vc = VectorClocks::new();
        let mut kept = Vec::new();
        vc.reduce(
            ev(0, 5),
            &mut vec![pair(ev(1, 0), ev(0, 5))],
            &mut kept,
            &[6, 2],
            false,
        );
        assert_eq!(vc.component(ev(0, 5), 1), 1);
        assert_eq!(vc.component(ev(0, 4), 1), 0);
        assert_eq!(vc.component(ev(0, 9), 1), 1);
        vc.reduce(
            ev(0, 6),
            &mut vec![pair(ev(1, 1), ev(0, 6))],
            &mut kept,
            &[7, 2],
            false,
        );
        assert_eq!(kept.len(), 2);
    }
}
