//! The streaming analysis: feeds the global log, one event at a time, to the
//! pair finder, then deduplicates and reduces the pairs ending at that event
//! while everything about them is known. Memory is the finder's per-granule
//! state, the vector clocks' history (compacted to what that state still
//! needs) and the kept pairs; never the log.

use std::ops::RangeInclusive;

use rr_lite_trace::{ACCESS_HASH_SEED, Access, EventKind, RecordedEvent, fold_access_hash};

use crate::barrier::{BarrierAccess, BarrierRounds};
use crate::error::{Result, SplitError};
use crate::options::{Algorithm, DEFAULT_GRANULE, FALSE_SHARING_GRANULE, Reduction, SplitOptions};
use crate::pairs::indexed::{IndexedFinder, MAX_INDEX, MAX_THREADS, NO_THREAD};
use crate::pairs::worklist::WorklistFinder;
use crate::pairs::{DependencyKind, DependencyPair, EventRef, PairFinder, PairSink};
use crate::recorded::{Collector, RecordedPoints, ends_thread};
use crate::reduce::VectorClocks;
use crate::sections::{SectionCode, Sections};
use crate::stats::{PairCounts, SplitStats};

/// What replay checks at a thread's exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSummary {
    /// Events of the thread.
    pub accesses: u64,
    /// [`fold_access_hash`] over every event of the thread in program order,
    /// from [`ACCESS_HASH_SEED`].
    pub access_hash: u64,
}

impl Default for ThreadSummary {
    fn default() -> Self {
        ThreadSummary {
            accesses: 0,
            access_hash: ACCESS_HASH_SEED,
        }
    }
}

/// The result of the analysis of a whole log.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub options: SplitOptions,
    /// Kept pairs, in the global order of their target event (pairs ending
    /// at one event sorted by source).
    pub pairs: Vec<DependencyPair>,
    /// By thread id.
    pub threads: Vec<ThreadSummary>,
    /// Everything but the sync-point counts and the timing, which later
    /// steps fill in.
    pub stats: SplitStats,
    /// What plans need besides the sync points, when the analyzer was made
    /// to gather it ([`Analyzer::gathering_plan_points`]).
    pub recorded: Option<RecordedPoints>,
}

/// Consumes events in the global order.
#[derive(Debug)]
pub struct Analyzer {
    options: SplitOptions,
    shift: u32,
    finder: PairFinder,
    /// Most granules one entry may touch: the finder's
    /// ([`PairFinder::max_granules_per_event`], 2 GiB at the default granule
    /// with the default finder), looked up once rather than at every event.
    /// A bigger range is almost surely a corrupt size.
    max_granules: u64,
    sink: PairSink,
    candidates: Vec<DependencyPair>,
    clocks: Option<VectorClocks>,
    kept: Vec<DependencyPair>,
    /// Events fed so far, by thread (the next expected index).
    events_seen: Vec<u64>,
    /// The rest of what the analysis keeps per thread, by thread.
    threads: Vec<ThreadOrder>,
    entries: u64,
    collector: Option<Collector>,
    /// Rounds of each barrier, for the pairs of late departures.
    barriers: BarrierRounds,
    /// Kept pairs whose accesses touched different bytes of their granule
    /// (false sharing), of `kept`.
    kept_apart: u64,
    /// Made by [`Self::finer_for_false_sharing`].
    finer: bool,
    /// Critical sections that may need no order ([`crate::sections`]).
    sections: Option<Sections>,
}

