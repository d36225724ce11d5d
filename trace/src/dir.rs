//! A trace directory: its files, where traces live by default, and the merge
//! of the per-thread logs into the global order.
//!
//! The global order: every entry carries a Lamport clock taken under the
//! striped lock of its granule (or, for a read of a read-shared stripe,
//! past its last write), so conflicting entries (same granule, one a
//! write) have increasing clocks in the order memory saw them, and a
//! thread's clocks increase in program order. Sorting by `(clock, thread)`
//! is therefore a total order consistent with program order and with every
//! granule's order; entries with equal clocks touch different granules, or
//! both read one, and commute.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::codec::checksum::LogChecksum;
use crate::codec::{FORMAT_VERSION, LOG_PRIVATE_CLOCK_STEPS};
use crate::error::{Result, TraceError};
use crate::event::{RecordedEvent, is_private_step};
use crate::header::TraceHeader;
use crate::reader::ThreadLogReader;

/// Present while a recording is running or if it never finished.
pub const INCOMPLETE_FILE: &str = "incomplete";
/// Replaces [`INCOMPLETE_FILE`] once the recording is finalised.
pub const VERSION_FILE: &str = "version";
pub const HEADER_FILE: &str = "header.json";
/// Written by the runtime while recording when the program did something
/// the trace cannot hold (a thread the runtime did not start ran
/// instrumented code, the program forked): one line per problem, naming
/// it. The recorder copies the lines into the header's problems, so the
/// trace is not replayable (`ok` is false).
pub const PROBLEMS_FILE: &str = "problems";
/// PCT's step count at the process's exit (`steps N`), written by the
/// runtime under `record --chaos=pct`.
pub const CHAOS_STEPS_FILE: &str = "chaos-steps";
/// Written by the runtime at a recorded process's exit when its threads
/// spun while recording: a line `yields <N>`.
pub const SPINS_FILE: &str = "spins";
/// Copy of the recorded process's `/proc/self/maps`, for symbolising sites.
pub const MAPS_FILE: &str = "maps";
/// Every byte the program read from its standard input, which the recorder
/// passes through a pipe; replay feeds it back the same way.
pub const STDIN_FILE: &str = "stdin";
/// Name of the link to the newest trace, in the traces' base directory.
pub const LATEST_LINK: &str = "latest-trace";
/// Environment variable naming the base directory of traces.
pub const TRACE_DIR_ENV: &str = "RR_LITE_TRACE_DIR";

/// File name of thread `t`'s log.
pub fn thread_log_name(t: u32) -> String {
    format!("thread-{t:04}.log")
}

fn parse_thread_log_name(name: &str) -> Option<u32> {
    name.strip_prefix("thread-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

/// The directory new traces go into: `$RR_LITE_TRACE_DIR`, else
/// `$XDG_DATA_HOME/rr-lite`, else `~/.local/share/rr-lite`.
pub fn default_base_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(TRACE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("rr-lite");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".local/share/rr-lite")
}

/// The trace a command works on: the one given (a path, or a bare name
/// such as `prog-3` that `record` printed, looked up in the traces' base
/// directory), else the latest.
pub fn resolve_trace(arg: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(resolve_name(p));
    }
    let link = default_base_dir().join(LATEST_LINK);
    match std::fs::canonicalize(&link) {
        Ok(p) => Ok(p),
        Err(_) => Err(TraceError::NoLatestTrace { path: link }),
    }
}

/// `name` itself if it exists or has a directory part, else the trace of
/// that name in the base directory when there is one.
fn resolve_name(name: &Path) -> PathBuf {
    let bare = name.components().count() == 1 && !name.starts_with(".");
    if name.exists() || !bare {
        return name.to_path_buf();
    }
    let named = default_base_dir().join(name);
    if named.exists() {
        named
    } else {
        name.to_path_buf()
    }
}

/// An opened trace directory.
#[derive(Debug, Clone)]
pub struct TraceDir {
    path: PathBuf,
    header: Option<TraceHeader>,
    threads: u32,
    /// Without a header, a missing log is a thread that never started
    /// (only while the recorder finalises the trace).
    finalising: bool,
}

/// The file whose lock serialises the commands that write a trace's
/// derived files (the split, the kept plans): concurrent replays of a trace
/// not split yet build them once, one after the other.
pub const LOCK_FILE: &str = "lock";

