//! The data races of a recorded run: pairs of plain accesses to one granule
//! by two threads, at least one a write, that the run's synchronisation
//! did not order.
//!
//! Algorithm: one pass over the global order with vector clocks (as in
//! FastTrack and ThreadSanitizer). Each thread has a clock; every
//! synchronisation event (locks, condition variables, barriers,
//! semaphores, thread create/start/exit/join, atomics, OpenMP's modelled
//! constructs) acquires and releases the clock of its address: the thread
//! joins the address's clock into its own, the address's clock becomes the
//! join of both, and the thread's own component steps. Ordering every event
//! on one synchronisation address after the previous ones is conservative
//! for atomics (a relaxed atomic counts as acquire-release): a race it
//! hides is one only weaker memory orders would allow. Each granule keeps
//! its last plain write and, per thread, the last plain read since; an
//! access that a kept one does not happen before is a race.
//!
//! Invariants (debug-asserted): a thread's own component never decreases;
//! an access recorded in the shadow has the clock its thread had then.
//!
//! Left out of the synchronisation: the allocator, outputs, inputs and
//! values from outside, and OpenMP's work sharing (which thread runs which
//! chunk is ordered at record and replay, but orders nothing in OpenMP).
//!
//! Memory reuse: a block's granules are forgotten when it is allocated or
//! freed (the allocator's own ordering is not synchronisation: through it,
//! every thread that allocates would be ordered with every other).

use std::collections::HashMap;

use rr_lite_trace::{EventKind, RecordedEvent, heap_block_range, pseudo};

use crate::pairs::EventRef;
use crate::thinned::Thinned;

/// Granules of 8 bytes, as the splitter's default.
const GRANULE_SHIFT: u32 = 3;
/// Most granules of one range checked (a 64 MiB memcpy would otherwise
/// take seconds); the rest of the range is left unchecked, and the report
/// says how many ranges were ([`RaceReport::ranges_cut`]).
pub const MAX_RANGE_GRANULES: u64 = 1 << 16;

/// One side of a race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaceAccess {
    pub event: EventRef,
    pub site: u64,
    pub write: bool,
}

/// Races between one pair of call sites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Race {
    /// The first occurrence: the earlier access in the recorded order.
    pub earlier: RaceAccess,
    pub later: RaceAccess,
    /// Address of the first occurrence (its granule's first access).
    pub addr: u64,
    /// Occurrences (pairs of events) between these two sites.
    pub count: u64,
    /// Also seen with the sites' roles swapped (the later site's access
    /// first): the order between them differs within the run.
    pub both_orders: bool,
    /// Occurrences (earlier, later) spread evenly over the run, the first
    /// among them; at most [`OCCURRENCES_KEPT`].
    pub occurrences: Vec<(RaceAccess, RaceAccess)>,
}

/// Most occurrences a [`Race`] keeps.
pub const OCCURRENCES_KEPT: usize = 32;

/// A heap block the run allocated, to name racing addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapBlock {
    pub start: u64,
    pub size: u64,
    pub site: u64,
    pub event: EventRef,
}

/// What [`RaceFinder::finish`] gives.
#[derive(Debug, Clone, Default)]
pub struct RaceReport {
    /// Grouped by pair of sites, in the order of their first occurrence.
    pub races: Vec<Race>,
    /// Plain accesses checked.
    pub accesses: u64,
    /// Ranges checked on their first [`MAX_RANGE_GRANULES`] granules only:
    /// a race further in is not reported.
    pub ranges_cut: u64,
    /// Blocks that held a racing address (by start), for naming them.
    pub blocks: Vec<HeapBlock>,
}

/// A thread's vector clock, indexed by thread id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct VectorClock(Vec<u64>);

impl VectorClock {
    fn get(&self, t: u32) -> u64 {
        self.0.get(t as usize).copied().unwrap_or(0)
    }

    fn join(&mut self, other: &VectorClock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine = (*mine).max(*theirs);
        }
    }

    fn step(&mut self, t: u32) {
        let t = t as usize;
        if self.0.len() <= t {
            self.0.resize(t + 1, 0);
        }
        self.0[t] += 1;
    }
}

/// A plain access as the shadow keeps it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    access: RaceAccess,
    /// Its thread's own clock component when it happened.
    clock: u64,
}

/// A kept access and the bytes of the granule it is the last one of.
#[derive(Debug, Clone, Copy)]
struct Cell {
    seen: Seen,
    /// Bit i: byte i of the granule.
    bytes: u8,
}