impl Analyzer {
    pub fn new(options: &SplitOptions) -> Result<Analyzer> {
        let shift = options.granule_shift()?;
        let finder = match (options.algorithm, options.reduction) {
            (Algorithm::Worklist, _) => PairFinder::Worklist(WorklistFinder::new()),
            // Collapsing is exact under the vc reduction only (see indexed.rs).
            (Algorithm::Indexed, Reduction::Vc) => {
                PairFinder::Indexed(IndexedFinder::collapsing().with_granule_shift(shift))
            }
            (Algorithm::Indexed, _) => {
                PairFinder::Indexed(IndexedFinder::new().with_granule_shift(shift))
            }
        };
        let mut sink = if options.reduction == Reduction::None {
            PairSink::keeping_same_thread()
        } else {
            PairSink::default()
        };
        sink.watch_apart = options.finer_for_false_sharing && options.granule == DEFAULT_GRANULE;
        Ok(Analyzer {
            options: *options,
            shift,
            max_granules: finder.max_granules_per_event(),
            finder,
            sink,
            candidates: Vec::new(),
            clocks: (options.reduction == Reduction::Vc).then(VectorClocks::new),
            kept: Vec::new(),
            events_seen: Vec::new(),
            threads: Vec::new(),
            entries: 0,
            collector: None,
            barriers: BarrierRounds::default(),
            kept_apart: 0,
            finer: false,
            sections: None,
        })
    }

    /// A new analyzer at [`FALSE_SHARING_GRANULE`] to analyse the trace
    /// again with, if this one is at the default granule, may go finer,
    /// and the pairs it kept so far say it should: most are false sharing
    /// (their accesses touched different bytes of their granule: an array
    /// of 4-byte elements dealt out to threads one by one), and they are
    /// many enough for the replay's waits to matter (one per 1000 entries).
    /// `fft 19 4 2` kept 106 k pairs at 8 bytes and 1.3 k at 4 (its later
    /// replay 0.37 s instead of 0.23, instrumented 0.21-0.25), for 15 %
    /// more analysis time.
    pub fn finer_for_false_sharing(&mut self) -> Result<Option<Analyzer>> {
        let kept = self.kept.len() as u64;
        let worth = self.may_go_finer()
            && self.kept_apart * 2 >= kept
            && kept * 1000 >= self.entries
            && kept > 0;
        if !worth {
            return Ok(None);
        }
        let options = SplitOptions {
            granule: FALSE_SHARING_GRANULE,
            finer_for_false_sharing: false,
            ..self.options
        };
        // The new pass floats sections as this one did (this one is
        // dropped: it keeps the sections' state, not their code).
        let sections = self.sections.take().map(|s| Sections::new(s.into_code()));
        Ok(Some(Analyzer {
            collector: self.collector.as_ref().map(Collector::fresh),
            finer: true,
            sections,
            ..Analyzer::new(&options)?
        }))
    }

    /// Whether [`Self::finer_for_false_sharing`] may still say yes: the
    /// analysis is at the default granule, may go finer, and still watches
    /// for false sharing ([`Self::stop_watching_false_sharing`]).
    pub fn may_go_finer(&self) -> bool {
        self.sink.watch_apart
    }

    /// No longer counts the kept pairs that are false sharing (the pass
    /// will not ask again): the finder stops following the bytes of read
    /// groups, which every access paid for.
    pub fn stop_watching_false_sharing(&mut self) {
        self.sink.watch_apart = false;
    }

    /// An analyzer that also gathers what replay plans need besides the
    /// sync points ([`crate::recorded`]), so that they are built without a
    /// second pass over the trace.
    pub fn gathering_plan_points(options: &SplitOptions) -> Result<Analyzer> {
        Ok(Analyzer {
            collector: Some(Collector::default()),
            ..Analyzer::new(options)?
        })
    }

    /// [`Self::gathering_plan_points`], stopping with
    /// [`SplitError::TooManyPlanPoints`] past `max_points` points.
    pub fn gathering_at_most(options: &SplitOptions, max_points: u64) -> Result<Analyzer> {
        Ok(Analyzer {
            collector: Some(Collector::with_max_points(Some(max_points))),
            ..Analyzer::new(options)?
        })
    }

    /// Lets critical sections float ([`crate::sections`]) where `code`
    /// says they run only instrumented code, if the options allow it
    /// (`float_sections`, the vc reduction). Without it none floats.
    pub fn floating_sections(mut self, code: SectionCode) -> Analyzer {
        if self.options.float_sections && self.options.reduction == Reduction::Vc {
            self.sections = Some(Sections::new(code));
        }
        self
    }