impl TraceDir {
    /// Takes the trace's exclusive lock (waiting for another process that
    /// holds it), held until the returned file is dropped. Take it once per
    /// process: a second lock of the same file in one process waits forever.
    pub fn lock_derived_files(&self) -> Result<std::fs::File> {
        let path = self.path().join(LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(crate::private::FILE_MODE)
            .open(&path)
            .map_err(TraceError::io("create", &path))?;
        file.lock().map_err(TraceError::io("lock", &path))?;
        Ok(file)
    }

    /// Opens a trace directory, finalised or not. A trace without a header
    /// (the recorder was killed) is still readable: its threads are found by
    /// listing the directory.
    pub fn open(path: &Path) -> Result<TraceDir> {
        Self::open_with(path, false)
    }

    /// Opens a trace the recorder is finalising: the process may have ended
    /// while a thread was being created, whose log then does not exist.
    pub fn open_for_finalising(path: &Path) -> Result<TraceDir> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, finalising: bool) -> Result<TraceDir> {
        let meta = std::fs::metadata(path).map_err(TraceError::io("open", path))?;
        if !meta.is_dir() {
            return Err(TraceError::NotATrace {
                path: path.to_path_buf(),
            });
        }
        Self::check_version_file(path)?;
        let header_path = path.join(HEADER_FILE);
        let header = if header_path.exists() {
            Some(TraceHeader::read(&header_path)?)
        } else {
            None
        };
        let threads = match &header {
            Some(h) => h.threads,
            None => Self::count_thread_logs(path)?,
        };
        if threads == 0 {
            return Err(TraceError::NotATrace {
                path: path.to_path_buf(),
            });
        }
        let dir = TraceDir {
            path: path.to_path_buf(),
            header,
            threads,
            finalising,
        };
        for t in 0..threads {
            let p = dir.thread_log_path(t);
            if !p.exists() && !dir.may_be_missing(t) {
                return Err(TraceError::MissingThreadLog { path: p, threads });
            }
        }
        Ok(dir)
    }

    fn check_version_file(path: &Path) -> Result<()> {
        let version = [VERSION_FILE, INCOMPLETE_FILE]
            .iter()
            .map(|f| path.join(f))
            .find(|p| p.exists());
        let Some(version) = version else {
            return if path.join(thread_log_name(0)).exists() {
                Ok(())
            } else {
                Err(TraceError::NotATrace {
                    path: path.to_path_buf(),
                })
            };
        };
        let text = crate::bounded::read_to_string(&version, crate::bounded::VERSION_LIMIT)?;
        let found: u64 = text.trim().parse().map_err(|_| TraceError::Corrupt {
            path: version.clone(),
            offset: 0,
            what: format!("expected a format version number, found {:?}", text.trim()),
        })?;
        if found > u64::from(FORMAT_VERSION) {
            return Err(TraceError::NewerVersion {
                path: version,
                found,
                supported: FORMAT_VERSION,
            });
        }
        Ok(())
    }

