//! A plan's bytes (docs/FORMAT.md, "Replay plans"): the 64-byte header, the
//! results array (u64 count, then that many u64 values, little-endian: the
//! thread's recorded results of [`super::in_results`] kinds, in its event
//! order), then one variable-length record per point, in increasing index
//! order:
//!
//! | field | encoding |
//! |---|---|
//! | kind, wait count | u8: bits 0-5 the recorded kind code (0 if none), bits 6-7 the number of waits, 3 meaning 3 plus the varint that follows |
//! | flags, index | u8: bits 0-3 the flags, bits 4-7 `index - expected` (expected: 0, then the previous index + 1), 15 meaning 15 plus the varint that follows |
//! | address check | CHECK only: u8, [`addr_check`] of the recorded address |
//! | payload | PAYLOAD only: varint `zigzag(payload - previous PAYLOAD point's)` (0 before the first) |
//! | turn | SEQUENCED only: the same delta from the previous SEQUENCED point's |
//! | waits | each: varint thread, varint `zigzag(waited index - prediction)` |
//!
//! The prediction for a wait on thread `u` is the index of the plan's last
//! wait on `u` if a small table of recent waits ([`WAIT_TABLE`] entries,
//! slot `u % WAIT_TABLE`, replaced by each wait; a wait on a thread from
//! 2^24 - 1 on or of an index from 2^40 on empties the slot instead) still
//! holds it, else the point's own index: a thread's waits on another follow that thread's
//! progress, so the delta takes a byte or two. The address is checked by a
//! byte, not stored: a divergence report takes the recorded event from the
//! trace, and the access hash at thread exit checks every address.
//!
//! [`PlanWriter`] streams points out in constant memory. [`PlanCursor`] reads
//! them forward without allocating (the runtime, from the mapped file); it
//! stops at damaged bytes, which [`verify_plan`] (run by the replayer before
//! the program starts) has already refused.

use super::{PLAN_HEADER_LEN, PLAN_MAGIC, PLAN_VERSION, PlanMode, PlanPoint, flags};
use crate::codec::checksum::{LogChecksum, RunningChecksum};
use crate::codec::varint::{self, unzigzag, zigzag};

/// Wait counts from this one on continue in a varint.
const MANY_WAITS: u64 = 3;
/// Index deltas from this one on continue in a varint.
const FAR_INDEX: u64 = 15;
/// Largest kind code a plan can hold (six bits).
pub const MAX_PLAN_KIND: u8 = 63;
/// A plan's checksum (header offset 56), the thread logs' CRC-32: every
/// later replay verifies every plan before the program starts.
const PLAN_CHECKSUM: LogChecksum = LogChecksum::Crc32;
/// Entries of the table of recent waits that predicts a wait's index.
pub const WAIT_TABLE: usize = 8;
/// Fewest bytes a point takes (kind, flags).
const MIN_POINT_LEN: u64 = 2;
/// Fewest bytes a wait takes (thread, index).
const MIN_WAIT_LEN: u64 = 2;
/// Bytes of the results array's count, and of each result.
const RESULT_LEN: usize = 8;

/// Where result `i` of a plan's results array starts (`None` past any
/// file: a damaged count or index).
fn result_offset(i: u64) -> Option<usize> {
    let len = usize::try_from(i).ok()?.checked_mul(RESULT_LEN)?;
    (PLAN_HEADER_LEN + RESULT_LEN).checked_add(len)
}

/// Where a plan's points start when it holds `results` results.
fn points_start(results: u64) -> Option<usize> {
    result_offset(results)
}