    /// The options it analyses with.
    pub fn options(&self) -> &SplitOptions {
        &self.options
    }

    /// Entries fed so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Feeds the next event of the global order. Events of one thread must
    /// come in program order (index 0, 1, 2...).
    #[inline]
    pub fn push(&mut self, e: &RecordedEvent) -> Result<()> {
        let t = self.thread_slot(e)?;
        self.push_of(t, e, e.index < MAX_INDEX)
    }

    /// Feeds a run of the global order: consecutive events of one thread
    /// (`GlobalOrder::next_run` hands out hundreds at a time where threads
    /// work on their own data), as [`Self::push`] each would. The thread's
    /// slot is found once for the run, and its indices checked against the
    /// packing limit once.
    pub fn push_run(&mut self, run: &[RecordedEvent]) -> Result<()> {
        let (Some(head), Some(tail)) = (run.first(), run.last()) else {
            return Ok(());
        };
        let t = self.thread_slot(head)?;
        // (Each event's index is checked to follow the one before: below
        // the last's, every index fits.)
        let indices_fit = tail.index < MAX_INDEX;
        for (n, e) in run.iter().enumerate() {
            if e.thread != head.thread {
                return run[n..].iter().try_for_each(|e| self.push(e));
            }
            self.push_of(t, e, indices_fit)?;
        }
        Ok(())
    }

    /// The slot of `e`'s thread in the per-thread vectors, made if new.
    #[inline]
    fn thread_slot(&mut self, e: &RecordedEvent) -> Result<usize> {
        let t = e.thread as usize;
        if self.events_seen.len() <= t {
            let event = EventRef::of(e);
            if e.thread == NO_THREAD {
                return Err(SplitError::OutOfOrder { event, expected: 0 });
            }
            if e.thread >= MAX_THREADS {
                return Err(out_of_range(event));
            }
            self.events_seen.resize(t + 1, 0);
            self.threads.resize(t + 1, ThreadOrder::default());
        }
        Ok(t)
    }

    /// [`Self::push`] of `e`, whose thread has slot `t`; `index_fits`:
    /// its index is known to be below [`MAX_INDEX`] if it follows the
    /// thread's last one. A plain event that no critical section watches
    /// (nearly every event) takes [`Self::push_plain`]; the rest
    /// [`Self::push_general`].
    #[inline(always)]
    fn push_of(&mut self, t: usize, e: &RecordedEvent, index_fits: bool) -> Result<()> {
        let watched = self.sections.as_ref().is_some_and(|s| s.watching(e));
        if is_plain(e.kind) && !watched {
            self.push_plain(t, e, index_fits)
        } else {
            self.push_general(t, e, index_fits)
        }
    }

    /// The checks every event passes: `e` follows its thread's last event
    /// (slot `t`), its index fits and its range is not absurd. Its first
    /// and last granule.
    #[inline(always)]
    fn checked_granules(
        &self,
        t: usize,
        e: &RecordedEvent,
        index_fits: bool,
    ) -> Result<(u64, u64)> {
        let event = EventRef::of(e);
        let expected = self.events_seen[t];
        if e.index != expected {
            return Err(SplitError::OutOfOrder { event, expected });
        }
        if !index_fits && e.index >= MAX_INDEX {
            return Err(out_of_range(event));
        }
        let (first, last) = e.granules(self.shift);
        if last - first >= self.max_granules {
            return Err(SplitError::RangeTooLarge {
                event,
                addr: e.addr,
                bytes: e.size,
                max_granules: self.max_granules,
            });
        }
        Ok((first, last))
    }