    /// Threads are numbered densely from 0; count the logs present.
    fn count_thread_logs(path: &Path) -> Result<u32> {
        let mut max = None;
        for entry in std::fs::read_dir(path).map_err(TraceError::io("list", path))? {
            let entry = entry.map_err(TraceError::io("list", path))?;
            if let Some(t) = entry.file_name().to_str().and_then(parse_thread_log_name) {
                max = max.max(Some(t));
            }
        }
        Ok(max.map_or(0, |m| m + 1))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header, absent when the recording never finished.
    pub fn header(&self) -> Option<&TraceHeader> {
        self.header.as_ref()
    }

    /// True when the recorder finalised the trace and found it sound.
    pub fn is_complete(&self) -> bool {
        self.header.as_ref().is_some_and(|h| h.ok) && self.path.join(VERSION_FILE).exists()
    }

    pub fn threads(&self) -> u32 {
        self.threads
    }

    pub fn thread_log_path(&self, t: u32) -> PathBuf {
        self.path.join(thread_log_name(t))
    }

    pub fn maps_path(&self) -> PathBuf {
        self.path.join(MAPS_FILE)
    }

    /// A thread's log may be absent if the thread never started: the
    /// process ended while it was being created. A finalised trace lists 0
    /// entries for it; before that only the recorder may assume so.
    fn may_be_missing(&self, t: u32) -> bool {
        match &self.header {
            Some(h) => h.entries.get(t as usize) == Some(&0),
            None => self.finalising && t != 0,
        }
    }

    /// Reader over one thread's entries. With a header, the number of
    /// entries must be the one it lists.
    pub fn thread_events(&self, t: u32) -> Result<ThreadLogReader> {
        let path = self.thread_log_path(t);
        if !path.exists() && self.may_be_missing(t) {
            return ThreadLogReader::never_started(&path, t);
        }
        let mut reader = ThreadLogReader::open(&path)?;
        if let Some((kind, len, expected)) = self.log_checksum(t, &path)? {
            reader = reader.expect_checksum(kind, len, expected);
        }
        if let Some(expected) = self.header.as_ref().and_then(|h| h.entries.get(t as usize)) {
            reader = reader.expect_entries(*expected);
        }
        if reader.header().thread != t {
            return Err(TraceError::Corrupt {
                path: reader.path().to_path_buf(),
                offset: 12,
                what: format!("header says thread {}", reader.header().thread),
            });
        }
        Ok(reader)
    }

    /// The checksum a finalised trace's header lists for thread `t`'s log,
    /// which must be a regular file. A finalised log must be the file the
    /// recorder finalised: one changed byte (a recorded time, a thread id)
    /// would otherwise replay, or analyse, as something that never
    /// happened. Readers check it as they read.
    fn log_checksum(&self, t: u32, path: &Path) -> Result<Option<(LogChecksum, u64, u64)>> {
        let Some(header) = &self.header else {
            return Ok(None);
        };
        let Some(&(len, sum)) = header.log_checksums.get(t as usize) else {
            return Ok(None);
        };
        let kind = match header.log_checksum.as_deref() {
            None => LogChecksum::Fnv1a,
            Some(name) => LogChecksum::from_name(name).ok_or_else(|| TraceError::BadFile {
                path: self.path.join(HEADER_FILE),
                what: format!(
                    "log_checksum {name:?} is not an algorithm this rr-lite knows (fnv1a, crc32)"
                ),
            })?,
        };
        let meta = std::fs::metadata(path).map_err(TraceError::io("read", path))?;
        if !meta.is_file() {
            return Err(TraceError::BadFile {
                path: path.to_path_buf(),
                what: "not a regular file".into(),
            });
        }
        Ok(Some((kind, len, sum)))
    }

    /// All entries in the global order: by `(clock, thread)`.
    pub fn global_order(&self) -> Result<GlobalOrder> {
        GlobalOrder::new(self.all_thread_events()?, false)
    }

    /// All entries in an order that keeps the recorded order of the
    /// entries on every stripe, for the pair analysis: as
    /// [`Self::global_order`], except that an entry one private step past
    /// its thread's previous one follows that one at once, in logs that
    /// mark their steps ([`LOG_PRIVATE_CLOCK_STEPS`]). Threads then come
    /// in runs of many events instead of taking turns event by event.
    pub fn analysis_order(&self) -> Result<GlobalOrder> {
        GlobalOrder::new(self.all_thread_events()?, true)
    }

    fn all_thread_events(&self) -> Result<Vec<ThreadLogReader>> {
        (0..self.threads).map(|t| self.thread_events(t)).collect()
    }
}

/// An entry with its position in the global order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderedEvent {
    /// Global sequence number: 0, 1, 2, ... in the merged order.
    pub seq: u64,
    pub event: RecordedEvent,
}

/// Events a decoding worker hands the merge at once, at most and at least:
/// big batches make the merge and its workers meet (and often switch the
/// core) less often (8192 rather than 2048 took a tenth of the context
/// switches and 10-20 % of the time of splitting radix and stencil), but
/// every log holds a few batches in memory, so the budget below is shared
/// among the logs.
const MAX_BATCH_EVENTS: usize = 8192;
const MIN_BATCH_EVENTS: usize = 512;
/// Events of one batch per log, over all logs: up to 8 logs get the
/// largest batches, 128 and more the smallest (64 bytes an event, times the
/// three or four batches of a log in flight and up to [`BATCHES_AHEAD`]
/// used ones on their way back to be filled again: some 25 MB for the
/// largest).
const BATCHED_EVENTS: usize = 8 * MAX_BATCH_EVENTS;
/// Batches a worker decodes ahead of the merge.
const BATCHES_AHEAD: usize = 2;

