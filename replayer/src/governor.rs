//! Which CPUs a replay runs on (`replay --one-cpu`).
//!
//! A kept dependency whose waiter had to park costs a futex wake, and on a
//! virtual machine a wake-up sent to another CPU costs an interrupt between
//! virtual CPUs: some 18 µs a park on this project's 2-vCPU machines
//! (shared_index, 4 threads: 57 k parks, 2.1 s on both CPUs against 1.04 s
//! with every thread on one, where the threads hand over by yielding). But
//! parks alone do not tell which is faster: racy_share with half its
//! accesses shared parks 8 k times a second and replays 1.4x slower on one
//! CPU, where its threads, which mostly find their events done, lose the
//! second CPU's work. So `auto` measures instead of guessing:
//!
//! - Every tick (`session::TICK`) the replayer reads two counters from the
//!   state file: events done (the slots' `done`) and parks (the header's).
//! - Spread over every CPU, while parks reach [`TRIAL_PARKS_PER_S`], it
//!   tries one CPU for a tick: every thread of the program moves there
//!   (its mask, through `/proc/PID/task`) and the header's `one_cpu` tells
//!   the runtime's waiters that one core is all they have (they yield
//!   instead of spinning). If events went at least [`MARGIN`] times faster
//!   than since the threads last settled (not just the tick before: events
//!   per tick vary, and a lucky tick once lost a trial), the threads stay;
//!   otherwise they spread
//!   again, and the next trial waits twice as long as the last (from
//!   [`FIRST_BACKOFF`] to [`MAX_BACKOFF`]).
//! - Confined, it tries every CPU again after the same kind of backoff
//!   (the program may have left its sharing phase), and spreads if events
//!   go [`MARGIN`] times faster.
//!
//! The program cannot tell: its own affinity queries are served from the
//! recording (`sched_getaffinity`, `pthread_getaffinity_np`, `sched_getcpu`
//! are input events). Only speed changes, never the replayed path. One
//! exception is known, and left alone ([`why_not_one_cpu`]): LLVM's OpenMP
//! runtime reads its mask with a raw system call, when the program first
//! uses OpenMP, and sizes its teams by it.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rr_lite_supervise::affinity::{cpus_of, set_process_cpus};
use rr_lite_trace::TraceDir;
use rr_lite_trace::state::{ONE_CPU_OFFSET, StateSnapshot};

/// Parks per second from which `auto` tries one CPU. The sharing-heavy
/// workloads that replay faster on one CPU park 27 k to 44 k times a second
/// on two; workloads that share little, almost never.
pub const TRIAL_PARKS_PER_S: f64 = 5_000.0;
/// How much faster (events per second) the other placement must be to be
/// kept after its trial tick.
pub const MARGIN: f64 = 1.15;
/// The wait before the first trial is repeated, doubled after each failed
/// one up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// `replay --one-cpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OneCpu {
    /// One CPU while that replays events faster (tried and measured).
    #[default]
    Auto,
    /// Every CPU the replay may use, always.
    Never,
    /// One CPU from the start.
    Always,
}

/// Most bytes of a trace's `maps` file read here (as `symbols` reads it).
const MAPS_LIMIT: u64 = 64 << 20;

/// Why the threads of `trace`'s program must keep the CPUs they start
/// with, if they must: it maps LLVM's OpenMP runtime (libomp, or Intel's
/// libiomp5), which reads its CPU mask with the `syscall` function rather
/// than the wrappers replay serves, and starts as many threads as it finds
/// CPUs there.
pub fn why_not_one_cpu(trace: &TraceDir) -> Option<String> {
    let libomp = libomp_in_maps(&trace.maps_path())?;
    Some(format!(
        "the program uses LLVM's OpenMP runtime ({libomp}), which reads its CPU mask \
         with a raw system call replay cannot serve"
    ))
}

/// Per second over the last tick (`events`, `parks`) and since the
/// threads last settled (`events_settled`).
#[derive(Debug, Clone, Copy)]
struct Rates {
    events: f64,
    events_settled: f64,
    parks: f64,
}

