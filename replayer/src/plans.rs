//! Replay plans (format in docs/FORMAT.md): one file per thread.
//!
//! - kept, in `<trace>/plans/`, built once from the split (whose per-thread
//!   logs are then removed): the splitter's sync points (waits, notify)
//!   merged with every event whose recorded result replay needs (thread
//!   ids, trylock and wait results, random and time values, heap addresses
//!   to check), plus the start of each run of the sequential total order
//!   (`crate::runs`) with its turn: in sequential replay a thread waits for
//!   its turn at the start of a run and passes it on at the end; parallel
//!   replay ignores the turns;
//! - verify, built from the kept plans into the replay session for each
//!   `--verify` replay: a checked point for every event.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use rr_lite_splitter::{EventRef, NoProgress, Notify, SplitOptions, SyncPlan, ThreadLog};
use rr_lite_trace::plan::{
    KEPT_PLANS_DIR, MAX_PLAN_BYTES, OLD_PLAN_DIRS, PlanCursor, PlanMode, PlanPoint, PlanVariant,
    PlanWriter, always_a_point, check_plan, flags, plan_name, replay_needs_payload,
};
use rr_lite_trace::{ACCESS_HASH_SEED, EventKind, RecordedEvent, TraceDir, fold_access_hash};

use crate::ReplayError;
use crate::hidden_waits::ClockedPoints;
use crate::runs::ThreadSchedule;

type Writer = PlanWriter<BufWriter<File>>;

/// Marks a complete plan directory; holds [`BUILDER_VERSION`].
const COMPLETE_FILE: &str = "complete";
/// How plans are built from a split: bumped when a change makes the plans
/// already in traces wrong (2: sequential plans move blocking calls' waits
/// to the events nested in them; 3: the split keeps the pairs of events a
/// call nests events before, which replay waits for before the call), so
/// they are built again.
const BUILDER_VERSION: &str = "3\n";

/// Returns the directory of up-to-date plans of `variant`, building them
/// (and the split, if the trace has not been split yet) when needed: the
/// plans kept in the trace, or for plans that are not kept
/// (`PlanVariant::kept_in_trace`), built from those into `session` (the
/// replay's own directory).
pub fn ensure_plans(
    trace: &TraceDir,
    variant: PlanVariant,
    session: &Path,
) -> Result<PathBuf, ReplayError> {
    // Another replay or split of this trace may be writing the same files.
    let _lock = trace.lock_derived_files()?;
    let kept = ensure_kept_plans(trace)?;
    if variant.kept_in_trace() {
        return Ok(kept);
    }
    let dir = session.join(variant.dir_name());
    build_into_place(&dir, |tmp| build_verify(trace, &kept, tmp))?;
    Ok(dir)
}

/// The kept plans (`KEPT_PLANS_DIR`), built when missing, stale or damaged:
/// from the split's replay logs when a split made them (`rr-lite split`,
/// with its options), else from the sync points placed in one pass over
/// the trace, which also writes the split's statistics. Once built, the
/// split's per-thread logs are removed (its statistics stay): the plans
/// hold all they say, and a trace keeps one copy of its points.
fn ensure_kept_plans(trace: &TraceDir) -> Result<PathBuf, ReplayError> {
    let dir = trace.path().join(KEPT_PLANS_DIR);
    let split_stamp = trace
        .path()
        .join(rr_lite_splitter::SPLIT_DIR)
        .join(rr_lite_splitter::replay_log::STATS_FILE);
    if is_fresh(&dir, Some(split_stamp.as_path())) && plans_verify(trace, &dir) {
        return Ok(dir);
    }
    build_into_place(&dir, |tmp| {
        let from_split = read_logs(trace).map(SyncSource::Split);
        match from_split.and_then(|source| build_kept(trace, tmp, &source)) {
            // No split logs, or damaged ones: the split is derived from the
            // trace too, so its points are placed again, once.
            Err(ReplayError::Split(_)) => {
                let (analysis, plan) = rr_lite_splitter::place_sync_points(
                    trace,
                    &SplitOptions::default(),
                    &NoProgress,
                )?;
                rr_lite_splitter::write_split(trace.path(), &[], &analysis.stats)?;
                build_kept(trace, tmp, &SyncSource::Placed(plan))
            }
            other => other,
        }
    })?;
    for t in 0..trace.threads() {
        let log = trace
            .path()
            .join(rr_lite_splitter::SPLIT_DIR)
            .join(rr_lite_splitter::replay_log_name(t));
        let _ = std::fs::remove_file(log);
    }
    for old in OLD_PLAN_DIRS {
        let _ = std::fs::remove_dir_all(trace.path().join(old));
    }
    Ok(dir)
}

