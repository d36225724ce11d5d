//! Dependency pairs and the two algorithms that find them.
//!
//! Both algorithms see the global log one (event, granule) access at a time
//! and keep, per granule, the open dependency pair: the first accessor(s)
//! whose successor has not been seen yet. The rules (SPEC section 2):
//!
//! | open pair                 | next access | pairs emitted                  | open pair after      |
//! |---------------------------|-------------|--------------------------------|----------------------|
//! | none                      | read r      | -                              | read group {r}       |
//! | none                      | write w     | -                              | write w              |
//! | read group R              | read r      | - (parallel relation)          | read group R + r     |
//! | read group R              | write w     | WAR r->w for every r in R      | write w              |
//! | write v                   | read r      | RAW v->r                       | RAW group v, {r}     |
//! | write v                   | write w     | WAW v->w                       | write w              |
//! | RAW group v, R            | read r      | RAW v->r (r only joins)        | RAW group v, R + r   |
//! | RAW group v, R            | write w     | WAR r->w for every r in R      | write w              |
//!
//! A read-modify-write counts as a write. Pairs are emitted while their
//! *second* event is processed, so every pair ending at an event is known
//! once that event has been fed; the analysis relies on this to reduce
//! and deduplicate pairs one event at a time.
//!
//! [`worklist`] is the literal work-queue version (the reference), [`indexed`]
//! the fast one (per-granule state in a hash map). They emit the same pairs.

mod granule_table;
pub mod indexed;
pub mod worklist;

use std::fmt;

use rr_lite_trace::Access;

use crate::stats::PairCounts;
use serde::Serialize;

/// An event named by its place in its thread's program order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct EventRef {
    pub thread: u32,
    pub index: u64,
}

impl EventRef {
    /// The event `e` is: its thread and its place in that thread.
    #[inline(always)]
    pub fn of(e: &rr_lite_trace::RecordedEvent) -> EventRef {
        EventRef {
            thread: e.thread,
            index: e.index,
        }
    }
}

impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.thread, self.index)
    }
}

/// Which order a dependency pair preserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum DependencyKind {
    /// Write after read: the read(s) must happen before the write.
    #[serde(rename = "WAR")]
    War,
    /// Read after write: the write must happen before the read(s).
    #[serde(rename = "RAW")]
    Raw,
    /// Write after write.
    #[serde(rename = "WAW")]
    Waw,
}

impl DependencyKind {
    pub const ALL: [DependencyKind; 3] = [
        DependencyKind::War,
        DependencyKind::Raw,
        DependencyKind::Waw,
    ];

    /// "WAR", "RAW" or "WAW".
    pub fn name(self) -> &'static str {
        match self {
            DependencyKind::War => "WAR",
            DependencyKind::Raw => "RAW",
            DependencyKind::Waw => "WAW",
        }
    }
}

impl fmt::Display for DependencyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `to` must not start before `from` has completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DependencyPair {
    pub from: EventRef,
    pub to: EventRef,
    pub kind: DependencyKind,
}

impl DependencyPair {
    pub fn is_same_thread(&self) -> bool {
        self.from.thread == self.to.thread
    }
}

