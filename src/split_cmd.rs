//! `rr-lite split [TRACE]`: turns a trace's global log into per-thread
//! replay plans in `<trace>/plans/` (statistics in `<trace>/split/`) and
//! reports what it found.

use crate::output::outln;
use std::path::PathBuf;

use rr_lite_splitter::{
    Algorithm, DependencyKind, EventOrder, PairCounts, Reduction, SplitOptions, SplitStats,
};
use rr_lite_trace::TraceDir;

use crate::progress::SplitProgressBar;

/// Analysis options shared by `split` and `graph`.
#[derive(clap::Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Pair finder: `indexed` (hash map, the default) or `worklist` (the
    /// literal work-queue reference, slow on traces with many addresses).
    #[arg(long, default_value = "indexed", value_name = "indexed|worklist")]
    pub algorithm: Algorithm,
    /// Which pairs to keep: `none` (all), `thread` (drop pairs within one
    /// thread) or `vc` (also drop pairs implied by others, the default).
    #[arg(long, default_value = "vc", value_name = "none|thread|vc")]
    pub reduce: Reduction,
    /// Granule of the analysis in bytes (a power of two): two accesses
    /// to one granule are ordered even if they touch different bytes of
    /// it. Smaller granules tell neighbouring array elements that
    /// different threads write apart (false sharing: `split` says when it
    /// sees it), at more memory and time; later replays use the plans of
    /// the last split.
    #[arg(long, default_value_t = rr_lite_splitter::options::DEFAULT_GRANULE, value_name = "BYTES")]
    pub granule: u64,
    /// The order the analysis reads the events in: `runs` (the default:
    /// a thread's accesses to stripes it kept to itself in one run) or
    /// `clock` (strictly by Lamport clock, threads taking turns event by
    /// event: slower). Both find the same pairs.
    #[arg(long, default_value = "runs", value_name = "runs|clock")]
    pub order: EventOrder,
    /// Analyse at the granule given even where it makes false sharing.
    /// By default, when most of the pairs kept at 8 bytes join accesses to
    /// different bytes of their granule (neighbouring `int` or `float`
    /// elements that different threads use), the analysis starts again at
    /// 4 bytes, so replay does not wait at that false sharing
    /// (`granule_finer_for_false_sharing` in `--json`).
    #[arg(long)]
    pub fixed_granule: bool,
    /// Replay every mutex in the recorded order. By default a critical
    /// section that touches nothing an earlier section of its mutex (or
    /// anything else the recording had after that section began) touched,
    /// and calls nothing inside, keeps no wait for the unlock before it:
    /// replay lets it take the mutex when it gets there, as the program
    /// would, instead of after the recorded holder (`sections_floated` in
    /// `--json`). Sequential replay keeps the recorded order either way.
    #[arg(long)]
    pub keep_lock_order: bool,
}

