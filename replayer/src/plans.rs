//! Replay plans (format in docs/FORMAT.md): one file per thread.
//!
//! - kept, in `<trace>/plans/`, built in the split's one pass over the
//!   trace ([`split_and_plan`]): the splitter's sync points (waits, notify)
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

use rr_lite_splitter::{
    Analysis, Analyzer, NoProgress, Notify, PlannedPoint, Progress, RecordedPoint, RecordedPoints,
    SplitOptions, SplitStats, Stage, SyncPlan, ThreadPlan,
};
use rr_lite_trace::plan::{
    KEPT_PLANS_DIR, MAX_PLAN_BYTES, OLD_PLAN_DIRS, PlanCursor, PlanMode, PlanPoint, PlanVariant,
    PlanWriter, check_plan, decode_results, flags, plan_name, replay_needs_payload,
};
use rr_lite_trace::{ACCESS_HASH_SEED, TraceDir, fold_access_hash};

use crate::ReplayError;
use crate::runs::ThreadSchedule;

type Writer = PlanWriter<BufWriter<File>>;

/// Marks a complete plan directory; holds [`BUILDER_VERSION`], and for the
/// kept plans the [`split_identity`] of the split they were built with.
const COMPLETE_FILE: &str = "complete";
/// How plans are built from a split: bumped when a change makes the plans
/// already in traces wrong (2: sequential plans move blocking calls' waits
/// to the events nested in them; 3: the split keeps the pairs of events a
/// call nests events before, which replay waits for before the call; 4:
/// the access hash of plan version 6), so they are built again.
const BUILDER_VERSION: &str = "4\n";

/// Returns the directory of up-to-date plans of `variant`, building them
/// (and the split, if the trace has not been split yet) when needed: the
/// plans kept in the trace, or for plans that are not kept
/// (`PlanVariant::kept_in_trace`), built from those into `session` (the
/// replay's own directory).
pub fn ensure_plans(
    trace: &TraceDir,
    variant: PlanVariant,
    session: &Path,
) -> Result<EnsuredPlans, ReplayError> {
    // Another replay or split of this trace may be writing the same files.
    let _lock = trace.lock_derived_files()?;
    let (kept, built) = ensure_kept_plans(trace)?;
    if variant.kept_in_trace() {
        return Ok(EnsuredPlans { dir: kept, built });
    }
    let dir = session.join(variant.dir_name());
    build_into_place(&dir, BUILDER_VERSION, |tmp| build_verify(trace, &kept, tmp))?;
    Ok(EnsuredPlans { dir, built })
}

/// The plans a replay runs with, and whether it had to build the trace's
/// kept plans first (and why).
#[derive(Debug)]
pub struct EnsuredPlans {
    pub dir: PathBuf,
    pub built: Option<WhyBuilt>,
}

/// Why a replay built the trace's kept plans instead of using them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhyBuilt {
    /// No plans yet: the trace's first replay (or the first after a split
    /// that was interrupted).
    Missing,
    /// Built by an rr-lite that builds them otherwise.
    OtherBuilder,
    /// Built with another split of the trace than its latest one.
    OtherSplit,
    /// The split's statistics, which name the split, are missing.
    SplitStatsMissing,
    /// A plan fails its checks (see [`plans_verify`]).
    Damaged { thread: u32 },
}

impl WhyBuilt {
    /// The plans existed but could not be used: worth telling the user,
    /// unlike a first replay's building them.
    pub fn plans_were_unusable(&self) -> bool {
        *self != WhyBuilt::Missing
    }
}

impl std::fmt::Display for WhyBuilt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WhyBuilt::Missing => write!(f, "the trace had no plans"),
            WhyBuilt::OtherBuilder => {
                write!(
                    f,
                    "its plans were built by an rr-lite that builds them otherwise"
                )
            }
            WhyBuilt::OtherSplit => {
                write!(f, "its plans were built with another split than its latest")
            }
            WhyBuilt::SplitStatsMissing => {
                write!(f, "the split's statistics (split/stats.json) were missing")
            }
            WhyBuilt::Damaged { thread } => {
                write!(f, "the plan of thread {thread} failed its checks")
            }
        }
    }
}

