//! A thread's log file, written through a shared file mapping one chunk at a
//! time. Shared mappings make the log crash-proof: whatever the thread wrote
//! is in the page cache and reaches the file even if the process is killed
//! the next instant (SIGSEGV, abort, exit from another thread, SIGKILL).

use rr_lite_trace::codec::{
    DeltaState, Entry, FORMAT_VERSION, HEADER_LEN, LAST_CHUNK_OFFSET, MAX_ENTRY_LEN, PAD_TAG,
    ThreadLogHeader, encode_access, encode_entry, encode_predicted_access,
};

use crate::alloc::map_private;

/// Bytes per mapped chunk (a power of two; recorded in the header).
pub(crate) const CHUNK_LEN: usize = 1 << 22;
/// [`LogWriter::pos`] of a closed log: past every chunk's room.
const CLOSED_POS: usize = CHUNK_LEN;

/// Bytes mapped for a writer's [`DeltaState`] (whole pages).
const DELTA_LEN: usize = core::mem::size_of::<DeltaState>().next_multiple_of(4096);

#[derive(Debug)]
pub(crate) struct LogWriter {
    fd: i32,
    chunk: *mut u8,
    chunk_index: u64,
    /// Where the next entry goes in the chunk; [`CLOSED_POS`] while closed,
    /// so that [`Self::room`]'s one comparison also sends a closed log to
    /// its cold path.
    pos: usize,
    /// The encoder's state, in a mapping of its own (`DELTA_LEN` bytes):
    /// some 12 KB, too much for thread-local storage, whose size a thread
    /// with a small stack may not have room for.
    delta: *mut DeltaState,
    /// Entries appended so far.
    entries: u64,
}

impl LogWriter {
    pub(crate) const CLOSED: LogWriter = LogWriter {
        fd: -1,
        chunk: core::ptr::null_mut(),
        chunk_index: 0,
        pos: CLOSED_POS,
        delta: core::ptr::null_mut(),
        entries: 0,
    };

    pub(crate) fn is_open(&self) -> bool {
        !self.chunk.is_null()
    }

