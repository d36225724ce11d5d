//! What a split found and what it cost, for `rr-lite split --json` and the
//! human summary.

use serde::Serialize;

use crate::options::{Algorithm, EventOrder, Reduction, SplitOptions};
use crate::pairs::DependencyKind;

/// Pair counts by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PairCounts {
    #[serde(rename = "WAR")]
    pub war: u64,
    #[serde(rename = "RAW")]
    pub raw: u64,
    #[serde(rename = "WAW")]
    pub waw: u64,
}

impl PairCounts {
    #[inline]
    pub fn add(&mut self, kind: DependencyKind, n: u64) {
        match kind {
            DependencyKind::War => self.war += n,
            DependencyKind::Raw => self.raw += n,
            DependencyKind::Waw => self.waw += n,
        }
    }

    /// Adds every count of `other`.
    pub fn add_counts(&mut self, other: &PairCounts) {
        for kind in DependencyKind::ALL {
            self.add(kind, other.get(kind));
        }
    }

    pub fn get(&self, kind: DependencyKind) -> u64 {
        match kind {
            DependencyKind::War => self.war,
            DependencyKind::Raw => self.raw,
            DependencyKind::Waw => self.waw,
        }
    }

    pub fn total(&self) -> u64 {
        self.war + self.raw + self.waw
    }
}

/// Statistics of one split.
///
/// `pairs_found` and `pairs_cross_thread` count dependency pairs the way the
/// method defines them, per granule: an event pair seen on two granules
/// (an unaligned or range access) counts twice. They are the same whatever
/// the algorithm and reduction. `pairs_kept` counts distinct event pairs,
/// the edges of the topology graph, after the selected reduction.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SplitStats {
    pub algorithm: Algorithm,
    pub reduction: Reduction,
    /// Granule size in bytes.
    pub granule: u64,
    /// Whether that is [`crate::options::FALSE_SHARING_GRANULE`] instead
    /// of the default because most of the pairs kept at the default were
    /// false sharing (`crate::place_sync_points`).
    pub granule_finer_for_false_sharing: bool,
    /// The granule was asked for as it is (`--fixed-granule`): the
    /// analysis does not go finer.
    pub fixed_granule: bool,
    pub order: EventOrder,
    pub threads: u32,
    /// Log entries analysed.
    pub entries: u64,
    /// Distinct granules touched.
    pub granules: u64,
    /// Before any reduction (`--reduce none` keeps these, deduplicated).
    pub pairs_found: PairCounts,
    /// After dropping pairs within one thread (`--reduce thread` keeps
    /// these, deduplicated).
    pub pairs_cross_thread: PairCounts,
    /// Distinct event pairs kept by the selected reduction.
    pub pairs_kept: PairCounts,
    /// Of `pairs_cross_thread`, the RAW and WAW pairs whose two accesses
    /// touched different bytes of their granule (false sharing; counted by
    /// the indexed finder only, 0 with the worklist).
    pub cross_thread_pairs_on_disjoint_bytes: u64,
    /// Whether critical sections that touch no data of another's float
    /// (`--keep-lock-order` turns it off; `crate::sections`).
    pub float_sections: bool,
    /// Critical sections whose pair from the unlock before them was
    /// dropped: they touch nothing the sections before them touched.
    pub sections_floated: u64,
    /// Critical sections held in the recorded order after all.
    pub sections_promoted: u64,
    /// Sync points in each thread's replay log, by thread id.
    pub sync_points_per_thread: Vec<u64>,
    /// Waits over all sync points (one per kept pair).
    pub waits: u64,
    /// Sync points that signal one waiter / broadcast to several.
    pub signals: u64,
    pub broadcasts: u64,
    /// Sync points of every thread per recorded event (`entries`), and
    /// waits per recorded event: what a parallel replay pays for besides
    /// the program's own work.
    pub sync_points_per_event: f64,
    pub waits_per_event: f64,
    /// Estimated bytes of per-granule state at the end (hash table
    /// included), and that divided by `granules` (SPEC: <= 200).
    pub state_bytes: u64,
    pub state_bytes_per_granule: f64,
    /// Estimated bytes of the vector clocks and their history at their
    /// most: one snapshot per event that keeps a pair, compacted to those
    /// the analysis's state still refers to whenever they double, so it
    /// is bounded by that state times the threads.
    pub clock_bytes: u64,
    /// Wall time of the whole split (reading, analysis, writing).
    pub seconds: f64,
    pub entries_per_second: f64,
}

impl SplitStats {
    /// The statistics of the trace's last split (`split/stats.json`), as
    /// JSON, if it had one that reads.
    pub fn json_of_split(trace: &std::path::Path) -> Option<serde_json::Value> {
        let path = crate::replay_log::stats_path(trace);
        let bytes = rr_lite_trace::bounded::read(&path, 1 << 20).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Sets the time taken and the rate it gives.
    pub fn set_time(&mut self, elapsed: std::time::Duration) {
        self.seconds = elapsed.as_secs_f64();
        self.entries_per_second = if self.seconds > 0.0 {
            self.entries as f64 / self.seconds
        } else {
            0.0
        };
    }
}

impl SplitStats {
    /// The options of the split whose statistics are in `trace`'s
    /// `split/stats.json`, if it has readable ones (a split made with
    /// options of the user's: plans built again later keep them).
    pub fn options_of_split(trace: &std::path::Path) -> Option<SplitOptions> {
        let json = SplitStats::json_of_split(trace)?;
        let text = |key: &str| json.get(key)?.as_str();
        let options = SplitOptions {
            algorithm: text("algorithm")?.parse().ok()?,
            reduction: text("reduction")?.parse().ok()?,
            granule: json.get("granule")?.as_u64()?,
            order: text("order")?.parse().ok()?,
            finer_for_false_sharing: json.get("fixed_granule").and_then(|f| f.as_bool())
                != Some(true),
            float_sections: json.get("float_sections").and_then(|f| f.as_bool()) != Some(false),
        };
        options.granule_shift().ok().map(|_| options)
    }
}