impl AnalysisArgs {
    pub fn options(&self) -> SplitOptions {
        SplitOptions {
            algorithm: self.algorithm,
            reduction: self.reduce,
            granule: self.granule,
            order: self.order,
            finer_for_false_sharing: !self.fixed_granule,
            float_sections: !self.keep_lock_order,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct SplitArgs {
    /// Trace directory (default: the latest trace).
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Print the statistics as JSON on stdout instead of a summary: pairs
    /// found and kept by kind, sync points per thread, waits, signals and
    /// broadcasts, sync points and waits per recorded event, granules, the
    /// analysis's memory and its rate, and the pairs between threads whose
    /// accesses touched different bytes of a granule (false sharing).
    #[arg(long)]
    pub json: bool,
}

/// Opens the trace named on the command line, or the latest one, and says
/// so on stderr when it is a recording that did not finish.
pub fn run(args: SplitArgs) -> anyhow::Result<i32> {
    let trace = crate::output::open_trace(args.trace.as_deref())?;
    let stats = {
        let _lock = trace.lock_derived_files()?;
        let bar = SplitProgressBar::new();
        rr_lite_replayer::plans::split_and_plan(&trace, &args.analysis.options(), &bar)?
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        print_summary(&stats, &trace);
    }
    Ok(0)
}

fn counts(c: &PairCounts) -> String {
    DependencyKind::ALL
        .iter()
        .map(|&k| format!("{k} {}", c.get(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_summary(s: &SplitStats, trace: &TraceDir) {
    outln!(
        "split {}: {} entries, {} threads, {} granules of {} bytes, {:.2} s ({:.1} M entries/s)",
        trace.path().display(),
        s.entries,
        s.threads,
        s.granules,
        s.granule,
        s.seconds,
        s.entries_per_second / 1e6
    );
    if s.granule_finer_for_false_sharing {
        outln!(
            "  at {} bytes: most pairs kept at {} joined different bytes of a granule (false \
             sharing), which replay would wait at (`--fixed-granule` keeps {})",
            s.granule,
            rr_lite_splitter::options::DEFAULT_GRANULE,
            rr_lite_splitter::options::DEFAULT_GRANULE
        );
    }
    outln!("  pairs found (per granule): {}", counts(&s.pairs_found));
    outln!(
        "  across threads:            {}",
        counts(&s.pairs_cross_thread)
    );
    outln!(
        "  kept ({}):{:width$}{}",
        s.reduction,
        "",
        counts(&s.pairs_kept),
        width = 19 - s.reduction.name().len()
    );
    let points: u64 = s.sync_points_per_thread.iter().sum();
    outln!(
        "  sync points: {points} ({} waits, {} signals, {} broadcasts); per thread: {}",
        s.waits,
        s.signals,
        s.broadcasts,
        s.sync_points_per_thread
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    outln!(
        "  replay plans in {}",
        trace
            .path()
            .join(rr_lite_trace::plan::KEPT_PLANS_DIR)
            .display()
    );
    if let Some(hint) = FalseSharing::of(s).hint(trace.path()) {
        outln!("  {hint}");
    }
    if let Some(hint) = many_waits_hint(s.entries, s.waits) {
        outln!("  {hint}");
    }
}

/// What a split found of false sharing: pairs between threads whose
/// accesses touched different bytes of one granule.
pub(crate) struct FalseSharing {
    entries: u64,
    waits: u64,
    granule: u64,
    /// RAW and WAW pairs between threads, and those on different bytes.
    between: u64,
    disjoint: u64,
}

impl FalseSharing {
    pub(crate) fn of(s: &SplitStats) -> FalseSharing {
        FalseSharing {
            entries: s.entries,
            waits: s.waits,
            granule: s.granule,
            between: s.pairs_cross_thread.raw + s.pairs_cross_thread.waw,
            disjoint: s.cross_thread_pairs_on_disjoint_bytes,
        }
    }

    /// The same from a split's `stats.json` (`None` if it says nothing of it).
    pub(crate) fn from_json(stats: &serde_json::Value) -> Option<FalseSharing> {
        let number = |v: &serde_json::Value, key: &str| v.get(key)?.as_u64();
        let pairs = stats.get("pairs_cross_thread")?;
        Some(FalseSharing {
            entries: number(stats, "entries")?,
            waits: number(stats, "waits")?,
            granule: number(stats, "granule")?,
            between: number(pairs, "RAW")? + number(pairs, "WAW")?,
            disjoint: number(stats, "cross_thread_pairs_on_disjoint_bytes")?,
        })
    }

    /// What to tell the user when most pairs between threads are false
    /// sharing on a trace whose waits matter (one per 1000 events): how to
    /// split at half the granule.
    pub(crate) fn hint(&self, trace: &std::path::Path) -> Option<String> {
        let matters = self.entries >= 100_000 && self.waits * 1000 >= self.entries;
        if self.granule <= 1 || !matters || self.disjoint * 2 < self.between.max(1) {
            return None;
        }
        let half = self.granule / 2;
        Some(format!(
            "{} of the {} RAW and WAW pairs between threads join accesses to different bytes \
             of one {}-byte granule (false sharing: neighbouring elements that different \
             threads write), which replay may wait at. `rr-lite split --granule {half} {}` \
             tells {half}-byte elements apart (later replays use its plans; `--granule 1` \
             separates single bytes, at more memory and time).",
            self.disjoint,
            self.between,
            self.granule,
            trace.display()
        ))
    }
}

/// What to tell the user when a trace's replay will be dominated by its
/// waits: at least one per 200 events (a wait costs about a microsecond, an
/// event a few nanoseconds), on a trace big enough for it to show.
/// `rr-lite split` and a replay that built the plans say it.
pub(crate) fn many_waits_hint(entries: u64, waits: u64) -> Option<String> {
    (entries >= 100_000 && waits.saturating_mul(200) >= entries).then(|| {
        format!(
            "{:.1} waits per 1000 events: replay pays for each (about a microsecond). If the \
             bug is not a fine-grained race, `rr-lite record --serialize` records the threads \
             taking turns on shared data, with far fewer waits (see `rr-lite record --help`).",
            waits as f64 * 1000.0 / entries as f64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::many_waits_hint;

    #[test]
    fn many_waits_are_named_from_one_per_200_events_on_big_traces() {
        assert!(many_waits_hint(1_000_000, 4_999).is_none());
        let hint = many_waits_hint(1_000_000, 5_000).expect("one wait per 200 events");
        assert!(hint.starts_with("5.0 waits per 1000 events"), "{hint}");
        assert!(hint.contains("rr-lite record --serialize"), "{hint}");
        assert!(
            many_waits_hint(99_999, 99_999).is_none(),
            "a small trace's waits do not show"
        );
        assert!(many_waits_hint(u64::MAX, u64::MAX).is_some(), "no overflow");
    }
}
