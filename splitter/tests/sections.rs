//! Floating critical sections (`splitter/src/sections.rs`) replayed: random
//! legal runs of threads that lock mutexes (nested, tried) around reads and
//! writes of shared slots, analysed, then replayed many times by a model of
//! parallel replay in which each event waits for its kept pairs and the
//! mutexes are real (a lock blocks while another thread holds it). Every
//! model replay must finish (no deadlock) with every read seeing the write
//! it saw when recorded, every try taking the mutex as recorded and every
//! slot's last write the recorded one.

use std::collections::HashMap;

use proptest::prelude::*;
use rr_lite_splitter::{Analysis, Analyzer, EventRef, SectionCode, SplitOptions};
use rr_lite_trace::{EventKind, RecordedEvent};

const SLOTS: u64 = 5;
const MUTEXES: u64 = 3;
const EBUSY: u64 = 16;

fn slot_addr(n: u64) -> u64 {
    0x1000 + 8 * (n % SLOTS)
}

fn mutex_addr(n: u64) -> u64 {
    0x8000 + 64 * (n % MUTEXES)
}

/// A recorded run and what each of its reads saw.
struct Run {
    events: Vec<RecordedEvent>,
    /// By position in `events`: the write a read saw (None: the initial value).
    saw: HashMap<usize, Option<EventRef>>,
    last_write: HashMap<u64, EventRef>,
}

struct Recorder {
    events: Vec<RecordedEvent>,
    next_index: Vec<u64>,
    held: Vec<Vec<u64>>,
    owner: HashMap<u64, u32>,
    last_write: HashMap<u64, EventRef>,
    saw: HashMap<usize, Option<EventRef>>,
}

impl Recorder {
    fn log(&mut self, thread: u32, kind: EventKind, addr: u64, payload: u64) -> EventRef {
        let index = self.next_index[thread as usize];
        self.next_index[thread as usize] += 1;
        self.events.push(RecordedEvent {
            thread,
            index,
            clock: self.events.len() as u64 + 1,
            kind,
            addr,
            size: 8,
            site: 0x4000 + self.events.len() as u64,
            payload,
        });
        EventRef { thread, index }
    }

    /// One step of thread `t`: `action` on `arg`, if the thread can take it.
    fn step(&mut self, t: u32, action: u8, arg: u64) {
        let held = self.held[t as usize].clone();
        match action % 8 {
            0 | 1 => {
                let addr = slot_addr(arg);
                let seen = self.last_write.get(&addr).copied();
                self.saw.insert(self.events.len(), seen);
                self.log(t, EventKind::Read, addr, 0);
            }
            2 | 3 => {
                let addr = slot_addr(arg);
                let e = self.log(t, EventKind::Write, addr, 0);
                self.last_write.insert(addr, e);
            }
            4 => {
                let m = mutex_addr(arg);
                if held.len() < 2 && !self.owner.contains_key(&m) {
                    self.log(t, EventKind::MutexLock, m, 0);
                    self.owner.insert(m, t);
                    self.held[t as usize].push(m);
                }
            }
            5 => {
                if let Some(&m) = held.get(arg as usize % held.len().max(1)) {
                    self.log(t, EventKind::MutexUnlock, m, 0);
                    self.owner.remove(&m);
                    self.held[t as usize].retain(|&h| h != m);
                }
            }
            6 if arg.is_multiple_of(4) => {
                let m = mutex_addr(arg / 4);
                if held.len() < 2 && !held.contains(&m) {
                    let free = !self.owner.contains_key(&m);
                    self.log(t, EventKind::MutexTryLock, m, if free { 0 } else { EBUSY });
                    if free {
                        self.owner.insert(m, t);
                        self.held[t as usize].push(m);
                    }
                }
            }
            _ => {
                // A call inside a section, if any: an output on one stream.
                self.log(t, EventKind::Output, 0x9000, 0);
            }
        }
    }
}

fn record(threads: u32, steps: &[(u32, u8, u64)], unlock_at_end: bool) -> Run {
    let mut r = Recorder {
        events: Vec::new(),
        next_index: vec![0; threads as usize],
        held: vec![Vec::new(); threads as usize],
        owner: HashMap::new(),
        last_write: HashMap::new(),
        saw: HashMap::new(),
    };
    for &(pick, action, arg) in steps {
        r.step(pick % threads, action, arg);
    }
    if unlock_at_end {
        for t in 0..threads {
            while let Some(m) = r.held[t as usize].pop() {
                r.log(t, EventKind::MutexUnlock, m, 0);
                r.owner.remove(&m);
            }
        }
    }
    Run {
        events: r.events,
        saw: r.saw,
        last_write: r.last_write,
    }
}