/// A granule's last writes and reads, byte by byte (two threads writing
/// neighbouring `int`s of one granule do not race): the writes' byte masks
/// are disjoint (at most 8), and so are each thread's reads'.
#[derive(Debug, Default)]
struct Shadow {
    writes: Vec<Cell>,
    reads: Vec<Cell>,
}

/// Takes `bytes` out of the cells `which` selects, dropping emptied cells.
fn take_bytes(cells: &mut Vec<Cell>, bytes: u8, which: impl Fn(&Cell) -> bool) {
    for c in cells.iter_mut().filter(|c| which(c)) {
        c.bytes &= !bytes;
    }
    cells.retain(|c| c.bytes != 0);
}

/// Feeds on the global order; see the module doc.
#[derive(Debug, Default)]
pub struct RaceFinder {
    clocks: Vec<VectorClock>,
    sync: HashMap<u64, VectorClock>,
    shadow: HashMap<u64, Shadow>,
    /// Live blocks by start address.
    live: HashMap<u64, HeapBlock>,
    /// Every block allocated, for naming (start, block), in order.
    allocated: Vec<HeapBlock>,
    groups: HashMap<(u64, u64), usize>,
    races: Vec<Race>,
    /// By group, like `races`.
    occurrences: Vec<Thinned<(RaceAccess, RaceAccess)>>,
    accesses: u64,
    ranges_cut: u64,
    /// By thread: the header an allocation of the thread just handed out,
    /// whose write range (the thread's next event) is the allocator's, not
    /// the program's.
    allocator_range: Vec<Option<u64>>,
}

/// Synchronisation that orders threads (see the module doc for what is
/// left out).
fn orders_threads(kind: EventKind) -> bool {
    !kind.is_plain_access()
        && !matches!(
            kind,
            EventKind::Alloc
                | EventKind::Free
                | EventKind::Output
                | EventKind::Input
                | EventKind::Random
                | EventKind::Time
                | EventKind::ProcessExit
                | EventKind::FatalSignal
                | EventKind::DescriptorOpen
                | EventKind::DescriptorClose
        )
}

impl RaceFinder {
    pub fn new() -> RaceFinder {
        RaceFinder::default()
    }

    /// The next event of the global order.
    pub fn push(&mut self, e: &RecordedEvent) {
        let t = e.thread;
        if self.clocks.len() <= t as usize {
            self.clocks.resize(t as usize + 1, VectorClock::default());
            self.allocator_range.resize(t as usize + 1, None);
        }
        if self.clocks[t as usize].get(t) == 0 {
            self.clocks[t as usize].step(t);
        }
        if let Some(header) = self.allocator_range[t as usize].take()
            && e.kind == EventKind::WriteRange
            && e.addr == header
        {
            return;
        }
        match e.kind {
            EventKind::Alloc => self.allocated_block(e),
            EventKind::Free => self.freed_block(e.payload),
            // Which thread gets which OpenMP chunk or section is logged as
            // an atomic operation on one address, but OpenMP orders nothing
            // through it.
            _ if e.addr == pseudo::OMP_WORKSHARE => {}
            kind if orders_threads(kind) => self.synchronise(t, e.addr),
            kind if kind.is_plain_access() && e.addr < pseudo::BASE => self.access(e),
            _ => {}
        }
    }

    fn synchronise(&mut self, t: u32, addr: u64) {
        let clock = &mut self.clocks[t as usize];
        let own = clock.get(t);
        let object = self.sync.entry(addr).or_default();
        clock.join(object);
        object.join(clock);
        clock.step(t);
        debug_assert!(clock.get(t) > own, "a thread's clock went back");
    }

    fn allocated_block(&mut self, e: &RecordedEvent) {
        if e.payload == 0 {
            return;
        }
        let block = HeapBlock {
            start: e.payload,
            size: e.size,
            site: e.site,
            event: EventRef {
                thread: e.thread,
                index: e.index,
            },
        };
        self.forget(block.start, block.size);
        self.live.insert(block.start, block);
        self.allocated.push(block);
        self.allocator_range[e.thread as usize] = Some(heap_block_range(block.start).0);
    }

    /// A free: the block's shadow goes, and with it the free's own write
    /// of its header and first word, logged just before (the allocator's
    /// bytes, ordered on the heap, not the program's: no race with the
    /// next free of that block).
    fn freed_block(&mut self, ptr: u64) {
        if let Some(block) = self.live.remove(&ptr) {
            self.forget(block.start, block.size);
        }
        let (header, len) = heap_block_range(ptr);
        self.forget(header, len);
    }

