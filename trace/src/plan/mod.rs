//! Replay plans and the replay state file: what the replayer hands the
//! runtime in replay mode (docs/FORMAT.md, "Replay plans").
//!
//! A plan lists, for one thread, the events at which replay must do
//! something: wait for other threads (the splitter's sync points), publish
//! its progress for waiters, return a recorded result instead of calling the
//! real function, or check that the event is the recorded one. Points are
//! a stream of varints (about the split log's own size, see [`stream`]); the
//! runtime maps the file and decodes it forward in place, one point ahead,
//! without allocating.
//!
//! The state file the replayed program shares with the replayer is in
//! [`crate::state`].

mod stream;

pub use stream::{
    MAX_PLAN_KIND, PlanCursor, PlanHeader, PlanWriter, Point, RecentWaits, WAIT_TABLE, Waits,
    addr_check, check_plan, decode_plan, decode_results, encode_plan, result_at, verify_plan,
};

use crate::event::EventKind;

pub const PLAN_MAGIC: [u8; 8] = *b"RRLITE\0P";
/// Version 2: points as a varint stream (version 1 had fixed 40-byte
/// records and 16-byte waits: eight times the split log). Version 3: waits
/// against a table of recent waits. Version 4: that table forgets a wait on
/// a thread from 2^24 - 1 on or of an index from 2^40 on (the same bytes
/// below those), and the checksum is CRC-32 instead of FNV-1a. Version 5:
/// the thread's recorded random numbers and values from outside as an
/// array before the points ([`in_results`]), not one point each. Version
/// 6: the access hash is an xor of per-event terms
/// (`crate::fold_access_hash`).
pub const PLAN_VERSION: u16 = 6;
/// Largest plan file a tool reads back (checks, verify plans, `replay --debug`).
pub const MAX_PLAN_BYTES: u64 = 1 << 36;
pub const PLAN_HEADER_LEN: usize = 64;
/// Name of thread `t`'s plan inside a replay session directory.
pub fn plan_name(t: u32) -> String {
    format!("thread-{t:04}.plan")
}
/// Environment variable naming the replay session (16 hex digits). The
/// recorder sets a placeholder of the same length, so the program's
/// environment, and with it its stack layout, is byte-for-byte the same size
/// at record and at replay.
pub const SESSION_ENV: &str = "RR_LITE_SESSION";
pub const SESSION_PLACEHOLDER: &str = "0000000000000000";
/// Session directory inside the trace: `replay-<session>`.
pub fn session_dir_name(session: &str) -> String {
    format!("replay-{session}")
}
/// Exit status of a replay that diverged from the recording.
pub const DIVERGENCE_STATUS: i32 = 86;
/// Exit status of a replay stopped by the deadlock watchdog.
pub const DEADLOCK_STATUS: i32 = 87;

/// Point flags.
pub mod flags {
    /// Publish progress once the event has completed (someone waits on it).
    pub const NOTIFY: u8 = 1;
    /// Return the recorded payload instead of calling the real function.
    pub const PAYLOAD: u8 = 2;
    /// Check that the event has the recorded kind and address.
    pub const CHECK: u8 = 4;
    /// Sequential replay: wait for the global turn `seq`.
    pub const SEQUENCED: u8 = 8;
    /// Every flag: they fit in the low four bits of a point's flags byte.
    pub const ALL: u8 = NOTIFY | PAYLOAD | CHECK | SEQUENCED;
}

/// The ways of replaying, each with the plans it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum PlanVariant {
    /// The kept plans, their sequential turns ignored.
    Parallel = 1,
    /// The kept plans, turns and all: one total order.
    Sequential = 2,
    /// Like parallel, plus a check of every event.
    Verify = 3,
}

/// Directory of the plans kept in a trace: one set serves parallel and
/// sequential replay (parallel replay ignores the turns), so a trace keeps
/// one copy of its points, not one per way of replaying.
pub const KEPT_PLANS_DIR: &str = "plans";