/// Where the finders put what they find: the pairs ending at the event
/// being processed, and the counts of every pair found so far.
#[derive(Debug, Default)]
pub struct PairSink {
    /// Pairs ending at the current event, possibly repeated when the event
    /// spans granules; a pair found on neighbouring granules one after the
    /// other (a range access: a 64 MB memcpy finds one pair on each of 8 M
    /// granules) is kept once. Pairs within one thread only with
    /// [`PairSink::keeping_same_thread`]: no other reduction keeps them, and
    /// most events of a thread that works on its own data have one.
    pub pairs: Vec<DependencyPair>,
    /// Pairs found so far, one per granule they were found on (the
    /// method's count, whatever `pairs` keeps), and of them the pairs
    /// between two threads.
    pub found: PairCounts,
    pub cross_thread: PairCounts,
    /// WAR pairs found but not materialised because an open read group
    /// collapsed several reads of one thread into its latest (see
    /// [`indexed::IndexedFinder::collapsing`]): all of them.
    pub collapsed_war: u64,
    /// Cross-thread RAW and WAW pairs found whose write and second access
    /// touched different bytes of their granule (false sharing: an array
    /// of 4-byte elements dealt out to threads one by one). Counted by the
    /// indexed finder only, for the hint `split` prints.
    pub disjoint_bytes: u64,
    /// ... and those of them within one thread.
    pub collapsed_war_same_thread: u64,
    /// While [`Self::watch_apart`]: the pairs ending at the current event
    /// between accesses to different bytes of their granule (those counted
    /// in [`Self::disjoint_bytes`], and WAR pairs whose write touched none
    /// of the bytes its read group read). Which of them the reduction keeps
    /// tells whether false sharing makes the replay's waits
    /// (`Analyzer::finer_for_false_sharing`).
    pub(crate) apart: Vec<DependencyPair>,
    pub(crate) watch_apart: bool,
    keep_same_thread: bool,
    /// The current event's pairs go through the vector-clock reduction
    /// with its first step (its call nests no events before it: see
    /// `reduce`), so a collapsing finder may count, without handing it
    /// over, a pair that step drops for sure ([`Self::implied_pair_apart`]).
    pub(crate) drops_implied: bool,
}

/// [`PairSink`]'s counts at one moment ([`PairSink::raw_counts`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SinkCounts {
    found: PairCounts,
    cross_thread: PairCounts,
    collapsed_war: u64,
    disjoint_bytes: u64,
    collapsed_war_same_thread: u64,
}

impl PairSink {
    /// The counters as they are now, for [`Self::repeat_counts_since`]
    /// (what [`Self::counts`] sums up for the statistics).
    pub(crate) fn raw_counts(&self) -> SinkCounts {
        SinkCounts {
            found: self.found,
            cross_thread: self.cross_thread,
            collapsed_war: self.collapsed_war,
            disjoint_bytes: self.disjoint_bytes,
            collapsed_war_same_thread: self.collapsed_war_same_thread,
        }
    }

    /// Counts what was found since `before` `times` more times: the pairs
    /// of one access to a uniform chunk, found once for all its granules,
    /// counted once per granule as the method counts them. (The pairs
    /// themselves are kept once: neighbouring granules' are anyway.)
    pub(crate) fn repeat_counts_since(&mut self, before: SinkCounts, times: u64) {
        let more = |now: u64, then: u64| (now - then) * times;
        for kind in DependencyKind::ALL {
            let found = more(self.found.get(kind), before.found.get(kind));
            let cross = more(self.cross_thread.get(kind), before.cross_thread.get(kind));
            self.found.add(kind, found);
            self.cross_thread.add(kind, cross);
        }
        self.collapsed_war += more(self.collapsed_war, before.collapsed_war);
        self.disjoint_bytes += more(self.disjoint_bytes, before.disjoint_bytes);
        self.collapsed_war_same_thread += more(
            self.collapsed_war_same_thread,
            before.collapsed_war_same_thread,
        );
    }

    /// A sink whose `pairs` also get the pairs within one thread.
    pub fn keeping_same_thread() -> PairSink {
        PairSink {
            keep_same_thread: true,
            ..PairSink::default()
        }
    }

    /// Forgets the pairs of the previous event (the counts stay).
    pub fn clear(&mut self) {
        self.pairs.clear();
        self.apart.clear();
    }

    /// Notes a pair between threads on different bytes of its granule
    /// found by other means than [`Self::pair_apart`] (a WAR pair).
    #[inline]
    pub(crate) fn note_apart(&mut self, from: EventRef, to: EventRef, kind: DependencyKind) {
        if self.watch_apart {
            self.apart.push(DependencyPair { from, to, kind });
        }
    }