fn rate(count: u64, now: Instant, since: Instant) -> f64 {
    count as f64 / now.duration_since(since).as_secs_f64().max(1e-3)
}

/// The path of LLVM's OpenMP runtime in the `maps` file at `path`, if it
/// is there. Bounded, and only a regular file: a trace may come from
/// someone else (a bad `maps` is reported where replay reads it for its
/// own use).
fn libomp_in_maps(path: &Path) -> Option<String> {
    let maps = rr_lite_trace::bounded::read(path, MAPS_LIMIT).ok()?;
    String::from_utf8_lossy(&maps)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            name.starts_with("libomp.so") || name.starts_with("libiomp5.so")
        })
        .map(str::to_owned)
}

/// A reading of the runtime's counters.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    events: u64,
    parks: u32,
}

/// Where `auto` stands: settled on one CPU or on every CPU, or trying the
/// other for a tick.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Placement {
    /// On one CPU (`one_cpu`) or on every CPU; the other is tried not
    /// before `next_trial`.
    Settled { one_cpu: bool, next_trial: Instant },
    /// Trying one CPU (`one_cpu`) or every CPU for a tick; `before`:
    /// events per second while settled on the other.
    Trying { one_cpu: bool, before: f64 },
}

impl Placement {
    fn on_one_cpu(self) -> bool {
        match self {
            Placement::Settled { one_cpu, .. } | Placement::Trying { one_cpu, .. } => one_cpu,
        }
    }
}

/// The governor of one replay.
#[derive(Debug)]
pub(crate) struct CpuGovernor {
    policy: OneCpu,
    state_path: PathBuf,
    /// The CPUs the replay started with (the replayer's, which the program
    /// inherits), lowest first.
    cpus: Vec<usize>,
    placement: Placement,
    /// Backoff before the next trial that follows a failed one.
    backoff: Duration,
    /// The counters at the last tick (at the start before the first).
    last: Sample,
    /// The counters when the threads last settled (the start, or a trial's
    /// end): a trial is measured against the rate since then, which one
    /// noisy tick does not sway (shared_index's events per 20 ms tick
    /// varied tenfold).
    settled: Sample,
    /// The program's process id, once its main thread has started.
    pid: i32,
}

impl CpuGovernor {
    /// The governor of a replay about to start: under `always`, sets the
    /// state file's `one_cpu` word (the runtime moves the main thread to
    /// that CPU before any other thread starts).
    pub(crate) fn new(policy: OneCpu, state_path: &Path) -> CpuGovernor {
        Self::with_cpus(policy, state_path, cpus_of(0))
    }

    /// [`Self::new`] for a replay that may use `cpus`.
    fn with_cpus(policy: OneCpu, state_path: &Path, cpus: Vec<usize>) -> CpuGovernor {
        let start = Sample {
            at: Instant::now(),
            events: 0,
            parks: 0,
        };
        let mut governor = CpuGovernor {
            policy,
            state_path: state_path.to_path_buf(),
            cpus,
            placement: Placement::Settled {
                one_cpu: false,
                next_trial: start.at,
            },
            backoff: FIRST_BACKOFF,
            last: start,
            settled: start,
            pid: 0,
        };
        if policy == OneCpu::Always && governor.cpus.len() > 1 {
            governor.placement = Placement::Settled {
                one_cpu: true,
                next_trial: far_future(),
            };
            governor.tell_runtime(true);
        }
        governor
    }

