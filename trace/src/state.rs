//! The replay state file (`<trace>/replay-<session>/state`): shared memory
//! between the replayer and every thread of the replayed program.
//!
//! The runtime maps the file once and uses it as a [`StateHeader`] followed
//! by one [`ThreadProgress`] per recorded thread, through these `#[repr(C)]`
//! types of atomics, so every field it touches is aligned and in bounds by
//! construction (the sizes are asserted below). The replayer, which must not
//! map memory itself, creates the file zeroed and reads snapshots of it;
//! it finds the fields with `offset_of!` on the same types, so there is one
//! layout, not a table of offsets kept in step by hand. Layout in
//! docs/FORMAT.md ("Replay state").

use core::mem::{offset_of, size_of};
use core::sync::atomic::{AtomicU32, AtomicU64};

/// First eight bytes of the state file.
pub const STATE_MAGIC: [u8; 8] = *b"RRLITE\0R";
/// Layout version of the state file (bumped with any change of the types).
pub const STATE_VERSION: u32 = 4;
/// Name of the state file inside a replay session directory.
pub const STATE_FILE: &str = "state";

/// The file's header. Written by the replayer before the program starts
/// (`magic`, `version`, `threads`, `plan_variant`, the debug stop);
/// everything else is shared progress, written by the program's threads.
#[repr(C)]
#[derive(Debug)]
pub struct StateHeader {
    pub magic: [u8; 8],
    pub version: u32,
    /// Number of [`ThreadProgress`] slots after the header.
    pub threads: u32,
    /// Sequential replay: the global sequence number whose turn it is.
    pub turn: AtomicU64,
    /// Times a thread of the program parked (a futex wait for another
    /// thread's event or the turn), wrapping: the replayer's CPU governor
    /// reads its rate (see `one_cpu`).
    pub parks: AtomicU32,
    /// CPU + 1 while the replayer keeps every thread of the program on
    /// that one CPU (`replay --one-cpu`), 0 otherwise: the runtime's
    /// waiters then count one core, and yield instead of spinning; a
    /// runtime that finds it set at start moves its main thread there.
    pub one_cpu: AtomicU32,
    /// Non-zero once a thread diverged: a [`Divergence`] code. The first
    /// thread to set it fills in `divergence`.
    pub diverged: AtomicU32,
    /// Which plans the runtime loads: a [`crate::plan::PlanVariant`] code.
    pub plan_variant: u32,
    pub divergence: DivergenceReport,
    /// Sequential replay: the sequence number of the last event counted at
    /// its turn, and its thread + 1, so that a waiter can pass on the turn of
    /// a thread that sleeps in a call the runtime does not see.
    pub turn_counted: AtomicU64,
    pub turn_holder: AtomicU32,
    /// `replay --debug --at T:N`: T + 1 (0: no stop). Thread T calls the
    /// runtime's `rr_lite_debug_stop` (where the debugger has a
    /// breakpoint) when it is about to perform its event N.
    pub debug_stop_thread: u32,
    /// N, the per-thread index of that event.
    pub debug_stop_index: u64,
}

/// Where and how the first divergence happened.
#[repr(C)]
#[derive(Debug)]
pub struct DivergenceReport {
    pub thread: AtomicU64,
    pub index: AtomicU64,
    pub expected_kind: AtomicU32,
    pub actual_kind: AtomicU32,
    pub expected_addr: AtomicU64,
    pub actual_addr: AtomicU64,
    /// The call site of the diverging event (event and result divergences).
    pub actual_site: AtomicU64,
    /// Expected and actual value (count or hash at exit, thread id...).
    pub expected_value: AtomicU64,
    pub actual_value: AtomicU64,
}

/// One thread's slot: its progress (what waits wait on) and, for the
/// watchdog, what it is doing.
#[repr(C)]
#[derive(Debug)]
pub struct ThreadProgress {
    /// Events completed; a wait `(T, j)` waits for `done[T] > j`.
    pub done: AtomicU64,
    /// Bumped and woken by publishers when `sleepers` is non-zero.
    pub futex: AtomicU32,
    pub sleepers: AtomicU32,
    /// A [`ThreadStatus`] code.
    pub status: AtomicU32,
    /// What a parked thread waits for: thread (`u32::MAX`: the sequential
    /// turn) and event index.
    pub wait_thread: AtomicU32,
    pub wait_index: AtomicU64,
    /// Events counted so far (for reports).
    pub index: AtomicU64,
    /// Events the recording has for the thread (written by the replayer).
    pub recorded: AtomicU64,
    /// Sequential replay: the turn this thread sleeps for, plus one (0: none),
    /// so that passing the turn wakes only that thread.
    pub turn_wanted: AtomicU64,
    /// The thread's kernel id (for the watchdog, which reads its state in
    /// /proc), 0 before it starts.
    pub kernel_tid: AtomicU32,
    _reserved: u32,
}