    /// Runs `find` (which hands pairs to this sink) keeping the pairs within
    /// one thread too; returns the source and kind of every pair it added,
    /// and drops those within one thread again unless the sink keeps them.
    pub fn gathering(
        &mut self,
        find: impl FnOnce(&mut PairSink),
    ) -> Vec<(EventRef, DependencyKind)> {
        let keep = std::mem::replace(&mut self.keep_same_thread, true);
        let before = self.pairs.len();
        find(self);
        self.keep_same_thread = keep;
        let gathered = self.pairs[before..]
            .iter()
            .map(|p| (p.from, p.kind))
            .collect();
        if !keep {
            self.pairs.retain(|p| !p.is_same_thread());
        }
        gathered
    }

    /// A pair the finder did not find but the analysis adds (a late barrier
    /// departure's copy of its round's release pairs): kept as [`Self::pair`]
    /// keeps pairs, and left out of the counts of pairs found, which are the
    /// finders' (the collapsing finder gathers fewer of them to copy).
    pub fn pair_added(&mut self, from: EventRef, to: EventRef, kind: DependencyKind) {
        let pair = DependencyPair { from, to, kind };
        if (self.keep_same_thread || !pair.is_same_thread()) && self.pairs.last() != Some(&pair) {
            self.pairs.push(pair);
        }
    }

    #[inline]
    pub(crate) fn pair(&mut self, from: EventRef, to: EventRef, kind: DependencyKind) {
        self.pair_apart(from, to, kind, || false);
    }

    /// [`Self::pair`], counting the pair in [`Self::disjoint_bytes`] if it
    /// is between threads and `apart` says its accesses touched different
    /// bytes (asked only then: most pairs are within one thread).
    #[inline(always)]
    pub(crate) fn pair_apart(
        &mut self,
        from: EventRef,
        to: EventRef,
        kind: DependencyKind,
        apart: impl FnOnce() -> bool,
    ) {
        let pair = DependencyPair { from, to, kind };
        self.found.add(kind, 1);
        if pair.is_same_thread() {
            if !self.keep_same_thread {
                return;
            }
        } else {
            self.cross_thread.add(kind, 1);
            if apart() {
                self.disjoint_bytes += 1;
                if self.watch_apart {
                    self.apart.push(pair);
                }
            }
        }
        if self.pairs.last() != Some(&pair) {
            self.pairs.push(pair);
        }
    }

    /// A pair found that program order and the pairs handed over before
    /// imply for sure: counted as [`Self::pair_apart`] counts it, not
    /// handed over. The collapsing finder's RAW pair to a thread's read of
    /// a granule it has read since the write: its first such read got the
    /// pair, and after it the reduction knows the reader follows the write
    /// (`reduce`, soundness), so its first step would drop this one.
    /// Only while [`Self::drops_implied`] and the sink hands over no pairs
    /// within one thread (those gathered for a barrier's late departures
    /// are copied, not reduced).
    #[inline(always)]
    pub(crate) fn implied_pair_apart(
        &mut self,
        from: EventRef,
        to: EventRef,
        kind: DependencyKind,
        apart: impl FnOnce() -> bool,
    ) {
        debug_assert!(self.may_leave_implied());
        self.found.add(kind, 1);
        if from.thread != to.thread {
            self.cross_thread.add(kind, 1);
            if apart() {
                self.disjoint_bytes += 1;
            }
        }
    }

    /// Whether implied pairs may be counted only
    /// ([`Self::implied_pair_apart`]).
    #[inline(always)]
    pub(crate) fn may_leave_implied(&self) -> bool {
        self.drops_implied && !self.keep_same_thread
    }

    /// Every count, the collapsed reads' pairs included.
    pub fn counts(&self) -> (PairCounts, PairCounts) {
        let (mut found, mut cross_thread) = (self.found, self.cross_thread);
        found.war += self.collapsed_war;
        cross_thread.war += self.collapsed_war - self.collapsed_war_same_thread;
        (found, cross_thread)
    }
}

