//! What `rr-lite timeline` draws: one lane per thread over the global
//! order, in bounded memory whatever the trace's size.
//!
//! Two passes over the global order. The first ([`TimelineBuilder`]) counts
//! each lane's reads, writes and other events in columns of `bin_width`
//! events (the width doubles, merging neighbouring columns, whenever there
//! would be more than `max_bins`), and keeps an evenly spaced sample
//! ([`Thinned`]) of each lane's synchronisation events and of its plain
//! accesses: all of them for small traces. The caller feeds the same events
//! to the pair finder and the race finder. The second ([`LinkResolver`])
//! finds the global position of the events at either end of the dependency
//! pairs shown (an evenly spaced sample when there are more than
//! `max_edges`) and of the races' occurrences, which both name events by
//! thread and index only.
//!
//! Invariants: every lane has at most `max_bins` columns; the columns of a
//! lane add up to its event count (debug-asserted at the end); marks are
//! in global order.

use std::collections::HashMap;

use rr_lite_trace::RecordedEvent;

use crate::pairs::{DependencyKind, DependencyPair, EventRef};
use crate::races::Race;
use crate::thinned::Thinned;

/// Size limits of a timeline.
#[derive(Debug, Clone, Copy)]
pub struct TimelineOptions {
    /// Most columns a lane is counted in.
    pub max_bins: usize,
    /// Most marks (single events) over all lanes; each lane keeps at most
    /// its share of it (at least [`MIN_MARKS_PER_LANE`]) of each class.
    pub max_marks: usize,
    /// Most dependency pairs drawn.
    pub max_edges: usize,
}

/// A lane keeps at least this many marks of each class, however many
/// threads share [`TimelineOptions::max_marks`].
pub const MIN_MARKS_PER_LANE: usize = 500;

impl Default for TimelineOptions {
    fn default() -> TimelineOptions {
        TimelineOptions {
            max_bins: 2048,
            max_marks: 400_000,
            max_edges: 20_000,
        }
    }
}

/// Events of one lane in one column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinCounts {
    pub reads: u32,
    pub writes: u32,
    /// Synchronisation, atomics and library events.
    pub other: u32,
}

impl BinCounts {
    fn add(&mut self, other: BinCounts) {
        self.reads = self.reads.saturating_add(other.reads);
        self.writes = self.writes.saturating_add(other.writes);
        self.other = self.other.saturating_add(other.other);
    }

    pub fn total(&self) -> u64 {
        u64::from(self.reads) + u64::from(self.writes) + u64::from(self.other)
    }
}

/// One event drawn on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub seq: u64,
    pub event: RecordedEvent,
}

/// One thread's lane.
#[derive(Debug, Clone)]
pub struct Lane {
    pub thread: u32,
    pub events: u64,
    /// Global positions of its first and last event.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Column `i` covers global positions `[i * bin_width, (i+1) * bin_width)`.
    pub bins: Vec<BinCounts>,
    /// Synchronisation, atomic and library events (a sample if not
    /// `all_sync`).
    pub sync: Vec<Mark>,
    pub all_sync: bool,
    /// Plain reads and writes (a sample if not `all_accesses`).
    pub accesses: Vec<Mark>,
    pub all_accesses: bool,
}

/// An event and its global position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub event: EventRef,
    pub seq: u64,
}

/// A kept dependency pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub from: Placed,
    pub to: Placed,
    pub kind: DependencyKind,
}

/// A race group and where its kept occurrences are.
#[derive(Debug, Clone)]
pub struct PlacedRace {
    pub race: Race,
    /// (earlier, later) of each of `race.occurrences`.
    pub occurrences: Vec<(Placed, Placed)>,
}

/// What the page draws.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub events: u64,
    pub bin_width: u64,
    /// By thread id; threads without events have empty lanes.
    pub lanes: Vec<Lane>,
    pub edges: Vec<Edge>,
    /// Kept pairs between threads, drawn or not.
    pub edges_total: u64,
    pub races: Vec<PlacedRace>,
}

