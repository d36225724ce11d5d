//! The replay log format (`<trace>/split/thread-NNNN.sync`): one file per
//! thread listing only its sync points, plus what replay needs to detect a
//! divergence. Byte layout in docs/FORMAT.md ("Split logs"); this module is its only
//! writer and reader. The reader never panics on bad bytes: every error names
//! the file and the byte offset.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use rr_lite_trace::EventKind;

use crate::error::{Result, SplitError};
use crate::pairs::EventRef;
use crate::syncpoints::{Notify, SyncPoint, ThreadLog};

/// First eight bytes of every replay log.
pub const REPLAY_LOG_MAGIC: [u8; 8] = *b"RRLITE\0S";
/// Version of the replay log format; readers reject larger ones.
pub const REPLAY_LOG_VERSION: u16 = 1;
/// Size of the fixed header.
pub const REPLAY_LOG_HEADER_LEN: usize = 48;
/// Size of the checksum trailer.
pub const TRAILER_LEN: usize = 8;
/// Directory of the replay logs inside a trace directory.
pub const SPLIT_DIR: &str = "split";
/// Where a split is built before it is renamed to [`SPLIT_DIR`].
pub const SPLIT_TMP_DIR: &str = "split.tmp";
/// Statistics of the split, JSON, beside the replay logs.
pub const STATS_FILE: &str = "stats.json";

/// File name of thread `t`'s replay log.
pub fn replay_log_name(t: u32) -> String {
    format!("thread-{t:04}.sync")
}

/// FNV-1a, 64 bits: catches flipped and shuffled bytes, costs nothing.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(delta: u64) -> u64 {
    let d = delta as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> u64 {
    ((z >> 1) as i64 ^ -((z & 1) as i64)) as u64
}

impl ThreadLog {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(REPLAY_LOG_HEADER_LEN + 16 * self.sync_points.len() + 8);
        out.extend_from_slice(&REPLAY_LOG_MAGIC);
        out.extend_from_slice(&REPLAY_LOG_VERSION.to_le_bytes());
        out.extend_from_slice(&(REPLAY_LOG_HEADER_LEN as u16).to_le_bytes());
        out.extend_from_slice(&self.thread.to_le_bytes());
        out.extend_from_slice(&self.threads.to_le_bytes());
        out.extend_from_slice(&self.granule.to_le_bytes());
        out.extend_from_slice(&self.accesses.to_le_bytes());
        out.extend_from_slice(&self.access_hash.to_le_bytes());
        out.extend_from_slice(&(self.sync_points.len() as u64).to_le_bytes());
        debug_assert_eq!(out.len(), REPLAY_LOG_HEADER_LEN);
        let mut expected = 0u64;
        let mut addr = 0u64;
        let mut site = 0u64;
        for p in &self.sync_points {
            debug_assert!(p.index >= expected, "sync points must be sorted");
            put_varint(&mut out, p.index - expected);
            expected = p.index + 1;
            out.push(p.kind as u8 | (p.notify as u8) << 6);
            put_varint(&mut out, zigzag(p.addr.wrapping_sub(addr)));
            addr = p.addr;
            put_varint(&mut out, zigzag(p.site.wrapping_sub(site)));
            site = p.site;
            put_varint(&mut out, p.waits.len() as u64);
            for w in &p.waits {
                put_varint(&mut out, u64::from(w.thread));
                put_varint(&mut out, w.index);
            }
        }
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Writes the log to `path` and flushes it to disk.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut file = File::create(path).map_err(SplitError::io(path))?;
        file.write_all(&self.encode())
            .map_err(SplitError::io(path))?;
        file.sync_all().map_err(SplitError::io(path))
    }

    /// Reads the replay log at `path`.
    pub fn read(path: &Path) -> Result<ThreadLog> {
        let bytes = std::fs::read(path).map_err(SplitError::io(path))?;
        ThreadLog::decode(&bytes, path)
    }

    /// Decodes a replay log; `path` is only used in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<ThreadLog> {
        Decoder {
            bytes,
            end: bytes.len(),
            pos: 0,
            path,
        }
        .log()
    }
}

struct Decoder<'a> {
    bytes: &'a [u8],
    /// Where the sync points end (the trailer starts).
    end: usize,
    pos: usize,
    path: &'a Path,
}

