//! One replay: a session directory with the shared state file, the program
//! run as recorded with `RR_LITE_MODE=replay`, a watchdog over the state
//! file, and the outcome read back from it.
//!
//! The environment is the recorded one with the mode and session values
//! swapped for strings of the same length, so the program's initial stack,
//! and every address derived from it, is the recorded one.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rr_lite_supervise::{StdinSource, Tick, disable_aslr_for_children, supervise};
use rr_lite_trace::plan::{PlanVariant, SESSION_ENV, session_dir_name};
use rr_lite_trace::state::{
    DebugStop, Divergence, ProgressSnapshot, STATE_FILE, StateSnapshot, ThreadStatus,
    new_state_file,
};
use rr_lite_trace::{EventKind, ProgramEnding, RecordedEvent, TraceDir};

use crate::ReplayError;
use crate::governor::{CpuGovernor, OneCpu, why_not_one_cpu};
use crate::leftovers::OpenMpRegistration;
use crate::places::{Places, TRACE_ENV};
use crate::plans::{WhyBuilt, ensure_plans};

const MODE_ENV: &str = "RR_LITE_MODE";
/// How often the watchdog and the CPU governor look at the state file
/// (the governor's trials last a tick: at 20 ms, the events done in a
/// tick varied tenfold on shared_index, and trials decided by chance).
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub variant: PlanVariant,
    /// Stop with a deadlock report when every live thread has waited this
    /// long with no progress.
    pub watchdog: Duration,
    /// Run the program of a trace another user owns (see [`check_trust`]).
    pub accept_foreign: bool,
    /// When the threads share one CPU (see `crate::governor`).
    pub one_cpu: OneCpu,
}

/// How a replay ended.
#[derive(Debug, Clone)]
pub enum ReplayOutcome {
    /// The program ran to its end (or crash) on the recorded path.
    Finished(ProgramEnding),
    Diverged(DivergenceReport),
    Deadlocked(DeadlockReport),
}

/// Where the replay left the recorded path.
#[derive(Debug, Clone)]
pub struct DivergenceReport {
    pub what: Divergence,
    pub thread: u32,
    /// Per-thread index of the event that diverged.
    pub index: u64,
    /// The recorded event at that index, if the thread has one.
    pub expected: Option<RecordedEvent>,
    pub actual_kind: Option<EventKind>,
    pub actual_addr: u64,
    pub actual_site: u64,
    /// For count/hash and result mismatches: the recorded and the actual value.
    pub expected_value: u64,
    pub actual_value: u64,
}

/// One thread stuck in a replay wait.
#[derive(Debug, Clone)]
pub struct WaitEdge {
    pub thread: u32,
    /// Events the thread has done (its next event is this index).
    pub at_index: u64,
    /// The recorded event it is about to do.
    pub next_event: Option<RecordedEvent>,
    /// `(thread, index)` it waits for, or None for the sequential turn.
    pub waits_for: Option<(u32, u64)>,
    /// Sequential replay: the global turn it waits for.
    pub turn: Option<u64>,
    /// Blocked in a real call (a lock, the FILE lock), not a replay wait.
    pub blocked_in_call: bool,
    /// Past the last event the recording has for it.
    pub at_end: bool,
}

#[derive(Debug, Clone)]
pub struct DeadlockReport {
    pub waits: Vec<WaitEdge>,
    /// A cycle of threads each waiting for the next, if there is one.
    pub cycle: Vec<u32>,
    /// Not every thread waits: for this long no thread reached an event
    /// while some waited (a thread running where the runtime cannot see
    /// it, spinning for one that waits, never reaches its next event).
    pub stalled_for: Option<Duration>,
    /// The threads that were running (not waiting, blocked or ended).
    pub running: Vec<u32>,
}

/// A snapshot of the state file, with what the watchdog asks of it.
struct State(StateSnapshot);

impl State {
    fn read(path: &Path) -> Option<State> {
        std::fs::read(path)
            .ok()
            .and_then(|b| StateSnapshot::parse(&b))
            .map(State)
    }

    fn status(&self, t: u32) -> u32 {
        self.0.thread(t).status
    }

    /// Sum of all progress counters (changes whenever anything completes).
    fn progress(&self) -> u64 {
        (0..self.0.threads()).fold(self.0.turn(), |acc, t| {
            let slot = self.0.thread(t);
            acc.wrapping_add(slot.done).wrapping_add(slot.index)
        })
    }

    /// Statuses of the started, unfinished threads.
    fn live_statuses(&self) -> Vec<u32> {
        (0..self.0.threads())
            .map(|t| self.status(t))
            .filter(|&s| s != ThreadStatus::NotStarted as u32 && s != ThreadStatus::Exited as u32)
            .collect()
    }

