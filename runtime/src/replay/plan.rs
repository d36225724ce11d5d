//! A thread's replay plan, mapped read-only: the fixed header, its results
//! array (read in order, [`Plan::result`]), then the points as a varint
//! stream (layout in `rr_lite_trace::plan`), which the thread decodes
//! forward with a [`PlanCursor`], one point ahead, without allocating.
//! The replayer has verified every plan before the program starts; the
//! runtime checks the header and stops at damaged bytes.

use core::sync::atomic::{AtomicBool, Ordering};

use rr_lite_trace::plan::{PlanCursor, PlanVariant, check_plan, result_at};

use super::shared::{self, map_file};
use crate::mode::PathSlot;
use crate::sys;

/// Where the plans of this replay are (`<trace>/plans`, or the session's
/// `plans-verify`).
static PLAN_DIR: PathSlot = PathSlot::new();

/// Whether this replay takes the sequential turns its plans hold (set with
/// the plan directory, at start-up).
static TAKES_TURNS: AtomicBool = AtomicBool::new(false);

/// A thread's plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The whole mapped file.
    bytes: &'static [u8],
    points: u64,
    /// Events of the thread in the recording, and their access hash.
    pub(crate) accesses: u64,
    pub(crate) access_hash: u64,
    /// False for [`Plan::NONE`].
    loaded: bool,
}

impl Plan {
    /// No plan (a thread before it has one): no points, no events.
    pub(crate) const NONE: Plan = Plan {
        bytes: &[],
        points: 0,
        accesses: 0,
        access_hash: 0,
        loaded: false,
    };

    pub(crate) fn is_none(&self) -> bool {
        !self.loaded
    }

    /// A cursor before the plan's first point.
    pub(crate) fn cursor(&self) -> PlanCursor<'static> {
        PlanCursor::new(self.bytes, self.points)
    }

    /// Entry `i` of the plan's results array, if it has that many.
    pub(crate) fn result(&self, i: u64) -> Option<u64> {
        result_at(self.bytes, i)
    }
}

/// Remembers where the plans of this replay's variant are (at start-up):
/// in the trace, or in the session directory for plans that are not kept.
pub(crate) fn set_plan_dir(trace: &[u8], session: &[u8]) -> bool {
    let Some(variant) = PlanVariant::from_code(shared::header().plan_variant) else {
        return false;
    };
    TAKES_TURNS.store(variant.takes_turns(), Ordering::Relaxed);
    let home = if variant.kept_in_trace() {
        trace
    } else {
        session
    };
    let name = variant.dir_name().as_bytes();
    sys::join(home, name).is_some_and(|dir| PLAN_DIR.set(&dir[..home.len() + 1 + name.len()]))
}

/// Whether this replay takes the sequential turns its plans hold.
pub(crate) fn takes_turns() -> bool {
    TAKES_TURNS.load(Ordering::Relaxed)
}

/// Maps thread `t`'s plan.
pub(crate) fn load_plan(t: u32) -> Option<Plan> {
    let mut name = *b"thread-0000.plan";
    let mut digits = [0u8; 20];
    let d = sys::decimal(u64::from(t), &mut digits);
    if d.len() > 4 {
        return None;
    }
    name[11 - d.len()..11].copy_from_slice(d);
    let (p, len) = map_file(PLAN_DIR.get(), &name, false)?;
    // SAFETY: the mapping is `len` bytes long, read-only and never unmapped.
    let bytes: &'static [u8] = unsafe { core::slice::from_raw_parts(p, len) };
    let header = check_plan(bytes).ok()?;
    if header.thread != t {
        return None;
    }
    Some(Plan {
        bytes,
        points: header.points,
        accesses: header.accesses,
        access_hash: header.access_hash,
        loaded: true,
    })
}