/// Size of the header; slots follow it.
pub const HEADER_LEN: usize = size_of::<StateHeader>();
/// Size of one thread's slot.
pub const SLOT_LEN: usize = size_of::<ThreadProgress>();

// The layout is part of the format (docs/FORMAT.md): these fail the build if
// a field changes size or place. Slots stay 8-aligned after a 128-byte header.
const _: () = assert!(HEADER_LEN == 128);
const _: () = assert!(SLOT_LEN == 64);
const _: () = assert!(core::mem::align_of::<StateHeader>() == 8);
const _: () = assert!(core::mem::align_of::<ThreadProgress>() == 8);
const _: () = assert!(offset_of!(StateHeader, divergence) == 40);
const _: () = assert!(offset_of!(StateHeader, debug_stop_thread) == 116);
const _: () = assert!(offset_of!(StateHeader, debug_stop_index) == 120);
const _: () = assert!(cfg!(target_endian = "little"));

/// Size of a state file for `threads` threads.
pub fn file_len_for(threads: u32) -> usize {
    HEADER_LEN + threads as usize * SLOT_LEN
}

/// Offset of thread `t`'s slot.
pub fn slot_offset(t: u32) -> usize {
    HEADER_LEN + t as usize * SLOT_LEN
}

/// Where `replay --debug --at T:N` stops: thread T about to perform its
/// event N (its per-thread index, as `dump` prints it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugStop {
    pub thread: u32,
    pub index: u64,
}

impl DebugStop {
    /// From the header's fields (thread + 1, 0 for none).
    fn decode(thread_plus_one: u32, index: u64) -> Option<DebugStop> {
        thread_plus_one
            .checked_sub(1)
            .map(|thread| DebugStop { thread, index })
    }
}

/// The bytes of a fresh state file: zeroed progress, the header filled in
/// and each thread's recorded event count.
pub fn new_state_file(recorded: &[u64], plan_variant: u32, stop: Option<DebugStop>) -> Vec<u8> {
    let threads = recorded.len() as u32;
    let mut bytes = vec![0u8; file_len_for(threads)];
    let mut put = |at: usize, value: &[u8]| bytes[at..at + value.len()].copy_from_slice(value);
    put(offset_of!(StateHeader, magic), &STATE_MAGIC);
    put(
        offset_of!(StateHeader, version),
        &STATE_VERSION.to_le_bytes(),
    );
    put(offset_of!(StateHeader, threads), &threads.to_le_bytes());
    put(
        offset_of!(StateHeader, plan_variant),
        &plan_variant.to_le_bytes(),
    );
    if let Some(stop) = stop {
        put(
            offset_of!(StateHeader, debug_stop_thread),
            &(stop.thread + 1).to_le_bytes(),
        );
        put(
            offset_of!(StateHeader, debug_stop_index),
            &stop.index.to_le_bytes(),
        );
    }
    for (t, n) in (0..threads).zip(recorded) {
        put(
            slot_offset(t) + offset_of!(ThreadProgress, recorded),
            &n.to_le_bytes(),
        );
    }
    bytes
}

/// Why a mapped state file cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFileProblem {
    BadMagic,
    OtherVersion,
    /// Shorter than its thread count says.
    Truncated,
}

impl StateHeader {
    /// A header as the replayer writes it (progress zeroed).
    pub const fn new(threads: u32, plan_variant: u32) -> StateHeader {
        StateHeader {
            magic: STATE_MAGIC,
            version: STATE_VERSION,
            threads,
            turn: AtomicU64::new(0),
            parks: AtomicU32::new(0),
            one_cpu: AtomicU32::new(0),
            diverged: AtomicU32::new(0),
            plan_variant,
            divergence: DivergenceReport {
                thread: AtomicU64::new(0),
                index: AtomicU64::new(0),
                expected_kind: AtomicU32::new(0),
                actual_kind: AtomicU32::new(0),
                expected_addr: AtomicU64::new(0),
                actual_addr: AtomicU64::new(0),
                actual_site: AtomicU64::new(0),
                expected_value: AtomicU64::new(0),
                actual_value: AtomicU64::new(0),
            },
            turn_counted: AtomicU64::new(u64::MAX),
            turn_holder: AtomicU32::new(0),
            debug_stop_thread: 0,
            debug_stop_index: 0,
        }
    }