/// One thread log decoded on its own worker thread, in batches: the merge
/// (and whatever consumes it) runs beside the decoding and checksumming of
/// every log.
#[derive(Debug)]
struct DecodedLog {
    batches: Receiver<Result<Vec<RecordedEvent>>>,
    /// Used-up batches going back to the worker to be filled again: fresh
    /// ones of half a megabyte each were new pages, faulted in by the
    /// worker and unmapped by the merge, for every batch.
    spent: SyncSender<Vec<RecordedEvent>>,
    batch: Vec<RecordedEvent>,
    /// The next event of `batch` not yet handed out.
    pos: usize,
    /// Runs go on through this log's private steps: the analysis order, of
    /// a log that marks them ([`LOG_PRIVATE_CLOCK_STEPS`]).
    private_runs: bool,
    /// The clock of the last event handed out (none yet: 0, below every
    /// clock, so the first event is never one private step past it).
    last_clock: u64,
}

impl DecodedLog {
    /// Whether a run goes on to an event at `clock`: one private step past
    /// the last one handed out, in a log whose private steps runs go through.
    fn runs_on_to(&self, clock: u64) -> bool {
        self.private_runs && is_private_step(self.last_clock, clock)
    }

    fn spawn(
        mut reader: ThreadLogReader,
        batch_events: usize,
        private_runs: bool,
    ) -> Result<DecodedLog> {
        let private_runs = private_runs && reader.header().flags & LOG_PRIVATE_CLOCK_STEPS != 0;
        let (tx, rx) = sync_channel(BATCHES_AHEAD);
        let (spent, spent_rx) = sync_channel(BATCHES_AHEAD);
        let name = format!("decode-{}", reader.header().thread);
        std::thread::Builder::new()
            .name(name)
            .spawn(move || decode_batches(&mut reader, &tx, &spent_rx, batch_events))
            .map_err(TraceError::io(
                "start a decoding thread for",
                "the thread logs",
            ))?;
        Ok(DecodedLog {
            batches: rx,
            spent,
            batch: Vec::new(),
            pos: 0,
            private_runs,
            last_clock: 0,
        })
    }

    /// The clock of the next event, once the batch holding it is here;
    /// `None` at the log's end.
    fn head_clock(&mut self) -> Result<Option<u64>> {
        while self.pos == self.batch.len() {
            match self.batches.recv() {
                Ok(batch) => {
                    let used = std::mem::replace(&mut self.batch, batch?);
                    if used.capacity() > 0 {
                        // (A full queue, or a worker gone: dropped.)
                        let _ = self.spent.try_send(used);
                    }
                    self.pos = 0;
                }
                // The worker ended after its last batch.
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(self.batch[self.pos].clock))
    }
}

/// The worker: decodes `reader` into batches until its end, an error (sent
/// last) or the merge going away. The global order relies on each log's
/// clocks growing, which the decoder ensures: it refuses an entry whose
/// clock does not pass the one before (`codec::clock_after`).
fn decode_batches(
    reader: &mut ThreadLogReader,
    tx: &SyncSender<Result<Vec<RecordedEvent>>>,
    spent: &Receiver<Vec<RecordedEvent>>,
    batch_events: usize,
) {
    loop {
        let mut batch = match spent.try_recv() {
            Ok(mut used) => {
                used.clear();
                used
            }
            Err(_) => Vec::with_capacity(batch_events),
        };
        let failed = reader.read_batch(&mut batch, batch_events).err();
        debug_assert!(batch.windows(2).all(|w| w[0].clock < w[1].clock));
        let full = batch.len() == batch_events;
        if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
            return;
        }
        if let Some(e) = failed {
            let _ = tx.send(Err(e));
            return;
        }
        if !full {
            return;
        }
    }
}