/// The kept plans (`KEPT_PLANS_DIR`), built when missing, stale or damaged,
/// with the options of the trace's last `rr-lite split` if it had one, else
/// the default ones.
fn ensure_kept_plans(trace: &TraceDir) -> Result<(PathBuf, Option<WhyBuilt>), ReplayError> {
    let dir = trace.path().join(KEPT_PLANS_DIR);
    let why = match kept_stamp_matches(trace, &dir) {
        Ok(()) => plans_verify(trace, &dir).err(),
        Err(why) => Some(why),
    };
    if why.is_some() {
        let options = SplitStats::options_of_split(trace.path()).unwrap_or_default();
        split_and_plan(trace, &options, &NoProgress)?;
    }
    Ok((dir, why))
}

/// What tells the split which critical sections run only instrumented code
/// (`rr_lite_symbols::SectionCode`): the recorded executable's code, read
/// from its file or its packed copy when that is the recorded build. None
/// without it (a rebuilt program would answer for other code): then every
/// mutex keeps its recorded order.
pub fn section_code(trace: &TraceDir) -> Option<rr_lite_splitter::SectionCode> {
    use rr_lite_trace::identity::program_id;
    let header = trace.header()?;
    let recorded = header.program.clone();
    let file = if program_id(&recorded).ok()? == header.program_id {
        recorded.clone()
    } else {
        let manifest = rr_lite_trace::pack::Manifest::read(trace.path()).ok()??;
        let (copy, id) = manifest.copy_of(trace.path(), &recorded)?;
        (id == header.program_id).then_some(copy)?
    };
    let map = rr_lite_symbols::ModuleMap::read(&trace.maps_path()).ok()?;
    let mut code = rr_lite_symbols::SectionCode::new(map);
    code.read_module_from(recorded.clone(), file);
    code.trust(recorded);
    Some(rr_lite_splitter::SectionCode(Box::new(
        move |lock, unlock| code.only_instrumented(lock, unlock),
    )))
}

/// The pairs and sync points of `trace` (`place_sync_points`), gathering
/// what the plans need, with sections floating where the options let them.
fn place_points(
    trace: &TraceDir,
    options: &SplitOptions,
    progress: &dyn Progress,
) -> rr_lite_splitter::Result<(rr_lite_splitter::Analysis, rr_lite_splitter::SyncPlan)> {
    let analyzer = Analyzer::gathering_at_most(options, max_plan_points())?;
    let analyzer = match section_code(trace) {
        Some(code) => analyzer.floating_sections(code),
        None => analyzer,
    };
    rr_lite_splitter::place_sync_points(trace, analyzer, progress)
}

/// Splits `trace` and builds its kept plans in one pass over its global
/// order: the split's statistics go to `<trace>/split/stats.json` and the
/// plans to `<trace>/plans/`, replacing earlier ones (the caller holds the
/// trace's lock on derived files). The thread logs are not read again: the
/// pass gathers every event the plans hold (`rr_lite_splitter::recorded`).
pub fn split_and_plan(
    trace: &TraceDir,
    options: &SplitOptions,
    progress: &dyn Progress,
) -> Result<SplitStats, ReplayError> {
    let start = std::time::Instant::now();
    let (mut analysis, sync) = match place_points(trace, options, progress) {
        // A floated section's lock is a point (its held-back pairs order
        // the sequential turns): a trace with more of them than plans may
        // hold is split again with every lock in the recorded order, which
        // needs none (the statistics say so).
        Err(rr_lite_splitter::SplitError::TooManyPlanPoints { .. }) if options.float_sections => {
            let in_order = SplitOptions {
                float_sections: false,
                ..*options
            };
            place_points(trace, &in_order, progress)?
        }
        result => result?,
    };
    progress.stage(Stage::Writing);
    // The pairs are in the plan now; plans are built thread by thread from
    // what each thread's points take, freed as they go.
    drop(std::mem::take(&mut analysis.pairs));
    let recorded = analysis.recorded.take();
    let threads = kept_plans(trace, &analysis, sync, recorded)?;
    analysis.stats.set_time(start.elapsed());
    // The statistics first: the plans' stamp names them (`kept_stamp`).
    rr_lite_splitter::write_split(trace.path(), &[], &analysis.stats)?;
    let dir = trace.path().join(KEPT_PLANS_DIR);
    let stamp = kept_stamp(&split_identity(trace)?);
    build_into_place(&dir, &stamp, |tmp| write_kept(tmp, threads))?;
    for old in OLD_PLAN_DIRS {
        let _ = std::fs::remove_dir_all(trace.path().join(old));
    }
    Ok(analysis.stats)
}