    /// Where `replay --debug --at` stops, if it does.
    pub fn debug_stop(&self) -> Option<DebugStop> {
        DebugStop::decode(self.debug_stop_thread, self.debug_stop_index)
    }

    /// Checks the header of a mapped state file `file_len` bytes long
    /// before the runtime trusts the slots it announces; returns the thread
    /// count.
    pub fn check(&self, file_len: usize) -> Result<u32, StateFileProblem> {
        if self.magic != STATE_MAGIC {
            return Err(StateFileProblem::BadMagic);
        }
        if self.version != STATE_VERSION {
            return Err(StateFileProblem::OtherVersion);
        }
        if file_len < file_len_for(self.threads) {
            return Err(StateFileProblem::Truncated);
        }
        Ok(self.threads)
    }
}

/// A copy of the state file read by the replayer (watchdog, reports). Reads
/// past the end give 0: the copy may be of a file being written.
#[derive(Debug, Clone)]
pub struct StateSnapshot(Vec<u8>);

/// One thread's slot in a [`StateSnapshot`], as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProgressSnapshot {
    pub kernel_tid: u32,
    pub done: u64,
    pub status: u32,
    pub wait_thread: u32,
    pub wait_index: u64,
    pub index: u64,
    pub recorded: u64,
}

/// Where the replayer writes the header's `one_cpu` word (4 bytes, little
/// endian) into the live state file.
pub const ONE_CPU_OFFSET: usize = offset_of!(StateHeader, one_cpu);

impl StateSnapshot {
    /// `None` if shorter than the header.
    pub fn parse(bytes: &[u8]) -> Option<StateSnapshot> {
        (bytes.len() >= HEADER_LEN).then(|| StateSnapshot(bytes.to_vec()))
    }

    fn u32_at(&self, at: usize) -> u32 {
        self.0
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    fn u64_at(&self, at: usize) -> u64 {
        self.0
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    }

    /// Thread slots present in the copy (never more than the file holds).
    pub fn threads(&self) -> u32 {
        let announced = self.u32_at(offset_of!(StateHeader, threads));
        let present = (self.0.len().saturating_sub(HEADER_LEN) / SLOT_LEN) as u32;
        announced.min(present)
    }

    pub fn turn(&self) -> u64 {
        self.u64_at(offset_of!(StateHeader, turn))
    }

    /// Parks so far, all threads (wrapping).
    pub fn parks(&self) -> u32 {
        self.u32_at(offset_of!(StateHeader, parks))
    }

    /// Events completed so far, all threads: what replay has done.
    pub fn events_done(&self) -> u64 {
        (0..self.threads()).fold(0u64, |sum, t| sum.wrapping_add(self.thread(t).done))
    }

    pub fn debug_stop(&self) -> Option<DebugStop> {
        DebugStop::decode(
            self.u32_at(offset_of!(StateHeader, debug_stop_thread)),
            self.u64_at(offset_of!(StateHeader, debug_stop_index)),
        )
    }

    pub fn diverged(&self) -> Option<Divergence> {
        match self.u32_at(offset_of!(StateHeader, diverged)) {
            0 => None,
            code => Some(Divergence::from_code(code).unwrap_or(Divergence::Event)),
        }
    }

    /// Where and how the first divergence happened.
    pub fn divergence(&self) -> DivergenceValues {
        let at = |field: usize| offset_of!(StateHeader, divergence) + field;
        DivergenceValues {
            thread: self.u64_at(at(offset_of!(DivergenceReport, thread))) as u32,
            index: self.u64_at(at(offset_of!(DivergenceReport, index))),
            expected_kind: self.u32_at(at(offset_of!(DivergenceReport, expected_kind))) as u8,
            actual_kind: self.u32_at(at(offset_of!(DivergenceReport, actual_kind))) as u8,
            expected_addr: self.u64_at(at(offset_of!(DivergenceReport, expected_addr))),
            actual_addr: self.u64_at(at(offset_of!(DivergenceReport, actual_addr))),
            actual_site: self.u64_at(at(offset_of!(DivergenceReport, actual_site))),
            expected_value: self.u64_at(at(offset_of!(DivergenceReport, expected_value))),
            actual_value: self.u64_at(at(offset_of!(DivergenceReport, actual_value))),
        }
    }

    /// Thread `t`'s slot.
    pub fn thread(&self, t: u32) -> ProgressSnapshot {
        let at = |field: usize| slot_offset(t) + field;
        ProgressSnapshot {
            kernel_tid: self.u32_at(at(offset_of!(ThreadProgress, kernel_tid))),
            done: self.u64_at(at(offset_of!(ThreadProgress, done))),
            status: self.u32_at(at(offset_of!(ThreadProgress, status))),
            wait_thread: self.u32_at(at(offset_of!(ThreadProgress, wait_thread))),
            wait_index: self.u64_at(at(offset_of!(ThreadProgress, wait_index))),
            index: self.u64_at(at(offset_of!(ThreadProgress, index))),
            recorded: self.u64_at(at(offset_of!(ThreadProgress, recorded))),
        }
    }
}

/// The divergence details of a [`StateSnapshot`], as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DivergenceValues {
    pub thread: u32,
    pub index: u64,
    pub expected_kind: u8,
    pub actual_kind: u8,
    pub expected_addr: u64,
    pub actual_addr: u64,
    pub actual_site: u64,
    pub expected_value: u64,
    pub actual_value: u64,
}

