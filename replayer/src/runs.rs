//! The sequential baseline's total order: a linearisation of the recorded
//! dependencies that keeps a thread running while its next event is
//! allowed, so the turn changes hands only where a dependency makes it
//! (the Lamport merge of the recording interleaves independent threads at
//! almost every event, which made sequential replay hand the turn over, and
//! often the core, once per event).
//!
//! Input per thread: its sync points (event index and the `(thread, index)`
//! events they wait for) and how many of its events take part. Output per
//! thread: where each of its runs starts and the run's turn (0, 1, 2... over
//! all threads). Greedy: run the current thread up to the first sync point
//! whose waits are not met; then the next thread, round robin, that can
//! move. Every dependency holds in the result (a run never passes an unmet
//! wait), so any recording gives a schedule: the recorded order is one.

use rr_lite_splitter::EventRef;
use rr_lite_trace::plan::PlanPoint;

/// The linearisation's input for one thread: `(index, waits)` of every
/// point that waits, its own waits merged with its nested waits
/// (`rr_lite_splitter::recorded`: `(index of a point, wait)`, by point).
/// The nested waits count for the total order only, not for the plans.
pub(crate) fn schedule_points(
    points: &[PlanPoint],
    nested: &[(u64, EventRef)],
) -> Vec<(u64, Vec<(u32, u64)>)> {
    let mut nested = nested.iter().peekable();
    let mut out = Vec::new();
    for p in points {
        let mut waits = p.waits.clone();
        while let Some(&(at, w)) = nested.next_if(|n| n.0 <= p.index) {
            debug_assert_eq!(at, p.index, "a nested wait at no point");
            add_wait(&mut waits, (w.thread, w.index));
        }
        if !waits.is_empty() {
            out.push((p.index, waits));
        }
    }
    out
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

/// One thread's part of the input.
#[derive(Debug, Clone, Default)]
pub struct ThreadSchedule {
    /// Events that take turns (the thread's events, less a last process
    /// exit or fatal signal, which waits for every other thread instead).
    pub events: u64,
    /// Sync points sorted by index: `(index, waits)`.
    pub points: Vec<(u64, Vec<(u32, u64)>)>,
}

/// A thread whose waits can never be met: the input is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub thread: u32,
    pub index: u64,
}

struct Progress<'a> {
    input: &'a [ThreadSchedule],
    /// Events of each thread done so far.
    done: Vec<u64>,
    /// Each thread's next sync point.
    next: Vec<usize>,
}

impl Progress<'_> {
    fn finished(&self, t: usize) -> bool {
        self.done[t] >= self.input[t].events
    }

    /// Thread `t` can do its next event.
    fn can_move(&self, t: usize) -> bool {
        if self.finished(t) {
            return false;
        }
        match self.input[t].points.get(self.next[t]) {
            Some((index, waits)) if *index == self.done[t] => waits
                .iter()
                .all(|&(u, j)| self.done.get(u as usize).is_some_and(|&d| d > j)),
            _ => true,
        }
    }

    /// Runs thread `t` as far as its waits allow.
    fn run(&mut self, t: usize) {
        while self.can_move(t) {
            let points = &self.input[t].points;
            if points
                .get(self.next[t])
                .is_some_and(|(index, _)| *index == self.done[t])
            {
                self.next[t] += 1;
                self.done[t] += 1;
            }
            let until = points
                .get(self.next[t])
                .map_or(self.input[t].events, |(index, _)| *index);
            self.done[t] = self.done[t].max(until.min(self.input[t].events));
        }
    }
}

/// The runs of each thread: `(first event index, turn)`, in order.
pub fn linearise(input: &[ThreadSchedule]) -> Result<Vec<Vec<(u64, u64)>>, Stuck> {
    let threads = input.len();
    let mut p = Progress {
        input,
        done: vec![0; threads],
        next: vec![0; threads],
    };
    let mut runs = vec![Vec::new(); threads];
    let mut turn = 0u64;
    let mut current = 0usize;
    while (0..threads).any(|t| !p.finished(t)) {
        let Some(t) = (0..threads)
            .map(|k| (current + k) % threads)
            .find(|&t| p.can_move(t))
        else {
            let t = (0..threads).find(|&t| !p.finished(t)).unwrap_or(0);
            return Err(Stuck {
                thread: t as u32,
                index: p.done[t],
            });
        };
        runs[t].push((p.done[t], turn));
        turn += 1;
        p.run(t);
        current = (t + 1) % threads;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(events: u64, points: &[(u64, &[(u32, u64)])]) -> ThreadSchedule {
        ThreadSchedule {
            events,
            points: points.iter().map(|(i, w)| (*i, w.to_vec())).collect(),
        }
    }

    #[test]
    fn independent_threads_run_whole() {
        let runs = linearise(&[thread(100, &[]), thread(50, &[])]).unwrap();
        assert_eq!(runs, vec![vec![(0, 0)], vec![(0, 1)]]);
    }

    #[test]
    fn a_wait_splits_a_run_and_is_met() {
        // Thread 1's event 0 needs thread 0's event 9; thread 0's event 20
        // needs thread 1's event 4.
        let input = [
            thread(30, &[(20, &[(1, 4)])]),
            thread(10, &[(0, &[(0, 9)])]),
        ];
        let runs = linearise(&input).unwrap();
        assert_eq!(runs[0], vec![(0, 0), (20, 2)]);
        assert_eq!(runs[1], vec![(0, 1)]);
    }

    #[test]
    fn unmeetable_waits_are_reported() {
        let input = [thread(5, &[(0, &[(1, 0)])]), thread(5, &[(0, &[(0, 0)])])];
        assert_eq!(
            linearise(&input),
            Err(Stuck {
                thread: 0,
                index: 0
            })
        );
    }

    #[test]
    fn every_wait_holds_in_the_result() {
        // A chain of ping-pong dependencies over three threads.
        let input = [
            thread(40, &[(10, &[(1, 9)]), (30, &[(2, 19)])]),
            thread(20, &[(0, &[(0, 4)]), (15, &[(2, 4)])]),
            thread(25, &[(0, &[(0, 9)])]),
        ];
        let runs = linearise(&input).unwrap();
        // Replaying runs in turn order: each run's first event's waits are
        // done by the runs with earlier turns.
        let mut order: Vec<(u64, usize, u64)> = runs
            .iter()
            .enumerate()
            .flat_map(|(t, r)| r.iter().map(move |&(i, turn)| (turn, t, i)))
            .collect();
        order.sort();
        assert_eq!(order.first().map(|o| o.1), Some(0));
        assert_eq!(order.len() as u64, order.last().unwrap().0 + 1);
    }
}