/// k-way merge of thread logs by `(clock, thread)`; streaming, memory
/// proportional to the number of threads. Each log is decoded on a thread
/// of its own.
///
/// The merge works in runs: the events of one log that all come before
/// the next event of every other log. A run costs one heap operation, and
/// [`GlobalOrder::next_run`] lends it as a slice of the decoded batch, so a
/// consumer that can take events by reference copies none of them.
///
/// By clock alone, threads running side by side take turns event by event
/// (their Lamport clocks interleave: runs of 1.4 events in a 4-thread FFT).
/// The analysis order (`private_runs`) also runs on through the events one
/// private step past their thread's previous one ([`LOG_PRIVATE_CLOCK_STEPS`]):
/// such an event's stripe was the thread's since its previous access to it,
/// so no other thread's event on it can come between. An event that is not
/// is handed out only once it comes before every other log's next event,
/// as by clock, so every entry on a stripe still follows the entries the
/// recording had before it there (ARCHITECTURE.md, "Private steps").
#[derive(Debug)]
pub struct GlobalOrder {
    logs: Vec<DecodedLog>,
    /// `(clock, slot)` of the next event of each log but the one being
    /// handed out.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// The log of the current run; it goes back on the heap when the run
    /// is used up.
    run_slot: Option<usize>,
    /// Events of the current run not handed out yet (from its log's `pos`).
    run_left: usize,
    next_seq: u64,
    failed: bool,
}

impl GlobalOrder {
    /// The order of `readers`' events: by clock, or with `private_runs`
    /// the analysis order (see the type's doc).
    pub fn new(readers: Vec<ThreadLogReader>, private_runs: bool) -> Result<GlobalOrder> {
        let batch_events =
            (BATCHED_EVENTS / readers.len().max(1)).clamp(MIN_BATCH_EVENTS, MAX_BATCH_EVENTS);
        let mut logs = readers
            .into_iter()
            .map(|reader| DecodedLog::spawn(reader, batch_events, private_runs))
            .collect::<Result<Vec<_>>>()?;
        let mut heap = BinaryHeap::new();
        for (slot, log) in logs.iter_mut().enumerate() {
            if let Some(clock) = log.head_clock()? {
                heap.push(Reverse((clock, slot as u32)));
            }
        }
        Ok(GlobalOrder {
            logs,
            heap,
            run_slot: None,
            run_left: 0,
            next_seq: 0,
            failed: false,
        })
    }

    /// Makes sure a run is under way, unless every log has ended: puts the
    /// last run's log back on the heap, takes the first log off it and
    /// measures how far its events come before every other log's next one.
    fn ensure_run(&mut self) -> Result<bool> {
        if self.run_left > 0 {
            return Ok(true);
        }
        let slot = match self.run_slot.take() {
            Some(last) => match self.logs[last].head_clock()? {
                // One private step on: the same log, no heap operation.
                Some(clock) if self.logs[last].runs_on_to(clock) => Some(last as u32),
                Some(clock) => self.swap_top((clock, last as u32)),
                None => self.heap.pop().map(|Reverse((_, slot))| slot),
            },
            None => self.heap.pop().map(|Reverse((_, slot))| slot),
        };
        let Some(slot) = slot else {
            return Ok(false);
        };
        let log = &self.logs[slot as usize];
        let events = &log.batch[log.pos..];
        let private = log.private_runs.then_some(log.last_clock);
        self.run_left = match self.heap.peek() {
            None => events.len(),
            Some(&Reverse(next)) => run_length(events, slot, next, private),
        };
        debug_assert!(
            self.run_left > 0,
            "the heap's first log, or a private step, has an event first"
        );
        self.run_slot = Some(slot as usize);
        Ok(true)
    }

    /// The log whose next event comes first, `head` (the `(clock, slot)` of
    /// the last run's log) or the heap's top, which `head` then replaces
    /// (one sift, where a push and a pop would take two).
    fn swap_top(&mut self, head: (u64, u32)) -> Option<u32> {
        match self.heap.peek_mut() {
            Some(mut top) if top.0 < head => {
                let first = top.0.1;
                *top = Reverse(head);
                Some(first)
            }
            _ => Some(head.1),
        }
    }

    /// The next run of the order: its first event's sequence number and
    /// its events, all of one thread; `None` at the end.
    pub fn next_run(&mut self) -> Result<Option<(u64, &[RecordedEvent])>> {
        if self.failed {
            return Ok(None);
        }
        match self.ensure_run() {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => {
                self.failed = true;
                return Err(e);
            }
        }
        let n = self.run_left;
        let (seq, slot, start) = self.take_from_run(n);
        Ok(Some((seq, &self.logs[slot].batch[start..start + n])))
    }