/// One model replay of `run` with waits `waits` (by event), scheduled by
/// `picks` (then round robin). Returns what went wrong, if anything.
fn replay(
    run: &Run,
    threads: u32,
    waits: &HashMap<EventRef, Vec<EventRef>>,
    picks: &[u32],
) -> Result<(), String> {
    let mut by_thread: Vec<Vec<usize>> = vec![Vec::new(); threads as usize];
    for (i, e) in run.events.iter().enumerate() {
        by_thread[e.thread as usize].push(i);
    }
    let mut done = vec![0usize; threads as usize];
    let mut owner: HashMap<u64, u32> = HashMap::new();
    let mut last_write: HashMap<u64, EventRef> = HashMap::new();
    let mut picks = picks.iter().cycle();
    loop {
        let movable: Vec<u32> = (0..threads)
            .filter(|&t| {
                let Some(&i) = by_thread[t as usize].get(done[t as usize]) else {
                    return false;
                };
                let e = &run.events[i];
                let at = EventRef {
                    thread: t,
                    index: e.index,
                };
                let met = waits
                    .get(&at)
                    .is_none_or(|w| w.iter().all(|f| done[f.thread as usize] as u64 > f.index));
                met && !(e.kind == EventKind::MutexLock && owner.contains_key(&e.addr))
            })
            .collect();
        if movable.is_empty() {
            let stuck: Vec<_> = (0..threads)
                .filter(|&t| done[t as usize] < by_thread[t as usize].len())
                .map(|t| (t, done[t as usize]))
                .collect();
            return if stuck.is_empty() {
                check_final(run, &last_write)
            } else {
                Err(format!("deadlock: (thread, next event) {stuck:?}"))
            };
        }
        let t = movable[*picks.next().unwrap_or(&0) as usize % movable.len()];
        let i = by_thread[t as usize][done[t as usize]];
        let e = &run.events[i];
        let me = EventRef {
            thread: t,
            index: e.index,
        };
        match e.kind {
            EventKind::Read => {
                let seen = last_write.get(&e.addr).copied();
                if seen != run.saw[&i] {
                    return Err(format!("{me} read {seen:?}, recorded {:?}", run.saw[&i]));
                }
            }
            EventKind::Write => {
                last_write.insert(e.addr, me);
            }
            EventKind::MutexLock => {
                owner.insert(e.addr, t);
            }
            EventKind::MutexTryLock => {
                let free = !owner.contains_key(&e.addr);
                if free != (e.payload == 0) {
                    return Err(format!("{me}: the try found the mutex free: {free}"));
                }
                if free {
                    owner.insert(e.addr, t);
                }
            }
            EventKind::MutexUnlock => {
                owner.remove(&e.addr);
            }
            _ => {}
        }
        done[t as usize] += 1;
    }
}

fn check_final(run: &Run, last_write: &HashMap<u64, EventRef>) -> Result<(), String> {
    if *last_write != run.last_write {
        return Err(format!(
            "last writes {last_write:?}, recorded {:?}",
            run.last_write
        ));
    }
    Ok(())
}

/// The analysis with floating sections, where `code` says the code
/// between a lock's and an unlock's sites is all instrumented.
fn analyze(events: &[RecordedEvent], code: fn(u64, u64) -> bool) -> Analysis {
    let mut analyzer = Analyzer::new(&SplitOptions::default())
        .unwrap()
        .floating_sections(SectionCode(Box::new(code)));
    for e in events {
        analyzer.push(e).unwrap();
    }
    analyzer.finish()
}

fn steps() -> impl Strategy<Value = Vec<(u32, u8, u64)>> {
    proptest::collection::vec((0u32..8, 0u8..8, 0u64..64), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn floating_sections_replay_exactly_and_never_deadlock(
        threads in 2u32..5,
        steps in steps(),
        unlock_at_end in proptest::bool::weighted(0.8),
        schedules in proptest::collection::vec(proptest::collection::vec(0u32..64, 1..40), 12),
        all_instrumented in proptest::bool::ANY,
    ) {
        let run = record(threads, &steps, unlock_at_end);
        // Either every section's code is instrumented, or about a third
        // of them (by their sites) call something that is not.
        let code: fn(u64, u64) -> bool =
            if all_instrumented { |_, _| true } else { |a, b| (a ^ b) % 3 != 0 };
        let analysis = analyze(&run.events, code);
        let mut waits: HashMap<EventRef, Vec<EventRef>> = HashMap::new();
        for p in &analysis.pairs {
            waits.entry(p.to).or_default().push(p.from);
        }
        for picks in &schedules {
            if let Err(why) = replay(&run, threads, &waits, picks) {
                prop_assert!(false, "{why}; events {:?}; pairs {:?}", run.events, analysis.pairs);
            }
        }
    }
}

/// The same check finds the deadlock of the naive rule, which drops a
/// section's pair from the unlock before it and nothing more: thread 1's
/// section floats, thread 2's does not and waits only for thread 1's
/// unlock, so it can run before thread 0's section, whose write it reads.
#[test]
fn a_section_after_a_floated_one_still_waits_for_the_one_before() {
    let steps = [
        (0, 4, 0), // t0 locks m0
        (0, 2, 0), // t0 writes slot 0
        (0, 5, 0), // t0 unlocks
        (1, 4, 0), // t1 locks m0: touches nothing of t0's
        (1, 2, 1), // t1 writes slot 1
        (1, 5, 0),
        (2, 4, 0), // t2 locks m0 and reads slot 0: t0's write
        (2, 0, 0),
        (2, 5, 0),
    ];
    let run = record(3, &steps, true);
    let analysis = analyze(&run.events, |_, _| true);
    assert_eq!(analysis.stats.sections_floated, 1, "t1's section");
    let t2_lock = EventRef {
        thread: 2,
        index: 0,
    };
    let t0_unlock = EventRef {
        thread: 0,
        index: 2,
    };
    assert!(
        analysis
            .pairs
            .iter()
            .any(|p| p.to == t2_lock && p.from == t0_unlock),
        "t2's lock waits for t0's unlock: {:?}",
        analysis.pairs
    );
    let mut waits: HashMap<EventRef, Vec<EventRef>> = HashMap::new();
    for p in &analysis.pairs {
        waits.entry(p.to).or_default().push(p.from);
    }
    // Each pick indexes the threads that can move: the last one (t2 while
    // it can), the middle one, the first.
    for picks in [[2, 2, 2], [2, 1, 0], [0, 1, 2], [1, 1, 1]] {
        assert_eq!(replay(&run, 3, &waits, &picks), Ok(()));
    }
}
