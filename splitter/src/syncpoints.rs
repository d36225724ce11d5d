//! Condition-variable points: where, in each thread's program order, replay
//! must wait for other threads and wake them.
//!
//! Placement per the method: a kept pair `a -> b` puts a wait for `a` before
//! `b` and a notification after `a`. WAW: one signal after the predecessor,
//! one wait before the successor; RAW: one broadcast after the writer, a
//! wait before each reader; WAR: a signal after each reader, and the writer
//! waits on all of them. An event that is the source of a RAW pair, or of
//! several pairs, broadcasts; the source of exactly one WAR or WAW pair
//! signals.
//!
//! The plan is made from the pairs alone. The replay logs of
//! [`crate::split_trace`] (and `rr-lite graph`'s labels) take each point's
//! kind, address and site from a second pass over the events
//! ([`SyncPlan::fill`]), so the analysis need not keep them for every
//! granule; replay plans take what they check from the one pass instead
//! ([`crate::recorded`]), and leave the points whose event is only a
//! source unchecked.

use rr_lite_trace::{EventKind, RecordedEvent};
use serde::Serialize;

use crate::analysis::{Analysis, ThreadSummary};
use crate::error::{Result, SplitError};
use crate::pairs::{DependencyKind, DependencyPair, EventRef};

/// What a thread does after completing the event of a sync point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    /// Nobody waits for this event.
    None = 0,
    /// One waiter.
    Signal = 1,
    /// Several waiters, or a RAW group that readers join.
    Broadcast = 2,
}

impl Notify {
    pub fn from_code(code: u8) -> Option<Notify> {
        match code {
            0 => Some(Notify::None),
            1 => Some(Notify::Signal),
            2 => Some(Notify::Broadcast),
            _ => None,
        }
    }
}

/// One point of a thread's replay log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncPoint {
    /// Per-thread index of the event.
    pub index: u64,
    /// The recorded event, for divergence checks (and the report's site).
    pub kind: EventKind,
    pub addr: u64,
    pub site: u64,
    /// Before the event: wait until each thread `T` has completed its event
    /// `I`. Sorted, no duplicates.
    pub waits: Vec<EventRef>,
    /// After the event.
    pub notify: Notify,
}

/// The replay log of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadLog {
    pub thread: u32,
    /// Threads in the trace (every wait names one of them).
    pub threads: u32,
    /// Granule of the analysis, bytes.
    pub granule: u32,
    /// Events of the thread, and their hash: replay compares them at exit.
    pub accesses: u64,
    pub access_hash: u64,
    /// Sorted by index, no duplicates.
    pub sync_points: Vec<SyncPoint>,
}

/// A sync point placed: its event's index, its waits (in its thread's
/// plan: [`ThreadPlan::waits_of`]) and its notification. 24 bytes: plans
/// hold millions of them at once (a wait's point, and its source's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedPoint {
    pub index: u64,
    /// Where its waits start in [`ThreadPlan`]'s, and how many.
    first_wait: usize,
    wait_count: u32,
    pub notify: Notify,
}

impl PlannedPoint {
    /// How many events it waits for.
    pub fn wait_count(&self) -> usize {
        self.wait_count as usize
    }
}

/// Sync points placed, waiting for their events' kind, address and site.
#[derive(Debug, Clone)]
pub struct SyncPlan {
    threads: Vec<ThreadPlan>,
}

/// One thread's points of a [`SyncPlan`], filled in from its log alone
/// (threads can be filled in side by side).
#[derive(Debug, Clone, Default)]
pub struct ThreadPlan {
    thread: u32,
    points: Vec<PlannedPoint>,
    /// Every point's waits, one after the other, each point's sorted
    /// without duplicates.
    waits: Vec<EventRef>,
    /// The kind, address and site of the first points' events, once filled
    /// in ([`ThreadPlan::fill`]), by point.
    events: Vec<(EventKind, u64, u64)>,
}

impl ThreadPlan {
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// The points, by index.
    pub fn points(&self) -> &[PlannedPoint] {
        &self.points
    }

    /// The waits of `point`, one of [`Self::points`]: sorted, no duplicates.
    pub fn waits_of(&self, point: &PlannedPoint) -> &[EventRef] {
        &self.waits[point.first_wait..point.first_wait + point.wait_count()]
    }