/// The bytes of 8-byte granule `granule` that the access `[addr, end)`
/// touches, a bit each (bit i: byte i); the access must touch the granule.
/// What the race finder compares, and the pair finder while it watches for
/// false sharing.
#[inline(always)]
pub(crate) fn granule_bytes(granule: u64, addr: u64, end: u64) -> u8 {
    let start = granule << 3;
    // (Without `start + 8`: the last granule of the address space is
    // where a corrupt log's address may land, and the split must say the
    // log is corrupt, not overflow.)
    let lo = addr.saturating_sub(start).min(8);
    let hi = end.saturating_sub(start).min(8);
    debug_assert!(lo < hi, "the access does not touch granule {granule:#x}");
    ((1u16 << hi) - (1u16 << lo)) as u8
}

/// Where an access lies, as far as the hint about false sharing needs
/// ([`PairSink::disjoint_bytes`]): the low byte of its address and its size
/// (at most 255), kept as they are; a write's is stored, and they are only
/// compared at pairs between threads. The pairs themselves are the
/// granule's, as the method defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    low: u8,
    size: u8,
}

impl Footprint {
    /// Nothing known: never disjoint from anything.
    pub const UNKNOWN: Footprint = Footprint { low: 0, size: 0 };

    #[inline(always)]
    pub fn of(addr: u64, size: u64) -> Footprint {
        Footprint {
            low: addr as u8,
            size: size.min(255) as u8,
        }
    }

    /// Whether two accesses to one granule of `1 << shift` bytes touch
    /// different bytes of it: each lies within the granule (one that spans
    /// granules, or a granule over 128 bytes, counts as touching all of it)
    /// and their bytes do not meet.
    #[inline]
    pub fn disjoint(self, other: Footprint, shift: u32) -> bool {
        if shift > 7 || self.size == 0 || other.size == 0 {
            return false;
        }
        let granule = 1u16 << shift;
        let span = |f: Footprint| {
            let start = u16::from(f.low) & (granule - 1);
            (start, start + u16::from(f.size))
        };
        let ((a, a_end), (b, b_end)) = (span(self), span(other));
        a_end <= granule && b_end <= granule && (a_end <= b || b_end <= a)
    }
}

/// The dependency-pair finder selected by `--algorithm`. (One per split,
/// inline: a box would put a load in front of every access's lookup.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum PairFinder {
    Worklist(worklist::WorklistFinder),
    Indexed(indexed::IndexedFinder),
}

impl PairFinder {
    /// Feeds one access of `event` to `granule`: `size` bytes at `addr`.
    #[inline(always)]
    pub fn access(
        &mut self,
        granule: u64,
        event: EventRef,
        access: Access,
        (addr, size): (u64, u64),
        sink: &mut PairSink,
    ) {
        let writes = access.writes();
        match self {
            PairFinder::Worklist(f) => f.access(granule, event, writes, sink),
            PairFinder::Indexed(f) => f.access(granule, event, writes, (addr, size), sink),
        }
    }

    /// [`Self::access`] of every granule of `first..=last`, one event's
    /// range. The indexed finder takes the chunks it covers whole at once
    /// where it can (`IndexedFinder::access_range`). (Out of line: inlined,
    /// it took registers from the analysis's loop of one-granule events.)
    #[inline(never)]
    pub fn access_range(
        &mut self,
        (first, last): (u64, u64),
        event: EventRef,
        access: Access,
        at: (u64, u64),
        sink: &mut PairSink,
    ) {
        match self {
            PairFinder::Indexed(f) if first < last => {
                f.access_range((first, last), event, access.writes(), at, sink);
            }
            _ => (first..=last).for_each(|granule| self.access(granule, event, access, at, sink)),
        }
    }

    /// Most granules one event may cover: a range costs the indexed finder
    /// a state per chunk of granules it covers whole and the same state
    /// stands for all of them, the work queue one per granule. (A damaged
    /// size, read before the log's checksum is compared at its end, then
    /// costs either some 300 MB at most.)
    pub fn max_granules_per_event(&self) -> u64 {
        match self {
            PairFinder::Worklist(_) => 1 << 24,
            PairFinder::Indexed(_) => 1 << 28,
        }
    }

