//! The default pair finder: the same rules as the work queue (table in
//! [`crate::pairs`]), with each granule's open pair kept in a
//! [`GranuleTable`] (a hash map for scattered granules, arrays for the
//! stretches of memory a program walks), so an access costs O(1) (plus one pair per read when a write closes a read
//! group, and every read gets at most one such pair: amortised O(1)).
//!
//! Memory is what bounds a split of a long trace, and its lookups are what
//! the split waits for, so the state is small: the last write and the open
//! read group, each event packed in a word, the group's reader inline when
//! it has one (the common case) and in a side vector otherwise.
//!
//! A read group can grow without bound (a variable read in a loop and never
//! written). When the caller only wants pairs the vector-clock reduction
//! keeps, [`IndexedFinder::collapsing`] stores one reader per thread in a
//! group: the thread's latest. The WAR pairs from that thread's earlier
//! reads are implied by program order plus the latest read's pair, so the
//! reduction would drop them anyway; they are only counted
//! ([`PairSink::collapsed_war`]) so the statistics stay exact. The group is
//! then bounded by the number of threads.

use std::hash::Hasher;
use std::mem::size_of;

use super::granule_table::{CHUNK_GRANULES, Copier, GranuleTable, WholeChunk};
use super::{DependencyKind, EventRef, Footprint, PairSink};

/// A fast hasher for granule numbers: one 64x64->128 multiply, folded, so
/// that strided keys (granules of 64-byte-spaced pseudo-addresses, arrays of
/// structs) still spread over the low bits the table indexes with. Not
/// DoS-resistant, and it need not be: the keys come from a trace.
///
/// Locality: the eight granules of one 64-byte line hash to eight
/// neighbouring buckets (the low bits of the hash are the granule's place
/// in its line; the multiply spreads the lines), so a program walking an
/// array walks the table too, a cache miss per line of the table instead of
/// one per access (a table of a few hundred thousand granules does not fit
/// in cache). The top bits, which the table's control bytes keep, get the
/// place in the line as well, so neighbours do not all match one probe.
#[derive(Debug, Default, Clone, Copy)]
pub struct GranuleHasher(u64);

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
/// Granules of a line, as a shift and a mask (8 granules of 8 bytes).
const LINE_SHIFT: u32 = 3;
const LINE_MASK: u64 = (1 << LINE_SHIFT) - 1;

impl Hasher for GranuleHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        let line = x >> LINE_SHIFT;
        let place = x & LINE_MASK;
        let m = u128::from(line ^ self.0) * u128::from(MIX);
        let spread = (m as u64) ^ ((m >> 64) as u64);
        self.0 = ((spread << LINE_SHIFT) | place) ^ (place << 57);
    }
}

/// One reader of an open read group; with collapsing, the latest of `count`
/// readers of its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReaderSlot {
    index: u64,
    thread: u32,
    count: u32,
}

impl ReaderSlot {
    fn event(self) -> EventRef {
        EventRef {
            thread: self.thread,
            index: self.index,
        }
    }
}

/// Thread ids the finder packs: below this (the analysis refuses others).
pub(crate) const MAX_THREADS: u32 = 0xffff;
/// Event indices the finder packs: below this.
pub(crate) const MAX_INDEX: u64 = 1 << 47;

/// Marks "no thread" for the analysis (never a packed thread id).
pub(crate) const NO_THREAD: u32 = u32::MAX;

/// An event in one word, `index << 16 | thread` (thread below
/// [`MAX_THREADS`], index below [`MAX_INDEX`], so bit 63 is free).
fn pack(e: EventRef) -> u64 {
    debug_assert!(e.thread < MAX_THREADS && e.index < MAX_INDEX, "{e:?}");
    e.index << 16 | u64::from(e.thread)
}

fn unpack(word: u64) -> EventRef {
    EventRef {
        thread: (word & 0xffff) as u32,
        index: word >> 16,
    }
}

/// A word of [`GranuleState`] that holds no event.
const NONE: u64 = u64::MAX;
/// Bit 63 of `GranuleState::reader`: the read group has several readers,
/// kept in `IndexedFinder::groups` (`ReadGroups::slots`) at the index in the
/// low bits.
const MANY: u64 = 1 << 63;

