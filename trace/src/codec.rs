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
pub mod predict;
pub mod varint;

use crate::event::{EventKind, RecordedEvent};
use predict::{Predictor, SiteSlot};
use varint::{VarintError, unzigzag, zigzag};

/// First eight bytes of every thread log.
pub const THREAD_LOG_MAGIC: [u8; 8] = *b"RRLITE\0T";
/// Version of the thread log and trace directory format. Readers reject
/// larger versions; see docs/FORMAT.md for the rule.
pub const FORMAT_VERSION: u16 = 7;
/// The first version whose entries use [`EntryLayout::Predicted`].
pub const PREDICTED_SINCE: u16 = 5;
/// The first version with stepped accesses (tag bits 7-6 `01`: a compact
/// access whose clock moved by [`crate::SYNCED_CLOCK_STEP`]).
pub const STEPPED_SINCE: u16 = 6;
/// Size of the thread log header.
pub const HEADER_LEN: usize = 64;
/// Longest possible entry: tag + five 10-byte varints.
pub const MAX_ENTRY_LEN: usize = 1 + 5 * varint::MAX_LEN;
/// Tag of a padding byte run: the rest of the chunk is unused.
pub const PAD_TAG: u8 = 0xff;
/// Marks "no parent" (the main thread) in the header.
pub const NO_PARENT: u32 = u32::MAX;

// Versions 1-4 (`EntryLayout::Classic`): tag bits 6-7 are a size class.
#[cfg(test)]
const SIZE_EXPLICIT: u8 = 0;
const SIZE_1: u8 = 1;
const SIZE_4: u8 = 2;
const SIZE_8: u8 = 3;

// Version 5 (`EntryLayout::Predicted`): a tag with bit 7 set is a compact
// plain read or write of 1, 2, 4, 8 or 16 bytes whose flags say which fields
// were predicted and left out; bit 7 clear is a general entry, the kind code
// in bits 0-5, every field present.
const COMPACT: u8 = 0x80;
const COMPACT_WRITE: u8 = 0x40;
/// Bits 4-5 are the low bits of the size code (log2 of the size), bit 0
/// its high bit: codes 0-4, so that [`PAD_TAG`] (all bits set, code 7) is
/// no entry.
const COMPACT_SIZE_SHIFT: u8 = 4;
const COMPACT_SIZE_HIGH: u8 = 0x01;
const COMPACT_CLOCK_NEXT: u8 = 0x08;
const COMPACT_SITE_PREDICTED: u8 = 0x04;
const COMPACT_ADDR_PREDICTED: u8 = 0x02;
/// Always clear in a general entry's tag; set (with bit 7 clear) from
/// version 6 in a stepped access's: a compact access whose clock moved by
/// [`crate::SYNCED_CLOCK_STEP`], the step of an access that took its
/// stripe, so that it costs no clock byte (the compact tag's
/// [`COMPACT_CLOCK_NEXT`] is the private step). Its bits: 5 a write, 4-2
/// the size code, 1 the site predicted, 0 the address predicted.
const STEPPED: u8 = 0x40;
const GENERAL_RESERVED: u8 = STEPPED;
const STEPPED_WRITE: u8 = 0x20;
const STEPPED_SIZE_SHIFT: u8 = 2;
const STEPPED_SITE_PREDICTED: u8 = 0x02;
const STEPPED_ADDR_PREDICTED: u8 = 0x01;

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
    /// [`LOG_PRIVATE_CLOCK_STEPS`], or 0 (logs from before it).
    pub flags: u32,
    /// Wall-clock time the thread started, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// The chunk the runtime last moved to, and the entries before it,
    /// written when it moves on ([`LAST_CHUNK_OFFSET`]; zero: the first
    /// chunk): counting a log's entries only needs that chunk onwards.
    pub last_chunk: u64,
    pub entries_before_last_chunk: u64,
}