#[derive(Debug)]
struct LaneBuilder {
    events: u64,
    first_seq: u64,
    last_seq: u64,
    bins: Vec<BinCounts>,
    sync: Thinned<Mark>,
    accesses: Thinned<Mark>,
}

/// The first pass; see the module doc.
#[derive(Debug)]
pub struct TimelineBuilder {
    options: TimelineOptions,
    marks_per_lane: usize,
    bin_width: u64,
    lanes: Vec<LaneBuilder>,
    events: u64,
}

impl LaneBuilder {
    fn new(marks: usize) -> LaneBuilder {
        LaneBuilder {
            events: 0,
            first_seq: 0,
            last_seq: 0,
            bins: Vec::new(),
            sync: Thinned::new(marks),
            accesses: Thinned::new(marks),
        }
    }
}

impl TimelineBuilder {
    /// `threads`: how many the trace has (each gets a lane, with or
    /// without events; they share the marks).
    pub fn new(options: TimelineOptions, threads: u32) -> TimelineBuilder {
        let share = options.max_marks / (2 * threads.max(1) as usize);
        let marks_per_lane = share.max(MIN_MARKS_PER_LANE);
        TimelineBuilder {
            options: TimelineOptions {
                max_bins: options.max_bins.max(1),
                ..options
            },
            marks_per_lane,
            bin_width: 1,
            lanes: (0..threads)
                .map(|_| LaneBuilder::new(marks_per_lane))
                .collect(),
            events: 0,
        }
    }

    /// The next event of the global order, at position `seq`.
    pub fn push(&mut self, seq: u64, e: &RecordedEvent) {
        self.events += 1;
        while seq / self.bin_width >= self.options.max_bins as u64 {
            self.widen();
        }
        let t = e.thread as usize;
        while self.lanes.len() <= t {
            self.lanes.push(LaneBuilder::new(self.marks_per_lane));
        }
        let lane = &mut self.lanes[t];
        if lane.events == 0 {
            lane.first_seq = seq;
        }
        lane.events += 1;
        lane.last_seq = seq;
        let column = (seq / self.bin_width) as usize;
        if lane.bins.len() <= column {
            lane.bins.resize(column + 1, BinCounts::default());
        }
        let counts = &mut lane.bins[column];
        let class = if !e.kind.is_plain_access() {
            counts.other = counts.other.saturating_add(1);
            &mut lane.sync
        } else {
            if e.kind.access().writes() {
                counts.writes = counts.writes.saturating_add(1);
            } else {
                counts.reads = counts.reads.saturating_add(1);
            }
            &mut lane.accesses
        };
        class.push(Mark { seq, event: *e });
    }

    /// Doubles the column width, merging neighbouring columns.
    fn widen(&mut self) {
        self.bin_width *= 2;
        for lane in &mut self.lanes {
            let merged = lane
                .bins
                .chunks(2)
                .map(|pair| {
                    let mut sum = BinCounts::default();
                    pair.iter().for_each(|c| sum.add(*c));
                    sum
                })
                .collect();
            lane.bins = merged;
        }
    }

    /// Ends the first pass: picks the pairs between threads to draw (all of
    /// them, or an evenly spaced sample) and the races' occurrences.
    pub fn links(self, pairs: &[DependencyPair], races: &[Race]) -> LinkResolver {
        let between: Vec<&DependencyPair> = pairs.iter().filter(|p| !p.is_same_thread()).collect();
        let stride = between.len().div_ceil(self.options.max_edges.max(1)).max(1);
        let shown: Vec<DependencyPair> = between.iter().step_by(stride).map(|p| **p).collect();
        let mut wanted = HashMap::new();
        let ends = shown.iter().flat_map(|p| [p.from, p.to]);
        let race_ends = races
            .iter()
            .flat_map(|r| r.occurrences.iter())
            .flat_map(|(a, b)| [a.event, b.event]);
        for event in ends.chain(race_ends) {
            wanted.insert(event, None);
        }
        LinkResolver {
            remaining: wanted.len(),
            wanted,
            builder: self,
            pairs: shown,
            edges_total: between.len() as u64,
            races: races.to_vec(),
        }
    }
}

