//! Replay plans and the replay state file: what the replayer hands the
//! runtime in replay mode (docs/FORMAT.md, "Replay plans").
//!
//! A plan lists, for one thread, the events at which replay must do
//! something: wait for other threads (the splitter's sync points), publish
//! its progress for waiters, return a recorded result instead of calling the
//! real function, or check that the event is the recorded one. Records have a
//! fixed size so the runtime can use the mapped file in place, without
//! decoding or allocating.
//!
//! The state file the replayed program shares with the replayer is in
//! [`crate::state`].

use crate::event::EventKind;

pub const PLAN_MAGIC: [u8; 8] = *b"RRLITE\0P";
pub const PLAN_VERSION: u16 = 1;
pub const PLAN_HEADER_LEN: usize = 64;
pub const POINT_LEN: usize = 40;
pub const WAIT_LEN: usize = 16;
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
}

/// The plan directories a trace can have, one per way of replaying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum PlanVariant {
    /// Sync points and recorded results only.
    Parallel = 1,
    /// Every event, in the global order.
    Sequential = 2,
    /// Like parallel, plus a check of every event.
    Verify = 3,
}

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
            PlanVariant::Parallel => "plans-parallel",
            PlanVariant::Sequential => "plans-sequential",
            PlanVariant::Verify => "plans-verify",
        }
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
pub fn replay_needs_payload(kind: EventKind) -> bool {
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
            | Random
            | Time
            | Alloc
            | FatalSignal
            | ProcessExit
            | DescriptorOpen
            | DescriptorClose
            | Input
    )
}

/// Kinds that are a point of every plan: those replay needs the result of,
/// and the stack cache's events. A call whose own events nest before its
/// event (pthread_create's allocations before its thread-stacks event)
/// finds that event's point ahead, and waits for its predecessors before
/// the real call.
pub fn always_a_point(kind: EventKind) -> bool {
    replay_needs_payload(kind) || kind == EventKind::ThreadStacks
}

/// One point as stored in a plan file (little-endian), and as the runtime
/// reads it in place from the mapped file: `#[repr(C)]`, so the layout
/// below is the type's own (asserted), not offsets kept in step by hand.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointRecord {
    pub index: u64,
    /// Global sequence number (sequential plans), else `u64::MAX`.
    pub seq: u64,
    pub addr: u64,
    pub payload: u64,
    /// Index of the point's first wait in the wait array.
    pub first_wait: u32,
    pub waits: u16,
    /// Kind code of the recorded event (0 if unknown).
    pub kind: u8,
    /// [`flags`].
    pub flags: u8,
}

/// One wait as stored in a plan file: wait until `thread` has completed
/// event `index`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitRecord {
    pub thread: u32,
    _zero: u32,
    pub index: u64,
}

const _: () = assert!(core::mem::size_of::<PointRecord>() == POINT_LEN);
const _: () = assert!(core::mem::size_of::<WaitRecord>() == WAIT_LEN);
const _: () = assert!(core::mem::align_of::<PointRecord>() == 8);
const _: () = assert!(core::mem::align_of::<WaitRecord>() == 8);
// Records follow an 8-aligned header, so the mapped arrays are aligned.
const _: () = assert!(PLAN_HEADER_LEN.is_multiple_of(8));
const _: () = assert!(cfg!(target_endian = "little"));

impl PointRecord {
    /// The record's bytes in the file (its in-memory layout, little-endian).
    pub fn to_bytes(&self) -> [u8; POINT_LEN] {
        use core::mem::offset_of;
        let mut out = [0u8; POINT_LEN];
        let mut put = |at: usize, b: &[u8]| out[at..at + b.len()].copy_from_slice(b);
        put(offset_of!(PointRecord, index), &self.index.to_le_bytes());
        put(offset_of!(PointRecord, seq), &self.seq.to_le_bytes());
        put(offset_of!(PointRecord, addr), &self.addr.to_le_bytes());
        put(
            offset_of!(PointRecord, payload),
            &self.payload.to_le_bytes(),
        );
        put(
            offset_of!(PointRecord, first_wait),
            &self.first_wait.to_le_bytes(),
        );
        put(offset_of!(PointRecord, waits), &self.waits.to_le_bytes());
        put(offset_of!(PointRecord, kind), &[self.kind]);
        put(offset_of!(PointRecord, flags), &[self.flags]);
        out
    }
}