/// [`ThreadLogHeader::flags`]: the thread's clock moved by exactly
/// [`crate::PRIVATE_CLOCK_STEP`] only at plain accesses to a stripe it had
/// held since its previous access to it (or reads of a read-shared one
/// written before the thread's last synced step), and by at least
/// [`crate::SYNCED_CLOCK_STEP`] at every other entry (ARCHITECTURE.md,
/// "Private steps"), so the global order may hand out an entry one step
/// past the one before it right after that one.
pub const LOG_PRIVATE_CLOCK_STEPS: u32 = 1;

/// [`ThreadLogHeader::flags`]: while this log was open, a thread log of
/// its process could not be created or could not grow (the directory
/// became unwritable, a sandbox such as Landlock, a full disk): the trace
/// misses that thread's events. Set when the log closes, through its
/// descriptor (opened before any sandbox), so the recorder learns it even
/// when the trace directory refuses the runtime's notes.
pub const LOG_PROCESS_INCOMPLETE: u32 = 2;

/// Where in the header [`ThreadLogHeader::flags`] is (4 bytes).
pub const FLAGS_OFFSET: usize = 28;

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
        b[28..32].copy_from_slice(&self.flags.to_le_bytes());
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
            flags: u32_at(28),
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

impl Entry {
    /// The event this entry is as the `index`th of `thread`'s log.
    #[inline(always)]
    pub fn into_event(self, thread: u32, index: u64) -> RecordedEvent {
        RecordedEvent {
            thread,
            index,
            clock: self.clock,
            kind: self.kind,
            addr: self.addr,
            size: self.size,
            site: self.site,
            payload: self.payload,
        }
    }
}

impl From<&RecordedEvent> for Entry {
    /// What the runtime logs for `e` (its thread and index are the log's).
    fn from(e: &RecordedEvent) -> Entry {
        Entry {
            clock: e.clock,
            kind: e.kind,
            addr: e.addr,
            size: e.size,
            site: e.site,
            payload: e.payload,
        }
    }
}

/// How entries are laid out: versions 1-4 delta-code every field against
/// the previous entry; version 5 leaves out what [`Predictor`] predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryLayout {
    Classic,
    Predicted,
}

/// Delta-coding state shared by encoder and decoder: each entry's clock,
/// address and site are stored relative to the previous entry of the thread
/// or to a prediction. About 12 KB (the predictor's table): the runtime
/// keeps it out of thread-local storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaState {
    pub clock: u64,
    pub addr: u64,
    pub site: u64,
    layout: EntryLayout,
    /// Stepped accesses are written and read (version 6 on).
    stepped: bool,
    predictor: Predictor,
}

impl Default for DeltaState {
    fn default() -> Self {
        Self::new()
    }
}

impl DeltaState {
    /// The state at the start of a log of the current version.
    pub const fn new() -> DeltaState {
        DeltaState {
            clock: 0,
            addr: 0,
            site: 0,
            layout: EntryLayout::Predicted,
            stepped: true,
            predictor: Predictor::new(),
        }
    }

    /// The state at the start of a log whose header says `version`.
    pub fn for_version(version: u16) -> DeltaState {
        DeltaState {
            layout: if version >= PREDICTED_SINCE {
                EntryLayout::Predicted
            } else {
                EntryLayout::Classic
            },
            stepped: version >= STEPPED_SINCE,
            ..DeltaState::new()
        }
    }

    pub fn layout(&self) -> EntryLayout {
        self.layout
    }

    /// Moves past an entry at `site` (in slot `at`) and `addr` with `clock`.
    #[inline(always)]
    fn advance(&mut self, clock: u64, addr: u64, at: SiteSlot, site: u64) {
        if self.layout == EntryLayout::Predicted {
            self.predictor.learn(self.addr, at, site, addr);
        }
        self.moved_to(clock, addr, site);
    }

    /// The last entry's fields, which the next entry's deltas are against
    /// (the predictor learned it already).
    #[inline(always)]
    fn moved_to(&mut self, clock: u64, addr: u64, site: u64) {
        self.clock = clock;
        self.addr = addr;
        self.site = site;
    }
}

#[cfg(test)]
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

