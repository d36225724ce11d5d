//! `record --chaos` and `record --until-failure`: the options that hunt
//! for a failing run, and the loop that records runs until one fails.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use rr_lite_recorder::{OutputWatch, RecordOptions, RecordStdin, Recording, record};
use rr_lite_trace::{ChaosSchedule, ProgramEnding, TraceHeader};

/// Chaos strategies (`--chaos=STRATEGY`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaosKind {
    /// Probabilistic Concurrency Testing: one thread runs at a time, the
    /// highest of random priorities, which drop at D-1 random points.
    Pct,
    /// Random delays and yields at random events; cheaper, no guarantee.
    Random,
}

#[derive(clap::Args, Debug)]
pub struct HuntArgs {
    /// Perturb the schedule while recording so that rare interleavings, and
    /// the bugs they expose, come up in few runs. `pct` (the default): one
    /// thread runs at a time, chosen by random priorities that drop at
    /// random points (Probabilistic Concurrency Testing: a bug that needs D
    /// orderings among N threads and K events is hit with probability at
    /// least 1/(N K^(D-1)) per run). `random`: random delays and yields,
    /// cheaper, no guarantee. The trace replays like any other.
    #[arg(
        long,
        value_name = "STRATEGY",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "pct"
    )]
    chaos: Option<ChaosKind>,
    /// Record one thread at a time on shared data, as a single-core
    /// recorder does: threads take turns round robin, each taking new
    /// shared data for up to SLICE events (default 200000; a random length
    /// each turn) while the others wait at theirs; a thread's accesses to
    /// data it already holds (its own) still run beside the others', and a
    /// thread polling a flag gives its turn away. For programs whose
    /// threads share data at fine grain (racy counters and buffers, shared
    /// indices, handoffs): the recorded schedule then changes hands on
    /// shared data once per turn instead of every few accesses, so replay
    /// waits far less (`rr-lite split --json` counts the waits: a shared
    /// index four threads bump, 108 k waits by default, 268 this way;
    /// replay 4x faster). Recording costs up to 2x more where threads
    /// compute side by side, and races that need a switch between two
    /// close accesses show less often (--chaos is for those).
    #[arg(
        long,
        value_name = "SLICE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "200000",
        conflicts_with = "chaos",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    serialize: Option<u64>,
    /// Seed of the chaos schedule, or of the --serialize turns' lengths
    /// (printed, and stored in the trace): the same seed on the same input
    /// gives the same schedule. With --until-failure, run K uses SEED+K-1.
    /// Default: a random seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// PCT: the bug depth aimed at (how many orderings the bug needs); each
    /// run has D-1 priority change points.
    #[arg(long, value_name = "D", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    pct_depth: u32,
    /// PCT: the number of steps a run makes (events while two threads or
    /// more live, bookkeeping left out), among which change points are
    /// drawn. Default: those of the newest recorded run of the program
    /// (10000 if none); --until-failure learns it from each run.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pct_events: Option<u64>,
    /// Record up to N runs (default 100), stopping at the first that fails
    /// (non-zero exit status, killed by a signal, a --failure-output match
    /// or a --timeout): that trace is kept (latest-trace points at it), the
    /// passing ones are deleted, and rr-lite exits with the failing run's
    /// status (1 if it exited 0 but its output matched). Exits 0 if no run
    /// failed. Every run gets the same standard input (read once; none if
    /// it is a terminal).
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "100",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    until_failure: Option<u32>,
    /// With --until-failure: a run also fails when a line of its standard
    /// output or error matches REGEX (the output then goes through pipes).
    #[arg(long, value_name = "REGEX", requires = "until_failure")]
    failure_output: Option<String>,
    /// With --until-failure: keep the traces of the runs that passed too.
    #[arg(long, requires = "until_failure")]
    keep_all: bool,
    /// Stop a run still going after SECS seconds with SIGINT, like a Ctrl-C
    /// (SIGKILL 5 s later): a hang becomes a failure whose trace replays to
    /// the same end.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
}

/// The validated hunting options.
#[derive(Debug)]
pub struct Hunt {
    chaos: Option<ChaosKind>,
    serialize: Option<u64>,
    base_seed: u64,
    depth: u32,
    events: u64,
    events_given: bool,
    runs: Option<u32>,
    failure_output: Option<regex::bytes::Regex>,
    keep_all: bool,
    timeout: Option<Duration>,
}

