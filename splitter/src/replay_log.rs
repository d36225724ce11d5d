//! The replay log format (`<trace>/split/thread-NNNN.sync`): one file per
//! thread listing only its sync points, plus what replay needs to detect a
//! divergence. Byte layout in docs/FORMAT.md ("Split logs"); this module is its only
//! writer and reader. The reader never panics on bad bytes: every error names
//! the file and the byte offset.

use std::io::Write;
use std::path::{Path, PathBuf};

use rr_lite_trace::codec::checksum::fnv1a;
use rr_lite_trace::codec::varint::{self, unzigzag, zigzag};
use rr_lite_trace::{EventKind, TraceError};

use crate::error::{Result, SplitError};
use crate::pairs::EventRef;
use crate::syncpoints::{Notify, SyncPoint, ThreadLog};

/// First eight bytes of every replay log.
pub const REPLAY_LOG_MAGIC: [u8; 8] = *b"RRLITE\0S";
/// Version of the replay log format; readers reject larger ones, and
/// version 1, whose access hash is the old one (`fold_access_hash` before
/// each event's index was in it).
pub const REPLAY_LOG_VERSION: u16 = 2;
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

/// Where the statistics of `trace`'s split are (a trace directory).
pub fn stats_path(trace: &Path) -> PathBuf {
    trace.join(SPLIT_DIR).join(STATS_FILE)
}

/// File name of thread `t`'s replay log.
pub fn replay_log_name(t: u32) -> String {
    format!("thread-{t:04}.sync")
}