/// The compact tag bits of a plain access's kind and size, if it has a
/// compact form (version 5): what [`encode_access`] takes.
#[inline(always)]
pub fn compact_tag(kind: EventKind, size: u64) -> Option<u8> {
    let direction = match kind {
        EventKind::Read => 0,
        EventKind::Write => COMPACT_WRITE,
        _ => return None,
    };
    let size_bits = match size {
        1 => 0,
        2 => 1 << COMPACT_SIZE_SHIFT,
        4 => 2 << COMPACT_SIZE_SHIFT,
        8 => 3 << COMPACT_SIZE_SHIFT,
        16 => COMPACT_SIZE_HIGH,
        _ => return None,
    };
    Some(COMPACT | direction | size_bits)
}

/// Encodes `e` into `buf` (at least [`MAX_ENTRY_LEN`] bytes) in the current
/// layout, writing the tag byte last so a reader never sees a half-written
/// entry. Returns the entry's length. Never allocates.
#[inline]
pub fn encode_entry(buf: &mut [u8], state: &mut DeltaState, e: &Entry) -> usize {
    debug_assert!(buf.len() >= MAX_ENTRY_LEN);
    debug_assert!(e.clock > state.clock, "clocks must grow within a thread");
    debug_assert_eq!(
        state.layout,
        EntryLayout::Predicted,
        "old layouts are read only"
    );
    if let Some(tag) = compact_tag(e.kind, e.size) {
        let Some(buf) = buf.first_chunk_mut::<MAX_ENTRY_LEN>() else {
            panic!("an entry needs {MAX_ENTRY_LEN} bytes of room");
        };
        return encode_access(buf, state, tag, e.clock, e.addr, e.site, true);
    }
    let clock_delta = e.clock.wrapping_sub(state.clock);
    let site_delta = zigzag(e.site.wrapping_sub(state.site));
    let at = SiteSlot::of(e.site);
    let predicted_addr = state.predictor.addr(at, e.site, state.addr);
    let addr_delta = zigzag(e.addr.wrapping_sub(predicted_addr));
    let mut pos = 1;
    pos += varint::write(&mut buf[pos..], clock_delta);
    pos += varint::write(&mut buf[pos..], site_delta);
    pos += varint::write(&mut buf[pos..], addr_delta);
    pos += varint::write(&mut buf[pos..], e.size);
    if e.kind.has_payload() {
        pos += varint::write(&mut buf[pos..], e.payload);
    }
    state.advance(e.clock, e.addr, at, e.site);
    // Release ordering is not needed for crash safety (a dying process leaves
    // its stores in the shared page), only program order, which holds.
    buf[0] = e.kind as u8;
    pos
}

/// [`encode_entry`] for a plain access whose [`compact_tag`] is `tag` (the
/// recorder's fast path calls it directly, so that a hook does not build an
/// [`Entry`] nor look at its kind again): the same bytes. `may_step`
/// false (a constant in the recorder's fast path, whose clock moves by the
/// private step) leaves out the stepped form, and its cost: the clock delta
/// is still written whatever it is.
#[inline(always)]
pub fn encode_access(
    buf: &mut [u8; MAX_ENTRY_LEN],
    state: &mut DeltaState,
    mut tag: u8,
    clock: u64,
    addr: u64,
    site: u64,
    may_step: bool,
) -> usize {
    debug_assert!(clock > state.clock, "clocks must grow within a thread");
    let clock_delta = clock.wrapping_sub(state.clock);
    let site_predicted = state.predictor.next_site() == site;
    let at = SiteSlot::of(site);
    let addr_delta = zigzag(addr.wrapping_sub(state.predictor.addr(at, site, state.addr)));
    let site_delta = zigzag(site.wrapping_sub(state.site));
    let stepped =
        clock_delta != 1 && may_step && clock_delta == crate::SYNCED_CLOCK_STEP && state.stepped;
    // Learned before the bytes are written: a byte store may alias anything
    // as far as the compiler knows, so after them every field of the
    // predictor it had loaded was loaded again (the recorder's hook).
    state.advance(clock, addr, at, site);
    let mut pos = 1;
    if clock_delta == 1 {
        tag |= COMPACT_CLOCK_NEXT;
    } else if !stepped {
        pos += varint::write(&mut buf[pos..], clock_delta);
    }
    if site_predicted {
        tag |= COMPACT_SITE_PREDICTED;
    } else {
        pos += varint::write(&mut buf[pos..], site_delta);
    }
    if addr_delta == 0 {
        tag |= COMPACT_ADDR_PREDICTED;
    } else {
        pos += varint::write(&mut buf[pos..], addr_delta);
    }
    if stepped {
        tag = stepped_tag(tag);
    }
    // Written last: see `encode_entry`.
    buf[0] = tag;
    pos
}