impl Hunt {
    pub fn from_args(args: HuntArgs, program: &Path, output_given: bool) -> anyhow::Result<Hunt> {
        if args.until_failure.is_some() && output_given {
            anyhow::bail!(
                "--until-failure names each run's trace itself: it cannot be used with -o/--output"
            );
        }
        let failure_output = args
            .failure_output
            .as_deref()
            .map(regex::bytes::Regex::new)
            .transpose()
            .context("--failure-output is not a valid regular expression")?;
        let timeout = match args.timeout {
            Some(s) if !(s.is_finite() && s > 0.0 && s < 1e9) => {
                anyhow::bail!("--timeout must be a positive number of seconds, not {s}")
            }
            t => t.map(Duration::from_secs_f64),
        };
        if args.seed.is_some() && args.chaos.is_none() && args.serialize.is_none() {
            anyhow::bail!("--seed chooses a schedule: give it with --chaos or --serialize");
        }
        let estimated = args.chaos == Some(ChaosKind::Pct) && args.pct_events.is_none();
        Ok(Hunt {
            chaos: args.chaos,
            serialize: args.serialize,
            base_seed: args.seed.unwrap_or_else(random_seed),
            depth: args.pct_depth,
            events: args.pct_events.unwrap_or_else(|| {
                estimated
                    .then(|| rr_lite_recorder::chaos::estimate_events(program))
                    .flatten()
                    .unwrap_or(rr_lite_recorder::chaos::DEFAULT_EVENTS)
            }),
            events_given: args.pct_events.is_some(),
            runs: args.until_failure,
            failure_output,
            keep_all: args.keep_all,
            timeout,
        })
    }

    /// How many runs --until-failure may record, if given.
    pub fn runs(&self) -> Option<u32> {
        self.runs
    }

    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The schedule of run `run` (from 1), if chaos or --serialize is on.
    pub fn schedule_for_run(&self, run: u32) -> Option<ChaosSchedule> {
        let seed = self.base_seed.wrapping_add(u64::from(run) - 1);
        if let Some(slice) = self.serialize {
            return Some(ChaosSchedule::Serial { seed, slice });
        }
        self.chaos.map(|kind| match kind {
            ChaosKind::Pct => ChaosSchedule::Pct {
                seed,
                depth: self.depth,
                events: self.events,
            },
            ChaosKind::Random => ChaosSchedule::Random { seed },
        })
    }

    /// Learns the number of events per run from a finished run (unless
    /// --pct-events fixed it).
    fn learn(&mut self, header: &TraceHeader) {
        if !self.events_given && header.ok {
            self.events = rr_lite_recorder::chaos::steps_of(header);
        }
    }
}

/// A seed nobody chose: small enough to type back.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() % 1_000_000_000
}

/// The `record` flags that run `chaos` again.
pub fn chaos_flags(chaos: &ChaosSchedule) -> String {
    match *chaos {
        ChaosSchedule::Pct {
            seed,
            depth,
            events,
        } => format!("--chaos=pct --seed {seed} --pct-depth {depth} --pct-events {events}"),
        ChaosSchedule::Random { seed } => format!("--chaos=random --seed {seed}"),
        ChaosSchedule::Serial { seed, slice } => format!("--serialize={slice} --seed {seed}"),
    }
}

/// Why a finished run counts as a failure, if it does.
fn failure(ending: ProgramEnding, output_matched: bool, timed_out: bool) -> Option<String> {
    match ending {
        _ if timed_out => Some(format!(
            "it ran past --timeout and was stopped ({})",
            crate::output::describe_ending(ending)
        )),
        ProgramEnding::Exited { code: 0 } if output_matched => {
            Some("its output matched --failure-output".into())
        }
        ProgramEnding::Exited { code: 0 } => None,
        other => Some(crate::output::describe_ending(other)),
    }
}

