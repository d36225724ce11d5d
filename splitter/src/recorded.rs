//! What replay plans need besides the sync points, gathered in the split's
//! one pass over the global order, so that plans are built without
//! decoding the trace again: each thread's event count, the events whose
//! recorded details replay checks or returns (every event
//! [`always_a_point`] says replay needs, and every event a kept pair ends
//! at), the results of its [`in_results`] events (its random numbers), and
//! the *nested waits* of the sequential total order.
//!
//! # Nested waits
//!
//! A call that blocks and is logged after it returns (a lock, an OpenMP
//! `ordered` region, a barrier departure: [`after_blocking_call`]) may log
//! events of its own while inside (libomp allocates before and after its
//! wait). The split puts the dependency on the release (the unlock, the end
//! of the previous region) at the call's event `L` only, so the sequential
//! total order (the replayer's linearisation, which runs a thread as far as
//! its waits allow) could give a nested event that the recording had
//! *after* the release a turn *before* it. Replay then deadlocks: the
//! thread cannot reach that event until the release, which waits for a
//! later turn.
//!
//! So each recorded point `P` of thread `t` between `t`'s previous blocking
//! event and `L` (the last [`MAX_NESTED`] of them) also waits, for each
//! wait `(u, j)` of `L`, for `u`'s last event up to `j` that the recording
//! had before `P` by `(clock, thread)`. That event is known while `P` is
//! analysed and not later (the analysis keeps no history of clocks), so
//! each such `P` keeps the last event before it of every other thread alive
//! then (its *frontier*) until `t`'s next blocking event or its end; a
//! thread that had ended before `P` has all its events before it. Memory:
//! at most [`MAX_NESTED`] frontiers per live thread, each a word or two per
//! live thread; past [`MAX_FRONTIER_THREADS`] threads alive at once, points
//! keep none (and get no nested waits). The added waits only repeat
//! the recorded order, so the total order still exists (the recording is
//! one). They are not waits of the plans: in parallel replay a thread
//! spinning in a library for this one could never reach the waited event.
//!
//! # Invariants
//! - points of a thread are in program order, one per event at most;
//! - a frontier never names an event the analysis has not seen, nor one
//!   after `P` by clock (a private step handed out early may see fewer:
//!   the wait is weaker, never wrong).

use std::collections::VecDeque;

use rr_lite_trace::plan::{always_a_point, in_results};
use rr_lite_trace::{EventKind, RecordedEvent};

use crate::error::SplitError;
use crate::pairs::{DependencyPair, EventRef};

/// Most recorded points before a blocking event that take its waits: a
/// call nests a few events (libomp: two formatted-message buffers), not
/// thousands.
pub const MAX_NESTED: usize = 64;

/// Events logged after a real call that may block until another thread's
/// release.
pub const fn after_blocking_call(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::MutexLock
            | EventKind::MutexTryLock
            | EventKind::RwReadLock
            | EventKind::RwWriteLock
            | EventKind::CondWake
            | EventKind::BarrierDepart
            | EventKind::SemWait
            | EventKind::SpinLock
            | EventKind::ThreadJoin
            | EventKind::FutexWait
    )
}

/// Events after which their thread has no more.
pub(crate) const fn ends_thread(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::ThreadExit | EventKind::ProcessExit | EventKind::FatalSignal
    )
}

/// Kinds the analysis hands the collector whatever the pairs:
/// [`always_a_point`], [`in_results`], [`after_blocking_call`] or
/// [`ends_thread`], one bit per kind code (every code is below 64).
const KINDS_HANDED: u64 = {
    let mut mask = 0u64;
    let mut n = 0;
    while n < EventKind::ALL.len() {
        let kind = EventKind::ALL[n];
        assert!((kind as u8) < 64);
        if always_a_point(kind)
            || in_results(kind)
            || after_blocking_call(kind)
            || ends_thread(kind)
        {
            mask |= 1 << kind as u8;
        }
        n += 1;
    }
    mask
};