    /// True while some point still lacks its event.
    pub fn needs_events(&self) -> bool {
        self.events.len() < self.points.len()
    }

    /// Takes the kind, address and site of `e`, the thread's next event in
    /// program order, if it is a sync point.
    #[inline]
    pub fn fill(&mut self, e: &RecordedEvent) -> Result<()> {
        let Some(p) = self.points.get(self.events.len()) else {
            return Ok(());
        };
        if p.index == e.index {
            self.events.push((e.kind, e.addr, e.site));
        } else if p.index < e.index {
            return Err(SplitError::ThreadLogChanged {
                thread: e.thread,
                index: p.index,
            });
        }
        Ok(())
    }

    /// Places thread `thread`'s points from its `roles` (their order does
    /// not matter; emptied).
    fn place(thread: u32, roles: &mut Vec<Role>) -> ThreadPlan {
        roles.sort_unstable_by_key(|r| r.index);
        let mut plan = ThreadPlan {
            thread,
            ..ThreadPlan::default()
        };
        let mut waits = Vec::new();
        for point in roles.chunk_by(|a, b| a.index == b.index) {
            plan.push_point(point, &mut waits);
        }
        roles.clear();
        roles.shrink_to_fit();
        plan
    }

    /// Adds the point of `roles` (all at one index), its waits gathered in
    /// `waits` (scratch) first to be sorted and deduplicated.
    fn push_point(&mut self, roles: &[Role], waits: &mut Vec<EventRef>) {
        waits.clear();
        let (mut sources, mut raw) = (0u32, false);
        for r in roles {
            if r.source == NO_SOURCE {
                waits.push(EventRef {
                    thread: r.other_thread,
                    index: r.other_index,
                });
            } else {
                sources += 1;
                raw |= r.source == DependencyKind::Raw as u8;
            }
        }
        waits.sort_unstable();
        waits.dedup();
        let notify = match (sources, raw) {
            (0, _) => Notify::None,
            (1, false) => Notify::Signal,
            _ => Notify::Broadcast,
        };
        self.points.push(PlannedPoint {
            index: roles[0].index,
            first_wait: self.waits.len(),
            wait_count: u32::try_from(waits.len()).unwrap_or(u32::MAX),
            notify,
        });
        self.waits.extend_from_slice(waits);
    }
}

/// One end of a kept pair, at event `index` of its thread: a wait for event
/// `other_index` of thread `other_thread` (the pair's source), or the source
/// of a pair of kind `source` (a [`DependencyKind`]'s code; [`NO_SOURCE`]
/// for a wait). 24 bytes: there are two for every kept pair.
#[derive(Debug, Clone, Copy)]
struct Role {
    index: u64,
    other_index: u64,
    other_thread: u32,
    source: u8,
}

/// [`Role::source`] of a wait.
const NO_SOURCE: u8 = u8::MAX;

impl Role {
    fn wait(at: EventRef, from: EventRef) -> Role {
        Role {
            index: at.index,
            other_index: from.index,
            other_thread: from.thread,
            source: NO_SOURCE,
        }
    }

    fn source(at: EventRef, kind: DependencyKind) -> Role {
        Role {
            index: at.index,
            other_index: 0,
            other_thread: 0,
            source: kind as u8,
        }
    }
}

impl SyncPlan {
    /// Places the points of `pairs` for `threads` threads.
    pub fn place(pairs: &[DependencyPair], threads: u32) -> SyncPlan {
        let highest = pairs.iter().map(|p| p.from.thread.max(p.to.thread) + 1);
        let threads = highest.max().unwrap_or(0).max(threads) as usize;
        // Each thread's roles, made to measure: with millions of pairs, a
        // doubling vector would hold up to twice what they need.
        let mut counts = vec![0usize; threads];
        for p in pairs {
            counts[p.to.thread as usize] += 1;
            counts[p.from.thread as usize] += 1;
        }
        let mut roles: Vec<Vec<Role>> = counts.into_iter().map(Vec::with_capacity).collect();
        for p in pairs {
            roles[p.to.thread as usize].push(Role::wait(p.to, p.from));
            roles[p.from.thread as usize].push(Role::source(p.from, p.kind));
        }
        let threads = (0..)
            .zip(&mut roles)
            .map(|(thread, roles)| ThreadPlan::place(thread, roles))
            .collect();
        SyncPlan { threads }
    }

