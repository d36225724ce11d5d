//! Replay plans (format in docs/FORMAT.md): one file per thread, built once
//! per trace and way of replaying, kept in `<trace>/plans-<variant>/`.
//!
//! - parallel: the splitter's sync points (waits, notify) merged with every
//!   event whose recorded result replay needs (thread ids, trylock and wait
//!   results, random and time values, heap addresses to check);
//! - verify: the same plus a check of every event's kind and address;
//! - sequential: every event, with its global sequence number.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use rr_lite_splitter::{Notify, SplitOptions, ThreadLog};
use rr_lite_trace::plan::{
    PlanMode, PlanPoint, PlanVariant, PlanWriter, flags, plan_name, replay_needs_payload,
};
use rr_lite_trace::{ACCESS_HASH_SEED, EventKind, RecordedEvent, TraceDir, fold_access_hash};

use crate::ReplayError;

type Writer = PlanWriter<BufWriter<File>>;

/// Marks a complete plan directory.
const COMPLETE_FILE: &str = "complete";

/// Returns the directory of up-to-date plans of `variant`, building them
/// (and the split, if the trace has not been split yet) when needed.
pub fn ensure_plans(trace: &TraceDir, variant: PlanVariant) -> Result<PathBuf, ReplayError> {
    let dir = trace.path().join(variant.dir_name());
    let split_stamp = trace
        .path()
        .join(rr_lite_splitter::SPLIT_DIR)
        .join("stats.json");
    if variant != PlanVariant::Sequential && !split_stamp.exists() {
        rr_lite_splitter::split_trace(trace, &SplitOptions::default(), None)?;
    }
    if is_fresh(
        &dir,
        (variant != PlanVariant::Sequential).then_some(split_stamp.as_path()),
    ) {
        return Ok(dir);
    }
    let tmp = trace
        .path()
        .join(format!("{}.tmp{}", variant.dir_name(), std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(ReplayError::io(&tmp))?;
    let built = match variant {
        PlanVariant::Sequential => build_sequential(trace, &tmp),
        PlanVariant::Parallel => build_parallel(trace, &tmp, false),
        PlanVariant::Verify => build_parallel(trace, &tmp, true),
    };
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    std::fs::write(tmp.join(COMPLETE_FILE), "").map_err(ReplayError::io(&tmp))?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).map_err(ReplayError::io(&dir))?;
    Ok(dir)
}

/// Plans exist, are complete, and are newer than the split they came from.
fn is_fresh(dir: &Path, source: Option<&Path>) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = modified(&dir.join(COMPLETE_FILE)) else {
        return false;
    };
    source.is_none_or(|s| modified(s).is_some_and(|m| m <= built))
}

fn create_writer(dir: &Path, thread: u32, mode: PlanMode) -> Result<Writer, ReplayError> {
    let path = dir.join(plan_name(thread));
    let file = File::create(&path).map_err(ReplayError::io(&path))?;
    PlanWriter::new(BufWriter::new(file), thread, mode).map_err(ReplayError::io(path))
}

fn finish_writer(
    dir: &Path,
    thread: u32,
    w: Writer,
    accesses: u64,
    hash: u64,
) -> Result<(), ReplayError> {
    let path = dir.join(plan_name(thread));
    let out = w.finish(accesses, hash).map_err(ReplayError::io(&path))?;
    out.into_inner()
        .map_err(|e| ReplayError::io(&path)(e.into_error()))?
        .sync_all()
        .map_err(ReplayError::io(path))
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

fn build_parallel(trace: &TraceDir, dir: &Path, verify_all: bool) -> Result<(), ReplayError> {
    let logs: Vec<ThreadLog> = rr_lite_splitter::read_split(trace.path())?;
    if logs.len() != trace.threads() as usize {
        return Err(ReplayError::SplitMismatch {
            path: trace.path().to_path_buf(),
            what: format!("{} replay logs for {} threads", logs.len(), trace.threads()),
        });
    }
    for (t, log) in (0..trace.threads()).zip(&logs) {
        let mut writer = create_writer(dir, t, PlanMode::Parallel)?;
        let mut sync = log.sync_points.iter().peekable();
        let (mut count, mut hash) = (0u64, ACCESS_HASH_SEED);
        for e in trace.thread_events(t)? {
            let e = e?;
            count += 1;
            hash = fold_access_hash(hash, e.kind, e.addr);
            let sync_point = sync.next_if(|s| s.index == e.index);
            if sync_point.is_none() && !verify_all && !replay_needs_payload(e.kind) {
                continue;
            }
            let mut p = point_for(&e);
            if let Some(s) = sync_point {
                // A wait on the thread itself is implied by program order.
                p.waits = s
                    .waits
                    .iter()
                    .filter(|w| w.thread != t)
                    .map(|w| (w.thread, w.index))
                    .collect();
                if s.notify != Notify::None {
                    p.flags |= flags::NOTIFY;
                }
            }
            writer
                .push(&p)
                .map_err(ReplayError::io(dir.join(plan_name(t))))?;
        }
        if let Some(s) = sync.next() {
            return Err(ReplayError::SplitMismatch {
                path: trace.path().to_path_buf(),
                what: format!(
                    "thread {t} has a sync point at event {} past its last event",
                    s.index
                ),
            });
        }
        finish_writer(dir, t, writer, count, hash)?;
    }
    Ok(())
}

fn build_sequential(trace: &TraceDir, dir: &Path) -> Result<(), ReplayError> {
    let threads = trace.threads();
    let mut writers = (0..threads)
        .map(|t| create_writer(dir, t, PlanMode::Sequential))
        .collect::<Result<Vec<_>, _>>()?;
    let mut counts = vec![(0u64, ACCESS_HASH_SEED); threads as usize];
    // The end of the process (exit, fatal signal) takes no turn: the other
    // threads' events after it in the merged order ran before the process
    // died, and the runtime makes it wait for them instead.
    let mut turn = 0u64;
    for ordered in trace.global_order()? {
        let ordered = ordered?;
        let e = ordered.event;
        let t = e.thread as usize;
        let (count, hash) = &mut counts[t];
        *count += 1;
        *hash = fold_access_hash(*hash, e.kind, e.addr);
        let mut p = point_for(&e);
        if !matches!(e.kind, EventKind::ProcessExit | EventKind::FatalSignal) {
            p.seq = turn;
            p.flags |= flags::SEQUENCED;
            turn += 1;
        }
        writers[t]
            .push(&p)
            .map_err(ReplayError::io(dir.join(plan_name(e.thread))))?;
    }
    for ((t, w), (count, hash)) in (0..threads).zip(writers).zip(counts) {
        finish_writer(dir, t, w, count, hash)?;
    }
    Ok(())
}