/// A granule's open pair, in 24 bytes (32 with its key in the sparse map;
/// the lookups of a split are what it waits for): the last write and the
/// open read group, its one reader inline (the common case) or the index of
/// a vector of them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GranuleState {
    /// Last write, packed, or [`NONE`].
    writer: u64,
    /// Reads since that write (a RAW group), or since the start (a read
    /// group): [`NONE`], one reader packed, or [`MANY`] | group index.
    reader: u64,
    /// With one reader: the reads it stands for (collapsing).
    count: u32,
    /// Where the last write lay in the granule (in the padding: the state
    /// stays 24 bytes), for [`PairSink::disjoint_bytes`].
    written: Footprint,
    /// The bytes the open read group read, a bit each ([`byte_mask`]),
    /// while the analysis watches for false sharing: a write's WAR pairs
    /// are on disjoint bytes if none of its bytes is among them.
    read_bytes: u8,
}

const EMPTY: GranuleState = GranuleState {
    writer: NONE,
    reader: NONE,
    count: 0,
    written: Footprint::UNKNOWN,
    read_bytes: 0,
};

/// The table-based pair finder (`--algorithm indexed`, the default).
#[derive(Debug)]
pub struct IndexedFinder {
    states: GranuleTable<GranuleState>,
    /// Read groups of several readers.
    groups: ReadGroups,
    collapse: bool,
    /// log2 of the granule, for [`Footprint::disjoint`].
    shift: u32,
}

impl Default for IndexedFinder {
    fn default() -> IndexedFinder {
        IndexedFinder::new()
    }
}

impl IndexedFinder {
    /// Calls `f` with every event the granule states hold (a last write or
    /// a reader of an open read group): the events later pairs may start
    /// from.
    pub(crate) fn for_each_event(&self, f: &mut impl FnMut(EventRef)) {
        self.states.for_each_state(|state| {
            if state.writer != NONE {
                f(unpack(state.writer));
            }
            if state.reader == NONE {
                return;
            }
            if state.reader & MANY == 0 {
                f(unpack(state.reader));
            } else if let Some(group) = self.groups.slots.get((state.reader & !MANY) as usize) {
                group.iter().for_each(|slot| f(slot.event()));
            }
        });
    }

    /// A finder that emits every pair of the method.
    pub fn new() -> IndexedFinder {
        IndexedFinder {
            states: GranuleTable::new(EMPTY),
            groups: ReadGroups::default(),
            collapse: false,
            shift: 3,
        }
    }

    /// The same finder for granules of `1 << shift` bytes (8 unless told).
    pub fn with_granule_shift(self, shift: u32) -> IndexedFinder {
        IndexedFinder { shift, ..self }
    }

    /// A finder that keeps one reader per thread in a read group (see the
    /// module doc): for use under the vector-clock reduction only.
    pub fn collapsing() -> IndexedFinder {
        IndexedFinder {
            collapse: true,
            ..IndexedFinder::new()
        }
    }

    /// Records `event`'s access to `granule` and emits the pairs it closes.
    /// `event`'s thread must be below [`MAX_THREADS`] and its index below
    /// [`MAX_INDEX`] (the analysis checks). (Inline into the analysis's
    /// loop: out of line, the call cost about what the loop's hoisted
    /// checks saved.)
    #[inline(always)]
    pub(crate) fn access(
        &mut self,
        granule: u64,
        event: EventRef,
        writes: bool,
        at: (u64, u64),
        sink: &mut PairSink,
    ) {
        self.access_state(
            #[inline(always)]
            |states, copier| states.state(granule, copier),
            granule,
            event,
            writes,
            at,
            sink,
        );
    }

    /// [`Self::access`] of every granule of `first..=last` (`first <
    /// last`): the chunks the range covers whole at once where they are
    /// uniform ([`GranuleTable`]), each pair found counted once per granule
    /// as granule by granule.
    pub(crate) fn access_range(
        &mut self,
        (first, last): (u64, u64),
        event: EventRef,
        writes: bool,
        at: (u64, u64),
        sink: &mut PairSink,
    ) {
        let chunk_granules = CHUNK_GRANULES as u64;
        let mut granule = first;
        loop {
            let whole = granule % chunk_granules == 0 && last - granule >= chunk_granules - 1;
            if whole {
                self.access_chunk(granule / chunk_granules, event, writes, at, sink);
                granule += chunk_granules - 1;
            } else {
                self.access(granule, event, writes, at, sink);
            }
            if granule >= last {
                return;
            }
            granule += 1;
        }
    }