    /// Every started, unfinished thread has done all its recorded events.
    fn all_at_end(&self) -> bool {
        let live = self.live_statuses();
        !live.is_empty() && live.iter().all(|&s| s == ThreadStatus::AtEnd as u32)
    }

    /// No started, unfinished thread runs: each is parked in a replay
    /// wait, blocked in a real call, or past its recorded end; or, when at
    /// least one is parked in a replay wait, asleep in a call the runtime
    /// does not see (a raw futex in an uninstrumented library), which the
    /// status word cannot show.
    /// Some thread is parked in a replay wait.
    fn any_waiting(&self) -> bool {
        (0..self.0.threads()).any(|t| self.status(t) == ThreadStatus::Waiting as u32)
    }

    fn all_waiting(&self) -> bool {
        let live: Vec<ProgressSnapshot> = (0..self.0.threads())
            .map(|t| self.0.thread(t))
            .filter(|p| {
                p.status != ThreadStatus::NotStarted as u32
                    && p.status != ThreadStatus::Exited as u32
            })
            .collect();
        let replay_wait = live
            .iter()
            .any(|p| p.status == ThreadStatus::Waiting as u32);
        // A thread asleep in the kernel counts as stuck when another waits
        // at replay (a wait the runtime does not see), unless it sleeps in
        // a call that returns by itself (sleep, poll: `Sleeping`).
        let asleep = |p: &ProgressSnapshot| {
            replay_wait
                && p.status != ThreadStatus::Sleeping as u32
                && asleep_in_kernel(p.kernel_tid)
        };
        !live.is_empty() && live.iter().all(|p| is_stuck(p.status) || asleep(p))
    }
}

/// Thread `tid` sleeps in the kernel (state `S` in /proc/TID/stat).
fn asleep_in_kernel(tid: u32) -> bool {
    if tid == 0 {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{tid}/stat")) else {
        return false;
    };
    // "tid (comm) S ...": the command may hold spaces and parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        == Some('S')
}

/// A status in which a thread makes no progress by itself.
fn is_stuck(status: u32) -> bool {
    [
        ThreadStatus::Waiting,
        ThreadStatus::Blocked,
        ThreadStatus::AtEnd,
    ]
    .iter()
    .any(|&s| s as u32 == status)
}

/// What a trace can make replay do is run its header's program with its
/// arguments and environment: so, before anything runs, the program must
/// be the one recorded (same build-id or contents: [`Places::resolve`],
/// which runs after this), and a trace another
/// user owns (a copy from elsewhere, a shared directory) runs only with
/// `accept_foreign`, its command line shown otherwise.
fn check_trust(
    trace: &TraceDir,
    header: &rr_lite_trace::TraceHeader,
    accept_foreign: bool,
) -> Result<(), ReplayError> {
    use std::os::unix::fs::MetadataExt;
    for needed in [MODE_ENV, SESSION_ENV] {
        if !header.env.iter().any(|(k, _)| k == needed) {
            return Err(ReplayError::EnvironmentDamaged {
                path: trace.path().join("header.json"),
                missing: needed,
            });
        }
    }
    check_recorded_data(trace, header)?;
    let owner = |p: &Path| std::fs::metadata(p).map(|m| m.uid());
    let me = owner(Path::new("/proc/self")).map_err(ReplayError::io("read", "/proc/self"))?;
    let trace_owner = owner(trace.path()).map_err(ReplayError::io("read", trace.path()))?;
    if trace_owner != me && !accept_foreign {
        return Err(ReplayError::ForeignTrace {
            path: trace.path().to_path_buf(),
            owner: trace_owner,
            command: command_line(header),
        });
    }
    Ok(())
}

/// The recorded data replay serves to the program (standard input, each
/// thread's input, file snapshots) is what the recorder checksummed.
fn check_recorded_data(
    trace: &TraceDir,
    header: &rr_lite_trace::TraceHeader,
) -> Result<(), ReplayError> {
    for (relative, &expected) in &header.data_checksums {
        let path = trace.path().join(relative);
        let meta = std::fs::metadata(&path).map_err(ReplayError::io("read", &path))?;
        let actual = meta
            .is_file()
            .then(|| rr_lite_trace::codec::checksum::fnv1a_of_file(&path).ok())
            .flatten();
        if actual != Some(expected) {
            return Err(ReplayError::DataDamaged { path });
        }
    }
    Ok(())
}