    /// Calls `f` with every event the finder holds: those later pairs may
    /// start from.
    pub(crate) fn for_each_event(&self, f: &mut impl FnMut(EventRef)) {
        match self {
            PairFinder::Worklist(finder) => finder.for_each_event(f),
            PairFinder::Indexed(finder) => finder.for_each_event(f),
        }
    }

    /// Distinct granules seen so far.
    pub fn granules(&self) -> u64 {
        match self {
            PairFinder::Worklist(f) => f.granules(),
            PairFinder::Indexed(f) => f.granules(),
        }
    }

    /// Estimated bytes of per-granule state held now.
    pub fn state_bytes(&self) -> u64 {
        match self {
            PairFinder::Worklist(f) => f.state_bytes(),
            PairFinder::Indexed(f) => f.state_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_of_a_granule_at_the_top_of_the_address_space() {
        let last = u64::MAX >> 3;
        assert_eq!(granule_bytes(last, u64::MAX - 3, u64::MAX), 0b0111_0000);
        assert_eq!(granule_bytes(last, u64::MAX - 7, u64::MAX), 0b0111_1111);
        assert_eq!(granule_bytes(1, 6, 12), 0b0000_1111);
        assert_eq!(granule_bytes(0, 6, 12), 0b1100_0000);
    }

    #[test]
    fn a_pair_repeated_on_neighbouring_granules_is_kept_once_and_counted_each_time() {
        let a = EventRef {
            thread: 0,
            index: 3,
        };
        let b = EventRef {
            thread: 1,
            index: 7,
        };
        let c = EventRef {
            thread: 1,
            index: 2,
        };
        let mut sink = PairSink::keeping_same_thread();
        for _ in 0..1000 {
            sink.pair(a, b, DependencyKind::Raw);
        }
        sink.pair(c, b, DependencyKind::War);
        sink.pair(a, b, DependencyKind::Raw);
        assert_eq!(sink.pairs.len(), 3, "{:?}", sink.pairs);
        assert_eq!(sink.found.raw, 1001);
        assert_eq!(sink.found.war, 1);
        assert_eq!(sink.cross_thread.raw, 1001);
        assert_eq!(sink.cross_thread.war, 0, "c and b are one thread's");
        sink.clear();
        assert!(sink.pairs.is_empty() && sink.found.total() == 1002);
        let mut cross_only = PairSink::default();
        cross_only.pair(c, b, DependencyKind::War);
        assert!(cross_only.pairs.is_empty() && cross_only.found.war == 1);
    }

    #[test]
    fn footprints_tell_different_bytes_apart() {
        let at = |addr, size| Footprint::of(addr, size);
        let apart = |a: Footprint, b: Footprint| a.disjoint(b, 3) && b.disjoint(a, 3);
        assert!(apart(at(0x100, 4), at(0x104, 4)));
        assert!(apart(at(0x106, 2), at(0x100, 6)));
        assert!(!apart(at(0x100, 8), at(0x104, 4)));
        assert!(!apart(at(0x103, 1), at(0x100, 4)));
        assert!(!apart(at(0x104, 4), at(0x104, 4)));
        // One spans granules, or is a range: all of the granule.
        assert!(!apart(at(0x106, 4), at(0x100, 4)));
        assert!(!apart(at(0x100, 1 << 20), at(0x104, 4)));
        // A size of 0 or nothing known, or a granule over 128 bytes: never.
        assert!(!apart(at(0x100, 0), at(0x104, 4)));
        assert!(!apart(Footprint::UNKNOWN, at(0x104, 4)));
        assert!(!at(0x100, 8).disjoint(at(0x1f8, 8), 8));
        // 128-byte and 4-byte granules.
        assert!(at(0x1f8, 8).disjoint(at(0x180, 8), 7));
        assert!(!at(0x180, 128).disjoint(at(0x1f8, 8), 7));
        assert!(at(0x106, 1).disjoint(at(0x107, 1), 2));
        assert!(!at(0x106, 2).disjoint(at(0x107, 1), 2));
    }
}