/// Records runs until one fails (see [`HuntArgs::until_failure`]).
pub fn run(mut hunt: Hunt, mut options: RecordOptions, quiet: bool) -> anyhow::Result<i32> {
    let runs = hunt.runs.unwrap_or(1);
    let stdin = saved_stdin()?;
    options.stdin = RecordStdin::File(stdin.path().to_path_buf());
    options.point_latest = false;
    options.timeout = hunt.timeout;
    let matched = Arc::new(AtomicBool::new(false));
    if let Some(re) = hunt.failure_output.clone() {
        let flag = matched.clone();
        options.watch_output = Some(OutputWatch(Arc::new(move |line: &[u8]| {
            if re.is_match(line) {
                flag.store(true, Ordering::Release);
            }
        })));
    }
    if let (Some(chaos), false) = (hunt.schedule_for_run(1), quiet) {
        eprintln!(
            "rr-lite: recording up to {runs} runs with the schedule {} (run K: seed {}+K-1)",
            chaos.describe(),
            hunt.base_seed
        );
    }
    let bar = progress_bar(u64::from(runs), quiet);
    for run in 1..=runs {
        matched.store(false, Ordering::Release);
        options.chaos = hunt.schedule_for_run(run);
        let started = std::time::Instant::now();
        let recording = bar.suspend(|| record(&options))?;
        let timed_out = hunt.timeout.is_some_and(|t| started.elapsed() >= t)
            && recording.header.ending != ProgramEnding::Exited { code: 0 };
        hunt.learn(&recording.header);
        bar.inc(1);
        let why = failure(
            recording.header.ending,
            matched.load(Ordering::Acquire),
            timed_out,
        );
        if let Some(why) = why {
            bar.finish_and_clear();
            return caught(run, &why, &recording, quiet);
        }
        if !recording.header.ok {
            bar.suspend(|| {
                eprintln!(
                    "rr-lite: warning: run {run}: the recording is incomplete ({}); kept in {}",
                    recording.header.problems.join("; "),
                    recording.dir.display()
                )
            });
        } else if !hunt.keep_all {
            std::fs::remove_dir_all(&recording.dir)
                .with_context(|| format!("cannot remove {}", recording.dir.display()))?;
        }
    }
    bar.finish_and_clear();
    if !quiet {
        eprintln!("rr-lite: no failure in {runs} runs");
    }
    Ok(0)
}

/// Reports the failing run and gives the status to exit with.
fn caught(run: u32, why: &str, recording: &Recording, quiet: bool) -> anyhow::Result<i32> {
    rr_lite_recorder::session::update_latest(&recording.dir)?;
    if !quiet {
        let s = if run == 1 { "" } else { "s" };
        eprintln!("rr-lite: caught after {run} run{s}: {why}");
        crate::record_cmd::report(recording);
    }
    Ok(match recording.header.ending.shell_status() {
        0 => 1,
        status => status,
    })
}

/// The standard input every run gets: rr-lite's own, read once (nothing
/// if it is a terminal, which cannot be typed into N times).
fn saved_stdin() -> anyhow::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::NamedTempFile::new().context("cannot create a temporary file")?;
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        std::io::copy(&mut stdin.lock(), &mut file)
            .context("cannot read the standard input to give each run")?;
    }
    Ok(file)
}

fn progress_bar(runs: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(runs);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "rr-lite: {pos}/{len} runs passed [{bar:30}] {elapsed}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_fails_on_status_signal_output_or_timeout() {
        let ok = ProgramEnding::Exited { code: 0 };
        assert_eq!(failure(ok, false, false), None);
        assert!(
            failure(ok, true, false)
                .unwrap()
                .contains("--failure-output")
        );
        assert!(failure(ProgramEnding::Exited { code: 3 }, false, false).is_some());
        assert!(failure(ProgramEnding::Signaled { signal: 6 }, false, false).is_some());
        let stopped = ProgramEnding::Signaled { signal: 2 };
        assert!(failure(stopped, false, true).unwrap().contains("--timeout"));
    }

    #[test]
    fn each_run_gets_the_next_seed_and_the_flags_repeat_it() {
        let hunt = Hunt {
            chaos: Some(ChaosKind::Pct),
            serialize: None,
            base_seed: 40,
            depth: 3,
            events: 500,
            events_given: false,
            runs: Some(10),
            failure_output: None,
            keep_all: false,
            timeout: None,
        };
        let third = hunt.schedule_for_run(3).unwrap();
        assert_eq!(third.seed(), 42);
        assert_eq!(
            chaos_flags(&third),
            "--chaos=pct --seed 42 --pct-depth 3 --pct-events 500"
        );
        let serial = Hunt {
            chaos: None,
            serialize: Some(1000),
            ..hunt
        };
        let second = serial.schedule_for_run(2).unwrap();
        assert_eq!(
            second,
            ChaosSchedule::Serial {
                seed: 41,
                slice: 1000
            }
        );
        assert_eq!(chaos_flags(&second), "--serialize=1000 --seed 41");
        assert_eq!(second.env_value(), "serial:41:1000");
    }
}