    /// Looks at the counters in `s` and moves the threads if the policy
    /// says so. Confined threads are moved again at every tick: a thread
    /// created while they were moved may have kept its creator's old mask.
    pub(crate) fn tick(&mut self, s: &StateSnapshot) {
        self.pid = s.thread(0).kernel_tid as i32;
        if self.pid == 0 || self.cpus.len() < 2 || self.policy == OneCpu::Never {
            return;
        }
        let now = Sample {
            at: Instant::now(),
            events: s.events_done(),
            parks: s.parks(),
        };
        // (A thread's count may be read mid-update, or go back at its end:
        // such a tick decides nothing.)
        if self.policy == OneCpu::Auto && now.events >= self.last.events {
            let (last, settled) = (self.last, self.settled);
            let rates = Rates {
                events: rate(now.events - last.events, now.at, last.at),
                events_settled: rate(
                    now.events.saturating_sub(settled.events),
                    now.at,
                    settled.at,
                ),
                parks: rate(
                    u64::from(now.parks.wrapping_sub(last.parks)),
                    now.at,
                    last.at,
                ),
            };
            let trial = matches!(self.placement, Placement::Trying { .. });
            self.placement = self.next_placement(now.at, rates);
            if trial {
                self.settled = now;
            }
        }
        self.last = now;
        if self.placement.on_one_cpu() {
            set_process_cpus(self.pid, &self.cpus[..1]);
        }
    }

    /// The placement after a tick measured as `rates`; moves the threads
    /// when it changes. A trial lasts one tick and always ends settled.
    fn next_placement(&mut self, now: Instant, rates: Rates) -> Placement {
        match self.placement {
            Placement::Settled {
                one_cpu,
                next_trial,
            } if now >= next_trial && (one_cpu || rates.parks >= TRIAL_PARKS_PER_S) => {
                self.place(!one_cpu);
                Placement::Trying {
                    one_cpu: !one_cpu,
                    before: rates.events_settled,
                }
            }
            Placement::Trying { one_cpu, before } => {
                let kept = rates.events >= before * MARGIN;
                let wait = if kept {
                    self.backoff = FIRST_BACKOFF;
                    FIRST_BACKOFF
                } else {
                    self.place(!one_cpu);
                    self.next_backoff()
                };
                Placement::Settled {
                    one_cpu: if kept { one_cpu } else { !one_cpu },
                    next_trial: now + wait,
                }
            }
            settled => settled,
        }
    }

    /// The backoff to wait now, doubling the next one.
    fn next_backoff(&mut self) -> Duration {
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        wait
    }

    /// Moves the threads to one CPU, or gives every thread back the CPUs
    /// the replay started with (confined threads are moved at each tick).
    fn place(&self, one_cpu: bool) {
        self.tell_runtime(one_cpu);
        if !one_cpu {
            set_process_cpus(self.pid, &self.cpus);
        }
    }

    /// Writes the header's `one_cpu` word (the CPU + 1, or 0) into the live
    /// state file (the runtime maps it shared). A failure only leaves the
    /// waiters counting the wrong number of cores: slower, never wrong.
    fn tell_runtime(&self, one_cpu: bool) {
        let word = if one_cpu { self.cpus[0] as u32 + 1 } else { 0 };
        if let Ok(file) = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.state_path)
        {
            let _ = file.write_all_at(&word.to_le_bytes(), ONE_CPU_OFFSET as u64);
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `auto` governor of a replay on CPUs 0 and 1, whose moves go
    /// nowhere (no process, no state file).
    fn governor() -> CpuGovernor {
        CpuGovernor::with_cpus(OneCpu::Auto, Path::new("/nonexistent/state"), vec![0, 1])
    }

    fn step(g: &mut CpuGovernor, at: Instant, events: f64, parks: f64) -> Placement {
        let rates = Rates {
            events,
            events_settled: events,
            parks,
        };
        g.placement = g.next_placement(at, rates);
        g.placement
    }

    #[test]
    fn one_cpu_is_tried_only_while_threads_park_often() {
        let mut g = governor();
        let t = Instant::now();
        assert!(matches!(
            step(&mut g, t, 1e6, 100.0),
            Placement::Settled { one_cpu: false, .. }
        ));
        let tried = step(&mut g, t, 1e6, TRIAL_PARKS_PER_S);
        assert_eq!(
            tried,
            Placement::Trying {
                one_cpu: true,
                before: 1e6
            }
        );
    }

    #[test]
    fn a_faster_trial_is_kept_and_a_slower_one_backs_off_doubling() {
        let mut g = governor();
        let t = Instant::now();
        step(&mut g, t, 1e6, 1e5);
        let kept = step(&mut g, t, 2e6, 0.0);
        assert_eq!(
            kept,
            Placement::Settled {
                one_cpu: true,
                next_trial: t + FIRST_BACKOFF
            }
        );

        let mut g = governor();
        let mut waits = Vec::new();
        let mut at = Instant::now();
        for _ in 0..6 {
            step(&mut g, at, 1e6, 1e5);
            match step(&mut g, at, 1e6, 1e5) {
                Placement::Settled {
                    one_cpu: false,
                    next_trial,
                } => waits.push(next_trial - at),
                other => panic!("a trial no faster must spread again, not {other:?}"),
            }
            at += MAX_BACKOFF;
        }
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [500, 1000, 2000, 4000, 8000, 8000]);
    }