/// What diverged (`StateHeader::diverged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Divergence {
    /// An event is not the recorded one (kind or address).
    Event = 1,
    /// At thread exit, the number or hash of events differs.
    Summary = 2,
    /// An allocator call returned another address.
    HeapAddress = 3,
    /// A thread the recording does not have (more threads created).
    UnknownThread = 4,
    /// A real call gave another result than the recorded one.
    Result = 5,
    /// The wait-for-turn of sequential replay timed out on an event the
    /// recording does not have.
    Missing = 6,
}

impl Divergence {
    pub fn from_code(code: u32) -> Option<Divergence> {
        use Divergence::*;
        [Event, Summary, HeapAddress, UnknownThread, Result, Missing]
            .into_iter()
            .find(|d| *d as u32 == code)
    }
}

/// A thread's status (`ThreadProgress::status`), for the watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ThreadStatus {
    NotStarted = 0,
    Running = 1,
    /// Parked in a replay wait (spun first).
    Waiting = 2,
    Exited = 3,
    /// In a real call that may block (a lock whose predecessors are done,
    /// the FILE lock): stuck there only if something else is.
    Blocked = 4,
    /// Past its last recorded event (the recording ended while the thread
    /// ran: a crash or exit elsewhere); waits to be ended the same way.
    AtEnd = 5,
    /// In a call that returns by itself or on outside input (sleep, poll,
    /// read): not stuck, whatever the others do.
    Sleeping = 6,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_reads_back() {
        let bytes = new_state_file(&[5, 7, 9], 2, None);
        assert_eq!(bytes.len(), 128 + 3 * 64);
        let s = StateSnapshot::parse(&bytes).unwrap();
        assert_eq!(s.threads(), 3);
        assert_eq!(s.thread(1).recorded, 7);
        assert_eq!(s.diverged(), None);
        assert_eq!(s.turn(), 0);
        assert_eq!(bytes[..8], STATE_MAGIC);
        assert_eq!(bytes[8..12], STATE_VERSION.to_le_bytes());
        assert_eq!(s.debug_stop(), None);
    }

    #[test]
    fn a_debug_stop_reads_back() {
        let stop = DebugStop {
            thread: 0,
            index: 41,
        };
        let bytes = new_state_file(&[50, 60], 1, Some(stop));
        assert_eq!(
            StateSnapshot::parse(&bytes).unwrap().debug_stop(),
            Some(stop)
        );
    }

    #[test]
    fn headers_are_checked() {
        let len = file_len_for(2);
        assert_eq!(StateHeader::new(2, 1).check(len), Ok(2));
        assert_eq!(
            StateHeader::new(2, 1).check(len - 1),
            Err(StateFileProblem::Truncated)
        );
        let mut other = StateHeader::new(2, 1);
        other.magic[0] = b'X';
        assert_eq!(other.check(len), Err(StateFileProblem::BadMagic));
        let mut other = StateHeader::new(2, 1);
        other.version = 1;
        assert_eq!(other.check(len), Err(StateFileProblem::OtherVersion));
    }

    #[test]
    fn a_snapshot_of_a_short_copy_reads_zeroes() {
        let bytes = new_state_file(&[1, 2, 3], 1, None);
        let s = StateSnapshot::parse(&bytes[..HEADER_LEN + SLOT_LEN]).unwrap();
        assert_eq!(s.threads(), 1);
        assert_eq!(s.thread(2), ProgressSnapshot::default());
    }
}