/// The recorded run as a shell-like line: loader variables of its
/// environment, the program, its arguments, and where it runs.
fn command_line(header: &rr_lite_trace::TraceHeader) -> String {
    let mut parts: Vec<String> = header
        .env
        .iter()
        .filter(|(k, _)| k.as_bytes().starts_with(b"LD_"))
        .map(|(k, v)| format!("{}={v:?}", k.to_string_lossy()))
        .collect();
    parts.push(format!("{:?}", header.program.as_os_str()));
    parts.extend(header.argv.iter().skip(1).map(|a| format!("{a:?}")));
    format!("{} (in {})", parts.join(" "), header.cwd.display())
}

fn new_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// Writes the zeroed state file the runtime maps.
fn create_state(
    path: &Path,
    entries: &[u64],
    variant: PlanVariant,
    stop: Option<DebugStop>,
) -> Result<(), ReplayError> {
    rr_lite_trace::private::write(path, new_state_file(entries, variant as u32, stop))
        .map_err(ReplayError::io("write", path))
}

/// The recorded environment, in replay mode for this session.
fn replay_environment(
    recorded: &[(OsString, OsString)],
    session: &str,
) -> Vec<(OsString, OsString)> {
    recorded
        .iter()
        .map(|(k, v)| match k.to_str() {
            Some(MODE_ENV) => (k.clone(), "replay".into()),
            Some(SESSION_ENV) => (k.clone(), session.into()),
            _ => (k.clone(), v.clone()),
        })
        .collect()
}

/// Removes the session directory when the replay is over, however it ends.
pub(crate) struct SessionDir(pub(crate) PathBuf);

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The program's standard input: the bytes it read while recording, fed
/// through a pipe as then (traces from before rr-lite saved them: the
/// replayer's own).
fn recorded_stdin(trace: &TraceDir) -> Result<StdinSource, ReplayError> {
    let path = trace.path().join(rr_lite_trace::dir::STDIN_FILE);
    match std::fs::File::open(&path) {
        Ok(file) => Ok(StdinSource::Replay(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StdinSource::Inherit),
        Err(source) => Err(ReplayError::io("open", &path)(source)),
    }
}

/// A replay session ready to start: the trace checked, its plans built,
/// the session directory and its state file created.
pub(crate) struct Prepared<'t> {
    pub(crate) header: &'t rr_lite_trace::TraceHeader,
    pub(crate) session: String,
    /// Removed when the session is dropped.
    pub(crate) dir: SessionDir,
    pub(crate) state_path: PathBuf,
    /// Where the program and the trace are now.
    pub(crate) places: Places,
    /// Cleaned up when the session is dropped.
    pub(crate) _openmp_registration: OpenMpRegistration,
    /// Whether (and why) preparing built the trace's kept plans.
    pub(crate) plans_built: Option<WhyBuilt>,
}

/// Checks that `trace` may be replayed, and prepares a session for it.
pub(crate) fn prepare<'t>(
    trace: &'t TraceDir,
    options: &ReplayOptions,
    stop: Option<DebugStop>,
) -> Result<Prepared<'t>, ReplayError> {
    let header = trace.header().ok_or_else(|| ReplayError::NotReplayable {
        path: trace.path().to_path_buf(),
    })?;
    if !header.ok {
        return Err(ReplayError::Incomplete {
            path: trace.path().to_path_buf(),
            problems: header.problems.clone(),
        });
    }
    check_trust(trace, header, options.accept_foreign)?;
    let places = Places::resolve(trace, header)?;
    let session = new_session_id();
    let dir = SessionDir(trace.path().join(session_dir_name(&session)));
    rr_lite_trace::private::create_dir_all(&dir.0).map_err(ReplayError::io("create", &dir.0))?;
    let plans = ensure_plans(trace, options.variant, &dir.0)?;
    let state_path = dir.0.join(STATE_FILE);
    create_state(&state_path, &header.entries, options.variant, stop)?;
    Ok(Prepared {
        header,
        session,
        dir,
        state_path,
        places,
        _openmp_registration: OpenMpRegistration::prepare(trace),
        plans_built: plans.built,
    })
}

/// The recorded program as it ran: its path (or one of the same length,
/// `places`), argv (argv[0] included), working directory and environment
/// (in replay mode for `session`), with address-space randomisation off.
pub(crate) fn program_command(
    header: &rr_lite_trace::TraceHeader,
    session: &str,
    places: &Places,
) -> Command {
    let mut cmd = Command::new(&places.program);
    if let Some((arg0, args)) = header.argv.split_first() {
        std::os::unix::process::CommandExt::arg0(&mut cmd, arg0);
        cmd.args(args);
    }
    cmd.current_dir(&header.cwd)
        .env_clear()
        .envs(replay_environment(&header.env, session))
        .envs(places.trace_env.iter().map(|t| (TRACE_ENV, t)));
    disable_aslr_for_children();
    cmd
}