    /// Hands out the next `n` events of the current run: their first
    /// sequence number, log and place in its batch.
    fn take_from_run(&mut self, n: usize) -> (u64, usize, usize) {
        debug_assert!(n <= self.run_left);
        let slot = self.run_slot.expect("a run is under way");
        let log = &mut self.logs[slot];
        let start = log.pos;
        log.pos += n;
        if n > 0 {
            log.last_clock = log.batch[log.pos - 1].clock;
        }
        self.run_left -= n;
        let seq = self.next_seq;
        self.next_seq += n as u64;
        (seq, slot, start)
    }

    fn advance(&mut self) -> Result<Option<OrderedEvent>> {
        if !self.ensure_run()? {
            return Ok(None);
        }
        let (seq, slot, start) = self.take_from_run(1);
        let event = self.logs[slot].batch[start];
        Ok(Some(OrderedEvent { seq, event }))
    }
}

/// How many of `events` (of the log in `slot`, clocks increasing) the run
/// takes: those before `next`, the `(clock, slot)` of the first event of
/// the other logs, and with `private` (the clock of the log's last event
/// handed out, in the analysis order of a log that marks its private
/// steps) also those one private step past the event before them, and
/// again those before `next` after them, and so on.
fn run_length(
    events: &[RecordedEvent],
    slot: u32,
    next: (u64, u32),
    private: Option<u64>,
) -> usize {
    let Some(mut last) = private else {
        return clock_run_length(events, slot, next);
    };
    let mut n = 0;
    loop {
        let start = n;
        while n < events.len() && is_private_step(last, events[n].clock) {
            last = events[n].clock;
            n += 1;
        }
        n += clock_run_length(&events[n..], slot, next);
        if n == start {
            return n;
        }
        last = events[n - 1].clock;
    }
}

/// How many of `events` (of the log in `slot`, clocks increasing) come
/// before `next`, the `(clock, slot)` of the first event of the other logs.
/// Gallops: probes 1, 2, 4... events further each time (Lamport clocks of
/// threads running side by side interleave, so most runs are short and
/// take two probes), then a binary search between the last two.
fn clock_run_length(events: &[RecordedEvent], slot: u32, next: (u64, u32)) -> usize {
    let before = |e: &RecordedEvent| (e.clock, slot) < next;
    // `events[..known]` come before `next`.
    let mut known = 0;
    let mut probe = 0;
    let mut step = 1;
    while probe < events.len() {
        if !before(&events[probe]) {
            return known + events[known..probe].partition_point(before);
        }
        known = probe + 1;
        probe += step;
        step *= 2;
    }
    known + events[known..].partition_point(before)
}

impl GlobalOrder {
    /// Reads the rest of the order and returns its first error, if any: a
    /// consumer that found something wrong in the events asks whether a
    /// log was damaged (its checksum is checked at its end), which is the
    /// better report.
    pub fn damage(&mut self) -> Option<TraceError> {
        self.by_ref().find_map(Result::err)
    }
}

impl Iterator for GlobalOrder {
    type Item = Result<OrderedEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.advance().transpose();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::tests::write_log_with_flags;

    /// A recording of `choices` (thread, stripe) accesses in this real
    /// order, with the runtime's clock rule: a private step when the
    /// stripe's last access was the thread's own (it kept it locked), a
    /// synced step past the stripe's clock otherwise. Returns each
    /// thread's entries, and each stripe's accesses as (thread, index) in
    /// their real order.
    #[allow(clippy::type_complexity)]
    fn simulate(
        threads: usize,
        choices: &[(usize, u64)],
    ) -> (Vec<Vec<Entry>>, Vec<Vec<(u32, u64)>>) {
        let stripes = 1 + choices.iter().map(|c| c.1).max().unwrap_or(0) as usize;
        let mut logs = vec![Vec::new(); threads];
        let mut own = vec![0u64; threads];
        let mut stripe_clock = vec![0u64; stripes];
        let mut last = vec![usize::MAX; stripes];
        let mut real = vec![Vec::new(); stripes];
        for &(t, s) in choices {
            let si = s as usize;
            let step = if last[si] == t {
                crate::event::PRIVATE_CLOCK_STEP
            } else {
                crate::event::SYNCED_CLOCK_STEP
            };
            let clock = own[t].max(stripe_clock[si]) + step;
            (own[t], stripe_clock[si], last[si]) = (clock, clock, t);
            real[si].push((t as u32, logs[t].len() as u64));
            logs[t].push(Entry {
                clock,
                kind: crate::event::EventKind::Write,
                addr: 0x1000 + s * 64,
                size: 8,
                site: 0x5000 + s,
                payload: 0,
            });
        }
        (logs, real)
    }