/// Environment variable that sets the most points plans may hold.
pub const MAX_PLAN_POINTS_ENV: &str = "RR_LITE_MAX_PLAN_POINTS";

/// The most points the plans may hold: `RR_LITE_MAX_PLAN_POINTS` if set,
/// else what the memory available now holds at
/// [`rr_lite_splitter::recorded::BYTES_PER_POINT`] a point (plans are
/// built in memory), so that a trace with too many ends in a clear error
/// and not in the kernel's out-of-memory killer.
fn max_plan_points() -> u64 {
    if let Some(n) = std::env::var(MAX_PLAN_POINTS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return n;
    }
    let available_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
    match available_kib {
        Some(kib) => (kib * 1024 / rr_lite_splitter::recorded::BYTES_PER_POINT).max(1 << 20),
        None => u64::MAX,
    }
}

/// Builds plans with `build` into a temporary directory beside `dir`, then
/// marks them complete with `stamp` and moves them into place.
fn build_into_place(
    dir: &Path,
    stamp: &str,
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
    rr_lite_trace::private::write(&tmp.join(COMPLETE_FILE), stamp)
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
fn plans_verify(trace: &TraceDir, dir: &Path) -> Result<(), WhyBuilt> {
    let header = trace.header().ok_or(WhyBuilt::Missing)?;
    let threads: Vec<u32> = (0..trace.threads()).collect();
    let verified = rr_lite_trace::workers::map_parallel(threads, |t| {
        let Some(&accesses) = header.entries.get(t as usize) else {
            return Err(WhyBuilt::Damaged { thread: t });
        };
        rr_lite_trace::bounded::read(&dir.join(plan_name(t)), MAX_PLAN_BYTES)
            .is_ok_and(|bytes| rr_lite_trace::plan::verify_plan(&bytes, t, accesses).is_ok())
            .then_some(())
            .ok_or(WhyBuilt::Damaged { thread: t })
    });
    verified.into_iter().collect()
}

/// What identifies the trace's latest split: a hash of its statistics
/// file (which holds the split's options and counts), so that plans know
/// which split they were built with without comparing file times, which
/// a clock stepping back or coarse timestamps can put out of order. Two
/// splits with byte-identical statistics had the same options and the same
/// trace, so their plans are the same.
fn split_identity(trace: &TraceDir) -> Result<String, ReplayError> {
    let path = rr_lite_splitter::replay_log::stats_path(trace.path());
    let hash = rr_lite_trace::codec::checksum::fnv1a_of_file(&path)
        .map_err(ReplayError::io("read", &path))?;
    Ok(format!("{hash:016x}"))
}

/// The `complete` stamp of kept plans built with the split `identity`.
fn kept_stamp(identity: &str) -> String {
    format!("{BUILDER_VERSION}split {identity}\n")
}

/// The kept plans in `dir` are complete, were built the way this replayer
/// builds them, and with the trace's latest split.
fn kept_stamp_matches(trace: &TraceDir, dir: &Path) -> Result<(), WhyBuilt> {
    let stamp = rr_lite_trace::bounded::read(&dir.join(COMPLETE_FILE), 256)
        .map_err(|_| WhyBuilt::Missing)?;
    let stamp = String::from_utf8_lossy(&stamp);
    // (Plans built before the stamp named the split hold the version only.)
    if !stamp.starts_with(BUILDER_VERSION) || !stamp.contains("split ") {
        return Err(WhyBuilt::OtherBuilder);
    }
    match split_identity(trace) {
        Ok(identity) if stamp == kept_stamp(&identity) => Ok(()),
        Ok(_) => Err(WhyBuilt::OtherSplit),
        Err(_) => Err(WhyBuilt::SplitStatsMissing),
    }
}

/// A writer of thread `thread`'s plan in `dir`, with its results array.
fn create_writer(
    dir: &Path,
    thread: u32,
    mode: PlanMode,
    results: &[u64],
) -> Result<Writer, ReplayError> {
    let path = dir.join(plan_name(thread));
    let file = rr_lite_trace::private::create(&path).map_err(ReplayError::io("create", &path))?;
    PlanWriter::new(BufWriter::new(file), thread, mode, results)
        .map_err(ReplayError::io("write", path))
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
fn point_for(e: &RecordedPoint) -> PlanPoint {
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
    // The next kept point, compared by index at every event (a `Peekable`
    // moved the point, some 150 bytes, out and back at each).
    let mut next_kept = cursor.next_point();
    let results = decode_results(&bytes).map_err(|what| ReplayError::SplitMismatch {
        path: source.clone(),
        what: what.to_string(),
    })?;
    let mut writer = create_writer(dir, t, PlanMode::Parallel, &results)?;
    let path = dir.join(plan_name(t));
    let (mut count, mut hash) = (0, ACCESS_HASH_SEED);
    for e in trace.thread_events(t)? {
        let e = e?;
        count += 1;
        hash = fold_access_hash(hash, e.index, e.kind, e.addr);
        let mut p = point_for(&RecordedPoint {
            index: e.index,
            kind: e.kind,
            addr: e.addr,
            payload: e.payload,
        });
        if let Some(k) = next_kept.as_ref().filter(|k| k.index == e.index) {
            p.waits = k.waits().collect();
            p.flags |= k.flags & flags::NOTIFY;
            next_kept = cursor.next_point();
        }
        // (The path built once: `io` copies it only on an error.)
        writer.push(&p).map_err(ReplayError::io("write", &path))?;
    }
    finish_writer(dir, t, writer, count, hash)
}

/// One thread's kept plan before it is written: its points (run starts
/// marked), event count and access hash.
struct KeptThread {
    points: Vec<KeptPoint>,
    /// Every point's waits, one after the other (`KeptPoint::first_wait`).
    waits: Vec<(u32, u64)>,
    /// The results array (`rr_lite_trace::plan::in_results`).
    results: Vec<u64>,
    count: u64,
    hash: u64,
}

impl KeptThread {
    fn waits_of(&self, p: &KeptPoint) -> &[(u32, u64)] {
        &self.waits[p.first_wait..p.first_wait + p.wait_count as usize]
    }
}

/// A [`PlanPoint`] while the plans are built, its waits in its thread's
/// [`KeptThread::waits`]: 48 bytes and no allocation of its own, where a
/// `PlanPoint` with one wait takes some 96 (the plans of a trace hold
/// millions of points at once).
#[derive(Debug, Clone, Copy)]
struct KeptPoint {
    index: u64,
    seq: u64,
    addr: u64,
    payload: u64,
    first_wait: usize,
    wait_count: u32,
    kind: u8,
    flags: u8,
}

impl KeptPoint {
    /// An unchecked point at `index` (a source of pairs, or a run start).
    fn at(index: u64) -> KeptPoint {
        KeptPoint {
            index,
            seq: u64::MAX,
            addr: 0,
            payload: 0,
            first_wait: 0,
            wait_count: 0,
            kind: 0,
            flags: 0,
        }
    }

    /// The point for a recorded event: checked, with its result when replay
    /// needs it (as [`point_for`]).
    fn recorded(e: &RecordedPoint) -> KeptPoint {
        let p = point_for(e);
        KeptPoint {
            addr: p.addr,
            payload: p.payload,
            kind: p.kind,
            flags: p.flags,
            ..KeptPoint::at(e.index)
        }
    }

    /// The point as the plan holds it, its waits in `into` (reused: no
    /// allocation per point).
    fn write_into(&self, waits: &[(u32, u64)], into: &mut PlanPoint) {
        into.index = self.index;
        into.seq = self.seq;
        into.addr = self.addr;
        into.payload = self.payload;
        into.kind = self.kind;
        into.flags = self.flags;
        into.waits.clear();
        into.waits.extend_from_slice(waits);
    }
}

/// The kept plans, for parallel and sequential replay: the sync points
/// merged with the events whose recorded results replay needs, and the
/// start of each run of the total order (which also follows the nested
/// waits of `rr_lite_splitter::recorded`, so the events nested in blocking
/// calls come after the release their call waited for) marked with its
/// turn, which parallel replay ignores. In sequential replay the
/// dependency waits still hold, so a run cut short by a blocking call
/// cannot reorder anything that conflicts. A last process exit or fatal
/// signal takes no turn: the runtime makes it wait for every other thread
/// instead.
fn kept_plans(
    trace: &TraceDir,
    analysis: &Analysis,
    sync: SyncPlan,
    recorded: Option<RecordedPoints>,
) -> Result<Vec<KeptThread>, ReplayError> {
    let mismatch = |what: String| ReplayError::SplitMismatch {
        path: trace.path().to_path_buf(),
        what,
    };
    let recorded =
        recorded.ok_or_else(|| mismatch("the analysis gathered no plan points".into()))?;
    let threads = trace.threads() as usize;
    if analysis.threads.len() > threads || sync.threads().len() > threads {
        return Err(mismatch(format!(
            "events of {} threads, the trace has {threads}",
            analysis.threads.len().max(sync.threads().len())
        )));
    }
    let mut sync = sync.into_threads().into_iter();
    let mut records = recorded.threads.into_iter();
    let mut kept = Vec::with_capacity(threads);
    let mut nested = Vec::with_capacity(threads);
    for t in 0..threads {
        let mut record = records.next().unwrap_or_default();
        let thread = merge_points(t as u32, sync.next(), &record.points);
        let summary = analysis.threads.get(t).copied().unwrap_or_default();
        kept.push(KeptThread {
            results: std::mem::take(&mut record.results),
            count: summary.accesses,
            hash: summary.access_hash,
            ..thread
        });
        nested.push((
            std::mem::take(&mut record.nested_waits),
            summary.accesses - u64::from(record.ends_process),
        ));
    }
    let schedule: Vec<ThreadSchedule> = (kept.iter().zip(&nested))
        .map(|(thread, (nested, events))| schedule_of(thread, nested, *events))
        .collect();
    let runs = crate::runs::linearise(&schedule).map_err(|stuck| {
        mismatch(format!(
            "no total order meets the dependencies (thread {} at event {})",
            stuck.thread, stuck.index
        ))
    })?;
    drop(schedule);
    for (thread, starts) in kept.iter_mut().zip(runs) {
        thread.points = with_run_starts(std::mem::take(&mut thread.points), &starts);
    }
    Ok(kept)
}

/// The linearisation's view of `thread`'s points (`crate::runs`): those
/// that wait, on their own or through `nested` (its nested waits, by
/// point); `events`: its events that take turns.
fn schedule_of<'a>(
    thread: &'a KeptThread,
    nested: &'a [(u64, rr_lite_splitter::EventRef)],
    events: u64,
) -> ThreadSchedule<'a> {
    let mut at_nested = nested.iter().map(|n| n.0).peekable();
    let mut points = Vec::new();
    for p in &thread.points {
        let mut has_nested = false;
        while let Some(at) = at_nested.next_if(|&at| at <= p.index) {
            debug_assert_eq!(at, p.index, "a nested wait at no point");
            has_nested = true;
        }
        if p.wait_count > 0 || has_nested {
            points.push((p.index, thread.waits_of(p)));
        }
    }
    ThreadSchedule {
        events,
        points,
        nested,
    }
}