/// Replays a trace.
pub fn replay(trace: &TraceDir, options: &ReplayOptions) -> Result<Replayed, ReplayError> {
    let prepared = prepare(trace, options, None)?;
    let outcome = run_prepared(trace, options, &prepared)?;
    Ok(Replayed {
        outcome,
        plans_built: prepared.plans_built,
    })
}

/// What [`replay`] found.
#[derive(Debug)]
pub struct Replayed {
    pub outcome: ReplayOutcome,
    /// Whether (and why) the replay built the trace's kept plans first.
    pub plans_built: Option<WhyBuilt>,
}

/// Runs the program of a prepared replay session to its end.
fn run_prepared(
    trace: &TraceDir,
    options: &ReplayOptions,
    prepared: &Prepared,
) -> Result<ReplayOutcome, ReplayError> {
    let header = prepared.header;
    let state_path = prepared.state_path.clone();
    let mut cmd = program_command(header, &prepared.session, &prepared.places);
    let one_cpu = match why_not_one_cpu(trace) {
        Some(_) => OneCpu::Never,
        None => options.one_cpu,
    };
    let mut governor = CpuGovernor::new(one_cpu, &state_path);

    let mut last_progress = (u64::MAX, Instant::now());
    let mut last_event = (u64::MAX, Instant::now());
    let stall_limit = stall_limit(options.watchdog, header.wall_time_ns);
    let mut deadlock = None;
    let mut stalled = None;
    let mut signalled = false;
    let recorded_signal = match header.ending {
        ProgramEnding::Signaled { signal } => Some(signal),
        ProgramEnding::Exited { .. } => None,
    };
    let exit_status = supervise(
        &mut cmd,
        &header.program,
        recorded_stdin(trace)?,
        TICK,
        || {
            let Some(s) = State::read(&state_path) else {
                return Tick::Continue;
            };
            governor.tick(&s.0);
            // The recording ended by a signal from outside (Ctrl-C, kill): once
            // every thread is where it was then, end the replay the same way.
            if let Some(signal) = recorded_signal.filter(|_| !signalled && s.all_at_end()) {
                signalled = true;
                return Tick::Signal(signal);
            }
            let progress = s.progress();
            if progress != last_event.0 {
                last_event = (progress, Instant::now());
            } else if last_event.1.elapsed() > stall_limit && s.any_waiting() {
                stalled = Some(last_event.1.elapsed());
                deadlock = Some(s);
                return Tick::Kill;
            }
            if progress != last_progress.0 || !s.all_waiting() {
                last_progress = (progress, Instant::now());
                return Tick::Continue;
            }
            if last_progress.1.elapsed() < options.watchdog {
                return Tick::Continue;
            }
            deadlock = Some(s);
            Tick::Kill
        },
    )?;

    if let Some(s) = deadlock {
        let mut report = deadlock_report(trace, &s);
        report.stalled_for = stalled;
        return Ok(ReplayOutcome::Deadlocked(report));
    }
    let final_state = State::read(&state_path);
    if let Some(s) = final_state.as_ref().filter(|s| s.0.diverged().is_some()) {
        return Ok(ReplayOutcome::Diverged(divergence_report(trace, s)));
    }
    // The runtime marks the main thread started as it attaches: a program
    // that ran without it (an edited environment, a binary whose runtime
    // was removed) ran unrecorded, whatever it printed.
    let attached = final_state
        .as_ref()
        .is_some_and(|s| s.status(0) != ThreadStatus::NotStarted as u32);
    if !attached {
        return Err(ReplayError::NotAttached {
            program: header.program.clone(),
            ending: match ProgramEnding::from(exit_status) {
                ProgramEnding::Exited { code } => format!("exited with status {code}"),
                ProgramEnding::Signaled { signal } => format!("was killed by signal {signal}"),
            },
        });
    }
    Ok(ReplayOutcome::Finished(ProgramEnding::from(exit_status)))
}

/// The recorded event `index` of thread `t`, if there is one.
fn recorded_event(trace: &TraceDir, t: u32, index: u64) -> Option<RecordedEvent> {
    let mut reader = trace.thread_events(t).ok()?;
    reader.nth(index as usize)?.ok()
}

/// The divergence the state file at `path` reports, if any.
pub(crate) fn divergence_in(trace: &TraceDir, path: &Path) -> Option<DivergenceReport> {
    State::read(path)
        .filter(|s| s.0.diverged().is_some())
        .map(|s| divergence_report(trace, &s))
}