    /// [`Self::access`] of every granule of `chunk`, which a range covers:
    /// once if the chunk is uniform (made so if no granule of it was seen
    /// yet), its pairs counted for each granule; else granule by granule,
    /// the chunk then turning uniform if the access left its granules
    /// alike (as a write over all of them does).
    fn access_chunk(
        &mut self,
        chunk: u64,
        event: EventRef,
        writes: bool,
        at: (u64, u64),
        sink: &mut PairSink,
    ) {
        let first = chunk * CHUNK_GRANULES as u64;
        if let WholeChunk::Uniform(index) = self.states.whole_chunk(chunk) {
            let before = sink.raw_counts();
            self.access_state(
                #[inline(always)]
                |states, _| states.uniform_state(index),
                first,
                event,
                writes,
                at,
                sink,
            );
            sink.repeat_counts_since(before, CHUNK_GRANULES as u64 - 1);
            return;
        }
        for granule in first..first + CHUNK_GRANULES as u64 {
            self.access(granule, event, writes, at, sink);
        }
        self.states
            .settle_uniform(chunk, |a, b| uniform_kind(a) && same_open_pairs(a, b));
    }

    /// [`Self::access`] on the state `state_of` finds in the table (a
    /// granule's, or a uniform chunk's standing for `granule`).
    #[inline(always)]
    fn access_state(
        &mut self,
        state_of: impl for<'t> FnOnce(
            &'t mut GranuleTable<GranuleState>,
            &mut ReadGroups,
        ) -> &'t mut GranuleState,
        granule: u64,
        event: EventRef,
        writes: bool,
        (addr, size): (u64, u64),
        sink: &mut PairSink,
    ) {
        let state = state_of(&mut self.states, &mut self.groups);
        // (Only compared at pairs between threads.)
        let footprint = Footprint::of(addr, size);
        // The bytes of a read group are followed only while the analysis
        // watches for false sharing (they cost every access a few
        // instructions: 6 % of a split's).
        let watch = sink.watch_apart;
        if writes {
            let reader = std::mem::replace(&mut state.reader, NONE);
            let apart = watch && state.read_bytes & byte_mask(granule, self.shift, addr, size) == 0;
            state.read_bytes = 0;
            if reader == NONE {
                if state.writer != NONE {
                    after_write(
                        state,
                        (event, footprint),
                        DependencyKind::Waw,
                        self.shift,
                        sink,
                    );
                }
            } else if reader & MANY == 0 {
                war(one_slot(reader, state.count), event, apart, sink);
            } else {
                let group = (reader & !MANY) as u32;
                let slots = &mut self.groups.slots[group as usize];
                for &slot in slots.iter() {
                    war(slot, event, apart, sink);
                }
                slots.clear();
                self.groups.free.push(group);
            }
            state.writer = pack(event);
            state.written = footprint;
            return;
        }
        if watch {
            state.read_bytes |= byte_mask(granule, self.shift, addr, size);
        }
        let new = ReaderSlot {
            index: event.index,
            thread: event.thread,
            count: 1,
        };
        // Whether the thread has read the granule since its last write:
        // collapsing, its slot of the read group stands for this read too,
        // and the write's pair to this read is implied by the one to its
        // first (`PairSink::implied_pair_apart`). Nearly every read of data
        // other threads wrote is such a read: an LU's pivot row, an
        // n-body's positions, each read once per row or body.
        let rereads = if state.reader == NONE {
            state.reader = pack(event);
            state.count = 1;
            false
        } else if state.reader & MANY == 0 {
            let slot = one_slot(state.reader, state.count);
            if self.collapse && slot.thread == event.thread {
                state.reader = pack(event);
                state.count = state.count.saturating_add(1);
                true
            } else {
                let group = self.groups.new_group();
                self.groups.slots[group as usize].extend([slot, new]);
                state.reader = MANY | u64::from(group);
                false
            }
        } else {
            let slots = &mut self.groups.slots[(state.reader & !MANY) as usize];
            let same = if self.collapse {
                slots.iter_mut().rev().find(|s| s.thread == event.thread)
            } else {
                None
            };
            match same {
                Some(slot) => {
                    slot.index = event.index;
                    slot.count = slot.count.saturating_add(1);
                    true
                }
                None => {
                    slots.push(new);
                    false
                }
            }
        };
        if state.writer != NONE {
            if rereads && sink.may_leave_implied() {
                let written = state.written;
                let shift = self.shift;
                sink.implied_pair_apart(
                    unpack(state.writer),
                    event,
                    DependencyKind::Raw,
                    #[inline(always)]
                    || written.disjoint(footprint, shift),
                );
            } else {
                after_write(
                    state,
                    (event, footprint),
                    DependencyKind::Raw,
                    self.shift,
                    sink,
                );
            }
        }
    }

    pub(crate) fn granules(&self) -> u64 {
        self.states.granules()
    }

    pub(crate) fn state_bytes(&self) -> u64 {
        let table = self.states.state_bytes() as usize;
        let groups: usize = size_of::<Vec<ReaderSlot>>() * self.groups.slots.capacity()
            + self
                .groups
                .slots
                .iter()
                .map(|g| g.capacity() * size_of::<ReaderSlot>())
                .sum::<usize>()
            + size_of::<u32>() * self.groups.free.capacity();
        (table + groups) as u64
    }
}