impl Decoder<'_> {
    fn corrupt(&self, offset: usize, what: impl Into<String>) -> SplitError {
        SplitError::Corrupt {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            what: what.into(),
        }
    }

    fn truncated(&self, offset: usize, what: &'static str) -> SplitError {
        SplitError::Truncated {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            what,
        }
    }

    fn u16_at(&self, i: usize) -> u16 {
        u16::from_le_bytes([self.bytes[i], self.bytes[i + 1]])
    }

    fn u32_at(&self, i: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.bytes[i..i + 4]);
        u32::from_le_bytes(b)
    }

    fn u64_at(&self, i: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[i..i + 8]);
        u64::from_le_bytes(b)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            if self.pos >= self.end {
                return Err(self.truncated(start, what));
            }
            let byte = self.bytes[self.pos];
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(self.corrupt(start, format!("{what}: varint overflows 64 bits")));
            }
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.corrupt(start, format!("{what}: varint longer than 10 bytes")))
    }

    fn log(mut self) -> Result<ThreadLog> {
        let b = self.bytes;
        if b.len() < 8 || b[..8] != REPLAY_LOG_MAGIC {
            return Err(if b.len() < 8 && REPLAY_LOG_MAGIC.starts_with(b) {
                self.truncated(b.len(), "header")
            } else {
                SplitError::BadMagic {
                    path: self.path.to_path_buf(),
                }
            });
        }
        if b.len() < 10 {
            return Err(self.truncated(b.len(), "header"));
        }
        let version = self.u16_at(8);
        if version > REPLAY_LOG_VERSION {
            return Err(SplitError::NewerVersion {
                path: self.path.to_path_buf(),
                found: version,
                supported: REPLAY_LOG_VERSION,
            });
        }
        if version == 0 {
            return Err(self.corrupt(8, "version 0"));
        }
        if b.len() < REPLAY_LOG_HEADER_LEN {
            return Err(self.truncated(b.len(), "header"));
        }
        if usize::from(self.u16_at(10)) != REPLAY_LOG_HEADER_LEN {
            return Err(self.corrupt(
                10,
                format!("header length {} (expected 48)", self.u16_at(10)),
            ));
        }
        let thread = self.u32_at(12);
        let threads = self.u32_at(16);
        if thread >= threads {
            return Err(self.corrupt(
                12,
                format!("thread {thread} of a trace of {threads} threads"),
            ));
        }
        let granule = self.u32_at(20);
        if !granule.is_power_of_two() {
            return Err(self.corrupt(20, format!("granule {granule} is not a power of two")));
        }
        let accesses = self.u64_at(24);
        let access_hash = self.u64_at(32);
        let count = self.u64_at(40);
        if b.len() < REPLAY_LOG_HEADER_LEN + TRAILER_LEN {
            return Err(self.truncated(b.len(), "checksum trailer"));
        }
        self.end = b.len() - TRAILER_LEN;
        self.pos = REPLAY_LOG_HEADER_LEN;
        // A sync point takes at least 5 bytes: bound the allocation by the file.
        let body = (self.end - self.pos) as u64;
        if count > body / 5 + 1 {
            return Err(self.corrupt(
                40,
                format!("{count} sync points cannot fit in {body} bytes"),
            ));
        }
        let mut sync_points = Vec::with_capacity(count as usize);
        let mut expected = 0u64;
        let mut addr = 0u64;
        let mut site = 0u64;
        for _ in 0..count {
            let at = self.pos;
            let delta = self.varint("sync point")?;
            let index = expected
                .checked_add(delta)
                .filter(|&i| i < accesses)
                .ok_or_else(|| {
                    self.corrupt(
                        at,
                        format!("sync point index beyond the thread's {accesses} accesses"),
                    )
                })?;
            expected = index + 1;
            if self.pos >= self.end {
                return Err(self.truncated(at, "sync point"));
            }
            let flags = b[self.pos];
            let kind = EventKind::from_code(flags & 0x3f).ok_or_else(|| {
                self.corrupt(self.pos, format!("unknown event kind {}", flags & 0x3f))
            })?;
            let notify = Notify::from_code(flags >> 6)
                .ok_or_else(|| self.corrupt(self.pos, "notify field 3 is undefined"))?;
            self.pos += 1;
            addr = addr.wrapping_add(unzigzag(self.varint("sync point")?));
            site = site.wrapping_add(unzigzag(self.varint("sync point")?));
            let waits_at = self.pos;
            let n_waits = self.varint("sync point")?;
            if n_waits > (self.end - self.pos) as u64 / 2 {
                return Err(self.truncated(waits_at, "wait list"));
            }
            let mut waits = Vec::with_capacity(n_waits as usize);
            for _ in 0..n_waits {
                let wait_at = self.pos;
                let t = self.varint("wait")?;
                let index = self.varint("wait")?;
                let thread = u32::try_from(t)
                    .ok()
                    .filter(|&t| t < threads)
                    .ok_or_else(|| {
                        self.corrupt(
                            wait_at,
                            format!("wait on thread {t} of a trace of {threads} threads"),
                        )
                    })?;
                waits.push(EventRef { thread, index });
            }
            sync_points.push(SyncPoint {
                index,
                kind,
                addr,
                site,
                waits,
                notify,
            });
        }
        if self.pos != self.end {
            return Err(self.corrupt(self.pos, "bytes after the last sync point"));
        }
        let stored = self.u64_at(self.end);
        if checksum(&b[..self.end]) != stored {
            return Err(self.corrupt(self.end, "checksum does not match the contents"));
        }
        Ok(ThreadLog {
            thread,
            threads,
            granule,
            accesses,
            access_hash,
            sync_points,
        })
    }
}