/// Whether the analysis hands the collector an event of `kind` that no
/// kept pair ends at and that does not start its thread (it skips it
/// otherwise: most events), in one test.
#[inline]
pub(crate) const fn handed(kind: EventKind) -> bool {
    KINDS_HANDED >> (kind as u8 & 63) & 1 != 0
}

/// An event whose recorded details a plan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedPoint {
    pub index: u64,
    pub kind: EventKind,
    pub addr: u64,
    pub payload: u64,
}

/// One thread's part of [`RecordedPoints`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadRecord {
    /// By index.
    pub points: Vec<RecordedPoint>,
    /// `(index of a point, wait)`, by point: the nested waits.
    pub nested_waits: Vec<(u64, EventRef)>,
    /// The recorded results of the thread's [`in_results`] events, in
    /// program order (the plan's results array).
    pub results: Vec<u64>,
    /// The thread's last event ends the process (an exit or a fatal
    /// signal, which replay makes wait for every other thread).
    pub ends_process: bool,
}

/// What the analysis gathered for the plans, by thread id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedPoints {
    pub threads: Vec<ThreadRecord>,
}

/// Most threads alive at once for which a point keeps a frontier: past
/// that, points get no nested waits (a frontier is a word per live thread,
/// and a thread keeps up to [`MAX_NESTED`] of them).
pub const MAX_FRONTIER_THREADS: usize = 256;

/// A point that may be nested in the thread's next blocking call, with the
/// last event before it of every other thread alive then that had one, and
/// how many threads had ended by then.
#[derive(Debug)]
struct Nestable {
    index: u64,
    frontier: Vec<(u32, u64)>,
    ended_before: u64,
}

/// Memory a plan point takes while plans are built, at the peak: the
/// gathered point, the plan's point and its place in the total order
/// (`replayer::plans`), and for the end of a kept pair the pair, its two
/// roles and the point at its source (racy counters, 200 M events and
/// 3.96 M kept waits, each the end of one: 506 MB at the peak, some 128
/// bytes a point; 1.05 GB before the plans' points were made compact).
pub const BYTES_PER_POINT: u64 = 192;

/// Gathers [`RecordedPoints`] as the analysis goes.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    threads: Vec<ThreadRecord>,
    /// Points gathered, by kind code, and the most allowed in all
    /// (`None`: no limit).
    points_by_kind: Vec<u64>,
    points: u64,
    max_points: Option<u64>,
    /// By thread: its points since its last blocking event.
    windows: Vec<VecDeque<Nestable>>,
    /// Threads that started and have not ended.
    live: Vec<u32>,
    /// By thread: its place among the threads that ended, `u64::MAX` while
    /// it runs.
    end_order: Vec<u64>,
    ended: u64,
}

impl Collector {
    /// A collector that gathers at most `max_points` points in all.
    pub(crate) fn with_max_points(max_points: Option<u64>) -> Collector {
        Collector {
            max_points,
            ..Collector::default()
        }
    }

    /// An empty collector with this one's limit (a pass started again).
    pub(crate) fn fresh(&self) -> Collector {
        Collector::with_max_points(self.max_points)
    }

    /// Counts a point of `kind`; the error once there are too many.
    fn count_point(&mut self, kind: EventKind) -> Result<(), SplitError> {
        self.points += 1;
        let code = kind as usize;
        if self.points_by_kind.len() <= code {
            self.points_by_kind.resize(code + 1, 0);
        }
        self.points_by_kind[code] += 1;
        match self.max_points {
            Some(limit) if self.points > limit => Err(self.too_many(limit)),
            _ => Ok(()),
        }
    }