/// Plan directories of earlier versions (one per way of replaying), removed
/// when the kept plans are built.
pub const OLD_PLAN_DIRS: [&str; 2] = ["plans-parallel", "plans-sequential"];

impl PlanVariant {
    pub fn from_code(code: u32) -> Option<PlanVariant> {
        [
            PlanVariant::Parallel,
            PlanVariant::Sequential,
            PlanVariant::Verify,
        ]
        .into_iter()
        .find(|v| *v as u32 == code)
    }

    /// Whether these plans are kept in the trace for later replays. Verify
    /// plans have a point per event (eight times the thread logs): they are
    /// built into the replay session's directory and go with it.
    pub fn kept_in_trace(self) -> bool {
        self != PlanVariant::Verify
    }

    /// Directory of these plans inside the trace (or, when not kept, inside
    /// the replay session's directory).
    pub fn dir_name(self) -> &'static str {
        match self {
            PlanVariant::Parallel | PlanVariant::Sequential => KEPT_PLANS_DIR,
            PlanVariant::Verify => "plans-verify",
        }
    }

    /// Whether replay waits for the sequential turns the plans hold.
    pub fn takes_turns(self) -> bool {
        self == PlanVariant::Sequential
    }
}

/// How the plans of a session were built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PlanMode {
    Parallel = 1,
    Sequential = 2,
}

/// Kinds whose recorded result replay needs (emulated calls, thread ids,
/// heap addresses and descriptor numbers to check).
pub const fn replay_needs_payload(kind: EventKind) -> bool {
    use EventKind::*;
    matches!(
        kind,
        ThreadCreate
            | MutexTryLock
            | RwReadLock
            | RwWriteLock
            | CondWake
            | BarrierDepart
            | SemWait
            | SpinLock
            | FatalSignal
            | ProcessExit
            | DescriptorOpen
            | DescriptorClose
            | Input
            | SyncInit
            | SyncDestroy
            | FutexWait
            | FutexWake
    )
}

/// Kinds whose recorded results a plan holds in its results array, one
/// per event of the thread in order, read in order at replay: the random
/// number generators (`rand`, `drand48`...; their seeding calls too, whose
/// argument is checked), values from outside (time, clocks, process ids)
/// and allocations (the address, which replay checks, and an `mmap` asks
/// for). Such an event is a point only where a pair ends at it (threads
/// sharing a generator or the heap). A program drawing millions of numbers
/// in one thread (SPLASH's FFT fills its input with 2 M `drand48` calls),
/// reading the clock in a loop or allocating in one, then has a plan of 8
/// bytes per value instead of a point each, which replay decoded at 45 ns
/// per call and the replayer verified before the program started.
pub const fn in_results(kind: EventKind) -> bool {
    matches!(kind, EventKind::Random | EventKind::Time | EventKind::Alloc)
}

/// Kinds that are a point of every plan: those replay needs the result of,
/// and the stack cache's events. A call whose own events nest before its
/// event (pthread_create's allocations before its thread-stacks event)
/// finds that event's point ahead, and waits for its predecessors before
/// the real call.
pub const fn always_a_point(kind: EventKind) -> bool {
    replay_needs_payload(kind) || matches!(kind, EventKind::ThreadStacks)
}

/// One point of a plan, as built by the replayer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanPoint {
    pub index: u64,
    /// Turn of the run this point starts (sequential plans, SEQUENCED),
    /// else `u64::MAX`.
    pub seq: u64,
    /// Recorded address (stored when CHECK).
    pub addr: u64,
    /// Recorded result (stored when PAYLOAD).
    pub payload: u64,
    /// Kind code of the recorded event (0 if unknown).
    pub kind: u8,
    pub flags: u8,
    /// `(thread, index)`: wait until `thread` has completed event `index`.
    pub waits: Vec<(u32, u64)>,
}
