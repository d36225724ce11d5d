//! The splitter's one job: turn a trace's global log into per-thread replay
//! logs that keep only the real cross-thread dependencies. It streams the
//! global order once, finds the dependency pairs of every granule (WAR, RAW,
//! WAW; [`pairs`]), drops those program order and the other pairs already
//! imply ([`reduce`]), places condition-variable points for the pairs that
//! remain ([`syncpoints`]) and writes one replay log per thread into
//! `<trace>/split/` ([`replay_log`], which the replayer reads back). The kept
//! pairs can also be exported as a topology graph ([`graph`]). The same pass
//! over the global order serves the analyses that explain a run: its data
//! races ([`races`]), where a read's value came from ([`why`]) and what
//! `rr-lite timeline` draws ([`timeline`]).

#![forbid(unsafe_code)]

pub mod analysis;
pub mod barrier;
pub mod error;
pub mod graph;
pub mod options;
pub mod pairs;
pub mod progress;
pub mod races;
pub mod recorded;
pub mod reduce;
pub mod replay_log;
pub mod sections;
pub mod stats;
pub mod syncpoints;
pub mod thinned;
pub mod timeline;
pub mod why;

use std::path::Path;
use std::time::Instant;

use rr_lite_trace::TraceDir;

pub use analysis::{Analysis, Analyzer, ThreadSummary, analyze_events};
pub use error::{Result, SplitError};
pub use graph::{SiteLabeller, Topology};
pub use options::{Algorithm, EventOrder, Reduction, SplitOptions};
pub use pairs::{DependencyKind, DependencyPair, EventRef};
pub use progress::{NoProgress, Progress, Stage};
pub use recorded::{RecordedPoint, RecordedPoints, ThreadRecord};
pub use replay_log::{SPLIT_DIR, read_split, replay_log_name};
pub use sections::SectionCode;
pub use stats::{PairCounts, SplitStats};
pub use syncpoints::{
    Notify, PlannedPoint, SyncPlan, SyncPoint, ThreadLog, ThreadPlan, thread_logs_from_events,
};

/// An analysed trace: the pairs kept and the replay logs, not yet written.
#[derive(Debug, Clone)]
pub struct TraceSplit {
    pub analysis: Analysis,
    /// By thread id, one per thread of the trace.
    pub logs: Vec<ThreadLog>,
}

impl TraceSplit {
    pub fn stats(&self) -> &SplitStats {
        &self.analysis.stats
    }

    /// The topology graph of the kept pairs.
    pub fn topology(&self) -> Topology {
        Topology::build(&self.analysis.pairs, &self.logs)
    }
}

/// Analyses a trace: one streaming pass over the global order for the pairs,
/// then one pass over the thread logs that have sync points (side by side),
/// for the events' kind, address and site. Writes nothing.
pub fn analyze_trace(
    trace: &TraceDir,
    options: &SplitOptions,
    progress: &dyn Progress,
) -> Result<TraceSplit> {
    analyze_trace_with(trace, Analyzer::new(options)?, progress)
}

/// [`analyze_trace`] with `analyzer` (one that floats critical sections:
/// [`Analyzer::floating_sections`]).
pub fn analyze_trace_with(
    trace: &TraceDir,
    analyzer: Analyzer,
    progress: &dyn Progress,
) -> Result<TraceSplit> {
    let start = Instant::now();
    let (mut analysis, plan) = place_sync_points(trace, analyzer, progress)?;
    let filled = rr_lite_trace::workers::map_parallel(plan.into_threads(), |mut thread| {
        fill_from_log(trace, &mut thread).map(|()| thread)
    });
    let plan = SyncPlan::from_threads(filled.into_iter().collect::<Result<_>>()?);
    let logs = plan.into_thread_logs(&analysis)?;
    analysis.stats.set_time(start.elapsed());
    Ok(TraceSplit { analysis, logs })
}

