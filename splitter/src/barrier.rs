//! The model of a barrier the splitter analyses.
//!
//! The recorded kinds make an arrival a read-modify-write and a departure a
//! read of the barrier's address (SPEC section 1). Read literally, that
//! costs replay twice at every step of a barrier-per-step program:
//! - the arrivals form a chain in their recorded order, and at replay a
//!   thread that finished its step early waits for the thread before it in
//!   that order to arrive, which then has to wake it: a chain of wake-ups
//!   where the real barrier has one;
//! - a departure is logged when the departing thread runs again, which may
//!   be long after the release: a descheduled thread logs it after the
//!   others have worked through their next step and arrived again, and the
//!   literal read of those arrivals held it at the barrier for that whole
//!   step at replay.
//!
//! The model here. Arrivals and departures on one address split the log
//! into *rounds*. A round opens with the first arrival after the previous
//! round's release and is released at the first departure, in the log, by
//! a thread whose pending arrival (its last arrival on the address not yet
//! followed by its departure) is in that round. The pair finder sees an
//! arrival as a read (arrivals of a round need no order among themselves)
//! and the releasing departure as a write (it follows every arrival of the
//! round: a WAR pair from each, and the next round's arrivals follow it).
//! Every later departure of the round is *late*: it gets the pairs the
//! release got, as if it were at the release point, and the pair finder
//! does not see it, so it neither reads the writes between the release and
//! itself nor joins what later writes wait for. A departure of a thread
//! with no pending arrival on the address is an ordinary read.
//!
//! Only barriers at real addresses (pthread barriers, which replay
//! emulates) follow the model. OpenMP's (pseudo-addresses) are read
//! literally: replay runs the real barrier there, so sequential replay's
//! total order must keep every departure after every arrival of the real
//! round, which the literal chain does and the model's rounds need not
//! (the barriers of several teams share one pseudo-address, and their
//! rounds mix in the log).
//!
//! Why it is sound: every arrival of a real round precedes the round's first
//! departure in the log (the last arrival is logged before the real barrier
//! lets anyone go), so the release follows them; every pair's source
//! precedes its target in the log, so the pairs agree with the recorded
//! order (no cycle, no deadlock); an arrival or departure changes nothing
//! replay reads (a pthread barrier's departure returns its recorded result,
//! OpenMP's real barrier runs by itself), so no order among them matters
//! but that of a round's departures after its arrivals; and the data the
//! threads share around the barrier is ordered by its own pairs, which the
//! reduction drops only where kept pairs imply them. A barrier whose count
//! is below its users (rounds mixing in the log) gets earlier release
//! points, never a pair against the recorded order.
//!
//! Memory: per barrier address, the threads with a pending arrival and the
//! pairs of the last [`RELEASES_KEPT`] releases; a departure of an older
//! round is an ordinary read (its literal pairs: conservative).

use std::collections::{HashMap, VecDeque};

use rr_lite_trace::{Access, EventKind, pseudo};

use crate::pairs::{DependencyKind, EventRef};

/// Released rounds whose pairs are kept per barrier.
pub const RELEASES_KEPT: usize = 16;

/// The pairs a release got: (source, kind), within one thread too.
pub type ReleasePairs = Vec<(EventRef, DependencyKind)>;

/// How the analysis treats a barrier event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BarrierAccess {
    /// The pair finder sees it as this access.
    Finder(Access),
    /// A release: the pair finder sees it as a write, and the pairs it
    /// finds go to [`BarrierRounds::released`].
    Releases,
    /// A late departure: the pairs of its round's release, and nothing
    /// from the finder.
    Late(ReleasePairs),
}

/// The rounds of every barrier address seen so far.
#[derive(Debug, Default)]
pub struct BarrierRounds {
    barriers: HashMap<u64, Rounds>,
}

#[derive(Debug, Default)]
struct Rounds {
    /// The round arrivals join now.
    open: u64,
    /// Thread -> the round of its pending arrival.
    pending: HashMap<u32, u64>,
    /// (round, the pairs of its release), oldest first.
    released: VecDeque<(u64, ReleasePairs)>,
}

impl BarrierRounds {
    /// Whether [`BarrierRounds::access`] has anything to do with an event
    /// of `kind` on `addr`: a pthread barrier's arrival or departure.
    #[inline]
    pub fn concerns(kind: EventKind, addr: u64) -> bool {
        matches!(kind, EventKind::BarrierArrive | EventKind::BarrierDepart) && addr < pseudo::BASE
    }

