//! Property tests of the analysis on random logs: the two algorithms agree,
//! and every reduction keeps every conflict ordered (brute-force oracle).

mod common;

use std::collections::{BTreeSet, VecDeque};

use proptest::prelude::*;
use rr_lite_splitter::{
    Algorithm, Analysis, Analyzer, DependencyPair, EventRef, Reduction, SplitOptions,
    analyze_events, thread_logs_from_events,
};
use rr_lite_trace::{RecordedEvent, pseudo};

fn run(
    events: &[RecordedEvent],
    algorithm: Algorithm,
    reduction: Reduction,
    granule: u64,
) -> Analysis {
    let options = SplitOptions {
        algorithm,
        reduction,
        granule,
        ..SplitOptions::default()
    };
    analyze_events(events, &options).unwrap()
}

fn pair_set(a: &Analysis) -> BTreeSet<DependencyPair> {
    a.pairs.iter().copied().collect()
}

/// Is `b` reachable from `a` through program order and `pairs`? Plain BFS.
fn reachable(events: &[RecordedEvent], pairs: &[DependencyPair], a: EventRef, b: EventRef) -> bool {
    let count = |t: u32| events.iter().filter(|e| e.thread == t).count() as u64;
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([a]);
    while let Some(x) = queue.pop_front() {
        if x == b || (x.thread == b.thread && x.index <= b.index) {
            return true;
        }
        if !seen.insert(x) {
            continue;
        }
        if x.index + 1 < count(x.thread) {
            queue.push_back(EventRef {
                thread: x.thread,
                index: x.index + 1,
            });
        }
        for p in pairs.iter().filter(|p| p.from == x) {
            queue.push_back(p.to);
        }
    }
    false
}

fn granules(e: &RecordedEvent, shift: u32) -> std::ops::RangeInclusive<u64> {
    let (first, last) = e.granules(shift);
    first..=last
}

/// What the analysis makes of an event (splitter/src/barrier.rs).
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// Its kind's access.
    Ordinary,
    /// A barrier arrival: a read.
    Arrival,
    /// A barrier departure that releases its round: a write.
    Release,
    /// A later departure of a released round, at that position: ordered
    /// after what came before the release, and nothing else.
    Late(usize),
}

/// The role of each event, by position. Written out literally: for each
/// departure, the rounds of every barrier event on its address before it.
fn barrier_roles(events: &[RecordedEvent], shift: u32) -> Vec<Role> {
    use rr_lite_trace::EventKind::{BarrierArrive, BarrierDepart};
    // Pthread barriers only: OpenMP's pseudo-addresses are read literally.
    let single = |e: &RecordedEvent| granules(e, shift).count() == 1 && e.addr < pseudo::BASE;
    let mut roles: Vec<Role> = events
        .iter()
        .map(|e| match e.kind {
            BarrierArrive if single(e) => Role::Arrival,
            _ => Role::Ordinary,
        })
        .collect();
    for (d, dep) in events.iter().enumerate() {
        if dep.kind != BarrierDepart || !single(dep) {
            continue;
        }
        // The model on this address up to the departure.
        let mut open = 0u64;
        let mut pending = std::collections::HashMap::new();
        let mut released_at = std::collections::HashMap::new();
        for (i, e) in events[..=d].iter().enumerate() {
            if e.addr != dep.addr || !single(e) {
                continue;
            }
            match e.kind {
                BarrierArrive => {
                    pending.insert(e.thread, open);
                }
                BarrierDepart => {
                    let Some(round) = pending.remove(&e.thread) else {
                        continue;
                    };
                    if round == open {
                        released_at.insert(round, i);
                        open += 1;
                    }
                    if i == d {
                        roles[d] = match released_at[&round] {
                            r if r == d => Role::Release,
                            r => Role::Late(r),
                        };
                    }
                }
                _ => {}
            }
        }
    }
    roles
}