    /// [`Self::push_general`] for a plain event no section watches, with
    /// what does not apply to one left out: no held-back pairs, no end of
    /// the thread or process, no call nesting events (a tenth of a
    /// split's instructions went into those steps' tests).
    #[inline(always)]
    fn push_plain(&mut self, t: usize, e: &RecordedEvent, index_fits: bool) -> Result<()> {
        let (first, last) = self.checked_granules(t, e, index_fits)?;
        let event = EventRef::of(e);
        self.sink.clear();
        self.sink.drops_implied = true;
        find_pairs(
            &mut self.finder,
            &mut self.sink,
            e,
            first..=last,
            event,
            e.kind.access(),
        );
        self.note_in_order(t, e, false);
        if self.sink.pairs.is_empty() && e.index != 0 {
            return Ok(());
        }
        let kept_before = self.kept.len();
        if !self.sink.pairs.is_empty() {
            self.reduce(event, false);
        }
        if self.collector.is_some() && (kept_before != self.kept.len() || e.index == 0) {
            self.collect(e, kept_before, &[])?;
        }
        self.compact_clocks_if_due();
        Ok(())
    }

    /// Counts `e` as its thread's (slot `t`) next event: its run of
    /// private steps, clock and access hash, and whether it `ended_process`.
    #[inline(always)]
    fn note_in_order(&mut self, t: usize, e: &RecordedEvent, ended_process: bool) {
        let order = &mut self.threads[t];
        order.ended_process = ended_process;
        if e.index == 0 || !rr_lite_trace::is_private_step(order.last_clock, e.clock) {
            order.step_run_start = (e.index, e.clock);
        }
        order.last_clock = e.clock;
        order.hash = fold_access_hash(order.hash, e.index, e.kind, e.addr);
        self.events_seen[t] += 1;
        self.entries += 1;
    }

    /// [`Self::push`] of any event `e`, whose thread has slot `t`.
    #[inline(never)]
    fn push_general(&mut self, t: usize, e: &RecordedEvent, index_fits: bool) -> Result<()> {
        let (first, last) = self.checked_granules(t, e, index_fits)?;
        let event = EventRef::of(e);
        self.sink.clear();
        let plain = is_plain(e.kind);
        if plain {
            self.sink.drops_implied = true;
            let access = e.kind.access();
            find_pairs(
                &mut self.finder,
                &mut self.sink,
                e,
                first..=last,
                event,
                access,
            );
        } else {
            self.find_pairs_of_kind(e, first..=last, event);
        }
        // (Decided once: `before` may close the section that made it so.)
        let watched = self.sections.as_ref().is_some_and(|s| s.watching(e));
        let held_back = match (&mut self.sections, &self.clocks) {
            (Some(sections), Some(clocks)) if watched => {
                sections.before(e, event, &mut self.sink.pairs, clocks)
            }
            _ => Vec::new(),
        };
        let ended_process =
            !plain && matches!(e.kind, EventKind::ProcessExit | EventKind::FatalSignal);
        self.note_in_order(t, e, ended_process);
        if e.kind == EventKind::ThreadExit {
            // (Its own thread is skipped: its count may already include it.)
            self.exit_after_everything_before(event, e.clock);
        }
        let kept_before = self.kept.len();
        if !self.sink.pairs.is_empty() {
            self.reduce(event, !plain && rr_lite_trace::plan::always_a_point(e.kind));
        }
        if let (Some(sections), Some(clocks), true) =
            (&mut self.sections, &mut self.clocks, watched)
        {
            let opened = !held_back.is_empty();
            let kept = (&mut self.kept, kept_before);
            sections.after(e, event, kept, opened, clocks, &self.events_seen);
        }
        // Most events: none of the collector's business, in a few compares.
        if self.collector.is_some()
            && (kept_before != self.kept.len()
                || e.index == 0
                || !held_back.is_empty()
                || (!plain && crate::recorded::handed(e.kind)))
        {
            self.collect(e, kept_before, &held_back)?;
        }
        self.compact_clocks_if_due();
        Ok(())
    }

    /// Between two events, when the vector clocks' history has doubled:
    /// drops the snapshots that no event the analysis still holds needs
    /// (`reduce`'s module doc, "Memory").
    #[inline(always)]
    fn compact_clocks_if_due(&mut self) {
        if self
            .clocks
            .as_ref()
            .is_some_and(VectorClocks::wants_compaction)
        {
            self.compact_clocks();
        }
    }