fn divergence_report(trace: &TraceDir, s: &State) -> DivergenceReport {
    let what = s.0.diverged().unwrap_or(Divergence::Event);
    let d = s.0.divergence();
    DivergenceReport {
        what,
        thread: d.thread,
        index: d.index,
        expected: recorded_event(trace, d.thread, d.index),
        actual_kind: EventKind::from_code(d.actual_kind),
        actual_addr: d.actual_addr,
        actual_site: d.actual_site,
        expected_value: d.expected_value,
        actual_value: d.actual_value,
    }
}

fn deadlock_report(trace: &TraceDir, s: &State) -> DeadlockReport {
    let waits: Vec<WaitEdge> = (0..s.0.threads())
        .filter(|&t| is_stuck(s.status(t)))
        .map(|t| {
            let slot = s.0.thread(t);
            let real_call = slot.status == ThreadStatus::Blocked as u32;
            let at_end = slot.status == ThreadStatus::AtEnd as u32;
            let waiting = !real_call && !at_end;
            WaitEdge {
                thread: t,
                at_index: slot.index,
                next_event: recorded_event(trace, t, slot.index),
                waits_for: (waiting && slot.wait_thread != u32::MAX)
                    .then_some((slot.wait_thread, slot.wait_index)),
                turn: (waiting && slot.wait_thread == u32::MAX).then_some(slot.wait_index),
                blocked_in_call: real_call,
                at_end,
            }
        })
        .collect();
    let running = (0..s.0.threads())
        .filter(|&t| {
            let status = s.status(t);
            !is_stuck(status)
                && status != ThreadStatus::NotStarted as u32
                && status != ThreadStatus::Exited as u32
        })
        .collect();
    DeadlockReport {
        cycle: find_cycle(&waits),
        waits,
        stalled_for: None,
        running,
    }
}

/// How long no thread may reach an event while some wait before the
/// replay is reported as stalled: ten watchdog periods, and at least twice
/// the recording's whole run (a thread may compute that long between two
/// events without anything being wrong).
fn stall_limit(watchdog: Duration, recorded_ns: u64) -> Duration {
    (watchdog * 10).max(Duration::from_nanos(recorded_ns.saturating_mul(2)))
}

/// Follows "waits for" from each thread until a thread repeats.
fn find_cycle(waits: &[WaitEdge]) -> Vec<u32> {
    let next = |t: u32| {
        waits
            .iter()
            .find(|w| w.thread == t)
            .and_then(|w| w.waits_for)
            .map(|(u, _)| u)
    };
    for start in waits.iter().map(|w| w.thread) {
        let mut path = vec![start];
        let mut at = start;
        while let Some(u) = next(at) {
            if let Some(pos) = path.iter().position(|&p| p == u) {
                return path[pos..].to_vec();
            }
            path.push(u);
            at = u;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_reported_after_ten_watchdog_periods_or_twice_the_recording() {
        let watchdog = Duration::from_secs(2);
        assert_eq!(stall_limit(watchdog, 1_000_000), Duration::from_secs(20));
        assert_eq!(
            stall_limit(watchdog, 30_000_000_000),
            Duration::from_secs(60)
        );
        assert_eq!(
            stall_limit(watchdog, u64::MAX),
            Duration::from_nanos(u64::MAX)
        );
    }

    fn edge(thread: u32, waits_for: Option<u32>) -> WaitEdge {
        WaitEdge {
            thread,
            at_index: 0,
            next_event: None,
            waits_for: waits_for.map(|u| (u, 0)),
            turn: None,
            blocked_in_call: false,
            at_end: false,
        }
    }

    #[test]
    fn finds_the_cycle_of_waits() {
        let waits = vec![edge(0, Some(1)), edge(1, Some(2)), edge(2, Some(1))];
        assert_eq!(find_cycle(&waits), vec![1, 2]);
        assert!(find_cycle(&[edge(0, Some(5))]).is_empty());
    }

    #[test]
    fn environment_swaps_mode_and_session_keeping_lengths() {
        let recorded: Vec<(OsString, OsString)> = vec![
            ("A".into(), "1".into()),
            (MODE_ENV.into(), "record".into()),
            (SESSION_ENV.into(), "0000000000000000".into()),
        ];
        let replayed = replay_environment(&recorded, "0123456789abcdef");
        assert_eq!(replayed[1].1, "replay");
        assert_eq!(replayed[2].1, "0123456789abcdef");
        for (r, p) in recorded.iter().zip(&replayed) {
            assert_eq!(r.0.len() + r.1.len(), p.0.len() + p.1.len());
        }
    }
}
