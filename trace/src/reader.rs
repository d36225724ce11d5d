//! Streaming reader of one thread log: constant memory whatever the file
//! size, errors with file and byte offset, never a panic.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::codec::checksum::{LogChecksum, RunningChecksum};
use crate::codec::{
    DecodeError, Decoded, DeltaState, HEADER_LEN, MAX_ENTRY_LEN, ThreadLogHeader, decode_entry,
};
use crate::error::{Result, TraceError};
use crate::event::RecordedEvent;

const BUFFER_LEN: usize = 1 << 20;

/// Iterates over the entries of one thread log, in program order.
#[derive(Debug)]
pub struct ThreadLogReader {
    path: PathBuf,
    file: File,
    header: ThreadLogHeader,
    buf: Vec<u8>,
    /// Valid bytes are `buf[pos..len]`; `buf[0]` is at file offset `base`.
    pos: usize,
    len: usize,
    base: u64,
    eof: bool,
    done: bool,
    state: DeltaState,
    next_index: u64,
    /// Entries the trace header says the log holds, if known.
    expected: Option<u64>,
    /// The checksum the trace header lists for the log, computed over the
    /// bytes as they are read and compared at the end of the entries.
    checksum: Option<PrefixChecksum>,
}

/// The checksum of a file's first `len` bytes, fed in the order they are
/// read.
#[derive(Debug, Clone)]
struct PrefixChecksum {
    len: u64,
    expected: u64,
    hashed: u64,
    hash: RunningChecksum,
}

impl PrefixChecksum {
    /// Hashes `bytes`, which start at file offset `offset` (the offsets
    /// fed must follow each other), up to the prefix's end.
    fn feed(&mut self, offset: u64, bytes: &[u8]) {
        debug_assert!(offset <= self.hashed || self.hashed == self.len);
        let skip = self.hashed.saturating_sub(offset);
        let end = self.len.saturating_sub(offset).min(bytes.len() as u64);
        if skip < end {
            self.hash.update(&bytes[skip as usize..end as usize]);
            self.hashed += end - skip;
        }
    }
}

fn decode_error(path: &Path, offset: u64, e: DecodeError) -> TraceError {
    let path = path.to_path_buf();
    match e {
        DecodeError::Truncated(what) => TraceError::Truncated { path, offset, what },
        DecodeError::Corrupt(what) => TraceError::Corrupt {
            path,
            offset,
            what: what.to_string(),
        },
        DecodeError::BadMagic => TraceError::BadMagic {
            path,
            expected: "thread log",
        },
        DecodeError::NewerVersion(found) => TraceError::NewerVersion {
            path,
            found: found.into(),
            supported: crate::codec::FORMAT_VERSION,
        },
    }
}

impl ThreadLogReader {
    /// Opens a thread log and checks its header.
    pub fn open(path: &Path) -> Result<ThreadLogReader> {
        let mut file = File::open(path).map_err(TraceError::io("open", path))?;
        let mut buf = vec![0u8; BUFFER_LEN];
        let mut len = 0;
        while len < HEADER_LEN {
            let n = file
                .read(&mut buf[len..])
                .map_err(TraceError::io("read", path))?;
            if n == 0 {
                break;
            }
            len += n;
        }
        let header = ThreadLogHeader::decode(&buf[..len]).map_err(|e| decode_error(path, 0, e))?;
        Ok(ThreadLogReader {
            path: path.to_path_buf(),
            file,
            header,
            buf,
            pos: HEADER_LEN,
            len,
            base: 0,
            eof: false,
            done: false,
            state: DeltaState::for_version(header.version),
            next_index: 0,
            expected: None,
            checksum: None,
        })
    }

    /// A log that does not exist because its thread never started (the
    /// process ended while creating it): no entries.
    pub fn never_started(path: &Path, thread: u32) -> Result<ThreadLogReader> {
        let file = File::open("/dev/null").map_err(TraceError::io("open", "/dev/null"))?;
        Ok(ThreadLogReader {
            path: path.to_path_buf(),
            file,
            header: ThreadLogHeader {
                version: crate::codec::FORMAT_VERSION,
                thread,
                chunk_size: 4096,
                pid: 0,
                parent: crate::codec::NO_PARENT,
                flags: 0,
                start_unix_ns: 0,
                last_chunk: 0,
                entries_before_last_chunk: 0,
            },
            buf: Vec::new(),
            pos: 0,
            len: 0,
            base: 0,
            eof: true,
            done: true,
            state: DeltaState::new(),
            next_index: 0,
            expected: Some(0),
            checksum: None,
        })
    }