    #[cold]
    #[inline(never)]
    fn compact_clocks(&mut self) {
        let Some(clocks) = &mut self.clocks else {
            return;
        };
        // While the granules outnumber the snapshots, the walk would hold
        // more (up to two words a granule) than it frees. (Debug builds
        // walk anyway: the tests' traces are small, and compacting is what
        // they check.)
        let granules = usize::try_from(self.finder.granules()).unwrap_or(usize::MAX);
        if !cfg!(debug_assertions) && clocks.snapshots() < granules {
            clocks.postpone_compaction(granules);
            return;
        }
        // Each thread's events that the analysis holds, by thread.
        let mut live: Vec<Vec<u64>> = vec![Vec::new(); self.events_seen.len()];
        let mut add = |e: EventRef| {
            if let Some(indices) = live.get_mut(e.thread as usize) {
                indices.push(e.index);
            }
        };
        self.finder.for_each_event(&mut add);
        self.barriers.for_each_event(&mut add);
        if let Some(sections) = &self.sections {
            sections.for_each_event(&mut add);
        }
        // A thread's exit pairs start from the other threads' runs of
        // private steps (`Progress::last_before`).
        let floors: Vec<u64> = self.threads.iter().map(|t| t.step_run_start.0).collect();
        clocks.compact(live, &floors);
    }

    /// The pairs of an event that is not [`is_plain`]: a barrier's arrival
    /// or departure ([`BarrierRounds`]), or an event whose call nests
    /// others, which keeps pairs the reduction's first step would drop
    /// (see `reduce`).
    #[inline(never)]
    fn find_pairs_of_kind(
        &mut self,
        e: &RecordedEvent,
        granules: RangeInclusive<u64>,
        event: EventRef,
    ) {
        self.sink.drops_implied = !rr_lite_trace::plan::always_a_point(e.kind);
        let barrier =
            if BarrierRounds::concerns(e.kind, e.addr) && granules.start() == granules.end() {
                self.barriers.access(e.kind, e.addr, e.thread)
            } else {
                BarrierAccess::Finder(e.kind.access())
            };
        match barrier {
            BarrierAccess::Finder(access) => {
                find_pairs(&mut self.finder, &mut self.sink, e, granules, event, access)
            }
            BarrierAccess::Releases => {
                let finder = &mut self.finder;
                let pairs = self
                    .sink
                    .gathering(|sink| find_pairs(finder, sink, e, granules, event, Access::Write));
                self.barriers.released(e.addr, pairs);
            }
            BarrierAccess::Late(pairs) => {
                for (from, kind) in pairs {
                    self.sink.pair_added(from, event, kind);
                }
            }
        }
    }

    /// Hands event `e` (whose kept pairs start at `kept_before`) to the
    /// collector of plan points, with the thread's start and end.
    #[inline(never)]
    fn collect(
        &mut self,
        e: &RecordedEvent,
        kept_before: usize,
        held_back: &[DependencyPair],
    ) -> Result<()> {
        let Some(collector) = &mut self.collector else {
            return Ok(());
        };
        if e.index == 0 {
            collector.thread_started(e.thread);
        }
        let progress = Progress {
            seen: &self.events_seen,
            threads: &self.threads,
        };
        let kept = &self.kept[kept_before..];
        collector.event(e, kept, held_back, |u| {
            progress.last_before(u, e.clock, e.thread)
        })?;
        if ends_thread(e.kind) {
            collector.thread_ended(e.thread);
        }
        Ok(())
    }

    /// A thread's exit depends on every other thread's last event before it
    /// in the global order by clock, as if it wrote all memory. The thread
    /// may have been let go by a synchronisation no hook sees (libomp's
    /// shutdown wakes its workers with its own condition variables), which
    /// the recorder orders by giving the exit a clock past every thread's; a
    /// replay that put the exit earlier (sequential replay's total order)
    /// would wait for a thread that cannot get there. An event that ends
    /// the process is left out: it waits for every thread to end instead.
    ///
    /// The analysis order may have handed out another thread's later
    /// events already, private steps with clocks past the exit's; their
    /// clocks run on one by one from that thread's `step_run_start`, so its
    /// last event before the exit by `(clock, thread)` is found from there,
    /// and the pairs are those of the order by clock.
    fn exit_after_everything_before(&mut self, exit: EventRef, clock: u64) {
        let progress = Progress {
            seen: &self.events_seen,
            threads: &self.threads,
        };
        for thread in 0..self.events_seen.len() {
            if thread == exit.thread as usize {
                continue;
            }
            if let Some(index) = progress.last_before(thread, clock, exit.thread) {
                let from = EventRef {
                    thread: thread as u32,
                    index,
                };
                self.sink.pair(from, exit, DependencyKind::Waw);
            }
        }
    }

