//! The per-thread log codec: a fixed 64-byte header, then variable-length
//! entries. The byte layout is specified in docs/FORMAT.md; this module is
//! its only implementation, shared by the runtime (encoder, allocation-free)
//! and every reader (decoder, never panics on bad bytes). Its [`varint`] and
//! [`checksum`] submodules are the primitives every rr-lite binary format
//! shares, the splitter's replay logs included.
//!
//! Crash safety: an entry's tag byte is written last, after its body, and a
//! zero tag means "end of log". The runtime writes into a shared file mapping,
//! so whatever a killed process had finished writing is in the file, and a
//! half-written entry still reads as the end.

pub mod checksum;
pub mod varint;

use crate::event::EventKind;
use varint::{VarintError, unzigzag, zigzag};

/// First eight bytes of every thread log.
pub const THREAD_LOG_MAGIC: [u8; 8] = *b"RRLITE\0T";
/// Version of the thread log and trace directory format. Readers reject
/// larger versions; see docs/FORMAT.md for the rule.
pub const FORMAT_VERSION: u16 = 4;
/// Size of the thread log header.
pub const HEADER_LEN: usize = 64;
/// Longest possible entry: tag + five 10-byte varints.
pub const MAX_ENTRY_LEN: usize = 1 + 5 * varint::MAX_LEN;
/// Tag of a padding byte run: the rest of the chunk is unused.
pub const PAD_TAG: u8 = 0xff;
/// Marks "no parent" (the main thread) in the header.
pub const NO_PARENT: u32 = u32::MAX;

const SIZE_EXPLICIT: u8 = 0;
const SIZE_1: u8 = 1;
const SIZE_4: u8 = 2;
const SIZE_8: u8 = 3;

/// The fixed header at offset 0 of a thread log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLogHeader {
    pub version: u16,
    /// Logical thread id.
    pub thread: u32,
    /// Entries never straddle a multiple of this many bytes (file offsets).
    pub chunk_size: u32,
    pub pid: u32,
    /// Logical id of the creating thread, or [`NO_PARENT`].
    pub parent: u32,
    /// Wall-clock time the thread started, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// The chunk the runtime last moved to, and the entries before it,
    /// written when it moves on ([`LAST_CHUNK_OFFSET`]; zero: the first
    /// chunk): counting a log's entries only needs that chunk onwards.
    pub last_chunk: u64,
    pub entries_before_last_chunk: u64,
}

/// Where in the header [`ThreadLogHeader::last_chunk`] and then
/// `entries_before_last_chunk` are (16 bytes).
pub const LAST_CHUNK_OFFSET: usize = 40;

/// What is wrong with some bytes; the reader adds file and offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes end in the middle of something.
    Truncated(&'static str),
    /// The bytes cannot be what they claim.
    Corrupt(&'static str),
    /// Not an rr-lite thread log at all.
    BadMagic,
    /// Written by a newer rr-lite.
    NewerVersion(u16),
}

impl ThreadLogHeader {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&THREAD_LOG_MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[12..16].copy_from_slice(&self.thread.to_le_bytes());
        b[16..20].copy_from_slice(&self.chunk_size.to_le_bytes());
        b[20..24].copy_from_slice(&self.pid.to_le_bytes());
        b[24..28].copy_from_slice(&self.parent.to_le_bytes());
        b[32..40].copy_from_slice(&self.start_unix_ns.to_le_bytes());
        b[40..48].copy_from_slice(&self.last_chunk.to_le_bytes());
        b[48..56].copy_from_slice(&self.entries_before_last_chunk.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<ThreadLogHeader, DecodeError> {
        if b.len() < 8 || b[0..8] != THREAD_LOG_MAGIC {
            return Err(if b.len() < 8 && THREAD_LOG_MAGIC.starts_with(b) {
                DecodeError::Truncated("header")
            } else {
                DecodeError::BadMagic
            });
        }
        if b.len() < HEADER_LEN {
            return Err(DecodeError::Truncated("header"));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut u64_bytes = [0u8; 8];
        u64_bytes.copy_from_slice(&b[32..40]);
        let u64_at = |i: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(bytes)
        };
        let version = u16_at(8);
        if version > FORMAT_VERSION {
            return Err(DecodeError::NewerVersion(version));
        }
        if version == 0 || usize::from(u16_at(10)) != HEADER_LEN {
            return Err(DecodeError::Corrupt("header version or length"));
        }
        let chunk_size = u32_at(16);
        if chunk_size < 4096 || !chunk_size.is_power_of_two() {
            return Err(DecodeError::Corrupt(
                "chunk size is not a power of two >= 4096",
            ));
        }
        Ok(ThreadLogHeader {
            version,
            thread: u32_at(12),
            chunk_size,
            pid: u32_at(20),
            parent: u32_at(24),
            start_unix_ns: u64::from_le_bytes(u64_bytes),
            last_chunk: u64_at(40),
            entries_before_last_chunk: u64_at(48),
        })
    }
}

/// One entry as the runtime logs it (thread and index are implied by the
/// file and the position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub clock: u64,
    pub kind: EventKind,
    pub addr: u64,
    pub size: u64,
    pub site: u64,
    pub payload: u64,
}

/// Delta-coding state shared by encoder and decoder: each entry's clock,
/// address and site are stored relative to the previous entry of the thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeltaState {
    pub clock: u64,
    pub addr: u64,
    pub site: u64,
}

