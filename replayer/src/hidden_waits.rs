//! The sequential total order: the waits of a blocking call's event, moved
//! forward to the events nested in the call that the recording had after
//! the release (for the linearisation only: the plans' waits stay the
//! splitter's).
//!
//! A call that blocks and is logged after it returns (a lock, an OpenMP
//! `ordered` region, a barrier departure) may log events of its own while
//! inside (libomp allocates before and after its wait). The splitter puts
//! the dependency on the release (the unlock, the end of the previous
//! region) at the call's event only, so the sequential total order
//! (`crate::runs`), which runs a thread as far as its waits allow, could
//! give a nested event that the recording had *after* the release a turn
//! *before* it. Replay then deadlocks: the thread cannot reach that event
//! until the release, which waits for a later turn.
//!
//! So each point `P` of thread `t` nested before such an event `L` (back to
//! `t`'s previous blocking event, at most [`MAX_NESTED`] points) also waits,
//! for each wait `(u, j)` of `L`, for the last point of `u` up to `j` that
//! the recording ordered before `P` (Lamport `(clock, thread)`). The release
//! itself is often no point (an unlock nobody waits for directly), but it
//! lies in the run of `u` that this point starts or continues, which the
//! total order then puts before `P`. The added waits only repeat the
//! recorded order, so the total order still exists (the recording is one).
//! They are not waits of the plans: in parallel replay a thread spinning in
//! the library for this one could never reach the waited event.

use rr_lite_trace::EventKind;
use rr_lite_trace::plan::PlanPoint;

/// Most points before a blocking event that take its waits: a call nests a
/// few events (libomp: two formatted-message buffers), not thousands.
pub(crate) const MAX_NESTED: usize = 64;

/// Events logged after a real call that may block until another thread's
/// release.
fn after_blocking_call(kind: u8) -> bool {
    [
        EventKind::MutexLock,
        EventKind::MutexTryLock,
        EventKind::RwReadLock,
        EventKind::RwWriteLock,
        EventKind::CondWake,
        EventKind::BarrierDepart,
        EventKind::SemWait,
        EventKind::SpinLock,
        EventKind::ThreadJoin,
    ]
    .iter()
    .any(|&k| k as u8 == kind)
}

/// One thread's points with the Lamport clock of each point's event.
pub(crate) struct ClockedPoints<'a> {
    pub points: &'a [PlanPoint],
    pub clocks: &'a [u64],
}

/// A wait to add to one of a thread's points: `(point position, wait)`.
pub(crate) type NestedWait = (usize, (u32, u64));

/// The waits described in the module doc, per thread, sorted by point.
pub(crate) fn nested_waits(threads: &[ClockedPoints<'_>]) -> Vec<Vec<NestedWait>> {
    (0u32..)
        .zip(threads)
        .map(|(t, th)| {
            let mut added = nested_waits_of(t, th, threads);
            added.sort_unstable();
            added
        })
        .collect()
}

/// The linearisation's input for one thread: `(index, waits)` of every
/// point that waits, its own waits merged with `added` (sorted by point).
pub(crate) fn schedule_points(
    points: &[PlanPoint],
    added: &[NestedWait],
) -> Vec<(u64, Vec<(u32, u64)>)> {
    let mut added = added.iter().peekable();
    let mut out = Vec::new();
    for (n, p) in points.iter().enumerate() {
        let mut waits = p.waits.clone();
        while let Some(&(_, w)) = added.next_if(|a| a.0 == n) {
            add_wait(&mut waits, w);
        }
        if !waits.is_empty() {
            out.push((p.index, waits));
        }
    }
    out
}

/// The waits to add to thread `t`'s points.
fn nested_waits_of(t: u32, th: &ClockedPoints<'_>, all: &[ClockedPoints<'_>]) -> Vec<NestedWait> {
    debug_assert_eq!(th.points.len(), th.clocks.len());
    let mut added = Vec::new();
    let mut previous_blocking = None;
    for l in 0..th.points.len() {
        if !after_blocking_call(th.points[l].kind) {
            continue;
        }
        let floor = previous_blocking.map_or(0, |b| b + 1);
        previous_blocking = Some(l);
        let first = floor.max(l.saturating_sub(MAX_NESTED));
        for &(u, j) in &th.points[l].waits {
            let Some(other) = all.get(u as usize).filter(|_| u != t) else {
                continue;
            };
            for n in first..l {
                if let Some(w) = last_point_before(other, u, (th.clocks[n], t), j) {
                    added.push((n, (u, w)));
                }
            }
        }
    }
    added
}