    /// Deduplicates and reduces the pairs ending at `to`;
    /// `nests_before`: `to`'s call nests events before it (see
    /// `reduce::VectorClocks::reduce`).
    fn reduce(&mut self, to: EventRef, nests_before: bool) {
        let kept_before = self.kept.len();
        // Take the sink's pairs without copying; the sink gets the old
        // buffer back, cleared on the next event.
        std::mem::swap(&mut self.candidates, &mut self.sink.pairs);
        if self.candidates.len() > 1 {
            // Spanning accesses find one event pair on several granules.
            self.candidates.sort_unstable();
            self.candidates.dedup();
        }
        match self.options.reduction {
            Reduction::None => self.kept.extend_from_slice(&self.candidates),
            Reduction::Thread => self
                .kept
                .extend(self.candidates.iter().filter(|p| !p.is_same_thread())),
            Reduction::Vc => {
                self.candidates.retain(|p| !p.is_same_thread());
                if let Some(clocks) = &mut self.clocks {
                    clocks.reduce(
                        to,
                        &mut self.candidates,
                        &mut self.kept,
                        &self.events_seen,
                        nests_before,
                    );
                }
            }
        }
        if !self.sink.apart.is_empty() {
            let apart = &self.sink.apart;
            self.kept_apart += self.kept[kept_before..]
                .iter()
                .filter(|p| apart.contains(p))
                .count() as u64;
        }
    }

    /// Ends the analysis.
    pub fn finish(mut self) -> Analysis {
        let mut sections_counts = (0, 0);
        if let Some(mut sections) = self.sections.take() {
            sections.finish();
            self.kept.append(&mut sections.late);
            sections_counts = (sections.floated, sections.promoted);
        }
        let mut kept = PairCounts::default();
        for p in &self.kept {
            kept.add(p.kind, 1);
        }
        let (pairs_found, pairs_cross_thread) = self.sink.counts();
        let granules = self.finder.granules();
        let state_bytes = self.finder.state_bytes();
        let clock_bytes = self.clocks.as_ref().map_or(0, VectorClocks::peak_bytes);
        let threads: Vec<ThreadSummary> = self
            .events_seen
            .iter()
            .zip(&self.threads)
            .map(|(&accesses, order)| ThreadSummary {
                accesses,
                access_hash: order.hash,
            })
            .collect();
        let stats = SplitStats {
            algorithm: self.options.algorithm,
            reduction: self.options.reduction,
            granule: self.options.granule,
            granule_finer_for_false_sharing: self.finer,
            fixed_granule: !self.options.finer_for_false_sharing && !self.finer,
            float_sections: self.options.float_sections,
            order: self.options.order,
            threads: threads.len() as u32,
            entries: self.entries,
            granules,
            pairs_found,
            pairs_cross_thread,
            pairs_kept: kept,
            cross_thread_pairs_on_disjoint_bytes: self.sink.disjoint_bytes,
            state_bytes,
            clock_bytes,
            sections_floated: sections_counts.0,
            sections_promoted: sections_counts.1,
            state_bytes_per_granule: if granules == 0 {
                0.0
            } else {
                state_bytes as f64 / granules as f64
            },
            ..SplitStats::default()
        };
        let ended: Vec<bool> = self.threads.iter().map(|o| o.ended_process).collect();
        let recorded = (self.collector).map(|c| c.finish(&ended));
        Analysis {
            options: self.options,
            pairs: self.kept,
            threads,
            stats,
            recorded,
        }
    }
}

