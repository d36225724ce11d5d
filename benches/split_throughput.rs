//! `split_throughput`: entries per second of the splitter's analysis (pair
//! finding + reduction) on synthetic logs held in memory, so the numbers are
//! the splitter's and not the trace reader's. SPEC target: indexed >= 20 M
//! entries/s on one core; the worklist group gives the speed-up over the
//! reference algorithm at 1 M entries.
//!
//! Workloads: each thread runs in bursts (as a scheduler would let it), its
//! accesses going to a private working set of 1024 granules or, with the
//! sharing probability, to a pool of 256 shared granules; 70 % reads, 25 %
//! writes, 5 % atomic RMW, and a lock/unlock pair on a shared mutex now and
//! then. "low" sharing is 2 % of accesses, "high" 50 %.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rr_lite_splitter::{Algorithm, Reduction, SplitOptions, analyze_events};
use rr_lite_trace::{EventKind, RecordedEvent};

const SHARED_BASE: u64 = 0x10_0000;
const SHARED_GRANULES: u64 = 256;
const PRIVATE_BASE: u64 = 0x1000_0000;
const PRIVATE_GRANULES: u64 = 1024;
const MUTEX: u64 = 0x20_0000;

/// xorshift64*: deterministic, fast, good enough for workloads.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone, Copy)]
enum Sharing {
    Low,
    High,
}

impl Sharing {
    fn name(self) -> &'static str {
        match self {
            Sharing::Low => "low",
            Sharing::High => "high",
        }
    }

    /// Shared accesses per 1000.
    fn per_mille(self) -> u64 {
        match self {
            Sharing::Low => 20,
            Sharing::High => 500,
        }
    }
}

fn synthetic_log(entries: usize, threads: u32, sharing: Sharing) -> Vec<RecordedEvent> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (u64::from(threads) << 32) ^ sharing.per_mille());
    let mut next_index = vec![0u64; threads as usize];
    let mut holds_lock = vec![false; threads as usize];
    let mut log = Vec::with_capacity(entries);
    let mut thread = 0u32;
    let mut burst = 0u64;
    while log.len() < entries {
        if burst == 0 {
            thread = rng.below(u64::from(threads)) as u32;
            burst = 1 + rng.below(64);
        }
        burst -= 1;
        let t = thread as usize;
        let roll = rng.below(1000);
        let (kind, addr) = if holds_lock[t] && roll < 50 {
            holds_lock[t] = false;
            (EventKind::MutexUnlock, MUTEX)
        } else if !holds_lock[t] && roll < 5 {
            holds_lock[t] = true;
            (EventKind::MutexLock, MUTEX)
        } else {
            let kind = match rng.below(100) {
                0..70 => EventKind::Read,
                70..95 => EventKind::Write,
                _ => EventKind::Rmw,
            };
            let addr = if rng.below(1000) < sharing.per_mille() {
                SHARED_BASE + 8 * rng.below(SHARED_GRANULES)
            } else {
                PRIVATE_BASE + (u64::from(thread) << 20) + 8 * rng.below(PRIVATE_GRANULES)
            };
            (kind, addr)
        };
        log.push(RecordedEvent {
            thread,
            index: next_index[t],
            clock: log.len() as u64 + 1,
            kind,
            addr,
            size: 8,
            site: 0x5555_0000 + (roll & 0xff),
            payload: 0,
        });
        next_index[t] += 1;
    }
    log
}

fn options(algorithm: Algorithm) -> SplitOptions {
    SplitOptions {
        algorithm,
        reduction: Reduction::Vc,
        granule: 8,
        ..SplitOptions::default()
    }
}

fn indexed_1m(c: &mut Criterion) {
    let mut group = c.benchmark_group("split_throughput/indexed_1M");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    for threads in [2u32, 4, 16] {
        for sharing in [Sharing::Low, Sharing::High] {
            let log = synthetic_log(1_000_000, threads, sharing);
            group.throughput(Throughput::Elements(log.len() as u64));
            group.bench_with_input(
                BenchmarkId::new(sharing.name(), format!("{threads}t")),
                &log,
                |b, log| {
                    b.iter(|| analyze_events(black_box(log), &options(Algorithm::Indexed)).unwrap())
                },
            );
        }
    }
    group.finish();
}

fn indexed_10m(c: &mut Criterion) {
    let mut group = c.benchmark_group("split_throughput/indexed_10M");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for sharing in [Sharing::Low, Sharing::High] {
        let log = synthetic_log(10_000_000, 8, sharing);
        group.throughput(Throughput::Elements(log.len() as u64));
        group.bench_with_input(BenchmarkId::new(sharing.name(), "8t"), &log, |b, log| {
            b.iter(|| analyze_events(black_box(log), &options(Algorithm::Indexed)).unwrap())
        });
    }
    group.finish();
}

fn worklist_vs_indexed(c: &mut Criterion) {
    let mut group = c.benchmark_group("split_throughput/worklist_vs_indexed_1M");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for sharing in [Sharing::Low, Sharing::High] {
        let log = synthetic_log(1_000_000, 4, sharing);
        group.throughput(Throughput::Elements(log.len() as u64));
        for algorithm in [Algorithm::Worklist, Algorithm::Indexed] {
            group.bench_with_input(
                BenchmarkId::new(algorithm.name(), format!("4t_{}", sharing.name())),
                &log,
                |b, log| b.iter(|| analyze_events(black_box(log), &options(algorithm)).unwrap()),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, indexed_1m, indexed_10m, worklist_vs_indexed);
criterion_main!(benches);
