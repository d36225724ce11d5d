//! The default pair finder: the same rules as the work queue (table in
//! [`crate::pairs`]), with each granule's open pair kept in a hash map, so an
//! access costs O(1) (plus one pair per read when a write closes a read
//! group, and every read gets at most one such pair: amortised O(1)).
//!
//! Memory is what bounds a split of a long trace, so the state is small: the
//! last write (16 bytes) and the open read group, stored inline when it has
//! one reader (the common case) and in a vector otherwise.
//!
//! A read group can grow without bound (a variable read in a loop and never
//! written). When the caller only wants pairs the vector-clock reduction
//! keeps, [`IndexedFinder::collapsing`] stores one reader per thread in a
//! group: the thread's latest. The WAR pairs from that thread's earlier
//! reads are implied by program order plus the latest read's pair, so the
//! reduction would drop them anyway; they are only counted
//! ([`PairSink::collapsed_war`]) so the statistics stay exact. The group is
//! then bounded by the number of threads.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::mem::size_of;

use super::{DependencyKind, EventRef, PairSink};

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

pub type GranuleMap<V> = HashMap<u64, V, BuildHasherDefault<GranuleHasher>>;

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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Readers {
    None,
    One(ReaderSlot),
    Many(Vec<ReaderSlot>),
}

/// Marks "no write yet" in [`GranuleState::writer_thread`]; the analysis
/// rejects this thread id.
pub(crate) const NO_THREAD: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
struct GranuleState {
    /// Last write (index, thread), or `NO_THREAD`. A sentinel rather than an
    /// `Option` saves 8 bytes per granule.
    writer_index: u64,
    writer_thread: u32,
    /// Reads since that write (a RAW group), or since the start (a read group).
    readers: Readers,
}

const EMPTY: GranuleState = GranuleState {
    writer_index: 0,
    writer_thread: NO_THREAD,
    readers: Readers::None,
};

/// The hash-map pair finder (`--algorithm indexed`, the default).
#[derive(Debug, Default)]
pub struct IndexedFinder {
    states: GranuleMap<GranuleState>,
    collapse: bool,
}

impl IndexedFinder {
    /// A finder that emits every pair of the method.
    pub fn new() -> IndexedFinder {
        IndexedFinder::default()
    }

    /// A finder that keeps one reader per thread in a read group (see the
    /// module doc): for use under the vector-clock reduction only.
    pub fn collapsing() -> IndexedFinder {
        IndexedFinder {
            states: GranuleMap::default(),
            collapse: true,
        }
    }

    #[inline]
    pub(crate) fn access(
        &mut self,
        granule: u64,
        event: EventRef,
        writes: bool,
        sink: &mut PairSink,
    ) {
        let state = self.states.entry(granule).or_insert(EMPTY);
        if writes {
            let readers = std::mem::replace(&mut state.readers, Readers::None);
            match readers {
                Readers::None => {
                    if state.writer_thread != NO_THREAD {
                        let writer = EventRef {
                            thread: state.writer_thread,
                            index: state.writer_index,
                        };
                        sink.pair(writer, event, DependencyKind::Waw);
                    }
                }
                Readers::One(slot) => war(slot, event, sink),
                Readers::Many(slots) => {
                    for slot in slots {
                        war(slot, event, sink);
                    }
                }
            }
            state.writer_thread = event.thread;
            state.writer_index = event.index;
        } else {
            if state.writer_thread != NO_THREAD {
                let writer = EventRef {
                    thread: state.writer_thread,
                    index: state.writer_index,
                };
                sink.pair(writer, event, DependencyKind::Raw);
            }
            let new = ReaderSlot {
                index: event.index,
                thread: event.thread,
                count: 1,
            };
            match &mut state.readers {
                Readers::None => state.readers = Readers::One(new),
                Readers::One(slot) if self.collapse && slot.thread == event.thread => {
                    slot.index = event.index;
                    slot.count = slot.count.saturating_add(1);
                }
                Readers::One(slot) => state.readers = Readers::Many(vec![*slot, new]),
                Readers::Many(slots) => {
                    let same = if self.collapse {
                        slots.iter_mut().rev().find(|s| s.thread == event.thread)
                    } else {
                        None
                    };
                    match same {
                        Some(slot) => {
                            slot.index = event.index;
                            slot.count = slot.count.saturating_add(1);
                        }
                        None => slots.push(new),
                    }
                }
            }
        }
    }

    pub(crate) fn granules(&self) -> u64 {
        self.states.len() as u64
    }

    pub(crate) fn state_bytes(&self) -> u64 {
        // hashbrown: one control byte per bucket besides the (key, value).
        let table = self.states.capacity() * (size_of::<(u64, GranuleState)>() + 1);
        let groups: usize = self
            .states
            .values()
            .map(|s| match &s.readers {
                Readers::Many(v) => {
                    size_of::<Vec<ReaderSlot>>() + v.capacity() * size_of::<ReaderSlot>()
                }
                _ => 0,
            })
            .sum();
        (table + groups) as u64
    }
}

/// WAR from one reader slot (and, collapsed, the earlier reads it stands for).
#[inline]
fn war(slot: ReaderSlot, to: EventRef, sink: &mut PairSink) {
    sink.pair(slot.event(), to, DependencyKind::War);
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

    #[test]
    fn state_stays_small() {
        // SPEC: <= 200 bytes per distinct granule, hash table overhead included.
        assert!(
            size_of::<(u64, GranuleState)>() <= 48,
            "{}",
            size_of::<(u64, GranuleState)>()
        );
    }
}