/// [`encode_access`] of an access whose entry is one byte: its clock the
/// next (the private step), its site and address the predicted ones, as
/// nearly every access of a loop walking its own data. Writes that byte
/// (the same as [`encode_access`] would) and returns true; returns false,
/// having changed nothing, for any other access. The recorder's shortest
/// path: it decides before it commits anything else.
#[inline(always)]
pub fn encode_predicted_access(
    byte: &mut u8,
    state: &mut DeltaState,
    tag: u8,
    clock: u64,
    addr: u64,
    site: u64,
) -> bool {
    debug_assert_eq!(state.layout, EntryLayout::Predicted);
    if clock.wrapping_sub(state.clock) != 1
        || !(state.predictor).learn_hit(state.addr, SiteSlot::of(site), site, addr)
    {
        return false;
    }
    state.moved_to(clock, addr, site);
    *byte = tag | ONE_BYTE_FLAGS;
    true
}

/// `bit` if `set`, else 0.
#[inline(always)]
const fn bit_if(set: bool, bit: u8) -> u8 {
    if set { bit } else { 0 }
}

/// The stepped access's tag for compact tag `tag` (see [`STEPPED`]).
#[inline(always)]
fn stepped_tag(tag: u8) -> u8 {
    STEPPED
        | bit_if(tag & COMPACT_WRITE != 0, STEPPED_WRITE)
        | (compact_size_code(tag) << STEPPED_SIZE_SHIFT)
        | bit_if(tag & COMPACT_SITE_PREDICTED != 0, STEPPED_SITE_PREDICTED)
        | bit_if(tag & COMPACT_ADDR_PREDICTED != 0, STEPPED_ADDR_PREDICTED)
}

/// The compact tag, its clock not predicted, of stepped tag `tag`.
#[inline(always)]
fn compact_of_stepped(tag: u8) -> u8 {
    let size_code = (tag >> STEPPED_SIZE_SHIFT) & 7;
    COMPACT
        | bit_if(tag & STEPPED_WRITE != 0, COMPACT_WRITE)
        | ((size_code & 3) << COMPACT_SIZE_SHIFT)
        | bit_if(size_code & 4 != 0, COMPACT_SIZE_HIGH)
        | bit_if(tag & STEPPED_SITE_PREDICTED != 0, COMPACT_SITE_PREDICTED)
        | bit_if(tag & STEPPED_ADDR_PREDICTED != 0, COMPACT_ADDR_PREDICTED)
}

/// A compact tag's size code (log2 of the size; 0-4 are sizes).
#[inline(always)]
const fn compact_size_code(tag: u8) -> u8 {
    ((tag >> COMPACT_SIZE_SHIFT) & 3) | ((tag & COMPACT_SIZE_HIGH) << 2)
}