    proptest::proptest! {
        /// The analysis order keeps every stripe's accesses in their real
        /// order, as the clock order does, in logs that mark their
        /// private steps; and it hands out every event once, each log in
        /// program order.
        #[test]
        fn the_analysis_order_keeps_each_stripes_order(
            threads in 1usize..5,
            raw in proptest::collection::vec((0usize..4, 0u64..6, 1usize..40), 1..40),
        ) {
            // Bursts: a thread makes several accesses to one stripe in turn.
            let choices: Vec<(usize, u64)> = raw
                .iter()
                .flat_map(|&(t, s, n)| std::iter::repeat_n((t % threads, s), n))
                .collect();
            let (logs, real) = simulate(threads, &choices);
            let dir = tempfile::tempdir().unwrap();
            let readers: Vec<ThreadLogReader> = logs
                .iter()
                .enumerate()
                .map(|(t, entries)| {
                    let path = dir.path().join(format!("thread-{t:04}.log"));
                    write_log_with_flags(&path, t as u32, entries, None, LOG_PRIVATE_CLOCK_STEPS);
                    ThreadLogReader::open(&path).unwrap()
                })
                .collect();
            let mut order = GlobalOrder::new(readers, true).unwrap();
            let mut seen = vec![Vec::new(); real.len()];
            let mut next_index = vec![0u64; threads];
            while let Some((_, run)) = order.next_run().unwrap() {
                for e in run {
                    proptest::prop_assert_eq!(e.index, next_index[e.thread as usize]);
                    next_index[e.thread as usize] += 1;
                    seen[((e.addr - 0x1000) / 64) as usize].push((e.thread, e.index));
                }
            }
            proptest::prop_assert_eq!(seen, real);
        }
    }

    proptest::proptest! {
        /// The galloping search finds what counting one by one finds.
        #[test]
        fn run_length_counts_the_events_before_the_next_log(
            len in 0usize..300,
            next_clock in 0u64..400,
            next_slot in 0u32..3,
        ) {
            let events: Vec<RecordedEvent> = (0..len as u64)
                .map(|i| RecordedEvent {
                    thread: 1,
                    index: i,
                    clock: i + 1,
                    kind: crate::event::EventKind::Read,
                    addr: 0,
                    size: 8,
                    site: 0,
                    payload: 0,
                })
                .collect();
            let slot = 1;
            let next = (next_clock, next_slot);
            let expected = events.iter().filter(|e| (e.clock, slot) < next).count();
            proptest::prop_assert_eq!(clock_run_length(&events, slot, next), expected);
        }
    }
    use crate::codec::Entry;
    use crate::event::EventKind;

    fn e(clock: u64) -> Entry {
        Entry {
            clock,
            kind: EventKind::Read,
            addr: 8 * clock,
            size: 8,
            site: 0,
            payload: 0,
        }
    }

    #[test]
    fn merge_orders_by_clock_then_thread() {
        let dir = tempfile::tempdir().unwrap();
        crate::reader::tests::write_log(
            &dir.path().join("thread-0000.log"),
            0,
            &[e(1), e(3), e(4)],
            None,
        );
        crate::reader::tests::write_log(
            &dir.path().join("thread-0001.log"),
            1,
            &[e(2), e(3), e(9)],
            None,
        );
        std::fs::write(dir.path().join(INCOMPLETE_FILE), "1\n").unwrap();
        let trace = TraceDir::open(dir.path()).unwrap();
        assert_eq!(trace.threads(), 2);
        assert!(!trace.is_complete());
        let order: Vec<_> = trace
            .global_order()
            .unwrap()
            .map(|r| r.map(|o| (o.seq, o.event.thread, o.event.clock)))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            order,
            vec![
                (0, 0, 1),
                (1, 1, 2),
                (2, 0, 3),
                (3, 1, 3),
                (4, 0, 4),
                (5, 1, 9)
            ]
        );
    }

    #[test]
    fn missing_thread_log_and_newer_version_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(VERSION_FILE), "99\n").unwrap();
        let err = TraceDir::open(dir.path()).unwrap_err();
        assert!(
            matches!(err, TraceError::NewerVersion { found: 99, .. }),
            "{err}"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            TraceDir::open(empty.path()).unwrap_err(),
            TraceError::NotATrace { .. }
        ));
    }
}