/// Where the kept plans' sync points come from.
enum SyncSource {
    /// The replay logs `rr-lite split` wrote.
    Split(Vec<ThreadLog>),
    /// Points placed in memory, their events not filled in.
    Placed(SyncPlan),
}

/// A sync point as plans need it: index, waits and whether it notifies.
type PointRef<'a> = (u64, &'a [EventRef], Notify);

impl SyncSource {
    fn threads(&self) -> usize {
        match self {
            SyncSource::Split(logs) => logs.len(),
            SyncSource::Placed(plan) => plan.threads().len(),
        }
    }

    /// Thread `t`'s points, by index.
    fn points(&self, t: u32) -> Vec<PointRef<'_>> {
        let t = t as usize;
        match self {
            SyncSource::Split(logs) => logs.get(t).map_or(Vec::new(), |l| {
                (l.sync_points.iter())
                    .map(|p| (p.index, p.waits.as_slice(), p.notify))
                    .collect()
            }),
            SyncSource::Placed(plan) => plan.threads().get(t).map_or(Vec::new(), |th| {
                (th.points().iter())
                    .map(|p| (p.index, p.waits.as_slice(), p.notify))
                    .collect()
            }),
        }
    }
}

/// Builds plans with `build` into a temporary directory beside `dir`, then
/// marks them complete and moves them into place.
fn build_into_place(
    dir: &Path,
    build: impl FnOnce(&Path) -> Result<(), ReplayError>,
) -> Result<(), ReplayError> {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.with_file_name(format!("{name}.tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    rr_lite_trace::private::create_dir_all(&tmp).map_err(ReplayError::io("create", &tmp))?;
    if let Err(e) = build(&tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    rr_lite_trace::private::write(&tmp.join(COMPLETE_FILE), BUILDER_VERSION)
        .map_err(ReplayError::io("write", tmp.join(COMPLETE_FILE)))?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&tmp, dir).map_err(ReplayError::io("move into place", dir))
}

/// Every thread's plan in `dir` is whole (its checksum matches) and is that
/// thread's, for the number of events the trace has: the runtime trusts
/// the plans it maps, and a damaged one would leave the replay waiting for
/// events that never come. A plan that fails is rebuilt, not reported:
/// plans are derived from the trace. The plans are checked side by side
/// (every later replay waits for this before the program starts).
fn plans_verify(trace: &TraceDir, dir: &Path) -> bool {
    let Some(header) = trace.header() else {
        return false;
    };
    let threads: Vec<u32> = (0..trace.threads()).collect();
    let verified = rr_lite_trace::workers::map_parallel(threads, |t| {
        let Some(&accesses) = header.entries.get(t as usize) else {
            return false;
        };
        rr_lite_trace::bounded::read(&dir.join(plan_name(t)), MAX_PLAN_BYTES)
            .is_ok_and(|bytes| rr_lite_trace::plan::verify_plan(&bytes, t, accesses).is_ok())
    });
    verified.into_iter().all(|ok| ok)
}

/// Plans exist, are complete, were built the way this replayer builds them,
/// and are newer than the split they came from.
fn is_fresh(dir: &Path, source: Option<&Path>) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let stamp = dir.join(COMPLETE_FILE);
    let Some(built) = modified(&stamp) else {
        return false;
    };
    if rr_lite_trace::bounded::read(&stamp, 64).ok().as_deref() != Some(BUILDER_VERSION.as_bytes())
    {
        return false;
    }
    source.is_none_or(|s| modified(s).is_some_and(|m| m <= built))
}

fn create_writer(dir: &Path, thread: u32, mode: PlanMode) -> Result<Writer, ReplayError> {
    let path = dir.join(plan_name(thread));
    let file = rr_lite_trace::private::create(&path).map_err(ReplayError::io("create", &path))?;
    PlanWriter::new(BufWriter::new(file), thread, mode).map_err(ReplayError::io("write", path))
}

fn finish_writer(
    dir: &Path,
    thread: u32,
    w: Writer,
    accesses: u64,
    hash: u64,
) -> Result<(), ReplayError> {
    let path = dir.join(plan_name(thread));
    let out = w
        .finish(accesses, hash)
        .map_err(ReplayError::io("write", &path))?;
    out.into_inner()
        .map_err(|e| ReplayError::io("write", &path)(e.into_error()))?
        .sync_all()
        .map_err(ReplayError::io("write", path))
}

/// The point for a recorded event: checked, with its result when replay
/// needs it.
fn point_for(e: &RecordedEvent) -> PlanPoint {
    let mut p = PlanPoint {
        index: e.index,
        seq: u64::MAX,
        addr: e.addr,
        payload: 0,
        kind: e.kind as u8,
        flags: flags::CHECK,
        waits: Vec::new(),
    };
    if replay_needs_payload(e.kind) {
        p.flags |= flags::PAYLOAD;
        p.payload = e.payload;
    }
    p
}

/// One thread's plan before it is written: its points, event count and
/// access hash, and whether its last event ends the process.
#[derive(Debug, Default)]
struct ThreadPoints {
    points: Vec<PlanPoint>,
    count: u64,
    hash: u64,
    ends_process: bool,
}

fn read_logs(trace: &TraceDir) -> Result<Vec<ThreadLog>, ReplayError> {
    let logs: Vec<ThreadLog> = rr_lite_splitter::read_split(trace.path())?;
    if logs.len() != trace.threads() as usize {
        return Err(ReplayError::SplitMismatch {
            path: trace.path().to_path_buf(),
            what: format!("{} replay logs for {} threads", logs.len(), trace.threads()),
        });
    }
    Ok(logs)
}

/// The parallel points of thread `t` (sync points and recorded results),
/// handed one by one to `emit` with their event's Lamport clock.
fn parallel_points(
    trace: &TraceDir,
    t: u32,
    sync_points: &[PointRef<'_>],
    mut emit: impl FnMut(PlanPoint, u64) -> Result<(), ReplayError>,
) -> Result<ThreadPoints, ReplayError> {
    let mut sync = sync_points.iter().peekable();
    let mut summary = ThreadPoints {
        hash: ACCESS_HASH_SEED,
        ..ThreadPoints::default()
    };
    for e in trace.thread_events(t)? {
        let e = e?;
        summary.count += 1;
        summary.hash = fold_access_hash(summary.hash, e.kind, e.addr);
        summary.ends_process = matches!(e.kind, EventKind::ProcessExit | EventKind::FatalSignal);
        let sync_point = sync.next_if(|s| s.0 == e.index);
        if sync_point.is_none() && !always_a_point(e.kind) {
            continue;
        }
        let mut p = point_for(&e);
        if let Some(&(_, waits, notify)) = sync_point {
            // A wait on the thread itself is implied by program order.
            p.waits = waits
                .iter()
                .filter(|w| w.thread != t)
                .map(|w| (w.thread, w.index))
                .collect();
            if notify != Notify::None {
                p.flags |= flags::NOTIFY;
            }
        }
        emit(p, e.clock)?;
    }
    if let Some(s) = sync.next() {
        return Err(ReplayError::SplitMismatch {
            path: trace.path().to_path_buf(),
            what: format!(
                "thread {t} has a sync point at event {} past its last event",
                s.0
            ),
        });
    }
    Ok(summary)
}

/// Verify plans: a checked point for every event, with the waits and
/// notifications of the kept plans' points (their turns left out: verify
/// replays in parallel).
fn build_verify(trace: &TraceDir, kept: &Path, dir: &Path) -> Result<(), ReplayError> {
    let built = rr_lite_trace::workers::map_parallel((0..trace.threads()).collect(), |t| {
        build_verify_thread(trace, t, kept, dir)
    });
    built.into_iter().collect()
}

/// Thread `t`'s verify plan (see [`build_verify`]).
fn build_verify_thread(
    trace: &TraceDir,
    t: u32,
    kept: &Path,
    dir: &Path,
) -> Result<(), ReplayError> {
    let source = kept.join(plan_name(t));
    let bytes = rr_lite_trace::bounded::read(&source, MAX_PLAN_BYTES)?;
    let header = check_plan(&bytes).map_err(|what| ReplayError::SplitMismatch {
        path: source.clone(),
        what: what.to_string(),
    })?;
    let mut cursor = PlanCursor::new(&bytes, header.points);
    let mut kept_points = std::iter::from_fn(|| cursor.next_point()).peekable();
    let mut writer = create_writer(dir, t, PlanMode::Parallel)?;
    let (mut count, mut hash) = (0, ACCESS_HASH_SEED);
    for e in trace.thread_events(t)? {
        let e = e?;
        count += 1;
        hash = fold_access_hash(hash, e.kind, e.addr);
        let mut p = point_for(&e);
        if let Some(k) = kept_points.next_if(|k| k.index == e.index) {
            p.waits = k.waits().collect();
            p.flags |= k.flags & flags::NOTIFY;
        }
        writer
            .push(&p)
            .map_err(ReplayError::io("write", dir.join(plan_name(t))))?;
    }
    finish_writer(dir, t, writer, count, hash)
}

/// The kept plans, for parallel and sequential replay: the parallel points
/// (sync points and recorded results; in sequential replay the dependency
/// waits still hold, so a run cut short by a blocking call cannot reorder
/// anything that conflicts), and the start of each run of the total order
/// (which also orders the events nested in blocking calls after the release
/// their call waited for: `crate::hidden_waits`) marked with its turn, which
/// parallel replay ignores. A last process exit or fatal signal takes no turn: the runtime
/// makes it wait for every other thread instead.
fn build_kept(trace: &TraceDir, dir: &Path, source: &SyncSource) -> Result<(), ReplayError> {
    if source.threads() > trace.threads() as usize {
        return Err(ReplayError::SplitMismatch {
            path: trace.path().to_path_buf(),
            what: format!(
                "sync points for {} threads, the trace has {}",
                source.threads(),
                trace.threads()
            ),
        });
    }
    let read = rr_lite_trace::workers::map_parallel((0..trace.threads()).collect(), |t| {
        let mut points = Vec::new();
        let mut point_clocks = Vec::new();
        let mut summary = parallel_points(trace, t, &source.points(t), |p, clock| {
            points.push(p);
            point_clocks.push(clock);
            Ok(())
        })?;
        summary.points = points;
        Ok::<_, ReplayError>((summary, point_clocks))
    });
    let (threads, clocks): (Vec<ThreadPoints>, Vec<Vec<u64>>) = read
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    // The total order also follows the waits of blocking calls' events on
    // the events nested in them; the plans' own waits stay the splitter's
    // (parallel replay needs no more, and waiting there for a thread that
    // spins in a library for this one would hang it).
    let clocked: Vec<ClockedPoints<'_>> = threads
        .iter()
        .zip(&clocks)
        .map(|(th, clocks)| ClockedPoints {
            points: &th.points,
            clocks,
        })
        .collect();
    let nested = crate::hidden_waits::nested_waits(&clocked);
    let schedule: Vec<ThreadSchedule> = threads
        .iter()
        .zip(&nested)
        .map(|(th, added)| ThreadSchedule {
            events: th.count - u64::from(th.ends_process),
            points: crate::hidden_waits::schedule_points(&th.points, added),
        })
        .collect();
    let runs = crate::runs::linearise(&schedule).map_err(|stuck| ReplayError::SplitMismatch {
        path: trace.path().to_path_buf(),
        what: format!(
            "no total order meets the dependencies (thread {} at event {})",
            stuck.thread, stuck.index
        ),
    })?;
    for ((t, th), starts) in (0..trace.threads()).zip(threads).zip(runs) {
        let mut writer = create_writer(dir, t, PlanMode::Sequential)?;
        for p in with_run_starts(th.points, &starts) {
            writer
                .push(&p)
                .map_err(ReplayError::io("write", dir.join(plan_name(t))))?;
        }
        finish_writer(dir, t, writer, th.count, th.hash)?;
    }
    Ok(())
}

/// `points` with each run start `(index, turn)` marked SEQUENCED (a new,
/// unchecked point where there was none), sorted by index.
fn with_run_starts(points: Vec<PlanPoint>, starts: &[(u64, u64)]) -> Vec<PlanPoint> {
    let mut merged = Vec::with_capacity(points.len() + starts.len());
    let mut starts = starts.iter().peekable();
    for mut p in points {
        while let Some(&&(index, turn)) = starts.peek().filter(|s| s.0 < p.index) {
            merged.push(run_start(index, turn));
            starts.next();
        }
        if let Some(&(_, turn)) = starts.next_if(|s| s.0 == p.index) {
            p.seq = turn;
            p.flags |= flags::SEQUENCED;
        }
        merged.push(p);
    }
    merged.extend(starts.map(|&(index, turn)| run_start(index, turn)));
    merged
}

fn run_start(index: u64, turn: u64) -> PlanPoint {
    PlanPoint {
        index,
        seq: turn,
        flags: flags::SEQUENCED,
        ..PlanPoint::default()
    }
}