    /// Drops the shadow of `[start, start + size)`.
    fn forget(&mut self, start: u64, size: u64) {
        let (first, last) = granules(start, size.max(1));
        if last - first > MAX_RANGE_GRANULES {
            return;
        }
        for g in first..=last {
            self.shadow.remove(&g);
        }
    }

    fn access(&mut self, e: &RecordedEvent) {
        self.accesses += 1;
        let t = e.thread;
        let write = e.kind.access() != rr_lite_trace::Access::Read;
        let now = Seen {
            access: RaceAccess {
                event: EventRef {
                    thread: t,
                    index: e.index,
                },
                site: e.site,
                write,
            },
            clock: self.clocks[t as usize].get(t),
        };
        let end = e.addr.saturating_add(e.size.max(1));
        let (first, mut last) = granules(e.addr, e.size.max(1));
        if last - first >= MAX_RANGE_GRANULES {
            last = first + MAX_RANGE_GRANULES - 1;
            self.ranges_cut += 1;
        }
        for g in first..=last {
            self.check_granule(g, crate::pairs::granule_bytes(g, e.addr, end), now);
        }
    }

    fn check_granule(&mut self, granule: u64, bytes: u8, now: Seen) {
        let t = now.access.event.thread;
        let clock = &self.clocks[t as usize];
        let racing_with = |c: &&Cell| {
            c.bytes & bytes != 0
                && c.seen.access.event.thread != t
                && clock.get(c.seen.access.event.thread) < c.seen.clock
        };
        let shadow = self.shadow.entry(granule).or_default();
        let mut racing: Vec<Seen> = shadow
            .writes
            .iter()
            .filter(racing_with)
            .map(|c| c.seen)
            .collect();
        let cell = Cell { seen: now, bytes };
        if now.access.write {
            racing.extend(shadow.reads.iter().filter(racing_with).map(|c| c.seen));
            take_bytes(&mut shadow.writes, bytes, |_| true);
            take_bytes(&mut shadow.reads, bytes, |_| true);
            shadow.writes.push(cell);
        } else {
            take_bytes(&mut shadow.reads, bytes, |c| {
                c.seen.access.event.thread == t
            });
            shadow.reads.push(cell);
        }
        debug_assert!(shadow.writes.len() <= 8, "write cells overlap");
        for earlier in racing {
            self.note(earlier.access, now.access, granule << GRANULE_SHIFT);
        }
    }

    fn note(&mut self, earlier: RaceAccess, later: RaceAccess, addr: u64) {
        let key = (earlier.site.min(later.site), earlier.site.max(later.site));
        match self.groups.get(&key) {
            Some(&i) => {
                let race = &mut self.races[i];
                race.count += 1;
                // The other way round: the sites' roles swapped, or, for
                // two accesses of one site, the threads'.
                let swapped = if race.earlier.site == race.later.site {
                    earlier.event.thread == race.later.event.thread
                        && later.event.thread == race.earlier.event.thread
                } else {
                    race.earlier.site == later.site
                };
                race.both_orders |= swapped;
                self.occurrences[i].push((earlier, later));
            }
            None => {
                self.groups.insert(key, self.races.len());
                self.races.push(Race {
                    earlier,
                    later,
                    addr,
                    count: 1,
                    both_orders: false,
                    occurrences: Vec::new(),
                });
                let mut occurrences = Thinned::new(OCCURRENCES_KEPT);
                occurrences.push((earlier, later));
                self.occurrences.push(occurrences);
            }
        }
    }

    /// The report.
    pub fn finish(self) -> RaceReport {
        let mut blocks: Vec<HeapBlock> = self
            .races
            .iter()
            .filter_map(|r| {
                self.allocated
                    .iter()
                    .rev()
                    .find(|b| r.addr >= b.start && r.addr < b.start.saturating_add(b.size.max(1)))
                    .copied()
            })
            .collect();
        blocks.sort_by_key(|b| b.start);
        blocks.dedup();
        let mut races = self.races;
        for (race, occurrences) in races.iter_mut().zip(self.occurrences) {
            race.occurrences = occurrences.into_vec();
        }
        RaceReport {
            races,
            accesses: self.accesses,
            ranges_cut: self.ranges_cut,
            blocks,
        }
    }
}

fn granules(addr: u64, size: u64) -> (u64, u64) {
    (
        addr >> GRANULE_SHIFT,
        addr.saturating_add(size - 1) >> GRANULE_SHIFT,
    )
}