/// Path of the split output of the trace at `trace`.
pub fn split_dir(trace: &Path) -> PathBuf {
    trace.join(SPLIT_DIR)
}

/// Reads every replay log of the trace at `trace` (what the replayer needs),
/// checking that they belong together.
pub fn read_split(trace: &Path) -> Result<Vec<ThreadLog>> {
    let dir = split_dir(trace);
    if !dir.is_dir() {
        return Err(SplitError::NotSplit {
            path: trace.to_path_buf(),
        });
    }
    let first_path = dir.join(replay_log_name(0));
    let first = ThreadLog::read(&first_path)?;
    let threads = first.threads;
    let granule = first.granule;
    let mut logs = Vec::with_capacity(threads as usize);
    logs.push(first);
    for t in 1..threads {
        let path = dir.join(replay_log_name(t));
        if !path.exists() {
            return Err(SplitError::MissingReplayLog { path, threads });
        }
        let log = ThreadLog::read(&path)?;
        if log.thread != t || log.threads != threads || log.granule != granule {
            return Err(SplitError::Corrupt {
                path,
                offset: 12,
                what: format!(
                    "header says thread {} of {} at granule {}, expected thread {t} of {threads} at granule {granule}",
                    log.thread, log.threads, log.granule
                ),
            });
        }
        logs.push(log);
    }
    Ok(logs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> ThreadLog {
        ThreadLog {
            thread: 1,
            threads: 3,
            granule: 8,
            accesses: 100,
            access_hash: 0xdead_beef,
            sync_points: vec![
                SyncPoint {
                    index: 0,
                    kind: EventKind::ThreadStart,
                    addr: rr_lite_trace::pseudo::thread_start(1),
                    site: 0x5555_0000_1234,
                    waits: vec![EventRef {
                        thread: 0,
                        index: 7,
                    }],
                    notify: Notify::None,
                },
                SyncPoint {
                    index: 42,
                    kind: EventKind::Write,
                    addr: 0x7fff_0010,
                    site: 0x5555_0000_1000,
                    waits: vec![],
                    notify: Notify::Broadcast,
                },
                SyncPoint {
                    index: 99,
                    kind: EventKind::MutexLock,
                    addr: 0x7fff_0000,
                    site: 0x5555_0000_2000,
                    waits: vec![
                        EventRef {
                            thread: 0,
                            index: 8,
                        },
                        EventRef {
                            thread: 2,
                            index: 1 << 40,
                        },
                    ],
                    notify: Notify::Signal,
                },
            ],
        }
    }

    #[test]
    fn round_trips() {
        let log = sample();
        let bytes = log.encode();
        assert_eq!(ThreadLog::decode(&bytes, Path::new("x")).unwrap(), log);
    }

    #[test]
    fn every_truncation_is_an_error_naming_file_and_offset() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            let err = ThreadLog::decode(&bytes[..len], Path::new("t.sync")).unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("t.sync: "), "{msg}");
            assert!(
                matches!(
                    err,
                    SplitError::Truncated { .. } | SplitError::Corrupt { .. }
                ),
                "len {len}: {msg}"
            );
        }
    }

    #[test]
    fn newer_version_and_foreign_files_are_rejected() {
        let mut bytes = sample().encode();
        bytes[8] = 2;
        assert!(matches!(
            ThreadLog::decode(&bytes, Path::new("x")).unwrap_err(),
            SplitError::NewerVersion { found: 2, .. }
        ));
        assert!(matches!(
            ThreadLog::decode(b"\x7fELF\x02\x01\x01\0\0\0\0", Path::new("x")).unwrap_err(),
            SplitError::BadMagic { .. }
        ));
    }

    #[test]
    fn flipped_byte_is_caught() {
        let bytes = sample().encode();
        for i in REPLAY_LOG_HEADER_LEN..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(
                ThreadLog::decode(&bad, Path::new("x")).is_err(),
                "flip at {i} not caught"
            );
        }
    }

    proptest! {
        #[test]
        fn decoder_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..300), keep_header in any::<bool>()) {
            if keep_header {
                let good = sample().encode();
                let n = good.len().min(REPLAY_LOG_HEADER_LEN);
                if bytes.len() >= n {
                    bytes[..n].copy_from_slice(&good[..n]);
                }
            }
            let _ = ThreadLog::decode(&bytes, Path::new("x"));
        }
    }
}