    /// Takes the kind, address and site of `e` if it is a sync point. Events
    /// of one thread must come in program order; threads may interleave.
    #[inline]
    pub fn fill(&mut self, e: &RecordedEvent) -> Result<()> {
        match self.threads.get_mut(e.thread as usize) {
            Some(t) => t.fill(e),
            None => Ok(()),
        }
    }

    /// The threads' plans, by thread id.
    pub fn threads(&self) -> &[ThreadPlan] {
        &self.threads
    }

    /// The threads' plans, to fill in one by one ([`SyncPlan::from_threads`]
    /// puts them back).
    pub fn into_threads(self) -> Vec<ThreadPlan> {
        self.threads
    }

    pub fn from_threads(threads: Vec<ThreadPlan>) -> SyncPlan {
        debug_assert!(threads.iter().zip(0..).all(|(t, i)| t.thread == i));
        SyncPlan { threads }
    }

    /// The replay logs, once every point has its event.
    pub fn into_thread_logs(self, analysis: &Analysis) -> Result<Vec<ThreadLog>> {
        let threads = analysis.threads.len().max(self.threads.len());
        let granule = u32::try_from(analysis.options.granule).unwrap_or(u32::MAX);
        let mut logs = Vec::with_capacity(threads);
        let mut plans = self.threads.into_iter();
        for t in 0..threads {
            let summary = analysis
                .threads
                .get(t)
                .copied()
                .unwrap_or(ThreadSummary::default());
            let mut sync_points = Vec::new();
            if let Some(plan) = plans.next() {
                for (n, p) in plan.points.iter().enumerate() {
                    let Some(&(kind, addr, site)) = plan.events.get(n) else {
                        return Err(SplitError::ThreadLogChanged {
                            thread: t as u32,
                            index: p.index,
                        });
                    };
                    sync_points.push(SyncPoint {
                        index: p.index,
                        kind,
                        addr,
                        site,
                        waits: plan.waits_of(p).to_vec(),
                        notify: p.notify,
                    });
                }
            }
            logs.push(ThreadLog {
                thread: t as u32,
                threads: threads as u32,
                granule,
                accesses: summary.accesses,
                access_hash: summary.access_hash,
                sync_points,
            });
        }
        Ok(logs)
    }
}

/// Sync-point statistics of `plan` into `analysis.stats` (filling the
/// points in changes none of them).
pub fn count_planned_points(analysis: &mut Analysis, plan: &SyncPlan) {
    let stats = &mut analysis.stats;
    stats.sync_points_per_thread.clear();
    stats.waits = 0;
    stats.signals = 0;
    stats.broadcasts = 0;
    for thread in &plan.threads {
        stats
            .sync_points_per_thread
            .push(thread.points.len() as u64);
        for p in &thread.points {
            stats.waits += p.wait_count() as u64;
            match p.notify {
                Notify::None => {}
                Notify::Signal => stats.signals += 1,
                Notify::Broadcast => stats.broadcasts += 1,
            }
        }
    }
    let points: u64 = stats.sync_points_per_thread.iter().sum();
    let per_event = |n: u64| {
        if stats.entries == 0 {
            0.0
        } else {
            n as f64 / stats.entries as f64
        }
    };
    stats.sync_points_per_event = per_event(points);
    stats.waits_per_event = per_event(stats.waits);
}

/// The replay logs of an analysis whose events are all in memory (tests,
/// benchmarks): one more pass over `events` fills the points in.
pub fn thread_logs_from_events<'a>(
    analysis: &mut Analysis,
    events: impl IntoIterator<Item = &'a RecordedEvent>,
) -> Result<Vec<ThreadLog>> {
    let mut plan = SyncPlan::place(&analysis.pairs, analysis.threads.len() as u32);
    for e in events {
        plan.fill(e)?;
    }
    count_planned_points(analysis, &plan);
    plan.into_thread_logs(analysis)
}
