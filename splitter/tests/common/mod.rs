//! Synthetic logs for the splitter's tests: random global orders, and a
//! writer that turns one into a trace directory the trace crate reads back.

#![allow(dead_code)]

use std::path::Path;

use proptest::prelude::*;
use rr_lite_trace::codec::{
    DeltaState, Entry, FORMAT_VERSION, MAX_ENTRY_LEN, NO_PARENT, ThreadLogHeader, encode_entry,
};
use rr_lite_trace::dir::{VERSION_FILE, thread_log_name};
use rr_lite_trace::{EventKind, RecordedEvent};

/// Builds events in the global order from (thread, kind, addr, size),
/// numbering each thread's events and giving clocks that make the trace's
/// `(clock, thread)` merge reproduce this exact order.
pub fn events(raw: &[(u32, EventKind, u64, u64)]) -> Vec<RecordedEvent> {
    let mut next_index = Vec::new();
    raw.iter()
        .enumerate()
        .map(|(i, &(thread, kind, addr, size))| {
            let t = thread as usize;
            if next_index.len() <= t {
                next_index.resize(t + 1, 0u64);
            }
            let index = next_index[t];
            next_index[t] += 1;
            RecordedEvent {
                thread,
                index,
                clock: i as u64 + 1,
                kind,
                addr,
                size,
                site: 0x5555_0000 + 16 * i as u64,
                payload: if kind.has_payload() { 7 } else { 0 },
            }
        })
        .collect()
}

/// Writes `events` (global order, as made by [`events`]) as a finished
/// trace directory with `threads` thread logs.
pub fn write_trace(dir: &Path, threads: u32, events: &[RecordedEvent]) {
    for t in 0..threads {
        let header = ThreadLogHeader {
            version: FORMAT_VERSION,
            thread: t,
            chunk_size: 1 << 16,
            pid: 1,
            parent: if t == 0 { NO_PARENT } else { 0 },
            flags: 0,
            start_unix_ns: 0,
            last_chunk: 0,
            entries_before_last_chunk: 0,
        };
        let mut bytes = header.encode().to_vec();
        let mut state = DeltaState::default();
        for e in events.iter().filter(|e| e.thread == t) {
            let mut buf = [0u8; MAX_ENTRY_LEN];
            let n = encode_entry(&mut buf, &mut state, &Entry::from(e));
            bytes.extend_from_slice(&buf[..n]);
        }
        bytes.extend_from_slice(&[0; 16]);
        std::fs::write(dir.join(thread_log_name(t)), bytes).unwrap();
    }
    std::fs::write(dir.join(VERSION_FILE), format!("{FORMAT_VERSION}\n")).unwrap();
}

/// Kinds the random logs draw from: plain accesses of the three access
/// classes and sync events modelled as each of them.
pub const KINDS: &[EventKind] = &[
    EventKind::Read,
    EventKind::Read,
    EventKind::Write,
    EventKind::Rmw,
    EventKind::ReadRange,
    EventKind::WriteRange,
    EventKind::MutexLock,
    EventKind::MutexUnlock,
    EventKind::CondWake,
    EventKind::CondSignal,
    EventKind::SemPost,
    EventKind::RwReadLock,
    EventKind::ThreadCreate,
    EventKind::ThreadJoin,
    EventKind::BarrierArrive,
    EventKind::BarrierDepart,
];

/// A random global log: up to `max_threads` threads, a few addresses (some
/// accesses unaligned or ranges, so they span granules), mixed kinds. The
/// addresses are 6 granules (many conflicts) or 40 across a 512-byte
/// boundary (enough for the finder to keep a stretch of memory as an
/// array, and a stretch on each side of the boundary).
pub fn random_log(max_threads: u32, max_len: usize) -> impl Strategy<Value = Vec<RecordedEvent>> {
    (2..=max_threads, prop_oneof![Just(6u64), Just(40u64)]).prop_flat_map(
        move |(threads, slots)| {
            proptest::collection::vec(
            (
                0..threads,
                proptest::sample::select(KINDS),
                0u64..slots,
                prop_oneof![4 => Just(0u64), 1 => 1u64..8],
                prop_oneof![6 => Just(8u64), 1 => Just(4u64), 1 => Just(16u64), 1 => Just(1u64)],
            )
                .prop_map(|(t, kind, slot, offset, size)| {
                    (t, kind, 0x1100 + 8 * slot + offset, size)
                }),
            1..max_len,
        )
        .prop_map(|raw| events(&raw))
        },
    )
}

/// Number of threads in a log (highest id + 1).
pub fn thread_count(events: &[RecordedEvent]) -> u32 {
    events.iter().map(|e| e.thread + 1).max().unwrap_or(0)
}

/// A random global log of threads that meet at one barrier (at 0x1100)
/// between stretches of plain reads and writes on a few granules (the
/// barrier's own among them), scheduled as a real barrier allows: a round's
/// departures only once all its arrivals are in, and any of them logged
/// late, after other threads' next arrivals. `choices`: (thread, action,
/// slot) per step, the thread taken among those that can go on.
pub fn barrier_log(threads: u32, choices: &[(u32, u8, u64)]) -> Vec<RecordedEvent> {
    const BARRIER: u64 = 0x1100;
    #[derive(Clone, Copy, PartialEq)]
    enum Phase {
        Working,
        Arrived(u64),
        Released,
    }
    let mut phase = vec![Phase::Working; threads as usize];
    let (mut round, mut arrived) = (0u64, 0u32);
    let mut raw = Vec::new();
    for &(pick, action, slot) in choices {
        let ready: Vec<u32> = (0..threads)
            .filter(|&t| !matches!(phase[t as usize], Phase::Arrived(_)))
            .collect();
        let t = ready[pick as usize % ready.len()];
        let kind = match phase[t as usize] {
            Phase::Released => {
                phase[t as usize] = Phase::Working;
                EventKind::BarrierDepart
            }
            _ if action < 2 => {
                phase[t as usize] = Phase::Arrived(round);
                arrived += 1;
                if arrived == threads {
                    for p in phase.iter_mut() {
                        if *p == Phase::Arrived(round) {
                            *p = Phase::Released;
                        }
                    }
                    (round, arrived) = (round + 1, 0);
                }
                EventKind::BarrierArrive
            }
            _ if action < 5 => EventKind::Read,
            _ => EventKind::Write,
        };
        let addr = if kind.is_plain_access() {
            BARRIER + 8 * slot
        } else {
            BARRIER
        };
        raw.push((t, kind, addr, if kind.is_plain_access() { 8 } else { 0 }));
    }
    events(&raw)
}