fn put_varint(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(varint::encode(v).as_bytes());
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
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Writes the log to `path` and flushes it to disk.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut file =
            rr_lite_trace::private::create(path).map_err(SplitError::io("create", path))?;
        file.write_all(&self.encode())
            .map_err(SplitError::io("write", path))?;
        file.sync_all().map_err(SplitError::io("write", path))
    }

    /// Reads the replay log at `path`.
    pub fn read(path: &Path) -> Result<ThreadLog> {
        let bytes = rr_lite_trace::bounded::read(path, rr_lite_trace::bounded::SPLIT_LOG_LIMIT)?;
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
        TraceError::Corrupt {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            what: what.into(),
        }
        .into()
    }

    fn truncated(&self, offset: usize, what: &'static str) -> SplitError {
        TraceError::Truncated {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            what,
        }
        .into()
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

    /// Reads the varint at the current position, which belongs to `what`;
    /// never reads into the trailer.
    fn varint(&mut self, what: &'static str) -> Result<u64> {
        let rest = self.bytes.get(self.pos..self.end).unwrap_or_default();
        let (v, len) = varint::decode(rest).map_err(|e| e.at(self.path, self.pos as u64, what))?;
        self.pos += len;
        Ok(v)
    }

    /// The whole file: header, sync points, trailer.
    fn log(mut self) -> Result<ThreadLog> {
        self.magic_and_version()?;
        let header = self.header()?;
        self.locate_sync_points(header.count)?;
        // The count was bounded by the file size: no huge allocation.
        let mut sync_points = Vec::with_capacity(header.count as usize);
        let mut previous = Previous::default();
        for _ in 0..header.count {
            sync_points.push(self.sync_point(&header, &mut previous)?);
        }
        self.trailer()?;
        Ok(ThreadLog {
            thread: header.thread,
            threads: header.threads,
            granule: header.granule,
            accesses: header.accesses,
            access_hash: header.access_hash,
            sync_points,
        })
    }

    /// Checked first, so that a foreign or newer file is reported as such
    /// rather than as a corrupt replay log.
    fn magic_and_version(&self) -> Result<()> {
        let b = self.bytes;
        if b.len() < 8 || b[..8] != REPLAY_LOG_MAGIC {
            return Err(if b.len() < 8 && REPLAY_LOG_MAGIC.starts_with(b) {
                self.truncated(b.len(), "header")
            } else {
                TraceError::BadMagic {
                    path: self.path.to_path_buf(),
                    expected: "replay log",
                }
                .into()
            });
        }
        if b.len() < 10 {
            return Err(self.truncated(b.len(), "header"));
        }
        let version = self.u16_at(8);
        if version > REPLAY_LOG_VERSION {
            return Err(TraceError::NewerVersion {
                path: self.path.to_path_buf(),
                found: version.into(),
                supported: REPLAY_LOG_VERSION,
            }
            .into());
        }
        if version == 0 {
            return Err(self.corrupt(8, "version 0"));
        }
        if version < REPLAY_LOG_VERSION {
            return Err(self.corrupt(
                8,
                format!(
                    "version {version}, whose access hash this rr-lite no longer computes: \
                     run `rr-lite split` again"
                ),
            ));
        }
        Ok(())
    }

    /// The rest of the fixed header, after [`Self::magic_and_version`].
    fn header(&self) -> Result<Header> {
        if self.bytes.len() < REPLAY_LOG_HEADER_LEN {
            return Err(self.truncated(self.bytes.len(), "header"));
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
        Ok(Header {
            thread,
            threads,
            granule,
            accesses: self.u64_at(24),
            access_hash: self.u64_at(32),
            count: self.u64_at(40),
        })
    }

    /// Positions the decoder on the first sync point and stops it at the
    /// trailer; checks that `count` sync points can fit in between.
    fn locate_sync_points(&mut self, count: u64) -> Result<()> {
        let len = self.bytes.len();
        if len < REPLAY_LOG_HEADER_LEN + TRAILER_LEN {
            return Err(self.truncated(len, "checksum trailer"));
        }
        self.end = len - TRAILER_LEN;
        self.pos = REPLAY_LOG_HEADER_LEN;
        // A sync point takes at least 5 bytes: bound the allocation by the file.
        let body = (self.end - self.pos) as u64;
        if count > body / 5 + 1 {
            return Err(self.corrupt(
                40,
                format!("{count} sync points cannot fit in {body} bytes"),
            ));
        }
        Ok(())
    }

    /// The sync point at the current position; `previous` holds the
    /// delta-coding state and is advanced past it.
    fn sync_point(&mut self, header: &Header, previous: &mut Previous) -> Result<SyncPoint> {
        let at = self.pos;
        let delta = self.varint("sync point")?;
        let index = previous
            .expected
            .checked_add(delta)
            .filter(|&i| i < header.accesses)
            .ok_or_else(|| {
                self.corrupt(
                    at,
                    format!(
                        "sync point index beyond the thread's {} accesses",
                        header.accesses
                    ),
                )
            })?;
        previous.expected = index + 1;
        let Some(&flags) = self.bytes[..self.end].get(self.pos) else {
            return Err(self.truncated(at, "sync point"));
        };
        let kind = EventKind::from_code(flags & 0x3f).ok_or_else(|| {
            self.corrupt(self.pos, format!("unknown event kind {}", flags & 0x3f))
        })?;
        let notify = Notify::from_code(flags >> 6)
            .ok_or_else(|| self.corrupt(self.pos, "notify field 3 is undefined"))?;
        self.pos += 1;
        previous.addr = previous
            .addr
            .wrapping_add(unzigzag(self.varint("sync point")?));
        previous.site = previous
            .site
            .wrapping_add(unzigzag(self.varint("sync point")?));
        let waits = self.waits(header.threads)?;
        Ok(SyncPoint {
            index,
            kind,
            addr: previous.addr,
            site: previous.site,
            waits,
            notify,
        })
    }

    /// A sync point's wait list: its length, then (thread, index) pairs.
    fn waits(&mut self, threads: u32) -> Result<Vec<EventRef>> {
        let waits_at = self.pos;
        let n_waits = self.varint("sync point")?;
        // A wait takes at least 2 bytes: bound the allocation by the file.
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
        Ok(waits)
    }

    /// Nothing between the last sync point and the trailer, and the
    /// checksum matches.
    fn trailer(&self) -> Result<()> {
        if self.pos != self.end {
            return Err(self.corrupt(self.pos, "bytes after the last sync point"));
        }
        let stored = self.u64_at(self.end);
        if fnv1a(&self.bytes[..self.end]) != stored {
            return Err(self.corrupt(self.end, "checksum does not match the contents"));
        }
        Ok(())
    }
}

/// The fixed header of a replay log, as read.
struct Header {
    thread: u32,
    threads: u32,
    granule: u32,
    accesses: u64,
    access_hash: u64,
    /// Number of sync points that follow.
    count: u64,
}

/// Delta-coding state of the sync points: each is stored relative to the
/// one before (docs/FORMAT.md).
#[derive(Default)]
struct Previous {
    /// The lowest index the next sync point can have.
    expected: u64,
    addr: u64,
    site: u64,
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
            return Err(TraceError::Corrupt {
                path,
                offset: 12,
                what: format!(
                    "header says thread {} of {} at granule {}, expected thread {t} of {threads} at granule {granule}",
                    log.thread, log.threads, log.granule
                ),
            }
            .into());
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

    /// The bytes of a replay log are pinned: a change here is a format
    /// change (docs/FORMAT.md, "Split logs") and needs a version bump.
    #[test]
    fn encoding_is_the_documented_one() {
        let waits = |w: &[(u32, u64)]| {
            w.iter()
                .map(|&(thread, index)| EventRef { thread, index })
                .collect()
        };
        let point = |index, kind, addr, site, w: &[(u32, u64)], notify| SyncPoint {
            index,
            kind,
            addr,
            site,
            waits: waits(w),
            notify,
        };
        let log = ThreadLog {
            thread: 1,
            threads: 3,
            granule: 8,
            accesses: 1 << 41,
            access_hash: 0xdead_beef,
            sync_points: vec![
                point(
                    0,
                    EventKind::ThreadStart,
                    0x5000,
                    0x5555_0000_1234,
                    &[(0, 7)],
                    Notify::None,
                ),
                point(
                    300,
                    EventKind::Write,
                    0x10,
                    0x5555_0000_1000,
                    &[],
                    Notify::Broadcast,
                ),
                point(
                    1 << 40,
                    EventKind::MutexLock,
                    u64::MAX,
                    0,
                    &[(2, 1 << 40), (0, 8)],
                    Notify::Signal,
                ),
            ],
        };
        let hex: String = log.encode().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "52524c4954450053020030000100000003000000080000000000000000020000\
             efbeadde000000000300000000000000001780c002e8c88080a0d52a010007ab\
             0282dfbf02e70800d3fdffffff1f4621ffbf8080a0d52a020280808080802000\
             0859de5332c7ca493c"
        );
        assert_eq!(
            ThreadLog::decode(&log.encode(), Path::new("x")).unwrap(),
            log
        );
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
                    SplitError::Trace(TraceError::Truncated { .. } | TraceError::Corrupt { .. })
                ),
                "len {len}: {msg}"
            );
        }
    }

    #[test]
    fn newer_version_and_foreign_files_are_rejected() {
        let mut bytes = sample().encode();
        bytes[8] = 3;
        assert!(matches!(
            ThreadLog::decode(&bytes, Path::new("x")).unwrap_err(),
            SplitError::Trace(TraceError::NewerVersion { found: 3, .. })
        ));
        bytes[8] = 1;
        let old = ThreadLog::decode(&bytes, Path::new("x"))
            .unwrap_err()
            .to_string();
        assert!(
            old.contains("version 1") && old.contains("split` again"),
            "{old}"
        );
        assert!(matches!(
            ThreadLog::decode(b"\x7fELF\x02\x01\x01\0\0\0\0", Path::new("x")).unwrap_err(),
            SplitError::Trace(TraceError::BadMagic { .. })
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