/// Every conflicting pair a-before-b (same granule, different threads, at
/// least one write, barrier events by their role) must have b reachable
/// from a.
fn check_oracle(
    events: &[RecordedEvent],
    analysis: &Analysis,
    granule: u64,
) -> Result<(), TestCaseError> {
    use rr_lite_trace::Access;
    let shift = granule.trailing_zeros();
    let roles = barrier_roles(events, shift);
    let access = |i: usize| match roles[i] {
        Role::Ordinary => events[i].kind.access(),
        Role::Arrival => Access::Read,
        Role::Release | Role::Late(_) => Access::Write,
    };
    // Floating sections leave two sections' lock and unlock unordered on
    // purpose (the mutex stays real at replay); their data stay ordered.
    let floats = analysis.stats.sections_floated > 0;
    let mutex_op = |e: &RecordedEvent| {
        matches!(
            e.kind,
            rr_lite_trace::EventKind::MutexLock | rr_lite_trace::EventKind::MutexUnlock
        )
    };
    for (i, a) in events.iter().enumerate() {
        for (j, b) in events.iter().enumerate().skip(i + 1) {
            if a.thread == b.thread || !access(i).conflicts_with(access(j)) {
                continue;
            }
            if floats && mutex_op(a) && mutex_op(b) && a.addr == b.addr {
                continue;
            }
            let late = |r: Role, other: usize| matches!(r, Role::Late(release) if other >= release);
            if late(roles[i], j) || late(roles[j], i) {
                continue;
            }
            let (ga, gb) = (granules(a, shift), granules(b, shift));
            if ga.end() < gb.start() || gb.end() < ga.start() {
                continue;
            }
            let (ra, rb) = (
                EventRef {
                    thread: a.thread,
                    index: a.index,
                },
                EventRef {
                    thread: b.thread,
                    index: b.index,
                },
            );
            prop_assert!(
                reachable(events, &analysis.pairs, ra, rb),
                "{:?}: conflict {ra} ({:?}) -> {rb} ({:?}) not ordered by kept pairs {:?}",
                analysis.options.reduction,
                a.kind,
                b.kind,
                analysis.pairs
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Both algorithms find exactly the same pairs, at every reduction
    /// level, with the same statistics.
    #[test]
    fn worklist_and_indexed_agree(
        events in common::random_log(8, 300),
        granule in prop_oneof![Just(8u64), Just(4), Just(16)],
    ) {
        for reduction in [Reduction::None, Reduction::Thread, Reduction::Vc] {
            let w = run(&events, Algorithm::Worklist, reduction, granule);
            let i = run(&events, Algorithm::Indexed, reduction, granule);
            prop_assert_eq!(pair_set(&w), pair_set(&i), "{:?}", reduction);
            prop_assert_eq!(&w.pairs, &i.pairs, "{:?}: same pairs, same order", reduction);
            prop_assert_eq!(w.stats.pairs_found, i.stats.pairs_found);
            prop_assert_eq!(w.stats.pairs_cross_thread, i.stats.pairs_cross_thread);
            prop_assert_eq!(w.stats.pairs_kept, i.stats.pairs_kept);
            prop_assert_eq!(w.stats.granules, i.stats.granules);
            prop_assert_eq!(&w.threads, &i.threads);
            // (Pairs on different bytes of a granule: a part of those
            // between threads, counted by the indexed finder only.)
            let between = i.stats.pairs_cross_thread.raw + i.stats.pairs_cross_thread.waw;
            prop_assert!(i.stats.cross_thread_pairs_on_disjoint_bytes <= between);
            prop_assert_eq!(w.stats.cross_thread_pairs_on_disjoint_bytes, 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Threads meeting at a barrier, departures logged late: every conflict
    /// stays ordered, but for the next round's writes to the barrier that a
    /// late departure reads before (barrier.rs); both algorithms agree.
    #[test]
    fn barrier_rounds_keep_every_conflict_ordered(
        threads in 2u32..5,
        choices in proptest::collection::vec((0u32..8, 0u8..8, 0u64..3), 1..160),
    ) {
        let events = common::barrier_log(threads, &choices);
        for reduction in [Reduction::None, Reduction::Thread, Reduction::Vc] {
            let indexed = run(&events, Algorithm::Indexed, reduction, 8);
            check_oracle(&events, &indexed, 8)?;
            let worklist = run(&events, Algorithm::Worklist, reduction, 8);
            prop_assert_eq!(&worklist.pairs, &indexed.pairs);
        }
    }

    /// Every conflict stays ordered at every reduction level, `vc` keeps a
    /// subset of `thread`, which keeps the cross-thread part of `none`.
    #[test]
    fn reductions_keep_every_conflict_ordered(
        events in common::random_log(6, 90),
        granule in prop_oneof![Just(8u64), Just(16)],
    ) {
        let none = run(&events, Algorithm::Indexed, Reduction::None, granule);
        let thread = run(&events, Algorithm::Indexed, Reduction::Thread, granule);
        let vc = run(&events, Algorithm::Indexed, Reduction::Vc, granule);
        let floating = {
            let code = rr_lite_splitter::SectionCode(Box::new(|_, _| true));
            let mut analyzer = Analyzer::new(&vc.options).unwrap().floating_sections(code);
            events.iter().try_for_each(|e| analyzer.push(e)).unwrap();
            analyzer.finish()
        };
        for analysis in [&none, &thread, &vc, &floating] {
            check_oracle(&events, analysis, granule)?;
        }
        let cross: BTreeSet<_> = pair_set(&none).into_iter().filter(|p| !p.is_same_thread()).collect();
        prop_assert_eq!(&pair_set(&thread), &cross);
        prop_assert!(pair_set(&vc).is_subset(&pair_set(&thread)));
        prop_assert!(vc.pairs.len() <= thread.pairs.len());
        prop_assert!(vc.pairs.iter().all(|p| !p.is_same_thread()));
        prop_assert!(floating.pairs.iter().all(|p| !p.is_same_thread()));
    }

    /// Sync points: one wait per kept pair, one notification per source, and
    /// each point carries its event.
    #[test]
    fn sync_points_match_pairs(events in common::random_log(5, 120)) {
        let mut a = run(&events, Algorithm::Indexed, Reduction::Vc, 8);
        let logs = thread_logs_from_events(&mut a, &events).unwrap();
        let waits: usize = logs.iter().flat_map(|l| &l.sync_points).map(|p| p.waits.len()).sum();
        prop_assert_eq!(waits, a.pairs.len());
        for log in &logs {
            prop_assert!(log.sync_points.windows(2).all(|w| w[0].index < w[1].index));
            for p in &log.sync_points {
                let e = events.iter().find(|e| e.thread == log.thread && e.index == p.index).unwrap();
                prop_assert_eq!((p.kind, p.addr, p.site), (e.kind, e.addr, e.site));
                let is_source = a.pairs.iter().any(|q| q.from == EventRef { thread: log.thread, index: p.index });
                prop_assert_eq!(is_source, p.notify != rr_lite_splitter::Notify::None);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// What the pass gathers for the plans: a recorded point for every
    /// event replay needs the result of and every event a kept pair ends
    /// at, and nothing else; nested waits only at those points, each on an
    /// event of another thread that the recorded order has before the point.
    #[test]
    fn gathered_plan_points_follow_the_recorded_order(events in common::random_log(5, 150)) {
        let mut analyzer = Analyzer::gathering_plan_points(&SplitOptions::default()).unwrap();
        for e in &events {
            analyzer.push(e).unwrap();
        }
        let analysis = analyzer.finish();
        let recorded = analysis.recorded.clone().unwrap();
        let position = |r: EventRef| {
            events.iter().position(|e| e.thread == r.thread && e.index == r.index).unwrap()
        };
        for (t, record) in (0u32..).zip(&recorded.threads) {
            let expected: Vec<u64> = events
                .iter()
                .filter(|e| e.thread == t)
                .filter(|e| {
                    rr_lite_trace::plan::always_a_point(e.kind)
                        || analysis.pairs.iter().any(|p| p.to == EventRef { thread: t, index: e.index })
                })
                .map(|e| e.index)
                .collect();
            let got: Vec<u64> = record.points.iter().map(|p| p.index).collect();
            prop_assert_eq!(got, expected);
            for &(at, wait) in &record.nested_waits {
                prop_assert!(record.points.iter().any(|p| p.index == at));
                prop_assert!(wait.thread != t);
                prop_assert!(position(wait) < position(EventRef { thread: t, index: at }),
                    "{wait} is not before {t}:{at}");
            }
        }
    }
}

/// The analysis of `events` fed one event at a time, or in runs of one
/// thread's consecutive events cut at `cuts` (indices into `events`) and
/// at every change of thread, gathering plan points.
fn analysed(events: &[RecordedEvent], runs_cut_at: Option<&[usize]>) -> Analysis {
    let mut analyzer = Analyzer::gathering_plan_points(&SplitOptions::default()).unwrap();
    let Some(cuts) = runs_cut_at else {
        events.iter().for_each(|e| analyzer.push(e).unwrap());
        return analyzer.finish();
    };
    let mut start = 0;
    for end in 1..=events.len() {
        let cut = end == events.len()
            || events[end].thread != events[start].thread
            || cuts.contains(&end);
        if cut {
            analyzer.push_run(&events[start..end]).unwrap();
            start = end;
        }
    }
    analyzer.finish()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `Analyzer::push_run` (the split's loop) is `Analyzer::push` of each
    /// event of the run: the same pairs, statistics, per-thread summaries
    /// and plan points, whatever the runs' lengths; thread exits included.
    #[test]
    fn runs_are_analysed_as_their_events(
        events in common::random_log(5, 150),
        cuts in proptest::collection::vec(0usize..150, 0..20),
    ) {
        let mut raw: Vec<_> = events.iter().map(|e| (e.thread, e.kind, e.addr, e.size)).collect();
        for t in 0..common::thread_count(&events) {
            raw.push((t, rr_lite_trace::EventKind::ThreadExit, 0, 0));
        }
        let events = common::events(&raw);
        let one_by_one = analysed(&events, None);
        let in_runs = analysed(&events, Some(&cuts));
        prop_assert_eq!(format!("{one_by_one:?}"), format!("{in_runs:?}"));
    }
}