/// The count of a plan's results array (0 if the file is too short to
/// hold one: [`check_plan`] refuses such a file).
fn results_count(bytes: &[u8]) -> u64 {
    bytes
        .get(PLAN_HEADER_LEN..PLAN_HEADER_LEN + RESULT_LEN)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// Result `i` of a plan's results array (`None` past its end). The
/// runtime reads them in order, one per event of an [`super::in_results`]
/// kind.
#[inline]
pub fn result_at(bytes: &[u8], i: u64) -> Option<u64> {
    if i >= results_count(bytes) {
        return None;
    }
    let at = result_offset(i)?;
    let b = bytes.get(at..at.checked_add(RESULT_LEN)?)?;
    Some(u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// A plan's results array (tests and tools).
pub fn decode_results(bytes: &[u8]) -> Result<Vec<u64>, &'static str> {
    let header = check_plan(bytes)?;
    Ok((0..header.results)
        .map_while(|i| result_at(bytes, i))
        .collect())
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
    /// Entries of the results array.
    pub results: u64,
}

/// What each point's deltas are taken from: the writer and the cursor keep
/// it in step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Previous {
    expected: u64,
    payload: u64,
    seq: u64,
    waits: RecentWaits,
}

/// The last wait on each of a few threads (slot `thread % WAIT_TABLE`),
/// packed in a word: `(thread + 1) << INDEX_BITS | index`, 0 meaning
/// empty. A wait whose thread or index does not fit empties its slot
/// instead (writer and cursor alike: the table only guesses). Packed so
/// that a point, which carries the table for its waits, and a cursor stay
/// within 128 bytes, which the compiler copies inline: a copy any larger is
/// a `memcpy` call, in the runtime its own interposed one, several per
/// point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecentWaits([u64; WAIT_TABLE]);

/// Bits of a remembered index (a trillion events of one thread).
const INDEX_BITS: u32 = 40;

// What the packing is for (see `RecentWaits`).
const _: () = assert!(core::mem::size_of::<Point<'static>>() <= 128);
const _: () = assert!(core::mem::size_of::<PlanCursor<'static>>() <= 128);

impl RecentWaits {
    /// The index a wait on `thread` is stored against (see the module doc).
    fn predict(&self, thread: u32, point_index: u64) -> u64 {
        let entry = self.0[thread as usize % WAIT_TABLE];
        if entry >> INDEX_BITS == u64::from(thread) + 1 {
            entry & ((1 << INDEX_BITS) - 1)
        } else {
            point_index
        }
    }

    fn remember(&mut self, thread: u32, index: u64) {
        let tag = u64::from(thread) + 1;
        self.0[thread as usize % WAIT_TABLE] =
            if tag < 1 << (64 - INDEX_BITS) && index < 1 << INDEX_BITS {
                tag << INDEX_BITS | index
            } else {
                0
            };
    }
}

/// The byte a plan stores to check a recorded address: its eight bytes
/// folded by xor.
pub fn addr_check(addr: u64) -> u8 {
    addr.to_le_bytes().iter().fold(0, |acc, b| acc ^ b)
}

fn put(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(varint::encode(v).as_bytes());
}

/// Writes a plan file point by point in constant memory: a zeroed header,
/// the points, then the header for real once the counts are known.
#[derive(Debug)]
pub struct PlanWriter<W: std::io::Write + std::io::Seek> {
    out: W,
    thread: u32,
    mode: PlanMode,
    points: u64,
    waits: u64,
    previous: Previous,
    /// [`PLAN_CHECKSUM`] of everything after the header, as written.
    checksum: RunningChecksum,
    /// One point's bytes (reused).
    record: Vec<u8>,
}

impl<W: std::io::Write + std::io::Seek> PlanWriter<W> {
    /// A plan of thread `thread` whose results array is `results` (written
    /// now, before the points).
    pub fn new(mut out: W, thread: u32, mode: PlanMode, results: &[u64]) -> std::io::Result<Self> {
        out.write_all(&[0u8; PLAN_HEADER_LEN])?;
        let mut checksum = PLAN_CHECKSUM.start();
        let mut write = |bytes: &[u8]| {
            checksum.update(bytes);
            out.write_all(bytes)
        };
        write(&(results.len() as u64).to_le_bytes())?;
        for block in results.chunks(1024) {
            let bytes: Vec<u8> = block.iter().flat_map(|r| r.to_le_bytes()).collect();
            write(&bytes)?;
        }
        Ok(PlanWriter {
            out,
            thread,
            mode,
            points: 0,
            waits: 0,
            previous: Previous::default(),
            checksum,
            record: Vec::with_capacity(64),
        })
    }

    pub fn push(&mut self, p: &PlanPoint) -> std::io::Result<()> {
        debug_assert!(
            self.points == 0 || p.index >= self.previous.expected,
            "points sorted by index"
        );
        debug_assert_eq!(p.flags & !flags::ALL, 0, "unknown flags");
        debug_assert!(p.kind <= MAX_PLAN_KIND, "kind code beyond six bits");
        let prev = &mut self.previous;
        let out = &mut self.record;
        out.clear();
        let waits = p.waits.len() as u64;
        out.push((p.kind & MAX_PLAN_KIND) | (waits.min(MANY_WAITS) as u8) << 6);
        let index_delta = p.index.wrapping_sub(prev.expected);
        out.push((p.flags & flags::ALL) | (index_delta.min(FAR_INDEX) as u8) << 4);
        prev.expected = p.index.wrapping_add(1);
        if waits >= MANY_WAITS {
            put(out, waits - MANY_WAITS);
        }
        if index_delta >= FAR_INDEX {
            put(out, index_delta - FAR_INDEX);
        }
        if p.flags & flags::CHECK != 0 {
            out.push(addr_check(p.addr));
        }
        let mut delta = |flag: u8, value: u64, previous: &mut u64| {
            if p.flags & flag != 0 {
                put(out, zigzag(value.wrapping_sub(*previous)));
                *previous = value;
            }
        };
        delta(flags::PAYLOAD, p.payload, &mut prev.payload);
        delta(flags::SEQUENCED, p.seq, &mut prev.seq);
        for &(thread, index) in &p.waits {
            put(out, u64::from(thread));
            put(
                out,
                zigzag(index.wrapping_sub(prev.waits.predict(thread, p.index))),
            );
            prev.waits.remember(thread, index);
        }
        self.points += 1;
        self.waits += waits;
        self.checksum.update(&self.record);
        self.out.write_all(&self.record)
    }

    /// Writes the header; returns the output.
    pub fn finish(mut self, accesses: u64, access_hash: u64) -> std::io::Result<W> {
        let mut h = [0u8; PLAN_HEADER_LEN];
        h[0..8].copy_from_slice(&PLAN_MAGIC);
        h[8..10].copy_from_slice(&PLAN_VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&(PLAN_HEADER_LEN as u16).to_le_bytes());
        h[12..16].copy_from_slice(&self.thread.to_le_bytes());
        h[16..24].copy_from_slice(&self.points.to_le_bytes());
        h[24..32].copy_from_slice(&self.waits.to_le_bytes());
        h[32..40].copy_from_slice(&accesses.to_le_bytes());
        h[40..48].copy_from_slice(&access_hash.to_le_bytes());
        h[48] = self.mode as u8;
        h[56..64].copy_from_slice(&self.checksum.value().to_le_bytes());
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
    results: &[u64],
    points: &[PlanPoint],
) -> Vec<u8> {
    let mut w = PlanWriter::new(std::io::Cursor::new(Vec::new()), thread, mode, results)
        .expect("writing to memory cannot fail");
    for p in points {
        w.push(p).expect("writing to memory cannot fail");
    }
    w.finish(accesses, access_hash)
        .expect("writing to memory cannot fail")
        .into_inner()
}

/// One decoded point. Fields a point's flags do not store read as 0
/// (`seq`: `u64::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point<'a> {
    pub index: u64,
    pub seq: u64,
    /// [`addr_check`] of the recorded address (CHECK points).
    pub addr_check: u8,
    pub payload: u64,
    pub kind: u8,
    pub flags: u8,
    /// Number of waits.
    pub wait_count: u32,
    /// The encoded waits, and the recent waits they are predicted from.
    wait_bytes: &'a [u8],
    recent: RecentWaits,
}

impl<'a> Point<'a> {
    /// The point's waits, as (thread, index): wait until that thread has
    /// completed that event.
    pub fn waits(&self) -> Waits<'a> {
        Waits {
            bytes: self.wait_bytes,
            at: 0,
            left: self.wait_count,
            index: self.index,
            recent: self.recent,
        }
    }
}

/// Iterates over a point's waits.
#[derive(Debug, Clone)]
pub struct Waits<'a> {
    bytes: &'a [u8],
    at: usize,
    left: u32,
    index: u64,
    recent: RecentWaits,
}

impl Iterator for Waits<'_> {
    type Item = (u32, u64);

    fn next(&mut self) -> Option<(u32, u64)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut r = Reader {
            bytes: self.bytes,
            at: self.at,
        };
        let thread = u32::try_from(r.varint().ok()?).ok()?;
        let predicted = self.recent.predict(thread, self.index);
        let index = predicted.wrapping_add(unzigzag(r.varint().ok()?));
        self.recent.remember(thread, index);
        self.at = r.at;
        Some((thread, index))
    }
}