    /// Makes the end of the log an error unless exactly `entries` were read
    /// (the count the trace header recorded).
    pub fn expect_entries(mut self, entries: u64) -> ThreadLogReader {
        self.expected = Some(entries);
        self
    }

    /// Makes the end of the log an error unless the `kind` checksum of the
    /// file's first `len` bytes is `expected` (the checksum the recorder
    /// wrote in the trace header). The bytes are hashed as they are read,
    /// so the check costs no second read; a reader dropped before the end
    /// of the entries has checked nothing.
    pub fn expect_checksum(
        mut self,
        kind: LogChecksum,
        len: u64,
        expected: u64,
    ) -> ThreadLogReader {
        debug_assert_eq!(self.base, 0, "checksum set after reading on");
        let mut sum = PrefixChecksum {
            len,
            expected,
            hashed: 0,
            hash: kind.start(),
        };
        sum.feed(0, &self.buf[..self.len]);
        self.checksum = Some(sum);
        self
    }

    /// `e`, a fault found in the entries, unless the checksum says the log
    /// was changed or damaged (which explains the fault better).
    pub fn damage_or(&mut self, e: TraceError) -> TraceError {
        match self.finish_checksum() {
            Err(damage @ TraceError::BadFile { .. }) => damage,
            _ => e,
        }
    }