/// Thread `t`'s points: its sync points (waits on other threads, notify)
/// merged by index with its recorded points (checked, with their results
/// when replay needs them). A sync point with no recorded event is the
/// source of pairs only: replay notifies there without checking. The
/// sync points are freed here.
fn merge_points(t: u32, sync: Option<ThreadPlan>, recorded: &[RecordedPoint]) -> KeptThread {
    let plan = sync.unwrap_or_default();
    let len = union_len(plan.points(), recorded);
    let mut points = Vec::with_capacity(len);
    let mut waits = Vec::new();
    let mut sync_iter = plan.points().iter().peekable();
    let mut recorded = recorded.iter().peekable();
    loop {
        let index = match (sync_iter.peek(), recorded.peek()) {
            (None, None) => break,
            (Some(s), None) => s.index,
            (None, Some(r)) => r.index,
            (Some(s), Some(r)) => s.index.min(r.index),
        };
        let mut p = match recorded.next_if(|r| r.index == index) {
            Some(r) => KeptPoint::recorded(r),
            None => KeptPoint::at(index),
        };
        if let Some(s) = sync_iter.next_if(|s| s.index == index) {
            // A wait on the thread itself is implied by program order.
            p.first_wait = waits.len();
            let theirs = plan.waits_of(s).iter().filter(|w| w.thread != t);
            waits.extend(theirs.map(|w| (w.thread, w.index)));
            p.wait_count = u32::try_from(waits.len() - p.first_wait).unwrap_or(u32::MAX);
            if s.notify != Notify::None {
                p.flags |= flags::NOTIFY;
            }
        }
        points.push(p);
    }
    debug_assert_eq!(points.len(), len);
    waits.shrink_to_fit();
    KeptThread {
        points,
        waits,
        results: Vec::new(),
        count: 0,
        hash: 0,
    }
}