/// The index of the last point of thread `u` (`th`), at most `upto`, that
/// the recorded order has before `key`.
fn last_point_before(th: &ClockedPoints<'_>, u: u32, key: (u64, u32), upto: u64) -> Option<u64> {
    let before = th.clocks.partition_point(|&c| (c, u) < key);
    let last = th.points[..before].partition_point(|p| p.index <= upto);
    last.checked_sub(1).map(|k| th.points[k].index)
}

/// Adds wait `w` to `waits` unless they wait for that event or a later one
/// of the same thread.
fn add_wait(waits: &mut Vec<(u32, u64)>, w: (u32, u64)) {
    match waits.iter_mut().find(|x| x.0 == w.0) {
        Some(x) => x.1 = x.1.max(w.1),
        None => {
            waits.push(w);
            waits.sort_unstable();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(index: u64, kind: EventKind, waits: &[(u32, u64)]) -> PlanPoint {
        PlanPoint {
            index,
            seq: u64::MAX,
            kind: kind as u8,
            waits: waits.to_vec(),
            ..PlanPoint::default()
        }
    }

    /// Adds the nested waits of two threads' points (each with its points'
    /// clocks) to those points.
    fn hoist_two(t0: &mut [PlanPoint], c0: &[u64], t1: &mut [PlanPoint], c1: &[u64]) {
        let added = nested_waits(&[
            ClockedPoints {
                points: t0,
                clocks: c0,
            },
            ClockedPoints {
                points: t1,
                clocks: c1,
            },
        ]);
        for (points, added) in [t0, t1].into_iter().zip(added) {
            for (n, w) in added {
                add_wait(&mut points[n].waits, w);
            }
        }
    }

    #[test]
    fn nested_events_after_the_release_take_its_wait() {
        // Thread 0 releases at event 5 (clock 50). Thread 1 allocates inside
        // its lock call before (clock 40) and after (clock 60) the release,
        // then logs the lock (clock 70), which waits for the release.
        let mut t0 = vec![point(5, EventKind::MutexUnlock, &[])];
        let mut t1 = vec![
            point(1, EventKind::Alloc, &[]),
            point(2, EventKind::Alloc, &[(0, 1)]),
            point(3, EventKind::MutexLock, &[(0, 5)]),
        ];
        hoist_two(&mut t0, &[50], &mut t1, &[40, 60, 70]);
        assert!(t1[0].waits.is_empty(), "before the release: unchanged");
        assert_eq!(t1[1].waits, vec![(0, 5)], "the later wait on thread 0 kept");
        assert_eq!(t1[2].waits, vec![(0, 5)]);
    }

    #[test]
    fn hoisting_stops_at_the_previous_blocking_event() {
        let mut t0 = vec![point(9, EventKind::MutexUnlock, &[])];
        let mut t1 = vec![
            point(0, EventKind::Alloc, &[]),
            point(1, EventKind::MutexLock, &[]),
            point(2, EventKind::Free, &[]),
            point(3, EventKind::MutexLock, &[(0, 9)]),
        ];
        hoist_two(&mut t0, &[10], &mut t1, &[20, 21, 22, 23]);
        assert!(t1[0].waits.is_empty());
        assert!(t1[1].waits.is_empty());
        assert_eq!(t1[2].waits, vec![(0, 9)]);
    }

    #[test]
    fn a_wait_on_an_event_that_is_no_point_is_left_alone() {
        let mut t0: Vec<PlanPoint> = Vec::new();
        let mut t1 = vec![
            point(0, EventKind::Alloc, &[]),
            point(1, EventKind::MutexLock, &[(0, 3)]),
        ];
        hoist_two(&mut t0, &[], &mut t1, &[5, 6]);
        assert!(t1[0].waits.is_empty());
    }
}