    /// Reads the rest of the checksummed prefix and compares.
    fn finish_checksum(&mut self) -> Result<()> {
        while self.checksum.as_ref().is_some_and(|s| s.hashed < s.len) && !self.eof {
            self.pos = self.len;
            self.fill()?;
        }
        match &self.checksum {
            Some(s) if s.hash.value() != s.expected || s.hashed != s.len => {
                Err(TraceError::BadFile {
                    path: self.path.clone(),
                    what: "checksum does not match the one the recorder wrote in header.json: \
                       the log was changed or damaged"
                        .into(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Moves to the last chunk the header names
    /// ([`ThreadLogHeader::last_chunk`]), so that reading on counts the
    /// log's entries without decoding the chunks before (events read from
    /// there have their indices, not their values: the delta state starts
    /// afresh). Returns the entries before it. Stays put for a log whose
    /// header names none (a first chunk, or an older log). The skipped
    /// bytes are not checksummed: a reader that skips checks no checksum
    /// (the recorder counts this way before it has written any).
    pub fn skip_to_last_chunk(&mut self) -> Result<u64> {
        let (chunk, before) = (
            self.header.last_chunk,
            self.header.entries_before_last_chunk,
        );
        if chunk == 0 || self.base != 0 || self.next_index != 0 {
            return Ok(self.next_index);
        }
        let offset = chunk
            .checked_mul(u64::from(self.header.chunk_size))
            .filter(|&o| {
                self.file
                    .metadata()
                    .is_ok_and(|m| o <= m.len() && o >= HEADER_LEN as u64)
            })
            .ok_or_else(|| TraceError::Corrupt {
                path: self.path.clone(),
                offset: crate::codec::LAST_CHUNK_OFFSET as u64,
                what: format!("the header's last chunk ({chunk}) is past the end of the log"),
            })?;
        use std::io::{Seek, SeekFrom};
        self.file
            .seek(SeekFrom::Start(offset))
            .map_err(TraceError::io("read", &self.path))?;
        self.base = offset;
        self.pos = 0;
        self.len = 0;
        self.eof = false;
        self.state = DeltaState::for_version(self.header.version);
        self.next_index = before;
        self.checksum = None;
        Ok(before)
    }

    /// Events read so far (the next one's index).
    pub fn events_read(&self) -> u64 {
        self.next_index
    }

    pub fn header(&self) -> &ThreadLogHeader {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File offset of the next entry.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes sure at least [`MAX_ENTRY_LEN`] bytes are buffered, unless the
    /// file ends first. The check is inlined into the decoding loop (it
    /// holds for all but one entry in thousands), the refill is not.
    #[inline]
    fn fill(&mut self) -> Result<()> {
        if self.eof || self.len - self.pos >= MAX_ENTRY_LEN {
            return Ok(());
        }
        self.refill()
    }

    #[inline(never)]
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.len, 0);
        self.base += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        while !self.eof && self.len < self.buf.len() {
            let n = self
                .file
                .read(&mut self.buf[self.len..])
                .map_err(TraceError::io("read", &self.path))?;
            if let Some(sum) = &mut self.checksum {
                sum.feed(
                    self.base + self.len as u64,
                    &self.buf[self.len..self.len + n],
                );
            }
            self.len += n;
            self.eof = n == 0;
        }
        Ok(())
    }

    /// Skips to the next chunk boundary after a padding tag.
    fn skip_padding(&mut self) -> Result<()> {
        let chunk = u64::from(self.header.chunk_size);
        let target = (self.offset() / chunk + 1) * chunk;
        while self.base + (self.len as u64) < target && !self.eof {
            self.pos = self.len;
            self.fill()?;
        }
        let in_buffer = target.saturating_sub(self.base);
        self.pos = usize::try_from(in_buffer)
            .unwrap_or(usize::MAX)
            .min(self.len);
        Ok(())
    }

    /// Appends the log's next events to `out` until it holds `max` or the
    /// log ends (then [`Iterator::next`] says `None`). The same events and
    /// errors as `next`, in fewer instructions an event: entries that need
    /// no refill, no count check and no padding are decoded in a loop of
    /// their own ([`ThreadLogReader::read_buffered`]), the rest by `next`.
    pub fn read_batch(&mut self, out: &mut Vec<RecordedEvent>, max: usize) -> Result<()> {
        out.reserve(max.saturating_sub(out.len()));
        while out.len() < max {
            self.read_buffered(out, max);
            if out.len() == max {
                break;
            }
            match self.next() {
                None => break,
                Some(Ok(e)) => out.push(e),
                Some(Err(e)) => return Err(e),
            }
        }
        Ok(())
    }

    /// [`ThreadLogReader::read_batch`]'s loop: decodes entries while at
    /// least [`MAX_ENTRY_LEN`] bytes are buffered and the header's count is
    /// not reached, and stops at anything else (the end, padding, an
    /// error: `decode_entry` leaves the state as it was then, and `next`
    /// decodes that entry again and reports it).
    #[inline]
    fn read_buffered(&mut self, out: &mut Vec<RecordedEvent>, max: usize) {
        if self.done {
            return;
        }
        let thread = self.header.thread;
        let counted = self.expected.unwrap_or(u64::MAX);
        let room = max.saturating_sub(out.len());
        let mut index = self.next_index;
        let last = index.saturating_add(room as u64).min(counted);
        let mut pos = self.pos;
        let end = self.len.saturating_sub(MAX_ENTRY_LEN);
        let buf = &self.buf[..self.len];
        while index < last && pos <= end {
            let Ok(Decoded::Entry(e, n)) = decode_entry(&buf[pos..], &mut self.state) else {
                break;
            };
            out.push(e.into_event(thread, index));
            pos += n;
            index += 1;
        }
        self.pos = pos;
        self.next_index = index;
    }

    #[inline]
    fn read_next(&mut self) -> Result<Option<RecordedEvent>> {
        loop {
            self.fill()?;
            let at = self.offset();
            match decode_entry(&self.buf[self.pos..self.len], &mut self.state) {
                Ok(Decoded::End) => {
                    // The checksum first: a changed byte that reads as an
                    // early end is damage, not a log cut short.
                    self.finish_checksum()?;
                    self.check_count(at)?;
                    return Ok(None);
                }
                Ok(Decoded::Pad) => self.skip_padding()?,
                Ok(Decoded::Entry(e, n)) => {
                    if self.expected.is_some_and(|x| self.next_index >= x) {
                        return Err(TraceError::Corrupt {
                            path: self.path.clone(),
                            offset: at,
                            what: format!(
                                "more entries than the {} header.json lists",
                                self.next_index
                            ),
                        });
                    }
                    self.pos += n;
                    let event = e.into_event(self.header.thread, self.next_index);
                    self.next_index += 1;
                    return Ok(Some(event));
                }
                Err(e) => {
                    let e = decode_error(&self.path, at, e);
                    return Err(self.damage_or(e));
                }
            }
        }
    }
}

impl ThreadLogReader {
    fn check_count(&self, at: u64) -> Result<()> {
        match self.expected {
            Some(x) if x != self.next_index => Err(TraceError::Truncated {
                path: self.path.clone(),
                offset: at,
                what: if self.next_index < x {
                    "log (header.json lists more entries)"
                } else {
                    "log"
                },
            }),
            _ => Ok(()),
        }
    }
}

impl Iterator for ThreadLogReader {
    type Item = Result<RecordedEvent>;

    // Inlined into the decoding loops, the event goes from registers into
    // its batch: returned through the stack, it was written field by field
    // and copied out 16 bytes at a time, and each copy waited for stores
    // the CPU could not forward (three quarters of `decode_batches`).
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.read_next().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::codec::{Entry, FORMAT_VERSION, NO_PARENT, PAD_TAG, encode_entry};
    use crate::event::EventKind;

    pub(crate) fn write_log(path: &Path, thread: u32, entries: &[Entry], pad_after: Option<usize>) {
        write_log_with_flags(path, thread, entries, pad_after, 0);
    }

    /// [`write_log`] with `flags` in the header.
    pub(crate) fn write_log_with_flags(
        path: &Path,
        thread: u32,
        entries: &[Entry],
        pad_after: Option<usize>,
        flags: u32,
    ) {
        let chunk = 4096usize;
        let header = ThreadLogHeader {
            version: FORMAT_VERSION,
            thread,
            chunk_size: chunk as u32,
            pid: 1,
            parent: NO_PARENT,
            flags,
            start_unix_ns: 0,
            last_chunk: 0,
            entries_before_last_chunk: 0,
        };
        let mut bytes = header.encode().to_vec();
        let mut st = DeltaState::default();
        for (i, e) in entries.iter().enumerate() {
            let mut buf = [0u8; crate::codec::MAX_ENTRY_LEN];
            let n = encode_entry(&mut buf, &mut st, e);
            bytes.extend_from_slice(&buf[..n]);
            if pad_after == Some(i) {
                bytes.push(PAD_TAG);
                bytes.resize(chunk, 0xee);
            }
        }
        bytes.resize(bytes.len() + 100, 0);
        std::fs::write(path, bytes).unwrap();
    }

    /// A log's checksum is checked with the algorithm the trace names:
    /// the right value passes, the other algorithm's value is damage.
    #[test]
    fn checksums_of_either_algorithm_are_checked() {
        use crate::codec::checksum::log_checksum_of_file_prefix;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("thread-0000.log");
        write_log(&path, 0, &[entry(1), entry(2), entry(5)], None);
        let read_all = |kind, len, sum| {
            let mut r = ThreadLogReader::open(&path)
                .unwrap()
                .expect_checksum(kind, len, sum);
            r.by_ref().collect::<Result<Vec<_>>>()
        };
        let len = std::fs::metadata(&path).unwrap().len() - 100;
        for (kind, other) in [
            (LogChecksum::Fnv1a, LogChecksum::Crc32),
            (LogChecksum::Crc32, LogChecksum::Fnv1a),
        ] {
            let (sum, hashed) = log_checksum_of_file_prefix(kind, &path, len).unwrap();
            assert_eq!(hashed, len);
            assert_eq!(read_all(kind, len, sum).unwrap().len(), 3, "{kind:?}");
            let (wrong, _) = log_checksum_of_file_prefix(other, &path, len).unwrap();
            let err = read_all(kind, len, wrong).unwrap_err().to_string();
            assert!(err.contains("checksum"), "{kind:?}: {err}");
        }
    }

    fn entry(clock: u64) -> Entry {
        Entry {
            clock,
            kind: EventKind::Write,
            addr: 0x1000 + clock,
            size: 4,
            site: 0x55,
            payload: 0,
        }
    }

    /// What `read_batch` reads, in batches of `batch`, errors as text.
    fn read_in_batches(
        mut r: ThreadLogReader,
        batch: usize,
    ) -> Vec<std::result::Result<RecordedEvent, String>> {
        let mut got = Vec::new();
        loop {
            let mut events = Vec::new();
            let result = r.read_batch(&mut events, batch);
            let short = events.len() < batch;
            got.extend(events.into_iter().map(Ok));
            match result {
                Err(e) => return [got, vec![Err(e.to_string())]].concat(),
                Ok(()) if short => return got,
                Ok(()) => {}
            }
        }
    }

    proptest::proptest! {
        /// `read_batch` reads what `next` reads, the error included,
        /// whatever the batch size: entries predicted or not, across
        /// padding, in a log cut anywhere, with a count from the header
        /// that is right, short or long.
        #[test]
        fn batches_read_what_next_reads(
            shapes in proptest::collection::vec((0u8..6, 0u64..3, 1u64..4), 1..300),
            pad in proptest::option::of(0usize..300),
            cut in proptest::option::of(0usize..4000),
            expect in proptest::option::of(0u64..320),
            batch in 1usize..40,
        ) {
            let mut clock = 0;
            let entries: Vec<Entry> = (shapes.iter().enumerate())
                .map(|(i, &(shape, site, step))| {
                    clock += step;
                    let (kind, size) = match shape {
                        0 | 1 => (EventKind::Read, 8),
                        2 => (EventKind::Write, 4),
                        3 => (EventKind::Write, 3),
                        4 => (EventKind::Alloc, 48),
                        _ => (EventKind::Read, 1),
                    };
                    let addr = 0x1000 + 8 * i as u64 * (1 + u64::from(shape == 5) * 97);
                    let payload = if kind == EventKind::Alloc { 0x5000 + clock } else { 0 };
                    Entry { clock, kind, addr, size, site: 0x400 + 16 * site, payload }
                })
                .collect();
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("thread-0003.log");
            write_log(&p, 3, &entries, pad);
            if let Some(cut) = cut {
                let mut bytes = std::fs::read(&p).unwrap();
                bytes.truncate((HEADER_LEN + cut).min(bytes.len()));
                std::fs::write(&p, bytes).unwrap();
            }
            let open = || {
                let r = ThreadLogReader::open(&p).unwrap();
                match expect {
                    Some(n) => r.expect_entries(n),
                    None => r,
                }
            };
            let by_next: Vec<_> = open().map(|e| e.map_err(|e| e.to_string())).collect();
            proptest::prop_assert_eq!(read_in_batches(open(), batch), by_next);
        }
    }

    #[test]
    fn reads_entries_across_padding() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("thread-0001.log");
        let entries: Vec<_> = (1..=10).map(entry).collect();
        write_log(&p, 1, &entries, Some(4));
        let got: Vec<_> = ThreadLogReader::open(&p)
            .unwrap()
            .collect::<Result<Vec<_>>>()
            .unwrap();
        assert_eq!(got.len(), 10);
        assert_eq!(got[9].index, 9);
        assert_eq!(got[9].clock, 10);
        assert!(got.iter().all(|e| e.thread == 1));
    }

    #[test]
    fn truncated_entry_is_an_error_with_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.log");
        write_log(&p, 0, &[entry(1), entry(2)], None);
        let mut bytes = std::fs::read(&p).unwrap();
        let mut first = [0u8; crate::codec::MAX_ENTRY_LEN];
        let n = encode_entry(&mut first, &mut DeltaState::default(), &entry(1));
        bytes.truncate(HEADER_LEN + n + 2);
        std::fs::write(&p, bytes).unwrap();
        let results: Vec<_> = ThreadLogReader::open(&p).unwrap().collect();
        assert_eq!(results.len(), 2);
        let err = results[1].as_ref().unwrap_err().to_string();
        assert!(err.contains("t.log") && err.contains("truncated"), "{err}");
    }

    #[test]
    fn counting_from_the_last_chunk_gives_the_whole_count() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("thread-0001.log");
        let entries: Vec<_> = (1..=10).map(entry).collect();
        write_log(&p, 1, &entries, Some(4));
        // As the runtime notes it on moving to chunk 1, after 5 entries.
        let mut bytes = std::fs::read(&p).unwrap();
        let at = crate::codec::LAST_CHUNK_OFFSET;
        bytes[at..at + 8].copy_from_slice(&1u64.to_le_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&5u64.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let full = ThreadLogReader::open(&p).unwrap();
        let full_end = {
            let mut r = full;
            assert_eq!(r.by_ref().count(), 10);
            r.offset()
        };
        let mut quick = ThreadLogReader::open(&p).unwrap();
        assert_eq!(quick.skip_to_last_chunk().unwrap(), 5);
        assert!(quick.by_ref().all(|e| e.is_ok()));
        assert_eq!((quick.events_read(), quick.offset()), (10, full_end));

        // A last chunk past the end of the log is an error naming the file.
        bytes[at..at + 8].copy_from_slice(&99u64.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let err = ThreadLogReader::open(&p)
            .unwrap()
            .skip_to_last_chunk()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("thread-0001.log") && err.contains("last chunk"),
            "{err}"
        );
    }

    #[test]
    fn foreign_file_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.log");
        std::fs::write(&p, b"#!/bin/sh\necho hello, this is not a log at all\n").unwrap();
        let err = ThreadLogReader::open(&p).unwrap_err();
        assert!(matches!(err, TraceError::BadMagic { .. }), "{err}");
    }
}
