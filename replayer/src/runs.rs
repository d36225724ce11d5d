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

/// One thread's part of the input, borrowed from its plan: no wait is
/// copied (plans of millions of waits are built in memory).
#[derive(Debug, Clone, Default)]
pub struct ThreadSchedule<'a> {
    /// Events that take turns (the thread's events, less a last process
    /// exit or fatal signal, which waits for every other thread instead).
    pub events: u64,
    /// The points that wait, sorted by index: `(index, own waits)`.
    pub points: Vec<(u64, &'a [(u32, u64)])>,
    /// Their nested waits (`rr_lite_splitter::recorded`: `(index of a
    /// point, wait)`, by point, each at one of `points`), which count for
    /// the total order only, not for the plans.
    pub nested: &'a [(u64, EventRef)],
}

/// A thread whose waits can never be met: the input is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub thread: u32,
    pub index: u64,
}

struct Progress<'a> {
    input: &'a [ThreadSchedule<'a>],
    /// Events of each thread done so far.
    done: Vec<u64>,
    /// Each thread's next sync point.
    next: Vec<usize>,
    /// Each thread's first nested wait not passed yet.
    next_nested: Vec<usize>,
}

impl Progress<'_> {
    fn finished(&self, t: usize) -> bool {
        self.done[t] >= self.input[t].events
    }

    /// Whether event `j` of thread `u` is done.
    fn met(&self, (u, j): (u32, u64)) -> bool {
        self.done.get(u as usize).is_some_and(|&d| d > j)
    }

    /// Thread `t` can do its next event: if it is a point, its own waits
    /// and its nested ones are met (one wait per thread, the latest, as
    /// merging them would keep, is met exactly when all are).
    fn can_move(&self, t: usize) -> bool {
        if self.finished(t) {
            return false;
        }
        let input = &self.input[t];
        match input.points.get(self.next[t]) {
            Some(&(index, waits)) if index == self.done[t] => {
                let nested = &input.nested[self.next_nested[t]..];
                let nested = nested.iter().take_while(|n| n.0 == index);
                waits.iter().all(|&w| self.met(w))
                    && nested.map(|n| (n.1.thread, n.1.index)).all(|w| self.met(w))
            }
            _ => true,
        }
    }

    /// Runs thread `t` as far as its waits allow.
    fn run(&mut self, t: usize) {
        while self.can_move(t) {
            let input = &self.input[t];
            if let Some(&(index, _)) = input.points.get(self.next[t])
                && index == self.done[t]
            {
                self.next[t] += 1;
                self.done[t] += 1;
                let nested = &input.nested[self.next_nested[t]..];
                self.next_nested[t] += nested.iter().take_while(|n| n.0 <= index).count();
            }
            let until = input
                .points
                .get(self.next[t])
                .map_or(input.events, |(index, _)| *index);
            self.done[t] = self.done[t].max(until.min(input.events));
        }
    }
}

/// The runs of each thread: `(first event index, turn)`, in order.
pub fn linearise<'a>(input: &'a [ThreadSchedule<'a>]) -> Result<Vec<Vec<(u64, u64)>>, Stuck> {
    let threads = input.len();
    let mut p = Progress {
        input,
        done: vec![0; threads],
        next: vec![0; threads],
        next_nested: vec![0; threads],
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

    fn thread<'a>(events: u64, points: &[(u64, &'a [(u32, u64)])]) -> ThreadSchedule<'a> {
        ThreadSchedule {
            events,
            points: points.to_vec(),
            nested: &[],
        }
    }

    #[test]
    fn a_nested_wait_holds_a_point_as_its_own_would() {
        // Thread 0's event 5 waits for nothing itself, but a call nests it
        // after thread 1's event 7.
        let nested = [(
            5,
            EventRef {
                thread: 1,
                index: 7,
            },
        )];
        let input = [
            ThreadSchedule {
                events: 10,
                points: vec![(5, &[])],
                nested: &nested,
            },
            thread(10, &[]),
        ];
        let runs = linearise(&input).unwrap();
        assert_eq!(runs[0], vec![(0, 0), (5, 2)]);
        assert_eq!(runs[1], vec![(0, 1)]);
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