    fn too_many(&self, limit: u64) -> SplitError {
        let (code, &most) = (self.points_by_kind.iter().enumerate())
            .max_by_key(|&(_, n)| *n)
            .unwrap_or((0, &0));
        let most_kind = EventKind::from_code(code as u8).map_or("other", EventKind::name);
        SplitError::TooManyPlanPoints {
            // (Named by the caller, who knows the trace: `with_trace`.)
            trace: std::path::PathBuf::new(),
            limit,
            most_kind,
            most_share: most * 100 / self.points.max(1),
            mib: limit.saturating_mul(BYTES_PER_POINT).div_ceil(1 << 20),
        }
    }

    fn ensure_thread(&mut self, t: usize) {
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, ThreadRecord::default);
            self.windows.resize_with(t + 1, VecDeque::new);
            self.end_order.resize(t + 1, u64::MAX);
        }
    }

    /// Thread `t`'s first event is being analysed.
    pub(crate) fn thread_started(&mut self, t: u32) {
        self.ensure_thread(t as usize);
        self.live.push(t);
    }

    /// Thread `t`'s last event (an exit, or one that ends the process) has
    /// been analysed: it keeps no window, and every later point has all of
    /// its events before it.
    pub(crate) fn thread_ended(&mut self, t: u32) {
        let Some(at) = self.live.iter().position(|&u| u == t) else {
            return;
        };
        self.live.swap_remove(at);
        self.windows[t as usize] = VecDeque::new();
        self.end_order[t as usize] = self.ended;
        self.ended += 1;
    }

    /// Takes event `e`, the pairs kept that end at it, and `last_before(u)`:
    /// thread `u`'s last event before `e` by `(clock, thread)`. Events that
    /// are not [`handed`] and end no kept pair may be left out.
    pub(crate) fn event(
        &mut self,
        e: &RecordedEvent,
        kept: &[DependencyPair],
        held_back: &[DependencyPair],
        last_before: impl Fn(usize) -> Option<u64>,
    ) -> Result<(), SplitError> {
        let t = e.thread as usize;
        self.ensure_thread(t);
        let record = &mut self.threads[t];
        let blocking = after_blocking_call(e.kind);
        if blocking {
            let mut window = std::mem::take(&mut self.windows[t]);
            let with_held_back;
            let waits = if held_back.is_empty() {
                kept
            } else {
                with_held_back = [kept, held_back].concat();
                &with_held_back[..]
            };
            nested_waits(
                &mut record.nested_waits,
                &window,
                e.thread,
                waits,
                &self.end_order,
            );
            window.clear();
            self.windows[t] = window;
        }
        if in_results(e.kind) {
            record.results.push(e.payload);
        }
        // A held-back pair (`crate::sections`) is a wait of the total order
        // only: the event is a point that the total order waits at.
        for p in held_back {
            record.nested_waits.push((e.index, p.from));
        }
        if !always_a_point(e.kind) && kept.is_empty() && held_back.is_empty() {
            return Ok(());
        }
        self.count_point(e.kind)?;
        let record = &mut self.threads[t];
        debug_assert!(record.points.last().is_none_or(|p| p.index < e.index));
        record.points.push(RecordedPoint {
            index: e.index,
            kind: e.kind,
            addr: e.addr,
            payload: e.payload,
        });
        if blocking || self.live.len() > MAX_FRONTIER_THREADS {
            return Ok(());
        }
        let frontier = (self.live.iter())
            .filter(|&&u| u != e.thread)
            .filter_map(|&u| Some((u, last_before(u as usize)?)))
            .collect();
        let window = &mut self.windows[t];
        if window.len() == MAX_NESTED {
            window.pop_front();
        }
        window.push_back(Nestable {
            index: e.index,
            frontier,
            ended_before: self.ended,
        });
        Ok(())
    }

    /// The points gathered; `ends_process` by thread: whether its last
    /// event ends the process.
    pub(crate) fn finish(mut self, ends_process: &[bool]) -> RecordedPoints {
        if self.threads.len() < ends_process.len() {
            self.threads
                .resize_with(ends_process.len(), ThreadRecord::default);
        }
        for (record, &ends) in self.threads.iter_mut().zip(ends_process) {
            record.ends_process = ends;
        }
        for record in &mut self.threads {
            record.nested_waits.sort_unstable();
            record.nested_waits.dedup();
        }
        RecordedPoints {
            threads: self.threads,
        }
    }
}