/// Whether `state` may become a uniform chunk's: its read group, if any,
/// is one reader inline (64 granules' groups of several would have to be
/// compared and all but one freed; a chunk left uniform by a range keeps
/// its one group instead).
fn uniform_kind(state: &GranuleState) -> bool {
    state.reader == NONE || state.reader & MANY == 0
}

/// Read groups of several readers, each a vector in `slots`; `free` lists
/// the slots not in use (each keeps its vector's capacity for the next
/// group). The finder's [`Copier`]: a uniform chunk's group is copied for
/// each granule that takes its state, and freed with the chunk's state.
#[derive(Debug, Default)]
struct ReadGroups {
    slots: Vec<Vec<ReaderSlot>>,
    free: Vec<u32>,
}

impl ReadGroups {
    /// A free slot (an empty vector), from `free` or new.
    fn new_group(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.slots.push(Vec::new());
            (self.slots.len() - 1) as u32
        })
    }
}

impl Copier<GranuleState> for ReadGroups {
    fn copy(&mut self, state: &GranuleState) -> GranuleState {
        let mut copy = state.clone();
        if state.reader != NONE && state.reader & MANY != 0 {
            let group = self.new_group();
            let slots = self.slots[(state.reader & !MANY) as usize].clone();
            self.slots[group as usize].extend(slots);
            copy.reader = MANY | u64::from(group);
        }
        copy
    }

    fn discard(&mut self, state: GranuleState) {
        if state.reader != NONE && state.reader & MANY != 0 {
            let group = (state.reader & !MANY) as u32;
            self.slots[group as usize].clear();
            self.free.push(group);
        }
    }
}

/// Whether two granules have the same open pairs (what later accesses
/// find): `count` only matters with a reader.
fn same_open_pairs(a: &GranuleState, b: &GranuleState) -> bool {
    a.writer == b.writer
        && a.reader == b.reader
        && (a.reader == NONE || a.count == b.count)
        && a.written == b.written
        && a.read_bytes == b.read_bytes
}

/// The RAW or WAW pair from `state`'s last write to `event`, which has
/// `footprint` in the granule (of `1 << shift` bytes), counted in
/// [`PairSink::disjoint_bytes`] if between threads and on other bytes than
/// the write's.
#[inline(always)]
fn after_write(
    state: &GranuleState,
    (event, footprint): (EventRef, Footprint),
    kind: DependencyKind,
    shift: u32,
    sink: &mut PairSink,
) {
    let written = state.written;
    sink.pair_apart(
        unpack(state.writer),
        event,
        kind,
        #[inline(always)]
        || written.disjoint(footprint, shift),
    );
}

/// The inline reader of a read group of one.
fn one_slot(packed: u64, count: u32) -> ReaderSlot {
    let event = unpack(packed);
    ReaderSlot {
        index: event.index,
        thread: event.thread,
        count,
    }
}

/// The bytes of granule `granule` (of `1 << shift` bytes) that `size`
/// bytes at `addr` touch, a bit each ([`super::granule_bytes`]), at the
/// default granule of 8 bytes; every bit at another granule, or for an
/// access of no size (a sync event's: it stands for the granule).
#[inline(always)]
fn byte_mask(granule: u64, shift: u32, addr: u64, size: u64) -> u8 {
    if shift != 3 || size == 0 {
        return u8::MAX;
    }
    super::granule_bytes(granule, addr, addr.saturating_add(size))
}

