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

/// `name()`, `Display` and `FromStr` of an option's enum, from each
/// variant's name on the command line.
macro_rules! option_names {
    ($ty:ident, $what:literal: $($variant:ident => $name:literal),+) => {
        impl $ty {
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " {:?} (expected ", option_names!(@list $($name),+), ")"),
                        s
                    )),
                }
            }
        }
    };
    (@list $last:literal) => { $last };
    (@list $a:literal, $b:literal) => { concat!($a, " or ", $b) };
    (@list $a:literal, $($rest:literal),+) => { concat!($a, ", ", option_names!(@list $($rest),+)) };
}

option_names!(Algorithm, "algorithm": Worklist => "worklist", Indexed => "indexed");
option_names!(Reduction, "reduction": None => "none", Thread => "thread", Vc => "vc");

/// Largest granule accepted, in bytes.
pub const MAX_GRANULE: u64 = 1 << 20;
/// Default granule (SPEC: 8 bytes).
pub const DEFAULT_GRANULE: u64 = 8;
/// The granule the analysis goes down to from the default when most of
/// the pairs it keeps are false sharing ([`SplitOptions::finer_for_false_sharing`]).
pub const FALSE_SHARING_GRANULE: u64 = 4;

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

option_names!(EventOrder, "order": Runs => "runs", Clock => "clock");

/// Options of a split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitOptions {
    pub algorithm: Algorithm,
    pub reduction: Reduction,
    /// Granule size in bytes: a power of two, at most [`MAX_GRANULE`].
    pub granule: u64,
    pub order: EventOrder,
    /// At the default granule, whether the analysis goes down to 4-byte
    /// granules when most of the pairs it keeps are false sharing
    /// (`crate::place_sync_points`).
    pub finer_for_false_sharing: bool,
    /// Whether a critical section whose data no earlier section touched
    /// may float: its lock keeps no pair from the unlock before it
    /// (`crate::sections`; with the vc reduction only).
    pub float_sections: bool,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions {
            algorithm: Algorithm::default(),
            reduction: Reduction::default(),
            granule: DEFAULT_GRANULE,
            order: EventOrder::default(),
            finer_for_false_sharing: true,
            float_sections: true,
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