/// The second pass; see the module doc.
#[derive(Debug)]
pub struct LinkResolver {
    builder: TimelineBuilder,
    wanted: HashMap<EventRef, Option<u64>>,
    remaining: usize,
    pairs: Vec<DependencyPair>,
    edges_total: u64,
    races: Vec<Race>,
}

impl LinkResolver {
    /// Whether some event is still to be found (the pass can stop early).
    pub fn wants_more(&self) -> bool {
        self.remaining > 0
    }

    /// The next event of the global order, at position `seq`.
    pub fn push(&mut self, seq: u64, e: &RecordedEvent) {
        let event = EventRef {
            thread: e.thread,
            index: e.index,
        };
        if let Some(slot @ None) = self.wanted.get_mut(&event) {
            *slot = Some(seq);
            self.remaining -= 1;
        }
    }

    fn placed(&self, event: EventRef) -> Option<Placed> {
        let seq = (*self.wanted.get(&event)?)?;
        Some(Placed { event, seq })
    }

    /// The timeline. A pair or occurrence whose events the second pass did
    /// not see (a trace that changed in between) is left out.
    pub fn finish(self) -> Timeline {
        let edges = self
            .pairs
            .iter()
            .filter_map(|p| {
                Some(Edge {
                    from: self.placed(p.from)?,
                    to: self.placed(p.to)?,
                    kind: p.kind,
                })
            })
            .collect();
        let races = self
            .races
            .iter()
            .map(|race| PlacedRace {
                occurrences: race
                    .occurrences
                    .iter()
                    .filter_map(|(a, b)| Some((self.placed(a.event)?, self.placed(b.event)?)))
                    .collect(),
                race: race.clone(),
            })
            .collect();
        let builder = self.builder;
        let lanes = builder
            .lanes
            .into_iter()
            .enumerate()
            .map(|(t, lane)| {
                debug_assert_eq!(
                    lane.bins.iter().map(BinCounts::total).sum::<u64>(),
                    lane.events,
                    "columns lost events"
                );
                Lane {
                    thread: t as u32,
                    events: lane.events,
                    first_seq: lane.first_seq,
                    last_seq: lane.last_seq,
                    bins: lane.bins,
                    all_sync: lane.sync.is_complete(),
                    sync: lane.sync.into_vec(),
                    all_accesses: lane.accesses.is_complete(),
                    accesses: lane.accesses.into_vec(),
                }
            })
            .collect();
        Timeline {
            events: builder.events,
            bin_width: builder.bin_width,
            lanes,
            edges,
            edges_total: self.edges_total,
            races,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::races::find_races;
    use proptest::prelude::*;
    use rr_lite_trace::EventKind;

    fn event(thread: u32, index: u64, kind: EventKind, addr: u64) -> RecordedEvent {
        RecordedEvent {
            thread,
            index,
            clock: 0,
            kind,
            addr,
            size: 4,
            site: 0x1000 + addr,
            payload: 0,
        }
    }

    /// Two threads bump one counter without a lock, `rounds` times each,
    /// interleaved.
    fn racy(rounds: u64) -> Vec<RecordedEvent> {
        let mut out = Vec::new();
        for i in 0..rounds {
            for t in 0..2 {
                out.push(event(t, 2 * i, EventKind::Read, 0x10));
                out.push(event(t, 2 * i + 1, EventKind::Write, 0x10));
            }
        }
        out
    }

    fn build(events: &[RecordedEvent], options: TimelineOptions) -> Timeline {
        let mut builder = TimelineBuilder::new(options, 2);
        for (seq, e) in events.iter().enumerate() {
            builder.push(seq as u64, e);
        }
        let pairs: Vec<DependencyPair> = events
            .windows(2)
            .filter(|w| w[0].thread != w[1].thread)
            .map(|w| DependencyPair {
                from: EventRef {
                    thread: w[0].thread,
                    index: w[0].index,
                },
                to: EventRef {
                    thread: w[1].thread,
                    index: w[1].index,
                },
                kind: DependencyKind::Raw,
            })
            .collect();
        let races = find_races(events);
        let mut resolver = builder.links(&pairs, &races.races);
        for (seq, e) in events.iter().enumerate() {
            if !resolver.wants_more() {
                break;
            }
            resolver.push(seq as u64, e);
        }
        resolver.finish()
    }

    #[test]
    fn a_small_trace_keeps_every_event_edge_and_race() {
        let events = racy(10);
        let timeline = build(&events, TimelineOptions::default());
        assert_eq!(timeline.events, 40);
        assert_eq!(timeline.bin_width, 1);
        assert_eq!(timeline.lanes.len(), 2);
        for lane in &timeline.lanes {
            assert_eq!(lane.events, 20);
            assert!(lane.all_accesses && lane.all_sync);
            assert_eq!(lane.accesses.len(), 20);
        }
        assert_eq!(timeline.lanes[1].first_seq, 2);
        assert_eq!(timeline.edges.len(), 19);
        assert_eq!(timeline.edges_total, 19);
        for edge in &timeline.edges {
            assert_eq!(edge.to.seq, edge.from.seq + 1);
        }
        assert!(!timeline.races.is_empty());
        for race in &timeline.races {
            assert!(!race.occurrences.is_empty());
            let (a, b) = race.occurrences[0];
            assert_eq!(a.event, race.race.earlier.event);
            assert!(a.seq < b.seq);
        }
    }

    #[test]
    fn a_big_trace_stays_within_its_limits() {
        let events = racy(50_000);
        let options = TimelineOptions {
            max_bins: 100,
            max_marks: 4000,
            max_edges: 300,
        };
        let timeline = build(&events, options);
        assert_eq!(timeline.events, 200_000);
        assert!(timeline.bin_width >= 2000);
        for lane in &timeline.lanes {
            assert!(lane.bins.len() <= 100);
            assert!(!lane.all_accesses);
            assert!(lane.accesses.len() <= MIN_MARKS_PER_LANE.max(1000));
            let total: u64 = lane.bins.iter().map(BinCounts::total).sum();
            assert_eq!(total, lane.events);
        }
        assert!(timeline.edges.len() <= 300);
        assert_eq!(timeline.edges_total, 99_999);
        // Spread over the whole run, not only its start.
        assert!(timeline.edges.last().unwrap().to.seq > 190_000);
    }

    proptest! {
        #[test]
        fn columns_count_every_event_and_marks_are_in_order(
            threads in proptest::collection::vec(0u32..4, 0..600),
            max_bins in 1usize..64,
        ) {
            let mut next = [0u64; 4];
            let events: Vec<RecordedEvent> = threads
                .iter()
                .map(|&t| {
                    next[t as usize] += 1;
                    let kind = if next[t as usize] % 3 == 0 { EventKind::MutexLock } else { EventKind::Write };
                    event(t, next[t as usize] - 1, kind, 0x20)
                })
                .collect();
            let options = TimelineOptions { max_bins, max_marks: 100, max_edges: 10 };
            let timeline = build(&events, options);
            prop_assert_eq!(timeline.events, events.len() as u64);
            for lane in &timeline.lanes {
                prop_assert!(lane.bins.len() <= max_bins);
                let total: u64 = lane.bins.iter().map(BinCounts::total).sum();
                prop_assert_eq!(total, lane.events);
                prop_assert!(lane.sync.windows(2).all(|w| w[0].seq < w[1].seq));
                prop_assert!(lane.accesses.iter().all(|m| m.event.thread == lane.thread));
            }
            prop_assert!(timeline.edges.len() <= 10);
        }
    }
}