    /// Creates `thread-NNNN.log` in `dir` and writes its header; the
    /// error number of the step that failed otherwise (0 if it left none).
    pub(crate) fn create(dir: &[u8], thread: u32, parent: u32) -> Result<LogWriter, i32> {
        let mut name_buf = [0u8; 48];
        let name = crate::sys::thread_file_name(b"thread-", thread, b".log", &mut name_buf);
        // Created under a temporary name and renamed once the header is in:
        // a log under its real name always has a complete header, even if
        // the process dies while a thread is starting.
        let mut tmp_name = [0u8; 40];
        tmp_name[..name.len()].copy_from_slice(name);
        tmp_name[name.len()..name.len() + 4].copy_from_slice(b".tmp");
        let tmp_name = &tmp_name[..name.len() + 4];
        // Kept open (the log grows a chunk at a time), so out of the
        // program's descriptor range (see crate::descriptors).
        let fd = crate::descriptors::locked(|| {
            crate::descriptors::keep_above_floor(crate::sys::create_in_dir(dir, tmp_name))
        });
        if fd < 0 {
            return Err(crate::sys::errno());
        }
        let delta = map_private(
            DELTA_LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if delta.is_null() {
            // (Taken before the close, which may change it.)
            let errno = crate::sys::errno();
            crate::sys::close_raw(fd);
            return Err(errno);
        }
        let delta = delta.cast::<DeltaState>();
        // SAFETY: a fresh private mapping of DELTA_LEN >= size_of bytes,
        // page-aligned (DeltaState needs 32), owned by this writer alone.
        unsafe { delta.write(DeltaState::new()) };
        let mut log = LogWriter {
            fd,
            delta,
            ..LogWriter::CLOSED
        };
        if !log.map_chunk(0) {
            let errno = crate::sys::errno();
            log.close();
            return Err(errno);
        }
        let header = ThreadLogHeader {
            version: FORMAT_VERSION,
            thread,
            chunk_size: CHUNK_LEN as u32,
            pid: crate::sys::getpid_raw(),
            parent,
            flags: rr_lite_trace::codec::LOG_PRIVATE_CLOCK_STEPS,
            start_unix_ns: crate::sys::unix_time_ns(),
            last_chunk: 0,
            entries_before_last_chunk: 0,
        };
        log.chunk_bytes()[..HEADER_LEN].copy_from_slice(&header.encode());
        log.pos = HEADER_LEN;
        if !crate::sys::rename_in_dir(dir, tmp_name, name) {
            let errno = crate::sys::errno();
            log.close();
            return Err(errno);
        }
        Ok(log)
    }

    fn chunk_bytes(&mut self) -> &mut [u8] {
        // SAFETY: `chunk` is a live private-region mapping of CHUNK_LEN bytes
        // owned by this writer (one writer per thread).
        unsafe { core::slice::from_raw_parts_mut(self.chunk, CHUNK_LEN) }
    }

    /// Grows the file and maps chunk `index`. The chunk's blocks are
    /// allocated first (`fallocate`): on a full disk this fails here, and
    /// the thread stops logging, instead of a store into a hole of the
    /// mapping killing the program with SIGBUS.
    fn map_chunk(&mut self, index: u64) -> bool {
        let start = index * CHUNK_LEN as u64;
        // SAFETY: raw system calls on our own descriptor.
        let reserved = unsafe {
            libc::syscall(
                libc::SYS_fallocate,
                self.fd,
                0,
                start as i64,
                CHUNK_LEN as i64,
            )
        };
        if reserved != 0 {
            let unsupported = crate::sys::errno() == libc::EOPNOTSUPP;
            let end = (start + CHUNK_LEN as u64) as i64;
            // SAFETY: as above.
            if !unsupported || unsafe { libc::syscall(libc::SYS_ftruncate, self.fd, end) } != 0 {
                return false;
            }
        }
        let p = map_private(
            CHUNK_LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            self.fd,
            (index * CHUNK_LEN as u64) as i64,
        );
        if p.is_null() {
            return false;
        }
        if index > 0 {
            // A thread that filled a chunk fills the next: its pages are
            // faulted in writable now, in one call, rather than by one trap
            // per page at the hooks that first write them (lu 500 1: 33.7 k
            // page faults -> 3.8 k). Not the first chunk: a thread that logs
            // little would dirty 4 MB of page cache for nothing. (Best
            // effort: a kernel before 5.14 leaves the traps.)
            // SAFETY: a raw system call on the mapping just made.
            unsafe {
                libc::syscall(libc::SYS_madvise, p, CHUNK_LEN, libc::MADV_POPULATE_WRITE);
            }
        }
        if !self.chunk.is_null() {
            // The previous chunk: nothing else uses it, its contents stay in
            // the file.
            crate::sys::munmap_raw(self.chunk.cast(), CHUNK_LEN);
        }
        self.chunk = p;
        self.chunk_index = index;
        self.pos = 0;
        if index > 0 {
            self.note_last_chunk();
        }
        true
    }

    /// Writes into the header where the last chunk starts and how many
    /// entries come before it, so the recorder counts a log by reading its
    /// last chunk only (`ThreadLogHeader::last_chunk`). Before the chunk's
    /// first entry: a log cut short anywhere still reads right.
    fn note_last_chunk(&self) {
        let mut fields = [0u8; 16];
        fields[..8].copy_from_slice(&self.chunk_index.to_le_bytes());
        fields[8..].copy_from_slice(&self.entries.to_le_bytes());
        // If it fails, the header keeps older values, which still read
        // right (more of the log is counted).
        self.write_header(LAST_CHUNK_OFFSET, &fields);
    }

    /// Writes `bytes` into the header at `offset`, through the descriptor
    /// (not the mapping, which moves on with the chunks). Best effort.
    fn write_header(&self, offset: usize, bytes: &[u8]) {
        debug_assert!(offset + bytes.len() <= HEADER_LEN);
        // SAFETY: a raw system call on our own descriptor with the caller's
        // buffer, read for its length only.
        unsafe {
            libc::syscall(
                libc::SYS_pwrite64,
                self.fd,
                bytes.as_ptr(),
                bytes.len(),
                offset as i64,
            )
        };
    }

    /// Sets [`rr_lite_trace::codec::LOG_PROCESS_INCOMPLETE`] in the header,
    /// through the descriptor: it was opened before any sandbox the program
    /// entered, which may refuse the runtime new files and notes.
    fn note_process_incomplete(&self) {
        let flags = rr_lite_trace::codec::LOG_PRIVATE_CLOCK_STEPS
            | rr_lite_trace::codec::LOG_PROCESS_INCOMPLETE;
        // If it fails, the recorder still reads the notes, if they got there.
        self.write_header(rr_lite_trace::codec::FLAGS_OFFSET, &flags.to_le_bytes());
    }

    /// Appends one entry. Returns false if the log could not grow (disk
    /// full): the entry is lost and the caller reports it once.
    pub(crate) fn append(&mut self, e: &Entry) -> bool {
        let Some((room, delta)) = self.room() else {
            return false;
        };
        let n = encode_entry(room, delta, e);
        self.wrote(n);
        true
    }

    /// Appends a plain access (`encode_access`: `tag` is its compact tag,
    /// `may_step` whether its clock may have moved by the synced step),
    /// the recorder's fast path: no [`Entry`] built, nothing looked at
    /// twice.
    #[inline(always)]
    pub(crate) fn append_access(
        &mut self,
        tag: u8,
        clock: u64,
        addr: u64,
        site: u64,
        may_step: bool,
    ) -> bool {
        // Nearly every access of a loop is one byte: that path first.
        if self.append_predicted_access(tag, clock, addr, site) {
            return true;
        }
        let Some((room, delta)) = self.room() else {
            return false;
        };
        let n = encode_access(room, delta, tag, clock, addr, site, may_step);
        self.wrote(n);
        true
    }

    /// [`Self::append_access`] of an access whose entry is one byte
    /// (`encode_predicted_access`); false, nothing written, for any other,
    /// or if the chunk is full (the general encoder then grows the log).
    #[inline(always)]
    fn append_predicted_access(&mut self, tag: u8, clock: u64, addr: u64, site: u64) -> bool {
        if self.pos + MAX_ENTRY_LEN > CHUNK_LEN {
            return false;
        }
        // SAFETY: as in `room`: `pos + MAX_ENTRY_LEN <= CHUNK_LEN` (checked
        // above) inside the live chunk mapping this writer owns.
        let byte = unsafe { &mut *self.chunk.add(self.pos) };
        // SAFETY: as in `room`: this writer's own live delta state.
        let delta = unsafe { &mut *self.delta };
        if !encode_predicted_access(byte, delta, tag, clock, addr, site) {
            return false;
        }
        self.wrote(1);
        true
    }

    /// Room for one entry at the end of the log, and the encoder's state;
    /// None if the log could not grow. [`Self::wrote`] then counts what
    /// was encoded there. (Not a closure taking both: that was compiled
    /// out of line, with a frame of its own, on the record hook's path.)
    #[inline(always)]
    fn room(&mut self) -> Option<(&mut [u8; MAX_ENTRY_LEN], &mut DeltaState)> {
        if self.pos + MAX_ENTRY_LEN > CHUNK_LEN && !self.next_chunk() {
            return None;
        }
        // SAFETY: `chunk` is a live mapping of CHUNK_LEN bytes owned by this
        // writer and `pos + MAX_ENTRY_LEN <= CHUNK_LEN` (checked above); a
        // slice of the mapping, not of `self`, so that the delta state is
        // encoded in place (a copy of it out and back stalled on the stores
        // just made: half of this function's time).
        let room = unsafe { &mut *self.chunk.add(self.pos).cast::<[u8; MAX_ENTRY_LEN]>() };
        // SAFETY: `delta` is the live mapping `create` initialised, owned by
        // this writer (one per thread); nothing else borrows it now.
        let delta = unsafe { &mut *self.delta };
        Some((room, delta))
    }

    /// Counts an entry of `n` bytes just encoded in [`Self::room`].
    #[inline(always)]
    fn wrote(&mut self, n: usize) {
        debug_assert!(n <= MAX_ENTRY_LEN);
        self.pos += n;
        self.entries += 1;
    }

    /// Pads the rest of the chunk and maps the next; false (the log
    /// closed) if it could not grow or was closed already.
    #[cold]
    fn next_chunk(&mut self) -> bool {
        if !self.is_open() {
            return false;
        }
        let pos = self.pos;
        self.chunk_bytes()[pos] = PAD_TAG;
        if !self.map_chunk(self.chunk_index + 1) {
            self.close();
            return false;
        }
        true
    }

    /// Unmaps and closes; everything written stays in the file. If a log
    /// of the process failed meanwhile, the header says so first
    /// (`LOG_PROCESS_INCOMPLETE`).
    pub(crate) fn close(&mut self) {
        if self.fd < 0 {
            return;
        }
        if crate::problems::LOG_FAILED.load(core::sync::atomic::Ordering::Relaxed) {
            self.note_process_incomplete();
        }
        if !self.chunk.is_null() {
            crate::sys::munmap_raw(self.chunk.cast(), CHUNK_LEN);
        }
        if !self.delta.is_null() {
            crate::sys::munmap_raw(self.delta.cast(), DELTA_LEN);
        }
        crate::sys::close_raw(self.fd);
        *self = LogWriter::CLOSED;
    }
}