    /// Before the pair finder would see barrier event `kind` of `thread` on
    /// `addr` (one granule): how to treat it.
    pub fn access(&mut self, kind: EventKind, addr: u64, thread: u32) -> BarrierAccess {
        let rounds = self.barriers.entry(addr).or_default();
        if kind == EventKind::BarrierArrive {
            rounds.pending.insert(thread, rounds.open);
            return BarrierAccess::Finder(Access::Read);
        }
        let Some(round) = rounds.pending.remove(&thread) else {
            return BarrierAccess::Finder(kind.access());
        };
        if round == rounds.open {
            rounds.open += 1;
            return BarrierAccess::Releases;
        }
        match rounds.released.iter().find(|r| r.0 == round) {
            Some((_, pairs)) => BarrierAccess::Late(pairs.clone()),
            None => BarrierAccess::Finder(kind.access()),
        }
    }

    /// Calls `f` with the sources of every release kept (a late
    /// departure's pairs start from them).
    pub(crate) fn for_each_event(&self, f: &mut impl FnMut(EventRef)) {
        let rounds = self.barriers.values();
        let released = rounds.flat_map(|r| r.released.iter().flat_map(|(_, pairs)| pairs));
        released.for_each(|&(from, _)| f(from));
    }

    /// After the finder saw the departure that released the last round
    /// opened on `addr`: the pairs it found.
    pub fn released(&mut self, addr: u64, pairs: ReleasePairs) {
        let rounds = self.barriers.entry(addr).or_default();
        rounds.released.push_back((rounds.open - 1, pairs));
        if rounds.released.len() > RELEASES_KEPT {
            rounds.released.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventKind::{BarrierArrive as Arrive, BarrierDepart as Depart};

    fn at(thread: u32, index: u64) -> EventRef {
        EventRef { thread, index }
    }

    /// One event on the barrier; a release gets `pairs` as its finder's.
    fn feed(
        rounds: &mut BarrierRounds,
        kind: EventKind,
        thread: u32,
        pairs: &[EventRef],
    ) -> BarrierAccess {
        let access = rounds.access(kind, 0x1000, thread);
        if access == BarrierAccess::Releases {
            let pairs = pairs.iter().map(|&p| (p, DependencyKind::War)).collect();
            rounds.released(0x1000, pairs);
        }
        access
    }

    #[test]
    fn a_late_departure_gets_the_pairs_of_its_rounds_release() {
        let mut rounds = BarrierRounds::default();
        let read = BarrierAccess::Finder(Access::Read);
        let release = BarrierAccess::Releases;
        // Round 0: threads 1 and 2 arrive, 2 (the last) departs first.
        assert_eq!(feed(&mut rounds, Arrive, 1, &[]), read);
        assert_eq!(feed(&mut rounds, Arrive, 2, &[]), read);
        assert_eq!(feed(&mut rounds, Depart, 2, &[at(1, 0), at(2, 0)]), release);
        // Thread 2 arrives at round 1 before thread 1 logs its departure.
        feed(&mut rounds, Arrive, 2, &[]);
        let late = feed(&mut rounds, Depart, 1, &[]);
        let war = DependencyKind::War;
        assert_eq!(
            late,
            BarrierAccess::Late(vec![(at(1, 0), war), (at(2, 0), war)])
        );
        // Round 1 is released by thread 1's next departure.
        feed(&mut rounds, Arrive, 1, &[]);
        assert_eq!(feed(&mut rounds, Depart, 1, &[at(2, 5)]), release);
        let late = feed(&mut rounds, Depart, 2, &[]);
        assert_eq!(late, BarrierAccess::Late(vec![(at(2, 5), war)]));
    }

    #[test]
    fn a_departure_without_its_own_arrival_is_an_ordinary_read() {
        let mut rounds = BarrierRounds::default();
        feed(&mut rounds, Arrive, 1, &[]);
        assert_eq!(
            feed(&mut rounds, Depart, 3, &[]),
            BarrierAccess::Finder(Access::Read)
        );
    }

    #[test]
    fn openmp_barriers_are_read_literally() {
        assert!(BarrierRounds::concerns(Arrive, 0x1000));
        assert!(BarrierRounds::concerns(Depart, 0x1000));
        assert!(!BarrierRounds::concerns(Arrive, pseudo::OMP_BARRIER));
        assert!(!BarrierRounds::concerns(Depart, pseudo::OMP_JOIN));
        assert!(!BarrierRounds::concerns(EventKind::Write, 0x1000));
    }

    #[test]
    fn only_the_last_rounds_are_kept() {
        let mut rounds = BarrierRounds::default();
        // Thread 9 arrives at round 0 and departs only after many rounds
        // of thread 1: its departure is an ordinary read.
        feed(&mut rounds, Arrive, 9, &[]);
        for step in 0..(RELEASES_KEPT as u64 + 2) {
            feed(&mut rounds, Arrive, 1, &[]);
            feed(&mut rounds, Depart, 1, &[at(1, 2 * step)]);
        }
        assert_eq!(
            feed(&mut rounds, Depart, 9, &[]),
            BarrierAccess::Finder(Access::Read)
        );
    }
}