/// Encodes `e` as versions 1-4 did (for tests of reading older logs).
#[cfg(test)]
fn encode_classic_entry(buf: &mut [u8], state: &mut DeltaState, e: &Entry) -> usize {
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
    state.advance(e.clock, e.addr, SiteSlot::of(e.site), e.site);
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
#[inline(always)]
pub fn decode_entry(buf: &[u8], state: &mut DeltaState) -> Result<Decoded, DecodeError> {
    let Some(&tag) = buf.first() else {
        return Ok(Decoded::End);
    };
    match tag {
        0 => return Ok(Decoded::End),
        PAD_TAG => return Ok(Decoded::Pad),
        _ => {}
    }
    let one_byte_size = ONE_BYTE_SIZES[usize::from(tag)];
    if one_byte_size != 0
        && state.layout == EntryLayout::Predicted
        && let Some(entry) = decode_one_byte(tag, u64::from(one_byte_size), state)
    {
        return Ok(Decoded::Entry(entry, 1));
    }
    let (entry, len, at) = match state.layout {
        EntryLayout::Predicted if tag & COMPACT != 0 => decode_compact(buf, tag, None, state)?,
        EntryLayout::Predicted if tag & STEPPED != 0 && state.stepped => decode_compact(
            buf,
            compact_of_stepped(tag),
            Some(crate::SYNCED_CLOCK_STEP),
            state,
        )?,
        EntryLayout::Predicted => decode_general(buf, tag, state)?,
        EntryLayout::Classic => decode_classic(buf, tag, state)?,
    };
    state.advance(entry.clock, entry.addr, at, entry.site);
    Ok(Decoded::Entry(entry, len))
}

/// The flags of a compact access of one byte: clock step 1, site and
/// address predicted (what [`encode_predicted_access`] writes).
const ONE_BYTE_FLAGS: u8 =
    COMPACT | COMPACT_CLOCK_NEXT | COMPACT_SITE_PREDICTED | COMPACT_ADDR_PREDICTED;

/// The size of the access of a one-byte entry with each tag, 0 for the
/// other tags (not one byte, or a bad size code): one load where the
/// flags and the size code were tested one by one.
const ONE_BYTE_SIZES: [u8; 256] = {
    let mut sizes = [0u8; 256];
    let mut tag = 0;
    while tag < 256 {
        let t = tag as u8;
        if t & ONE_BYTE_FLAGS == ONE_BYTE_FLAGS && compact_size_code(t) <= 4 {
            sizes[tag] = 1 << compact_size_code(t);
        }
        tag += 1;
    }
    sizes
};

/// [`decode_compact`] and the state's advance, fused, for a one-byte
/// access of `size` bytes whose predicted site has its slot (nearly
/// every entry of a loop): the prediction is read and learned in one pass
/// (`Predictor::take_hit`). `None`, the state unchanged, for anything
/// else (a clock at its end, a site without a slot): the general decoder
/// then decides.
#[inline(always)]
fn decode_one_byte(tag: u8, size: u64, state: &mut DeltaState) -> Option<Entry> {
    let clock = state.clock.checked_add(1)?;
    let (site, addr) = state.predictor.take_hit(state.addr)?;
    state.moved_to(clock, addr, site);
    Some(compact_entry(tag, clock, addr, size, site))
}

/// The entry of a compact access with tag `tag` (a read, or a write with
/// [`COMPACT_WRITE`]) and its decoded fields.
#[inline(always)]
fn compact_entry(tag: u8, clock: u64, addr: u64, size: u64, site: u64) -> Entry {
    let kind = if tag & COMPACT_WRITE != 0 {
        EventKind::Write
    } else {
        EventKind::Read
    };
    Entry {
        clock,
        kind,
        addr,
        size,
        site,
        payload: 0,
    }
}

/// The payload of kinds that have one (0 for the others).
fn get_payload(buf: &[u8], pos: &mut usize, kind: EventKind) -> Result<u64, DecodeError> {
    if kind.has_payload() {
        get_varint(buf, pos)
    } else {
        Ok(0)
    }
}

/// A site stored as a zigzag delta from the previous entry's.
fn get_site(buf: &[u8], pos: &mut usize, state: &DeltaState) -> Result<u64, DecodeError> {
    Ok(state.site.wrapping_add(unzigzag(get_varint(buf, pos)?)))
}

/// `state.clock` plus a decoded delta, which must be positive.
fn clock_after(state: &DeltaState, delta: u64) -> Result<u64, DecodeError> {
    if delta == 0 {
        return Err(DecodeError::Corrupt("clock does not grow"));
    }
    state
        .clock
        .checked_add(delta)
        .ok_or(DecodeError::Corrupt("clock overflows"))
}

/// A version-5 compact access (tag bit 7 set): its size from the tag's
/// size code; only the fields its flags
/// do not predict follow, in the order clock, site, address. A stepped
/// access is read as one, with its `step` for the clock.
#[inline(always)]
fn decode_compact(
    buf: &[u8],
    tag: u8,
    step: Option<u64>,
    state: &DeltaState,
) -> Result<(Entry, usize, SiteSlot), DecodeError> {
    let size_code = compact_size_code(tag);
    if size_code > 4 {
        return Err(DecodeError::Corrupt("no such size code"));
    }
    let mut pos = 1;
    let clock_delta = match step {
        Some(step) => step,
        None if tag & COMPACT_CLOCK_NEXT != 0 => 1,
        None => get_varint(buf, &mut pos)?,
    };
    let clock = clock_after(state, clock_delta)?;
    let site = if tag & COMPACT_SITE_PREDICTED != 0 {
        state.predictor.next_site()
    } else {
        get_site(buf, &mut pos, state)?
    };
    let at = SiteSlot::of(site);
    let predicted_addr = state.predictor.addr(at, site, state.addr);
    let addr = if tag & COMPACT_ADDR_PREDICTED != 0 {
        predicted_addr
    } else {
        predicted_addr.wrapping_add(unzigzag(get_varint(buf, &mut pos)?))
    };
    let entry = compact_entry(tag, clock, addr, 1 << size_code, site);
    Ok((entry, pos, at))
}

/// A version-5 general entry: clock, site, address (from its prediction),
/// size, and the payload for kinds that have one.
fn decode_general(
    buf: &[u8],
    tag: u8,
    state: &DeltaState,
) -> Result<(Entry, usize, SiteSlot), DecodeError> {
    if tag & GENERAL_RESERVED != 0 {
        return Err(DecodeError::Corrupt("reserved tag bit set"));
    }
    let kind = EventKind::from_code(tag).ok_or(DecodeError::Corrupt("unknown event kind"))?;
    let mut pos = 1;
    let clock = clock_after(state, get_varint(buf, &mut pos)?)?;
    let site = get_site(buf, &mut pos, state)?;
    let at = SiteSlot::of(site);
    let addr = state
        .predictor
        .addr(at, site, state.addr)
        .wrapping_add(unzigzag(get_varint(buf, &mut pos)?));
    let size = get_varint(buf, &mut pos)?;
    let payload = get_payload(buf, &mut pos, kind)?;
    let entry = Entry {
        clock,
        kind,
        addr,
        size,
        site,
        payload,
    };
    Ok((entry, pos, at))
}

/// A version 1-4 entry: clock, address, size (unless the tag's size class
/// gives it), site, payload; every one a delta from the previous entry.
fn decode_classic(
    buf: &[u8],
    tag: u8,
    state: &DeltaState,
) -> Result<(Entry, usize, SiteSlot), DecodeError> {
    let kind =
        EventKind::from_code(tag & 0x3f).ok_or(DecodeError::Corrupt("unknown event kind"))?;
    let mut pos = 1;
    let clock = clock_after(state, get_varint(buf, &mut pos)?)?;
    let addr = state
        .addr
        .wrapping_add(unzigzag(get_varint(buf, &mut pos)?));
    let size = match tag >> 6 {
        SIZE_1 => 1,
        SIZE_4 => 4,
        SIZE_8 => 8,
        _ => get_varint(buf, &mut pos)?,
    };
    let site = get_site(buf, &mut pos, state)?;
    let payload = get_payload(buf, &mut pos, kind)?;
    let entry = Entry {
        clock,
        kind,
        addr,
        size,
        site,
        payload,
    };
    // (No prediction in this layout: the slot is only passed on.)
    Ok((entry, pos, SiteSlot::of(site)))
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
            prop_oneof![Just(1u64), Just(2), Just(4), Just(8), any::<u64>()],
            any::<u64>(),
            any::<u64>(),
        )
            .prop_map(|(c, k, a, s, site, p)| (c, k as u8, a, s, site, p))
    }

    /// Entries from `raw` (clock deltas, kind indices, fields), with the
    /// payload cleared for kinds without one.
    fn entries_of(raw: Vec<(u64, u8, u64, u64, u64, u64)>) -> Vec<Entry> {
        let mut clock = 0;
        raw.into_iter()
            .map(|(dc, k, addr, size, site, payload)| {
                clock += dc;
                let kind = EventKind::ALL[k as usize];
                let payload = if kind.has_payload() { payload } else { 0 };
                Entry {
                    clock,
                    kind,
                    addr,
                    size,
                    site,
                    payload,
                }
            })
            .collect()
    }

    /// A loop's entries: `sites` call sites in turn, each striding through
    /// its own array, with an odd entry from `noise` now and then; and how
    /// many entries may cost more than two bytes (learning, and the noise
    /// and the entry after each).
    fn loop_entries() -> impl Strategy<Value = (Vec<Entry>, usize)> {
        (
            1usize..6,
            1u64..40,
            prop_oneof![Just(1u64), Just(2), Just(4), Just(8), Just(16)],
            proptest::collection::vec((0usize..200, any_entry()), 0..4),
        )
            .prop_map(|(sites, iterations, size, noise)| {
                let mut raw = Vec::new();
                for i in 0..iterations {
                    for s in 0..sites as u64 {
                        let kind = if s % 2 == 0 { 0 } else { 1 };
                        let addr = 0x5000_0000_0000 + s * 0x10_0000 + i * size;
                        // Private and synced steps (a byte each), and jumps.
                        raw.push((
                            [1, 2, 1, 6, 1, 2, 1][(i % 7) as usize],
                            kind,
                            addr,
                            size,
                            0x1000 + s * 0x57,
                            0,
                        ));
                    }
                }
                let unpredicted = 2 * sites + 2 * noise.len();
                for (at, entry) in noise {
                    let at = at.min(raw.len());
                    raw.insert(at, entry);
                }
                (entries_of(raw), unpredicted)
            })
    }

    /// Encodes `entries` with `encode`, then decodes them with a state of
    /// `version`; asserts they come back and the log then ends.
    fn round_trip(
        entries: &[Entry],
        encode: fn(&mut [u8], &mut DeltaState, &Entry) -> usize,
        version: u16,
    ) -> Result<usize, TestCaseError> {
        let mut buf = vec![0u8; entries.len() * MAX_ENTRY_LEN + 1];
        let mut enc = DeltaState::for_version(version);
        let mut pos = 0;
        for e in entries {
            pos += encode(&mut buf[pos..], &mut enc, e);
        }
        let written = pos;
        let mut dec = DeltaState::for_version(version);
        let mut pos = 0;
        for e in entries {
            match decode_entry(&buf[pos..], &mut dec).unwrap() {
                Decoded::Entry(got, len) => {
                    prop_assert_eq!(&got, e);
                    pos += len;
                }
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
        prop_assert_eq!(decode_entry(&buf[pos..], &mut dec).unwrap(), Decoded::End);
        prop_assert_eq!(&dec, &enc);
        Ok(written)
    }

    proptest! {
        #[test]
        fn entries_round_trip(raw in proptest::collection::vec(any_entry(), 1..50)) {
            round_trip(&entries_of(raw), encode_entry, FORMAT_VERSION)?;
        }

        #[test]
        fn version_5_layout_still_reads(raw in proptest::collection::vec(any_entry(), 1..50)) {
            round_trip(&entries_of(raw), encode_entry, STEPPED_SINCE - 1)?;
        }

        #[test]
        fn loops_round_trip_in_about_a_byte_an_entry((entries, unpredicted) in loop_entries()) {
            let bytes = round_trip(&entries, encode_entry, FORMAT_VERSION)?;
            // A tag byte per predicted entry, one more for a clock jump.
            let bound = 2 * entries.len() + unpredicted * MAX_ENTRY_LEN;
            prop_assert!(bytes <= bound, "{} bytes, bound {}", bytes, bound);
        }

        /// The recorder's one-byte path writes what `encode_access` writes
        /// wherever it takes an access, and leaves the others alone.
        #[test]
        fn the_one_byte_path_encodes_as_encode_access((entries, _) in loop_entries()) {
            let mut state = DeltaState::new();
            let mut ones = 0;
            for e in &entries {
                let before = state.clone();
                let mut byte = 0u8;
                let taken = compact_tag(e.kind, e.size).is_some_and(|tag| {
                    encode_predicted_access(&mut byte, &mut state, tag, e.clock, e.addr, e.site)
                });
                let mut general = before.clone();
                let mut buf = [0u8; MAX_ENTRY_LEN];
                let n = encode_entry(&mut buf, &mut general, e);
                if taken {
                    ones += 1;
                    prop_assert_eq!((n, buf[0]), (1, byte));
                    prop_assert_eq!(&state, &general);
                } else {
                    prop_assert_eq!(&state, &before);
                    state = general;
                }
            }
            // Every loop of more than 3 iterations has hits (clock steps of 1).
            prop_assert!(ones > 0 || entries.len() < 40, "{} entries, no hit", entries.len());
        }

        #[test]
        fn older_layout_still_reads(raw in proptest::collection::vec(any_entry(), 1..50)) {
            round_trip(&entries_of(raw), encode_classic_entry, PREDICTED_SINCE - 1)?;
        }

        #[test]
        fn decoder_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            version in 1u16..=FORMAT_VERSION,
        ) {
            let mut st = DeltaState::for_version(version);
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
    fn a_strided_loop_costs_one_byte_an_entry() {
        let mut raw = Vec::new();
        for i in 0..1000u64 {
            raw.push((1, 0, 0x1000 + 8 * i, 8, 0x1789, 0));
            raw.push((1, 1, 0x9000 + 8 * i, 8, 0x17df, 0));
        }
        let entries = entries_of(raw);
        let mut buf = vec![0u8; entries.len() * MAX_ENTRY_LEN];
        let mut state = DeltaState::new();
        let bytes: usize = entries
            .iter()
            .map(|e| encode_entry(&mut buf, &mut state, e))
            .skip(4)
            .sum();
        assert_eq!(bytes, entries.len() - 4);
    }

    #[test]
    fn reserved_tags_are_corrupt() {
        let corrupt = |tag: u8, version: u16| {
            matches!(
                decode_entry(&[tag, 1, 1, 1, 1, 1], &mut DeltaState::for_version(version)),
                Err(DecodeError::Corrupt(_))
            )
        };
        for tag in [COMPACT | COMPACT_SIZE_HIGH | 0x30, 0x3f] {
            assert!(corrupt(tag, FORMAT_VERSION));
        }
        // A stepped access before version 6; one with no such size.
        assert!(corrupt(GENERAL_RESERVED | 1, STEPPED_SINCE - 1));
        assert!(!corrupt(STEPPED | 1, STEPPED_SINCE));
        assert!(corrupt(STEPPED | (5 << STEPPED_SIZE_SHIFT), STEPPED_SINCE));
    }

    #[test]
    fn a_synced_step_costs_no_clock_byte() {
        let entries = entries_of(vec![
            (2, 0, 0x1000, 8, 0x1789, 0),
            (2, 1, 0x1000, 4, 0x1789, 0),
        ]);
        let mut buf = [0u8; MAX_ENTRY_LEN];
        let (mut now, mut before) = (DeltaState::new(), DeltaState::for_version(5));
        for e in &entries {
            let n = encode_entry(&mut buf, &mut now, e);
            assert_eq!(buf[0] & (COMPACT | STEPPED), STEPPED);
            assert_eq!(n + 1, encode_entry(&mut buf, &mut before, e), "{e:?}");
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
            flags: LOG_PRIVATE_CLOCK_STEPS,
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
        encode_entry(&mut buf, &mut DeltaState::new(), &e);
        buf[0] = 0; // the tag was not yet written when the process died
        assert_eq!(
            decode_entry(&buf, &mut DeltaState::default()),
            Ok(Decoded::End)
        );
    }
}