/// The races of events given in the global order.
pub fn find_races<'a>(events: impl IntoIterator<Item = &'a RecordedEvent>) -> RaceReport {
    let mut finder = RaceFinder::new();
    for e in events {
        finder.push(e);
    }
    finder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventKind::{MutexLock, MutexUnlock, Read, ThreadCreate, ThreadStart, Write, WriteRange};

    /// Events in the given global order, indices per thread.
    fn events(raw: &[(u32, EventKind, u64)]) -> Vec<RecordedEvent> {
        let mut next = HashMap::new();
        raw.iter()
            .enumerate()
            .map(|(i, &(thread, kind, addr))| {
                let index = next.entry(thread).or_insert(0u64);
                let e = RecordedEvent {
                    thread,
                    index: *index,
                    clock: i as u64 + 1,
                    kind,
                    addr,
                    size: 8,
                    site: 0x1000 + (addr & 0xff) + u64::from(kind as u8) * 0x100,
                    payload: 0,
                };
                *index += 1;
                e
            })
            .collect()
    }

    fn at(thread: u32, index: u64) -> EventRef {
        EventRef { thread, index }
    }

    const X: u64 = 0x10;
    const M: u64 = 0x80;
    const START1: u64 = pseudo::BASE + 0x2000_0000 + 64;

    #[test]
    fn unordered_writes_race_and_locked_ones_do_not() {
        let racy = events(&[
            (0, ThreadCreate, START1),
            (1, ThreadStart, START1),
            (0, Write, X),
            (1, Write, X),
        ]);
        let report = find_races(&racy);
        assert_eq!(report.races.len(), 1);
        assert_eq!(report.races[0].earlier.event, at(0, 1));
        assert_eq!(report.races[0].later.event, at(1, 1));

        let locked = events(&[
            (0, ThreadCreate, START1),
            (1, ThreadStart, START1),
            (0, MutexLock, M),
            (0, Write, X),
            (0, MutexUnlock, M),
            (1, MutexLock, M),
            (1, Write, X),
            (1, MutexUnlock, M),
        ]);
        assert!(find_races(&locked).races.is_empty());
    }

    #[test]
    fn neighbouring_ints_of_one_granule_do_not_race() {
        let mut evs = events(&[
            (0, ThreadCreate, START1),
            (1, ThreadStart, START1),
            (0, Write, X),
            (1, Write, X + 4),
            (1, Read, X + 4),
        ]);
        for e in &mut evs[2..] {
            e.size = 4;
        }
        assert!(find_races(&evs).races.is_empty());
        // The same bytes do.
        evs[3].addr = X;
        assert_eq!(find_races(&evs).races.len(), 1);
    }

    /// A range is checked on its first `MAX_RANGE_GRANULES` granules, and
    /// the report counts the ranges cut so: a race past them is missed,
    /// and the user is told so.
    #[test]
    fn ranges_past_the_checked_granules_are_counted() {
        let mut evs = events(&[
            (0, ThreadCreate, START1),
            (1, ThreadStart, START1),
            (0, WriteRange, X),
            (1, Write, X + 8),
            (1, Write, X + (MAX_RANGE_GRANULES << 3)),
        ]);
        evs[2].size = (MAX_RANGE_GRANULES << 3) + 8;
        let report = find_races(&evs);
        assert_eq!(report.ranges_cut, 1);
        assert_eq!(report.races.len(), 1, "the race inside the checked part");
        evs[2].size = MAX_RANGE_GRANULES << 3;
        let report = find_races(&evs);
        assert_eq!(report.ranges_cut, 0, "a range of exactly that many");
    }

    #[test]
    fn a_write_before_the_create_is_ordered_and_reads_do_not_race() {
        let evs = events(&[
            (0, Write, X),
            (0, ThreadCreate, START1),
            (1, ThreadStart, START1),
            (1, Read, X),
            (0, Read, X),
        ]);
        assert!(find_races(&evs).races.is_empty());
    }

    #[test]
    fn repeated_races_group_and_both_orders_are_noticed() {
        let evs = events(&[
            (0, ThreadCreate, START1),
            (1, ThreadStart, START1),
            (0, Write, X),
            (1, Read, X),
            (1, Read, X),
            (0, Write, X),
        ]);
        let report = find_races(&evs);
        // t0's write then t1's read, twice; then t1's read then t0's write.
        assert_eq!(report.races.len(), 1, "{:?}", report.races);
        let race = &report.races[0];
        assert!(race.earlier.write && !race.later.write);
        assert_eq!((race.count, race.both_orders), (3, true));
        assert_eq!(report.accesses, 4);
    }
}