/// The pairs of a trace and its sync points placed, in one streaming pass
/// of `analyzer` over the global order (one made with
/// [`Analyzer::gathering_plan_points`] also gathers what replay plans need
/// besides: [`Analysis::recorded`]); the points' events are not filled in.
/// The statistics count the points.
pub fn place_sync_points(
    trace: &TraceDir,
    analyzer: Analyzer,
    progress: &dyn Progress,
) -> Result<(Analysis, SyncPlan)> {
    let start = Instant::now();
    let total = trace.header().map(|h| h.entries.iter().sum());
    progress.start(total);
    let analyzer = match read_global_order(trace, analyzer, total, progress)? {
        Pass::Done(analyzer) => analyzer,
        Pass::Finer(analyzer) => {
            progress.start(total);
            progress.stage(Stage::FinerGranule);
            match read_global_order(trace, analyzer, total, progress)? {
                Pass::Done(analyzer) | Pass::Finer(analyzer) => analyzer,
            }
        }
    };
    progress.stage(Stage::PlacingSyncPoints);
    let mut analysis = analyzer.finish();
    analysis.ensure_threads(trace.threads());
    let plan = SyncPlan::place(&analysis.pairs, analysis.threads.len() as u32);
    syncpoints::count_planned_points(&mut analysis, &plan);
    analysis.stats.set_time(start.elapsed());
    Ok((analysis, plan))
}

/// How a pass over the global order ended.
enum Pass {
    /// It read every entry.
    Done(Analyzer),
    /// It stopped early: the pairs it kept were mostly false sharing, and
    /// this analyzer at a finer granule is to read the trace again.
    Finer(Analyzer),
}

/// Entries after which a pass first asks whether to go to a finer granule
/// ([`Analyzer::finer_for_false_sharing`]), and again at every doubling, while
/// at most half of the trace is read: a pass started again loses at most
/// what it read, and the false sharing of a program that deals an array out
/// to threads shows in its first phase.
const FINER_CHECK_FIRST: u64 = 1 << 22;
/// A trace this small is read again whenever its whole pass says so.
const FINER_CHECK_SMALL: u64 = 1 << 24;

/// When a pass over the global order asks its analyzer whether to start
/// again at a finer granule (the split's pass, and every command that
/// shows the split's pairs: `rr-lite timeline`), so that they all analyse
/// at the granule the split chose.
#[derive(Debug, Clone)]
pub struct FinerCheck {
    /// The entries read at which to ask next (`u64::MAX`: never again).
    check_at: u64,
    /// The trace's entries (`u64::MAX` if unknown).
    total: u64,
    may_go_finer: bool,
}

impl FinerCheck {
    /// For a pass of `analyzer` over a trace of `total` entries, if known.
    pub fn new(analyzer: &Analyzer, total: Option<u64>) -> FinerCheck {
        let may_go_finer = analyzer.may_go_finer();
        FinerCheck {
            check_at: if may_go_finer {
                FINER_CHECK_FIRST
            } else {
                u64::MAX
            },
            total: total.unwrap_or(u64::MAX),
            may_go_finer,
        }
    }

    /// After some events: the analyzer to read the trace again with, if
    /// this is a point to ask and the pairs kept so far say so. (One
    /// compare unless it is such a point.)
    #[inline]
    pub fn after_events(&mut self, analyzer: &mut Analyzer) -> Result<Option<Analyzer>> {
        if analyzer.entries() < self.check_at {
            return Ok(None);
        }
        if let Some(finer) = analyzer.finer_for_false_sharing()? {
            return Ok(Some(finer));
        }
        self.check_at = self.check_at.saturating_mul(2);
        if self.check_at > self.total / 2 {
            self.check_at = u64::MAX;
            if self.total > FINER_CHECK_SMALL {
                analyzer.stop_watching_false_sharing();
            }
        }
        Ok(None)
    }

    /// At the end of the pass: a small trace is read again if its whole
    /// pass says so.
    pub fn at_end(&self, analyzer: &mut Analyzer) -> Result<Option<Analyzer>> {
        if self.may_go_finer && analyzer.entries() <= FINER_CHECK_SMALL {
            analyzer.finer_for_false_sharing()
        } else {
            Ok(None)
        }
    }
}