/// Reads varints and bytes forward through a slice, never past its end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Result<u64, &'static str> {
        let rest = self.bytes.get(self.at..).unwrap_or(&[]);
        match varint::decode(rest) {
            Ok((v, len)) => {
                self.at += len;
                Ok(v)
            }
            Err(varint::VarintError::Truncated) => Err("truncated point"),
            Err(varint::VarintError::Overflow) => Err("varint overflows 64 bits"),
        }
    }

    fn byte(&mut self) -> Result<u8, &'static str> {
        let b = *self.bytes.get(self.at).ok_or("truncated point")?;
        self.at += 1;
        Ok(b)
    }
}

/// Reads a plan's points forward, one at a time, without allocating.
#[derive(Debug, Clone, Copy)]
pub struct PlanCursor<'a> {
    body: &'a [u8],
    at: usize,
    left: u64,
    previous: Previous,
}

impl PlanCursor<'static> {
    /// A cursor with no points.
    pub const EMPTY: PlanCursor<'static> = PlanCursor {
        body: &[],
        at: 0,
        left: 0,
        previous: Previous {
            expected: 0,
            payload: 0,
            seq: 0,
            waits: RecentWaits([0; WAIT_TABLE]),
        },
    };
}

impl<'a> PlanCursor<'a> {
    /// A cursor before the first point of a plan file's `bytes`, whose
    /// header says it has `points` points.
    pub fn new(bytes: &'a [u8], points: u64) -> PlanCursor<'a> {
        let start = points_start(results_count(bytes)).unwrap_or(usize::MAX);
        PlanCursor {
            body: bytes.get(start..).unwrap_or(&[]),
            at: 0,
            left: points,
            previous: Previous::default(),
        }
    }

    /// The next point, or `None` after the last one (or at damaged bytes,
    /// after which it gives no more).
    pub fn next_point(&mut self) -> Option<Point<'a>> {
        self.try_next().unwrap_or_else(|_| {
            self.left = 0;
            None
        })
    }

