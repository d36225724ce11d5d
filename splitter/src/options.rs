//! The knobs of a split: which pair finder, which reduction, which granule.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::{Result, SplitError};

/// Which pair finder runs (`--algorithm`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// The literal work-queue version, the reference.
    Worklist,
    /// Per-granule state in a hash map, O(1) per entry.
    #[default]
    Indexed,
}

/// Which pairs are kept (`--reduce`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reduction {
    /// Every pair found, same-thread ones included.
    None,
    /// Pairs within one thread dropped (program order implies them).
    Thread,
    /// Also drop pairs implied by program order plus other kept pairs.
    #[default]
    Vc,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Worklist => "worklist",
            Algorithm::Indexed => "indexed",
        }
    }
}

impl Reduction {
    pub fn name(self) -> &'static str {
        match self {
            Reduction::None => "none",
            Reduction::Thread => "thread",
            Reduction::Vc => "vc",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "worklist" => Ok(Algorithm::Worklist),
            "indexed" => Ok(Algorithm::Indexed),
            _ => Err(format!(
                "unknown algorithm {s:?} (expected worklist or indexed)"
            )),
        }
    }
}

impl FromStr for Reduction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Reduction::None),
            "thread" => Ok(Reduction::Thread),
            "vc" => Ok(Reduction::Vc),
            _ => Err(format!(
                "unknown reduction {s:?} (expected none, thread or vc)"
            )),
        }
    }
}

/// Largest granule accepted, in bytes.
pub const MAX_GRANULE: u64 = 1 << 20;
/// Default granule (SPEC: 8 bytes).
pub const DEFAULT_GRANULE: u64 = 8;

/// The order the analysis reads a trace's events in (`--order`). Both keep
/// the recorded order of the events on every stripe, so they find the same
/// pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventOrder {
    /// A thread's events one private step apart in one run
    /// (`TraceDir::analysis_order`).
    #[default]
    Runs,
    /// Strictly by `(clock, thread)` (`TraceDir::global_order`): threads
    /// running side by side take turns event by event.
    Clock,
}

impl EventOrder {
    pub fn name(self) -> &'static str {
        match self {
            EventOrder::Runs => "runs",
            EventOrder::Clock => "clock",
        }
    }
}

impl fmt::Display for EventOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EventOrder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "runs" => Ok(EventOrder::Runs),
            "clock" => Ok(EventOrder::Clock),
            _ => Err(format!("unknown order {s:?} (expected runs or clock)")),
        }
    }
}

/// Options of a split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitOptions {
    pub algorithm: Algorithm,
    pub reduction: Reduction,
    /// Granule size in bytes: a power of two, at most [`MAX_GRANULE`].
    pub granule: u64,
    pub order: EventOrder,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions {
            algorithm: Algorithm::default(),
            reduction: Reduction::default(),
            granule: DEFAULT_GRANULE,
            order: EventOrder::default(),
        }
    }
}

impl SplitOptions {
    /// log2 of the granule, or an error when it is not a valid granule.
    pub fn granule_shift(&self) -> Result<u32> {
        if !self.granule.is_power_of_two() || self.granule > MAX_GRANULE {
            return Err(SplitError::BadGranule {
                granule: self.granule,
                max: MAX_GRANULE,
            });
        }
        Ok(self.granule.trailing_zeros())
    }
}
