//! A thread's replay plan, mapped read-only and used in place: the fixed
//! header, then arrays of [`PointRecord`] and [`WaitRecord`] (layout in
//! `rr_lite_trace::plan`, checked by `check_plan` before use).

use rr_lite_trace::plan::{PLAN_HEADER_LEN, PlanVariant, PointRecord, WaitRecord, check_plan};

use super::shared::{self, map_file};
use crate::mode::PathSlot;
use crate::sys;

/// Where the plans of this replay are (`<trace>/plans-<variant>`).
static PLAN_DIR: PathSlot = PathSlot::new();

/// A thread's plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) points: &'static [PointRecord],
    waits: &'static [WaitRecord],
    /// Events of the thread in the recording, and their access hash.
    pub(crate) accesses: u64,
    pub(crate) access_hash: u64,
    /// False for [`Plan::NONE`].
    loaded: bool,
}

impl Plan {
    /// No plan (a thread before it has one): no points, no events.
    pub(crate) const NONE: Plan = Plan {
        points: &[],
        waits: &[],
        accesses: 0,
        access_hash: 0,
        loaded: false,
    };

    pub(crate) fn is_none(&self) -> bool {
        !self.loaded
    }

    /// Point `n`, if there is one.
    pub(crate) fn point(&self, n: u64) -> Option<&'static PointRecord> {
        self.points.get(usize::try_from(n).ok()?)
    }

    /// Index of point `n`, or u64::MAX past the end.
    pub(crate) fn index_of(&self, n: u64) -> u64 {
        self.point(n).map_or(u64::MAX, |p| p.index)
    }

    /// The waits of point `p`, as (thread, index). A range past the end of
    /// the wait array (a damaged plan) gives none.
    pub(crate) fn waits_of(&self, p: &PointRecord) -> impl Iterator<Item = (u32, u64)> + 'static {
        let first = p.first_wait as usize;
        self.waits
            .get(first..first + usize::from(p.waits))
            .unwrap_or(&[])
            .iter()
            .map(|w| (w.thread, w.index))
    }
}

/// Remembers where the plans of this replay's variant are (at start-up):
/// in the trace, or in the session directory for plans that are not kept.
pub(crate) fn set_plan_dir(trace: &[u8], session: &[u8]) -> bool {
    let Some(variant) = PlanVariant::from_code(shared::header().plan_variant) else {
        return false;
    };
    let home = if variant.kept_in_trace() {
        trace
    } else {
        session
    };
    let name = variant.dir_name().as_bytes();
    sys::join(home, name).is_some_and(|dir| PLAN_DIR.set(&dir[..home.len() + 1 + name.len()]))
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
    // SAFETY: the mapping is `len` bytes long and never unmapped.
    let bytes: &'static [u8] = unsafe { core::slice::from_raw_parts(p, len) };
    let header = check_plan(bytes).ok()?;
    if header.thread != t {
        return None;
    }
    let points = header.points as usize;
    let waits_at = PLAN_HEADER_LEN + points * size_of::<PointRecord>();
    // SAFETY: `check_plan` verified the file is exactly header + `points`
    // point records + `waits` wait records; the mapping is page-aligned and
    // the header and records are multiples of 8 bytes (asserted in
    // rr_lite_trace::plan), so both arrays are aligned; the records are
    // `#[repr(C)]` integers, valid for any bytes; the mapping is read-only
    // and lives as long as the process.
    let (points, waits) = unsafe {
        (
            core::slice::from_raw_parts(p.add(PLAN_HEADER_LEN).cast::<PointRecord>(), points),
            core::slice::from_raw_parts(
                p.add(waits_at).cast::<WaitRecord>(),
                header.waits as usize,
            ),
        )
    };
    Some(Plan {
        points,
        waits,
        accesses: header.accesses,
        access_hash: header.access_hash,
        loaded: true,
    })
}