fn size_class(size: u64) -> u8 {
    match size {
        1 => SIZE_1,
        4 => SIZE_4,
        8 => SIZE_8,
        _ => SIZE_EXPLICIT,
    }
}

/// Reads the varint at `buf[*pos..]` and moves `pos` past it.
fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    let rest = buf.get(*pos..).unwrap_or_default();
    let (v, len) = varint::decode(rest).map_err(|e| match e {
        VarintError::Truncated => DecodeError::Truncated("entry"),
        VarintError::Overflow => DecodeError::Corrupt("varint overflows 64 bits"),
    })?;
    *pos += len;
    Ok(v)
}

/// Encodes `e` into `buf` (at least [`MAX_ENTRY_LEN`] bytes), writing the tag
/// byte last so a reader never sees a half-written entry. Returns the entry's
/// length. Never allocates.
pub fn encode_entry(buf: &mut [u8], state: &mut DeltaState, e: &Entry) -> usize {
    debug_assert!(buf.len() >= MAX_ENTRY_LEN);
    debug_assert!(e.clock > state.clock, "clocks must grow within a thread");
    let class = size_class(e.size);
    let mut pos = 1;
    pos += varint::write(&mut buf[pos..], e.clock.wrapping_sub(state.clock));
    pos += varint::write(&mut buf[pos..], zigzag(e.addr.wrapping_sub(state.addr)));
    if class == SIZE_EXPLICIT {
        pos += varint::write(&mut buf[pos..], e.size);
    }
    pos += varint::write(&mut buf[pos..], zigzag(e.site.wrapping_sub(state.site)));
    if e.kind.has_payload() {
        pos += varint::write(&mut buf[pos..], e.payload);
    }
    *state = DeltaState {
        clock: e.clock,
        addr: e.addr,
        site: e.site,
    };
    // Release ordering is not needed for crash safety (a dying process leaves
    // its stores in the shared page), only program order, which holds.
    buf[0] = (e.kind as u8) | (class << 6);
    pos
}

/// Result of decoding at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// An entry of this many bytes.
    Entry(Entry, usize),
    /// Padding: skip to the next chunk boundary.
    Pad,
    /// A zero tag: the log ends here.
    End,
}