/// One pass of `analyzer` over `trace`'s global order (`total` entries, if
/// known); see [`Pass`].
fn read_global_order(
    trace: &TraceDir,
    mut analyzer: Analyzer,
    total: Option<u64>,
    progress: &dyn Progress,
) -> Result<Pass> {
    let mut order = match analyzer.options().order {
        EventOrder::Runs => trace.analysis_order()?,
        EventOrder::Clock => trace.global_order()?,
    };
    let mut finer = FinerCheck::new(&analyzer, total);
    let mut next_report = progress::PROGRESS_STEP;
    while let Some((_, run)) = order.next_run()? {
        if let Err(e) = analyzer.push_run(run) {
            return Err(order
                .damage()
                .map_or_else(|| e.with_trace(trace.path()), SplitError::from));
        }
        if analyzer.entries() >= next_report {
            progress.entries_read(analyzer.entries());
            next_report = analyzer.entries() + progress::PROGRESS_STEP;
        }
        if let Some(finer) = finer.after_events(&mut analyzer)? {
            return Ok(Pass::Finer(finer));
        }
    }
    progress.entries_read(analyzer.entries());
    Ok(match finer.at_end(&mut analyzer)? {
        Some(finer) => Pass::Finer(finer),
        None => Pass::Done(analyzer),
    })
}

/// Fills in `plan`'s events from its thread's log, read as far as its last
/// point.
fn fill_from_log(trace: &TraceDir, plan: &mut ThreadPlan) -> Result<()> {
    if !plan.needs_events() {
        return Ok(());
    }
    for e in trace.thread_events(plan.thread())? {
        plan.fill(&e?)?;
        if !plan.needs_events() {
            break;
        }
    }
    Ok(())
}

/// `rr-lite split`: analyses the trace and writes its replay logs (and
/// `stats.json`) into `<trace>/split/`, replacing an earlier split. On any
/// error nothing is left behind: the logs are built in `split.tmp/` and
/// renamed into place only once complete.
pub fn split_trace(
    trace: &TraceDir,
    options: &SplitOptions,
    progress: &dyn Progress,
) -> Result<TraceSplit> {
    let split = analyze_trace(trace, options, progress)?;
    progress.stage(Stage::Writing);
    write_split(trace.path(), &split.logs, split.stats())?;
    Ok(split)
}

/// Writes replay logs and statistics atomically into `<trace>/split/`.
pub fn write_split(trace: &Path, logs: &[ThreadLog], stats: &SplitStats) -> Result<()> {
    let tmp = trace.join(replay_log::SPLIT_TMP_DIR);
    let dst = trace.join(replay_log::SPLIT_DIR);
    let old = trace.join("split.old");
    // Leftovers of a split that was killed.
    for stale in [&tmp, &old] {
        if stale.exists() {
            std::fs::remove_dir_all(stale).map_err(SplitError::io("remove", stale))?;
        }
    }
    let result = (|| {
        rr_lite_trace::private::create_dir(&tmp).map_err(SplitError::io("create", &tmp))?;
        for log in logs {
            log.write(&tmp.join(replay_log_name(log.thread)))?;
        }
        let stats_path = tmp.join(replay_log::STATS_FILE);
        let json = serde_json::to_vec_pretty(stats)
            .map_err(|e| SplitError::io("write", &stats_path)(e.into()))?;
        rr_lite_trace::private::write(&stats_path, json)
            .map_err(SplitError::io("write", &stats_path))?;
        if dst.exists() {
            std::fs::rename(&dst, &old).map_err(SplitError::io("move aside", &dst))?;
        }
        std::fs::rename(&tmp, &dst).map_err(SplitError::io("move into place", &dst))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        // Put the previous split back if it was moved aside.
        if old.exists() && !dst.exists() {
            let _ = std::fs::rename(&old, &dst);
        }
        return result;
    }
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(SplitError::io("remove", &old))?;
    }
    Ok(())
}