/// The nested waits of blocking event `L` of thread `t`, whose kept pairs
/// are `kept`, for the points of `window`; `end_order` by thread, as
/// [`Collector::end_order`].
fn nested_waits(
    out: &mut Vec<(u64, EventRef)>,
    window: &VecDeque<Nestable>,
    t: u32,
    kept: &[DependencyPair],
    end_order: &[u64],
) {
    for pair in kept.iter().filter(|p| p.from.thread != t) {
        let (u, j) = (pair.from.thread, pair.from.index);
        for p in window {
            let before = match p.frontier.iter().find(|f| f.0 == u) {
                Some(&(_, last)) => Some(j.min(last)),
                // Ended before the point: all of its events came first.
                None if end_order
                    .get(u as usize)
                    .is_some_and(|&n| n < p.ended_before) =>
                {
                    Some(j)
                }
                None => None,
            };
            if let Some(index) = before {
                out.push((p.index, EventRef { thread: u, index }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitOptions;
    use crate::analysis::Analyzer;

    /// `(thread, clock, kind, addr)` in the global order, numbered per
    /// thread. Sections do not float here: the held-back pairs would add
    /// their own nested waits at the locks (`crate::sections` tests them).
    fn gather(raw: &[(u32, u64, EventKind, u64)]) -> RecordedPoints {
        let options = SplitOptions {
            float_sections: false,
            ..SplitOptions::default()
        };
        let mut analyzer = Analyzer::gathering_plan_points(&options).unwrap();
        let mut next = [0u64; 4];
        for &(thread, clock, kind, addr) in raw {
            let index = next[thread as usize];
            next[thread as usize] += 1;
            let e = RecordedEvent {
                thread,
                index,
                clock,
                kind,
                addr,
                size: 8,
                site: 0,
                payload: 0,
            };
            analyzer.push(&e).unwrap();
        }
        analyzer.finish().recorded.unwrap()
    }

    fn wait(thread: u32, index: u64) -> EventRef {
        EventRef { thread, index }
    }

    const LOCK: u64 = 0x9000;
    /// A nested event's kind that every plan has a point for. (libomp's
    /// nested events are allocations, points of every plan until plans
    /// version 5; now points where a pair ends at them, as here.)
    const NESTED: EventKind = EventKind::DescriptorOpen;

    #[test]
    fn nested_events_after_the_release_take_its_wait() {
        // Thread 0 releases at its event 2 (clock 50). Thread 1 allocates
        // inside its lock call before (clock 40) and after (clock 60) the
        // release, then logs the lock (clock 70), which waits for it.
        let points = gather(&[
            (0, 10, EventKind::MutexLock, LOCK),
            (0, 20, EventKind::Write, 0x100),
            (1, 30, EventKind::Write, 0x200),
            (1, 40, NESTED, 0x1_0000),
            (0, 50, EventKind::MutexUnlock, LOCK),
            (1, 60, NESTED, 0x2_0000),
            (1, 70, EventKind::MutexLock, LOCK),
        ]);
        let t1 = &points.threads[1];
        let indices: Vec<u64> = t1.points.iter().map(|p| p.index).collect();
        assert_eq!(indices, [1, 2, 3], "the allocations and the lock");
        // Before the release, only what came before it by clock.
        assert_eq!(t1.nested_waits, [(1, wait(0, 1)), (2, wait(0, 2))]);
    }

    #[test]
    fn nesting_stops_at_the_previous_blocking_event() {
        let points = gather(&[
            (0, 10, EventKind::Write, 0x100),
            (1, 20, NESTED, 0x1_0000),
            (1, 30, EventKind::MutexLock, 0xa000),
            (1, 40, NESTED, 0x2_0000),
            (0, 50, EventKind::MutexUnlock, LOCK),
            (1, 60, EventKind::MutexLock, LOCK),
        ]);
        assert_eq!(points.threads[1].nested_waits, [(2, wait(0, 0))]);
    }

    #[test]
    fn only_the_last_points_before_a_blocking_event_take_its_waits() {
        let mut raw = vec![(0, 1, EventKind::MutexUnlock, LOCK)];
        for n in 0..(MAX_NESTED as u64 + 10) {
            raw.push((1, 10 + n, NESTED, 0x1_0000 + 64 * n));
        }
        raw.push((1, 1000, EventKind::MutexLock, LOCK));
        let points = gather(&raw);
        let nested = &points.threads[1].nested_waits;
        assert_eq!(nested.len(), MAX_NESTED);
        assert_eq!(nested[0], (10, wait(0, 0)));
    }

    #[test]
    fn a_release_by_a_thread_that_ended_before_the_point_is_waited_for() {
        let points = gather(&[
            (0, 10, EventKind::MutexLock, LOCK),
            (0, 20, EventKind::MutexUnlock, LOCK),
            (0, 30, EventKind::ThreadExit, 0x7000),
            (1, 40, NESTED, 0x1_0000),
            (1, 50, EventKind::MutexLock, LOCK),
        ]);
        assert_eq!(points.threads[1].nested_waits, [(0, wait(0, 1))]);
    }

    #[test]
    fn a_thread_that_ended_keeps_no_window() {
        let mut collector = Collector::default();
        collector.thread_started(0);
        collector.thread_started(1);
        let alloc = RecordedEvent {
            thread: 1,
            index: 0,
            clock: 2,
            kind: NESTED,
            addr: 0x1_0000,
            size: 8,
            site: 0,
            payload: 0,
        };
        collector.event(&alloc, &[], &[], |_| Some(0)).unwrap();
        assert_eq!(collector.windows[1].len(), 1);
        assert_eq!(collector.windows[1][0].frontier, [(0, 0)]);
        collector.thread_ended(1);
        assert!(collector.windows[1].is_empty() && collector.windows[1].capacity() == 0);
        assert_eq!(collector.live, [0]);
    }

    #[test]
    fn the_kinds_handed_are_those_of_the_rules() {
        for &kind in EventKind::ALL {
            assert_eq!(
                handed(kind),
                always_a_point(kind)
                    || in_results(kind)
                    || after_blocking_call(kind)
                    || ends_thread(kind),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_lone_thread_keeps_no_frontiers() {
        let points = gather(&[(0, 1, NESTED, 0x1_0000), (0, 2, EventKind::MutexLock, LOCK)]);
        assert!(points.threads[0].nested_waits.is_empty());
        assert_eq!(points.threads[0].points.len(), 1);
    }
    /// Past its most points the collector stops with an error naming the
    /// kind most points are; events that make no point do not count.
    #[test]
    fn past_its_most_points_the_collector_says_which_kind_they_are() {
        let mut collector = Collector::with_max_points(Some(2));
        collector.thread_started(0);
        let event = |index, kind| RecordedEvent {
            thread: 0,
            index,
            clock: index + 1,
            kind,
            addr: 0x1000,
            size: 8,
            site: 0,
            payload: 0,
        };
        // (Plain accesses and locks are no points of their own.)
        let kinds = [
            EventKind::Read,
            EventKind::MutexTryLock,
            EventKind::MutexLock,
            EventKind::Write,
            EventKind::MutexTryLock,
        ];
        for (i, kind) in (0..).zip(kinds) {
            collector
                .event(&event(i, kind), &[], &[], |_| None)
                .unwrap();
        }
        let err = collector.event(&event(5, EventKind::MutexTryLock), &[], &[], |_| None);
        match err {
            Err(SplitError::TooManyPlanPoints {
                limit: 2,
                most_kind,
                most_share: 100,
                ..
            }) => assert_eq!(most_kind, EventKind::MutexTryLock.name()),
            other => panic!("{other:?}"),
        }
    }
}