/// WAR from one reader slot (and, collapsed, the earlier reads it stands
/// for), noted as false sharing if `apart` (no byte of the write was read
/// by the group: [`PairSink::apart`]).
#[inline(always)]
fn war(slot: ReaderSlot, to: EventRef, apart: bool, sink: &mut PairSink) {
    sink.pair(slot.event(), to, DependencyKind::War);
    if apart && slot.thread != to.thread {
        sink.note_apart(slot.event(), to, DependencyKind::War);
    }
    let hidden = u64::from(slot.count - 1);
    if hidden > 0 {
        sink.collapsed_war += hidden;
        if slot.thread == to.thread {
            sink.collapsed_war_same_thread += hidden;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pairs between threads on different bytes of a granule are counted
    /// (and still emitted: the granule is the method's unit); on the same
    /// bytes, or within one thread, they are not.
    #[test]
    fn pairs_on_different_bytes_are_counted() {
        let event = |thread, index| EventRef { thread, index };
        let (low, high) = ((0x100, 4), (0x104, 4));
        let mut finder = IndexedFinder::collapsing();
        let mut sink = PairSink::default();
        finder.access(1, event(0, 0), true, low, &mut sink);
        finder.access(1, event(1, 0), false, high, &mut sink);
        assert_eq!((sink.cross_thread.raw, sink.disjoint_bytes), (1, 1));
        finder.access(1, event(1, 1), true, high, &mut sink);
        finder.access(1, event(0, 1), true, low, &mut sink);
        assert_eq!((sink.cross_thread.waw, sink.disjoint_bytes), (1, 2));
        finder.access(1, event(1, 2), false, (0x100, 8), &mut sink);
        finder.access(1, event(1, 3), true, low, &mut sink);
        assert_eq!(sink.cross_thread.raw, 2);
        assert_eq!(sink.disjoint_bytes, 2, "overlapping bytes, then one thread");
        assert_eq!(sink.pairs.len(), 3, "{:?}", sink.pairs);
    }

    /// A thread's reread of a granule it read since the last write gets
    /// the write's RAW pair counted, not handed over, where the event's
    /// pairs go through the reduction's first step; for an event whose
    /// call nests others, and a sink gathering pairs within one thread too
    /// (a barrier's release), it is handed over.
    #[test]
    fn a_reread_pair_is_counted_and_left_to_program_order() {
        let event = |thread, index| EventRef { thread, index };
        let at = (0x100, 8);
        let mut finder = IndexedFinder::collapsing();
        let mut sink = PairSink {
            drops_implied: true,
            ..PairSink::default()
        };
        finder.access(1, event(0, 0), true, at, &mut sink);
        finder.access(1, event(1, 0), false, at, &mut sink);
        assert_eq!(sink.pairs.len(), 1, "the first read gets its pair");
        sink.clear();
        finder.access(1, event(1, 1), false, at, &mut sink);
        assert!(sink.pairs.is_empty(), "{:?}", sink.pairs);
        assert_eq!((sink.found.raw, sink.cross_thread.raw), (2, 2));
        sink.drops_implied = false;
        finder.access(1, event(1, 2), false, at, &mut sink);
        assert_eq!(sink.pairs.len(), 1, "a call that nests events keeps it");
        sink.clear();
        sink.drops_implied = true;
        let gathered = sink.gathering(|sink| finder.access(1, event(1, 3), false, at, sink));
        assert_eq!(gathered.len(), 1, "gathered pairs are copied, not reduced");
        assert_eq!((sink.found.raw, sink.cross_thread.raw), (4, 4));
    }

    /// An event's access to `first..=last` (granules of 8 bytes), by
    /// range or granule by granule; what the sink got: the pairs (sorted,
    /// once each) and every count.
    fn feed(
        finder: &mut IndexedFinder,
        by_range: bool,
        (first, last): (u64, u64),
        event: EventRef,
        writes: bool,
        sink: &mut PairSink,
    ) -> (Vec<crate::pairs::DependencyPair>, String) {
        sink.clear();
        let at = (first * 8, (last - first + 1) * 8);
        if by_range && first < last {
            finder.access_range((first, last), event, writes, at, sink);
        } else {
            (first..=last).for_each(|g| finder.access(g, event, writes, at, sink));
        }
        let mut pairs = sink.pairs.clone();
        pairs.sort_unstable();
        pairs.dedup();
        let mut apart = sink.apart.clone();
        apart.sort_unstable();
        apart.dedup();
        (pairs, format!("{:?} {apart:?}", sink.raw_counts()))
    }

    /// What `finder` holds: the events later pairs may start from.
    fn held(finder: &IndexedFinder) -> std::collections::BTreeSet<EventRef> {
        let mut events = std::collections::BTreeSet::new();
        finder.for_each_event(&mut |e| {
            events.insert(e);
        });
        events
    }

    /// One access of an event of `(thread, writes, first granule,
    /// granules)`: mostly single granules and ranges over several chunks
    /// of 64, in a few chunks, so ranges meet uniform, mixed and dense
    /// chunks and single accesses give uniform chunks granules of their
    /// own.
    fn any_access() -> impl Strategy<Value = (u32, bool, u64, u64)> {
        let len = prop_oneof![4 => Just(1u64), 1 => 2u64..8, 3 => 60u64..260];
        (0u32..3, any::<bool>(), 0u64..320, len)
    }

    /// Read groups some state names, and read groups not free: the same
    /// if no group leaked (each state's group its own).
    fn groups_named_and_live(finder: &IndexedFinder) -> (usize, usize) {
        let mut named = std::collections::BTreeSet::new();
        finder.states.for_each_state(|state| {
            if state.reader != NONE && state.reader & MANY != 0 {
                assert!(named.insert(state.reader), "a group named twice");
            }
        });
        let groups = &finder.groups;
        (named.len(), groups.slots.len() - groups.free.len())
    }

    proptest! {
        /// A range finds, counts and leaves behind what its granules one by
        /// one would (the chunks it covers whole taken at once where they
        /// are uniform: `IndexedFinder::access_range`).
        #[test]
        fn a_range_finds_what_its_granules_find(
            accesses in prop::collection::vec(any_access(), 1..200),
            collapse: bool,
            drops_implied: bool,
            watch_apart: bool,
        ) {
            let new = || if collapse { IndexedFinder::collapsing() } else { IndexedFinder::new() };
            let (mut ranged, mut granular) = (new(), new());
            let sink = || PairSink { drops_implied, watch_apart, ..PairSink::default() };
            let (mut ranged_sink, mut granular_sink) = (sink(), sink());
            let mut next = [0u64; 3];
            for (thread, writes, first, len) in accesses {
                let event = EventRef { thread, index: next[thread as usize] };
                next[thread as usize] += 1;
                let granules = (first, first + len - 1);
                let got = feed(&mut ranged, true, granules, event, writes, &mut ranged_sink);
                let want = feed(&mut granular, false, granules, event, writes, &mut granular_sink);
                prop_assert_eq!(got, want, "{:?} {}", event, writes);
                prop_assert_eq!(ranged.granules(), granular.granules());
                prop_assert_eq!(held(&ranged), held(&granular));
                for finder in [&ranged, &granular] {
                    let (named, live) = groups_named_and_live(finder);
                    prop_assert_eq!(named, live, "read groups leaked");
                }
            }
        }
    }

    #[test]
    fn byte_masks_name_the_bytes_touched() {
        let g = 0x1000 >> 3;
        assert_eq!(byte_mask(g, 3, 0x1000, 4), 0x0f);
        assert_eq!(byte_mask(g, 3, 0x1004, 4), 0xf0);
        assert_eq!(
            byte_mask(g, 3, 0x1006, 4),
            0xc0,
            "runs on into the next granule"
        );
        assert_eq!(
            byte_mask(g + 1, 3, 0x1006, 4),
            0x03,
            "began in the one before"
        );
        assert_eq!(byte_mask(g, 3, 0x1003, 1), 0x08);
        assert_eq!(byte_mask(g, 3, 0x1000, 8), 0xff);
        assert_eq!(byte_mask(g, 3, 0x1000, 0), 0xff, "a sync event's");
        assert_eq!(byte_mask(g, 3, 0x0ff0, 64), 0xff, "a range");
        assert_eq!(byte_mask(0x1000 >> 2, 2, 0x1000, 1), 0xff, "not at 8 bytes");
    }

    #[test]
    fn state_stays_small() {
        // SPEC: <= 200 bytes per distinct granule, table overhead included:
        // 32 bytes with the key in the sparse map, and a dense chunk holds
        // CHUNK_GRANULES states for at least PROMOTE_AT granules.
        use crate::pairs::granule_table::{CHUNK_GRANULES, PROMOTE_AT};
        assert!(
            size_of::<(u64, GranuleState)>() <= 32,
            "{}",
            size_of::<(u64, GranuleState)>()
        );
        let dense = size_of::<GranuleState>() * CHUNK_GRANULES / PROMOTE_AT as usize;
        assert!(dense <= 100, "{dense} bytes per granule of a dense chunk");
    }
}