impl WaitRecord {
    pub fn new(thread: u32, index: u64) -> WaitRecord {
        WaitRecord {
            thread,
            _zero: 0,
            index,
        }
    }

    /// The record's bytes in the file.
    pub fn to_bytes(&self) -> [u8; WAIT_LEN] {
        use core::mem::offset_of;
        let mut out = [0u8; WAIT_LEN];
        out[offset_of!(WaitRecord, thread)..][..4].copy_from_slice(&self.thread.to_le_bytes());
        out[offset_of!(WaitRecord, index)..][..8].copy_from_slice(&self.index.to_le_bytes());
        out
    }
}

/// One point of a plan, as built by the replayer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanPoint {
    pub index: u64,
    /// Global sequence number (sequential plans), else `u64::MAX`.
    pub seq: u64,
    pub addr: u64,
    pub payload: u64,
    /// Kind code of the recorded event (0 if unknown).
    pub kind: u8,
    pub flags: u8,
    /// `(thread, index)`: wait until `thread` has completed event `index`.
    pub waits: Vec<(u32, u64)>,
}

/// The fixed header of a plan file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanHeader {
    pub thread: u32,
    pub mode: PlanMode,
    pub points: u64,
    pub waits: u64,
    /// Events of the thread in the recording, and their access hash.
    pub accesses: u64,
    pub access_hash: u64,
}

/// Writes a plan file point by point (memory: the waits only): header,
/// points sorted by index, then the waits they refer to. Layout in
/// docs/FORMAT.md.
#[derive(Debug)]
pub struct PlanWriter<W: std::io::Write + std::io::Seek> {
    out: W,
    thread: u32,
    mode: PlanMode,
    points: u64,
    last_index: Option<u64>,
    waits: Vec<(u32, u64)>,
    /// FNV-1a of everything after the header, as written.
    checksum: u64,
}

impl<W: std::io::Write + std::io::Seek> PlanWriter<W> {
    pub fn new(mut out: W, thread: u32, mode: PlanMode) -> std::io::Result<Self> {
        out.write_all(&[0u8; PLAN_HEADER_LEN])?;
        Ok(PlanWriter {
            out,
            thread,
            mode,
            points: 0,
            last_index: None,
            waits: Vec::new(),
            checksum: crate::codec::checksum::FNV1A_START,
        })
    }

    pub fn push(&mut self, p: &PlanPoint) -> std::io::Result<()> {
        debug_assert!(
            self.last_index.is_none_or(|last| last < p.index),
            "points sorted by index"
        );
        self.last_index = Some(p.index);
        let record = PointRecord {
            index: p.index,
            seq: p.seq,
            addr: p.addr,
            payload: p.payload,
            first_wait: self.waits.len() as u32,
            waits: p.waits.len() as u16,
            kind: p.kind,
            flags: p.flags,
        };
        self.waits.extend_from_slice(&p.waits);
        self.points += 1;
        self.write_body(&record.to_bytes())
    }

    fn write_body(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.checksum = crate::codec::checksum::fnv1a_more(self.checksum, bytes);
        self.out.write_all(bytes)
    }

    /// Writes the waits and the header; returns the output.
    pub fn finish(mut self, accesses: u64, access_hash: u64) -> std::io::Result<W> {
        let waits = self.waits.len() as u64;
        for (thread, index) in std::mem::take(&mut self.waits) {
            self.write_body(&WaitRecord::new(thread, index).to_bytes())?;
        }
        let mut h = [0u8; PLAN_HEADER_LEN];
        h[0..8].copy_from_slice(&PLAN_MAGIC);
        h[8..10].copy_from_slice(&PLAN_VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&(PLAN_HEADER_LEN as u16).to_le_bytes());
        h[12..16].copy_from_slice(&self.thread.to_le_bytes());
        h[16..24].copy_from_slice(&self.points.to_le_bytes());
        h[24..32].copy_from_slice(&waits.to_le_bytes());
        h[32..40].copy_from_slice(&accesses.to_le_bytes());
        h[40..48].copy_from_slice(&access_hash.to_le_bytes());
        h[48] = self.mode as u8;
        h[56..64].copy_from_slice(&self.checksum.to_le_bytes());
        self.out.seek(std::io::SeekFrom::Start(0))?;
        self.out.write_all(&h)?;
        self.out.seek(std::io::SeekFrom::End(0))?;
        Ok(self.out)
    }
}