/// Decodes the entry at the start of `buf`. `buf` may be shorter than
/// [`MAX_ENTRY_LEN`] only at the end of the file.
pub fn decode_entry(buf: &[u8], state: &mut DeltaState) -> Result<Decoded, DecodeError> {
    let Some(&tag) = buf.first() else {
        return Ok(Decoded::End);
    };
    match tag {
        0 => return Ok(Decoded::End),
        PAD_TAG => return Ok(Decoded::Pad),
        _ => {}
    }
    let kind =
        EventKind::from_code(tag & 0x3f).ok_or(DecodeError::Corrupt("unknown event kind"))?;
    let mut pos = 1;
    let clock_delta = get_varint(buf, &mut pos)?;
    if clock_delta == 0 {
        return Err(DecodeError::Corrupt("clock does not grow"));
    }
    let addr = state
        .addr
        .wrapping_add(unzigzag(get_varint(buf, &mut pos)?));
    let size = match tag >> 6 {
        SIZE_1 => 1,
        SIZE_4 => 4,
        SIZE_8 => 8,
        _ => get_varint(buf, &mut pos)?,
    };
    let site = state
        .site
        .wrapping_add(unzigzag(get_varint(buf, &mut pos)?));
    let payload = if kind.has_payload() {
        get_varint(buf, &mut pos)?
    } else {
        0
    };
    let clock = state
        .clock
        .checked_add(clock_delta)
        .ok_or(DecodeError::Corrupt("clock overflows"))?;
    *state = DeltaState { clock, addr, site };
    Ok(Decoded::Entry(
        Entry {
            clock,
            kind,
            addr,
            size,
            site,
            payload,
        },
        pos,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_entry() -> impl Strategy<Value = (u64, u8, u64, u64, u64, u64)> {
        (
            1u64..1 << 40,
            0usize..EventKind::ALL.len(),
            any::<u64>(),
            prop_oneof![Just(1u64), Just(4), Just(8), any::<u64>()],
            any::<u64>(),
            any::<u64>(),
        )
            .prop_map(|(c, k, a, s, site, p)| (c, k as u8, a, s, site, p))
    }

    proptest! {
        #[test]
        fn entries_round_trip(raw in proptest::collection::vec(any_entry(), 1..50)) {
            let mut buf = vec![0u8; raw.len() * MAX_ENTRY_LEN + 1];
            let mut enc = DeltaState::default();
            let mut pos = 0;
            let mut clock = 0;
            let mut expected = Vec::new();
            for (dc, k, addr, size, site, payload) in raw {
                clock += dc;
                let kind = EventKind::ALL[k as usize];
                let payload = if kind.has_payload() { payload } else { 0 };
                let e = Entry { clock, kind, addr, size, site, payload };
                pos += encode_entry(&mut buf[pos..], &mut enc, &e);
                expected.push(e);
            }
            let mut dec = DeltaState::default();
            let mut pos = 0;
            for e in expected {
                match decode_entry(&buf[pos..], &mut dec).unwrap() {
                    Decoded::Entry(got, len) => { prop_assert_eq!(got, e); pos += len; }
                    other => prop_assert!(false, "unexpected {:?}", other),
                }
            }
            prop_assert_eq!(decode_entry(&buf[pos..], &mut dec).unwrap(), Decoded::End);
        }

        #[test]
        fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut st = DeltaState::default();
            let mut pos = 0;
            while pos < bytes.len() {
                match decode_entry(&bytes[pos..], &mut st) {
                    Ok(Decoded::Entry(_, len)) => pos += len,
                    _ => break,
                }
            }
            let _ = ThreadLogHeader::decode(&bytes);
        }
    }

    #[test]
    fn header_round_trips_and_rejects_bad_input() {
        let h = ThreadLogHeader {
            version: FORMAT_VERSION,
            thread: 3,
            chunk_size: 1 << 22,
            pid: 42,
            parent: 0,
            start_unix_ns: 123,
            last_chunk: 0,
            entries_before_last_chunk: 0,
        };
        let b = h.encode();
        assert_eq!(ThreadLogHeader::decode(&b), Ok(h));
        assert_eq!(
            ThreadLogHeader::decode(&b[..30]),
            Err(DecodeError::Truncated("header"))
        );
        assert_eq!(
            ThreadLogHeader::decode(b"ELF\x7f...."),
            Err(DecodeError::BadMagic)
        );
        let mut newer = b;
        newer[8] = 9;
        assert_eq!(
            ThreadLogHeader::decode(&newer),
            Err(DecodeError::NewerVersion(9))
        );
    }

    #[test]
    fn half_written_entry_reads_as_end() {
        let mut buf = [0u8; MAX_ENTRY_LEN];
        let e = Entry {
            clock: 5,
            kind: EventKind::Write,
            addr: 0x1000,
            size: 4,
            site: 0x4000,
            payload: 0,
        };
        encode_entry(&mut buf, &mut DeltaState::default(), &e);
        buf[0] = 0; // the tag was not yet written when the process died
        assert_eq!(
            decode_entry(&buf, &mut DeltaState::default()),
            Ok(Decoded::End)
        );
    }
}