/// How many distinct indices `sync` and `recorded` (each sorted) have: a
/// thread's plan takes as many points, and most are in both where threads
/// share.
fn union_len(sync: &[PlannedPoint], recorded: &[RecordedPoint]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < sync.len() && j < recorded.len() {
        let (a, b) = (sync[i].index, recorded[j].index);
        i += usize::from(a <= b);
        j += usize::from(b <= a);
        n += 1;
    }
    n + (sync.len() - i) + (recorded.len() - j)
}

/// Writes the kept plans into `dir`.
fn write_kept(dir: &Path, threads: Vec<KeptThread>) -> Result<(), ReplayError> {
    let mut point = PlanPoint::default();
    for (t, thread) in (0u32..).zip(threads) {
        let mut writer = create_writer(dir, t, PlanMode::Sequential, &thread.results)?;
        let path = dir.join(plan_name(t));
        for p in &thread.points {
            p.write_into(thread.waits_of(p), &mut point);
            writer
                .push(&point)
                .map_err(ReplayError::io("write", &path))?;
        }
        finish_writer(dir, t, writer, thread.count, thread.hash)?;
    }
    Ok(())
}

/// `points` with each run start `(index, turn)` marked SEQUENCED (a new,
/// unchecked point where there was none), sorted by index.
fn with_run_starts(points: Vec<KeptPoint>, starts: &[(u64, u64)]) -> Vec<KeptPoint> {
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

fn run_start(index: u64, turn: u64) -> KeptPoint {
    KeptPoint {
        seq: turn,
        flags: flags::SEQUENCED,
        ..KeptPoint::at(index)
    }
}