    /// Bytes of the body not yet read.
    fn remaining(&self) -> usize {
        self.body.len() - self.at
    }

    fn try_next(&mut self) -> Result<Option<Point<'a>>, &'static str> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut r = Reader {
            bytes: self.body,
            at: self.at,
        };
        let mut next = self.previous;
        let kind_waits = r.byte()?;
        let flags_index = r.byte()?;
        let kind = kind_waits & MAX_PLAN_KIND;
        let point_flags = flags_index & flags::ALL;
        let mut waits = u64::from(kind_waits >> 6);
        if waits == MANY_WAITS {
            waits = r.varint()?.checked_add(MANY_WAITS).ok_or("wait count")?;
        }
        let wait_count = u32::try_from(waits).map_err(|_| "wait count")?;
        let mut index_delta = u64::from(flags_index >> 4);
        if index_delta == FAR_INDEX {
            index_delta = r
                .varint()?
                .checked_add(FAR_INDEX)
                .ok_or("index overflows")?;
        }
        let index = next
            .expected
            .checked_add(index_delta)
            .ok_or("index overflows")?;
        next.expected = index.checked_add(1).ok_or("index overflows")?;
        let addr_check = if point_flags & flags::CHECK != 0 {
            r.byte()?
        } else {
            0
        };
        let mut delta = |flag: u8, previous: &mut u64, absent: u64| {
            if point_flags & flag == 0 {
                return Ok(absent);
            }
            *previous = previous.wrapping_add(unzigzag(r.varint()?));
            Ok::<u64, &'static str>(*previous)
        };
        let payload = delta(flags::PAYLOAD, &mut next.payload, 0)?;
        let seq = delta(flags::SEQUENCED, &mut next.seq, u64::MAX)?;
        let recent = next.waits;
        let waits_at = r.at;
        for _ in 0..wait_count {
            let thread = u32::try_from(r.varint()?).map_err(|_| "wait on a thread beyond u32")?;
            let predicted = next.waits.predict(thread, index);
            next.waits
                .remember(thread, predicted.wrapping_add(unzigzag(r.varint()?)));
        }
        let point = Point {
            index,
            seq,
            addr_check,
            payload,
            kind,
            flags: point_flags,
            wait_count,
            wait_bytes: &self.body[waits_at..r.at],
            recent,
        };
        self.at = r.at;
        self.left -= 1;
        self.previous = next;
        Ok(Some(point))
    }
}