/// The finder's pairs of `event`, an `access` to `granules`, into `sink`.
/// (Inline into the plain events' path: a call there cost more than the
/// checks `Analyzer::push_run` saves.)
#[inline(always)]
fn find_pairs(
    finder: &mut PairFinder,
    sink: &mut PairSink,
    e: &RecordedEvent,
    granules: RangeInclusive<u64>,
    event: EventRef,
    access: Access,
) {
    // (One granule, nearly every event, inline; a range out of line, where
    // the finder may take whole chunks at once.)
    let (first, last) = granules.into_inner();
    if first == last {
        finder.access(first, event, access, (e.addr, e.size), sink);
    } else {
        finder.access_range((first, last), event, access, (e.addr, e.size), sink);
    }
}

/// Kinds the analysis treats alike, in one test ([`is_plain`]): no barrier,
/// no exit, no call nesting other events (`plan::always_a_point`), nothing
/// the collector of plan points wants unless a pair ends there. Plain
/// reads and writes, ranges, atomics and locks: nearly every event.
const KINDS_PLAIN: u64 = {
    let mut mask = 0u64;
    let mut n = 0;
    while n < EventKind::ALL.len() {
        let kind = EventKind::ALL[n];
        let special = matches!(
            kind,
            EventKind::BarrierArrive
                | EventKind::BarrierDepart
                | EventKind::ThreadExit
                | EventKind::ProcessExit
                | EventKind::FatalSignal
        ) || rr_lite_trace::plan::always_a_point(kind)
            || crate::recorded::handed(kind);
        if !special {
            mask |= 1 << kind as u8;
        }
        n += 1;
    }
    mask
};

/// Whether an event of `kind` is in [`KINDS_PLAIN`].
#[inline(always)]
fn is_plain(kind: EventKind) -> bool {
    KINDS_PLAIN >> (kind as u8 & 63) & 1 != 0
}

/// What the analysis keeps per thread besides its count of events.
#[derive(Debug, Clone, Copy)]
struct ThreadOrder {
    /// The index and clock of the thread's last event that was not one
    /// step past the event before it, and the clock of its last event. The
    /// events since that one have consecutive clocks, so a thread's last
    /// event before a given clock is known even when the analysis order
    /// handed out later ones already ([`Progress::last_before`]).
    step_run_start: (u64, u64),
    last_clock: u64,
    /// The thread's last event so far ends the process (an exit or a fatal
    /// signal, which replay makes wait for every other thread).
    ended_process: bool,
    /// [`fold_access_hash`] of its events so far.
    hash: u64,
}

impl Default for ThreadOrder {
    fn default() -> Self {
        ThreadOrder {
            step_run_start: (0, 0),
            last_clock: 0,
            ended_process: false,
            hash: ACCESS_HASH_SEED,
        }
    }
}

/// How far each thread has got in the analysis order.
struct Progress<'a> {
    seen: &'a [u64],
    threads: &'a [ThreadOrder],
}

impl Progress<'_> {
    /// Thread `u`'s last event before `(clock, thread)` by clock, of those
    /// fed so far, an event that ends the process left out. The analysis
    /// order may have handed out `u`'s later events already, private steps
    /// with clocks past `clock`; their clocks run on one by one from `u`'s
    /// `step_run_start`, so its last event before `clock` is found from
    /// there (an equal clock of a lower thread counts as before, as the
    /// order by clock has it).
    fn last_before(&self, u: usize, clock: u64, thread: u32) -> Option<u64> {
        let order = &self.threads[u];
        let before = self.seen[u] - u64::from(order.ended_process);
        let last = before.checked_sub(1)?;
        let (start, start_clock) = order.step_run_start;
        let ties = u64::from((u as u32) < thread);
        // (Saturating: the clocks come from a log that may be damaged,
        // whose checksum is only compared at its end.)
        Some(
            match clock
                .saturating_add(ties)
                .checked_sub(start_clock.saturating_add(1))
            {
                Some(steps) if last >= start => last.min(start.saturating_add(steps)),
                _ => last,
            },
        )
    }
}

