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

/// A sync point placed: its waits and notification, and once filled in,
/// its event's kind, address and site.
#[derive(Debug, Clone)]
pub struct PlannedPoint {
    pub index: u64,
    /// Sorted, no duplicates.
    pub waits: Vec<EventRef>,
    pub notify: Notify,
    event: Option<(EventKind, u64, u64)>,
}

/// Sync points placed, waiting for their events' kind, address and site.
#[derive(Debug, Clone)]
pub struct SyncPlan {
    threads: Vec<ThreadPlan>,
}

/// One thread's points of a [`SyncPlan`], filled in from its log alone
/// (threads can be filled in side by side).
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    thread: u32,
    points: Vec<PlannedPoint>,
    /// The first point whose event has not been filled in.
    cursor: usize,
}

impl ThreadPlan {
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// The points, by index.
    pub fn points(&self) -> &[PlannedPoint] {
        &self.points
    }

    /// The points, by index, taken.
    pub fn into_points(self) -> Vec<PlannedPoint> {
        self.points
    }

    /// True while some point still lacks its event.
    pub fn needs_events(&self) -> bool {
        self.cursor < self.points.len()
    }

    /// Takes the kind, address and site of `e`, the thread's next event in
    /// program order, if it is a sync point.
    #[inline]
    pub fn fill(&mut self, e: &RecordedEvent) -> Result<()> {
        let Some(p) = self.points.get_mut(self.cursor) else {
            return Ok(());
        };
        if p.index == e.index {
            p.event = Some((e.kind, e.addr, e.site));
            self.cursor += 1;
        } else if p.index < e.index {
            return Err(SplitError::ThreadLogChanged {
                thread: e.thread,
                index: p.index,
            });
        }
        Ok(())
    }
}

impl SyncPlan {
    /// Places the points of `pairs` for `threads` threads.
    pub fn place(pairs: &[DependencyPair], threads: u32) -> SyncPlan {
        enum Role {
            Wait(EventRef),
            Source(DependencyKind),
        }
        let mut roles: Vec<Vec<(u64, Role)>> = (0..threads).map(|_| Vec::new()).collect();
        let mut role_of = |e: EventRef, role: Role| {
            let t = e.thread as usize;
            if roles.len() <= t {
                roles.resize_with(t + 1, Vec::new);
            }
            roles[t].push((e.index, role));
        };
        for p in pairs {
            role_of(p.to, Role::Wait(p.from));
            role_of(p.from, Role::Source(p.kind));
        }
        let mut points = Vec::with_capacity(roles.len());
        for mut thread_roles in roles {
            thread_roles.sort_by_key(|(index, _)| *index);
            let mut thread_points: Vec<PlannedPoint> = Vec::new();
            let mut sources = 0u32;
            let mut raw = false;
            let finish = |p: &mut PlannedPoint, sources: u32, raw: bool| {
                p.waits.sort_unstable();
                p.waits.dedup();
                p.notify = match (sources, raw) {
                    (0, _) => Notify::None,
                    (1, false) => Notify::Signal,
                    _ => Notify::Broadcast,
                };
            };
            for (index, role) in thread_roles {
                if thread_points.last().is_none_or(|p| p.index != index) {
                    if let Some(p) = thread_points.last_mut() {
                        finish(p, sources, raw);
                    }
                    sources = 0;
                    raw = false;
                    thread_points.push(PlannedPoint {
                        index,
                        waits: Vec::new(),
                        notify: Notify::None,
                        event: None,
                    });
                }
                let Some(p) = thread_points.last_mut() else {
                    continue;
                };
                match role {
                    Role::Wait(from) => p.waits.push(from),
                    Role::Source(kind) => {
                        sources += 1;
                        raw |= kind == DependencyKind::Raw;
                    }
                }
            }
            if let Some(p) = thread_points.last_mut() {
                finish(p, sources, raw);
            }
            points.push(thread_points);
        }
        let threads = (0..)
            .zip(points)
            .map(|(thread, points)| ThreadPlan {
                thread,
                points,
                cursor: 0,
            })
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
        let mut points = self.threads.into_iter().map(|t| t.points);
        for t in 0..threads {
            let summary = analysis
                .threads
                .get(t)
                .copied()
                .unwrap_or(ThreadSummary::default());
            let mut sync_points = Vec::new();
            for p in points.next().unwrap_or_default() {
                let Some((kind, addr, site)) = p.event else {
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
                    waits: p.waits,
                    notify: p.notify,
                });
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
            stats.waits += p.waits.len() as u64;
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