/// Checks a plan's header; returns it. What the runtime checks before it
/// maps a plan (the replayer has run [`verify_plan`] on it).
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
    if bytes[49..56].iter().any(|&b| b != 0) {
        return Err("replay plan header: reserved bytes not zero");
    }
    if bytes.len() < PLAN_HEADER_LEN + RESULT_LEN {
        return Err("replay plan too short for its results array");
    }
    let results = results_count(bytes);
    let start = points_start(results)
        .filter(|&start| start <= bytes.len())
        .ok_or("replay plan too short for the results its array counts")?;
    let header = PlanHeader {
        thread: u32_at(12),
        points: u64_at(16),
        waits: u64_at(24),
        accesses: u64_at(32),
        access_hash: u64_at(40),
        mode,
        results,
    };
    if results > header.accesses {
        return Err("replay plan with more results than its thread has events");
    }
    let body = (bytes.len() - start) as u64;
    if header.points > body / MIN_POINT_LEN || header.waits > body / MIN_WAIT_LEN {
        return Err("replay plan too short for the points its header counts");
    }
    Ok(header)
}

/// [`check_plan`] plus what the replayer checks before the program starts:
/// the checksum, that the plan is thread `thread`'s with `accesses` events
/// (the trace header's count), and that every point decodes, in order and
/// below `accesses`, with as many points and waits as the header says and
/// nothing after them.
pub fn verify_plan(bytes: &[u8], thread: u32, accesses: u64) -> Result<PlanHeader, String> {
    let header = check_plan(bytes)?;
    let stored = u64::from_le_bytes(bytes[56..64].try_into().expect("8 bytes"));
    if stored != PLAN_CHECKSUM.of(&bytes[PLAN_HEADER_LEN..]) {
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
    let mut cursor = PlanCursor::new(bytes, header.points);
    let mut waits = 0u64;
    while cursor.left > 0 {
        let p = cursor.try_next()?.ok_or("missing point")?;
        if p.index >= accesses {
            return Err(format!("point at event {} of {accesses}", p.index));
        }
        waits += u64::from(p.wait_count);
    }
    if waits != header.waits {
        return Err(format!("{waits} waits, the header says {}", header.waits));
    }
    if cursor.remaining() != 0 {
        return Err(format!("{} bytes after the last point", cursor.remaining()));
    }
    Ok(header)
}

/// Decodes a whole plan (tests and tools; the runtime uses [`PlanCursor`]).
/// A decoded point's `addr` is the address's check byte.
pub fn decode_plan(bytes: &[u8]) -> Result<(PlanHeader, Vec<PlanPoint>), String> {
    let header = check_plan(bytes)?;
    let mut cursor = PlanCursor::new(bytes, header.points);
    let mut points = Vec::new();
    while let Some(p) = cursor.try_next()? {
        points.push(PlanPoint {
            index: p.index,
            seq: p.seq,
            addr: u64::from(p.addr_check),
            payload: p.payload,
            kind: p.kind,
            flags: p.flags,
            waits: p.waits().collect(),
        });
    }
    Ok((header, points))
}

#[cfg(test)]
mod tests;