/// Analyses events given in the global order.
pub fn analyze_events<'a>(
    events: impl IntoIterator<Item = &'a RecordedEvent>,
    options: &SplitOptions,
) -> Result<Analysis> {
    let mut analyzer = Analyzer::new(options)?;
    for e in events {
        analyzer.push(e)?;
    }
    Ok(analyzer.finish())
}

impl Analysis {
    /// Threads the analysis saw, at least `at_least` (threads of a trace
    /// that logged nothing still get a replay log).
    pub fn ensure_threads(&mut self, at_least: u32) {
        if self.threads.len() < at_least as usize {
            self.threads
                .resize(at_least as usize, ThreadSummary::default());
            self.stats.threads = at_least;
        }
    }
}

/// The error for an event the pair finder cannot pack.
fn out_of_range(event: EventRef) -> SplitError {
    SplitError::EventOutOfRange {
        event,
        max_threads: MAX_THREADS,
        max_index: MAX_INDEX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(thread: u32, index: u64, clock: u64, kind: EventKind) -> RecordedEvent {
        RecordedEvent {
            thread,
            index,
            clock,
            kind,
            addr: 0x1000 * (u64::from(thread) + 1) + 8 * index,
            size: 8,
            site: 0,
            payload: 0,
        }
    }

    /// Thread 1 runs private steps past thread 2's exit: the analysis order
    /// hands them out before the exit, and the exit still depends on the
    /// event the order by clock has before it (at the exit's clock, thread
    /// 1 first), not on the last one handed out.
    #[test]
    fn an_exit_depends_on_what_came_before_it_by_clock() {
        let (write, exit) = (EventKind::Write, EventKind::ThreadExit);
        let by_clock = [
            event(1, 0, 2, write),
            event(2, 0, 2, write),
            event(1, 1, 3, write),
            event(1, 2, 4, write),
            event(2, 1, 4, exit),
            event(1, 3, 5, write),
        ];
        let in_runs = [0, 2, 3, 5, 1, 4].map(|i| by_clock[i]);
        let pairs = |events: &[RecordedEvent]| {
            analyze_events(events, &SplitOptions::default())
                .unwrap()
                .pairs
        };
        let expected = pairs(&by_clock);
        assert!(
            expected.contains(&DependencyPair {
                from: EventRef {
                    thread: 1,
                    index: 2
                },
                to: EventRef {
                    thread: 2,
                    index: 1
                },
                kind: DependencyKind::Waw,
            }),
            "{expected:?}"
        );
        assert_eq!(pairs(&in_runs), expected);
    }

    /// Four threads bump eight shared counters in turn, each a read and a
    /// write: nearly every event keeps a pair and snapshots its clock. The
    /// history stays near what the granules hold, and the pairs are those
    /// of an analysis that never compacts.
    #[test]
    fn racy_counters_keep_a_bounded_history_and_the_same_pairs() {
        let mut events = Vec::new();
        let mut index = [0u64; 4];
        for step in 0..4000u64 {
            let thread = (step % 4) as u32;
            let addr = 0x8000 + 8 * ((step + step / 4) % 8);
            for kind in [EventKind::Read, EventKind::Write] {
                let i = &mut index[thread as usize];
                events.push(RecordedEvent {
                    addr,
                    ..event(thread, *i, events.len() as u64 + 1, kind)
                });
                *i += 1;
            }
        }
        let analysed = |clocks: VectorClocks| {
            let mut analyzer = Analyzer::new(&SplitOptions::default()).unwrap();
            analyzer.clocks = Some(clocks);
            let mut most = 0;
            for e in &events {
                analyzer.push(e).unwrap();
                most = most.max(analyzer.clocks.as_ref().unwrap().snapshots());
            }
            (analyzer.finish().pairs, most)
        };
        let (whole, all) = analysed(VectorClocks::compacting_at(usize::MAX));
        let (compacted, most) = analysed(VectorClocks::compacting_at(32));
        assert_eq!(compacted, whole);
        assert!(all > 2000, "the test should snapshot often: {all}");
        assert!(most < 200, "{most} snapshots held at once, of {all}");
    }
}