/// Encodes a whole plan in memory.
pub fn encode_plan(
    thread: u32,
    mode: PlanMode,
    accesses: u64,
    access_hash: u64,
    points: &[PlanPoint],
) -> Vec<u8> {
    let mut w = PlanWriter::new(std::io::Cursor::new(Vec::new()), thread, mode)
        .expect("writing to memory cannot fail");
    for p in points {
        w.push(p).expect("writing to memory cannot fail");
    }
    w.finish(accesses, access_hash)
        .expect("writing to memory cannot fail")
        .into_inner()
}

/// Checks a plan's header and sizes; returns the header. Used by the
/// runtime before it trusts the mapped file, and by tests.
pub fn check_plan(bytes: &[u8]) -> Result<PlanHeader, &'static str> {
    if bytes.len() < PLAN_HEADER_LEN || bytes[..8] != PLAN_MAGIC {
        return Err("not a replay plan");
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[i..i + 8]);
        u64::from_le_bytes(b)
    };
    if u16_at(8) != PLAN_VERSION || usize::from(u16_at(10)) != PLAN_HEADER_LEN {
        return Err("replay plan of another version");
    }
    let mode = match bytes[48] {
        1 => PlanMode::Parallel,
        2 => PlanMode::Sequential,
        _ => return Err("unknown plan mode"),
    };
    let header = PlanHeader {
        thread: u32_at(12),
        points: u64_at(16),
        waits: u64_at(24),
        accesses: u64_at(32),
        access_hash: u64_at(40),
        mode,
    };
    let expected = (header.points as u128) * POINT_LEN as u128
        + (header.waits as u128) * WAIT_LEN as u128
        + PLAN_HEADER_LEN as u128;
    if expected != bytes.len() as u128 {
        return Err("replay plan size does not match its header");
    }
    Ok(header)
}

/// [`check_plan`] plus what only the replayer checks before the program
/// starts: the checksum over points and waits, and that the plan is thread
/// `thread`'s with `accesses` events (the trace header's count).
pub fn verify_plan(bytes: &[u8], thread: u32, accesses: u64) -> Result<PlanHeader, String> {
    let header = check_plan(bytes)?;
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&bytes[56..64]);
    let checksum = crate::codec::checksum::fnv1a(&bytes[PLAN_HEADER_LEN..]);
    if u64::from_le_bytes(stored) != checksum {
        return Err("checksum does not match the contents".into());
    }
    if header.thread != thread {
        return Err(format!(
            "plan of thread {} in thread {thread}'s file",
            header.thread
        ));
    }
    if header.accesses != accesses {
        return Err(format!(
            "{} events, the trace has {accesses} for this thread",
            header.accesses
        ));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_verifies_and_any_flipped_byte_is_caught() {
        let point = PlanPoint {
            index: 3,
            seq: u64::MAX,
            addr: 0x10,
            payload: 7,
            kind: EventKind::MutexLock as u8,
            flags: flags::CHECK,
            waits: vec![(1, 5)],
        };
        let plan = encode_plan(2, PlanMode::Parallel, 9, 0xabc, &[point]);
        assert!(verify_plan(&plan, 2, 9).is_ok());
        assert!(verify_plan(&plan, 1, 9).is_err());
        assert!(verify_plan(&plan, 2, 8).is_err());
        for i in PLAN_HEADER_LEN..plan.len() {
            let mut bad = plan.clone();
            bad[i] ^= 0x40;
            assert!(verify_plan(&bad, 2, 9).is_err(), "byte {i} flipped");
        }
    }

    #[test]
    fn plan_round_trips_through_check() {
        let points = vec![
            PlanPoint {
                index: 3,
                seq: u64::MAX,
                addr: 0x10,
                payload: 0,
                kind: EventKind::Write as u8,
                flags: flags::NOTIFY | flags::CHECK,
                waits: vec![],
            },
            PlanPoint {
                index: 9,
                waits: vec![(1, 4), (2, 0)],
                flags: flags::CHECK,
                ..Default::default()
            },
        ];
        let bytes = encode_plan(2, PlanMode::Parallel, 10, 77, &points);
        let h = check_plan(&bytes).unwrap();
        assert_eq!(
            (h.thread, h.points, h.waits, h.accesses, h.access_hash),
            (2, 2, 2, 10, 77)
        );
        assert!(check_plan(&bytes[..bytes.len() - 1]).is_err());
        assert!(check_plan(b"nonsense").is_err());
    }
}