    #[test]
    fn confined_threads_try_every_cpu_again_after_the_backoff() {
        let mut g = governor();
        let t = Instant::now();
        step(&mut g, t, 1e6, 1e5);
        step(&mut g, t, 2e6, 0.0);
        // Not before the backoff, whatever the rates.
        assert!(matches!(
            step(&mut g, t, 2e6, 0.0),
            Placement::Settled { one_cpu: true, .. }
        ));
        let later = t + FIRST_BACKOFF;
        assert_eq!(
            step(&mut g, later, 2e6, 0.0),
            Placement::Trying {
                one_cpu: false,
                before: 2e6
            }
        );
        // Spread is no faster: back to one CPU, the next trial later.
        assert_eq!(
            step(&mut g, later, 2e6, 0.0),
            Placement::Settled {
                one_cpu: true,
                next_trial: later + FIRST_BACKOFF
            }
        );
        let again = later + FIRST_BACKOFF;
        step(&mut g, again, 2e6, 0.0);
        // The program left its sharing phase: spread is kept.
        assert!(matches!(
            step(&mut g, again, 5e6, 0.0),
            Placement::Settled { one_cpu: false, .. }
        ));
    }

    #[test]
    fn libomp_is_found_in_maps_and_endless_files_are_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let maps = tmp.path().join("maps");
        let line = |path: &str| format!("7f00-7f10 r-xp 00000000 fe:00 12 {path}\n");
        std::fs::write(&maps, line("/usr/lib/x86_64-linux-gnu/libgomp.so.1")).unwrap();
        assert_eq!(libomp_in_maps(&maps), None);
        let libomp = "/usr/lib/llvm-14/lib/libomp.so.5";
        std::fs::write(&maps, line("/tmp/prog") + &line(libomp)).unwrap();
        assert_eq!(libomp_in_maps(&maps).as_deref(), Some(libomp));
        let endless = tmp.path().join("endless");
        std::os::unix::fs::symlink("/dev/zero", &endless).unwrap();
        assert_eq!(libomp_in_maps(&endless), None);
        assert_eq!(libomp_in_maps(&tmp.path().join("missing")), None);
    }

    #[test]
    fn never_and_one_cpu_machines_leave_the_threads_alone() {
        let state = Path::new("/nonexistent/state");
        let g = CpuGovernor::with_cpus(OneCpu::Never, state, vec![0, 1]);
        assert!(matches!(
            g.placement,
            Placement::Settled { one_cpu: false, .. }
        ));
        let g = CpuGovernor::with_cpus(OneCpu::Always, state, vec![3]);
        assert!(matches!(
            g.placement,
            Placement::Settled { one_cpu: false, .. }
        ));
        let g = CpuGovernor::with_cpus(OneCpu::Always, state, vec![3, 4]);
        assert!(matches!(
            g.placement,
            Placement::Settled { one_cpu: true, .. }
        ));
    }
}
