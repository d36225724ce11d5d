//! Input from outside the program: what `read`, `recv` and `recvfrom`
//! return on a pipe, FIFO, socket or character device (a terminal,
//! `/dev/urandom`), and what `getrandom` returns, differs from run to run.
//! Record appends the bytes to the thread's `input-NNNN.bin` in the trace
//! (the event's payload is the count, or -errno); replay serves them from
//! there in the same per-thread order, so a replay does not depend on the
//! input still being there.
//!
//! One exception: descriptors the program made itself with `pipe`, `pipe2`
//! or `socketpair` have both ends in the program, whose writes replay
//! repeats. Serving such a read from the trace would leave the pipe full
//! (its writer would block), so replay reads it for real, exactly the
//! recorded count, and checks the bytes against the recording.
//! Standard input is fed by the supervisor (`supervise::StdinSource`) and
//! read for real in both modes; regular files are read live.

use core::cell::Cell;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::{descriptors, mode, sys};

/// Descriptors covered by the "made by the program" bitmap; higher ones
/// count as from outside.
const TRACKED_FDS: usize = 4096;

/// Descriptors from the program's own `pipe`/`socketpair` calls.
static INTERNAL: [AtomicU64; TRACKED_FDS / 64] = [const { AtomicU64::new(0) }; TRACKED_FDS / 64];

/// Marks `fd` as one end of a pipe or socket pair the program made.
pub(crate) fn mark_internal(fd: i32) {
    set_internal(fd, true);
}

/// `fd` was closed: a later descriptor with its number is another file.
pub(crate) fn forget(fd: i32) {
    set_internal(fd, false);
}

fn set_internal(fd: i32, internal: bool) {
    let Ok(fd) = usize::try_from(fd) else { return };
    if fd >= TRACKED_FDS {
        return;
    }
    let bit = 1u64 << (fd % 64);
    if internal {
        INTERNAL[fd / 64].fetch_or(bit, Ordering::Relaxed);
    } else {
        INTERNAL[fd / 64].fetch_and(!bit, Ordering::Relaxed);
    }
}

/// Whether `fd` is one end of a pipe or socket pair the program made.
pub(crate) fn is_internal(fd: i32) -> bool {
    usize::try_from(fd)
        .ok()
        .filter(|&fd| fd < TRACKED_FDS)
        .is_some_and(|fd| INTERNAL[fd / 64].load(Ordering::Relaxed) & (1 << (fd % 64)) != 0)
}

/// Whether reads from `fd` are input to record: a pipe, FIFO, socket or
/// character device other than standard input, in record or replay mode.
pub(crate) fn is_recorded_input(fd: i32) -> bool {
    if fd <= 0 || !mode::active() {
        return false;
    }
    // SAFETY: fstat writes the zeroed struct it is given (raw: not a
    // program call).
    let kind = unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) != 0 {
            return false;
        }
        st.st_mode & libc::S_IFMT
    };
    matches!(kind, libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR)
}

/// A thread's input file, opened at its first input.
#[derive(Debug)]
pub(crate) struct ThreadInput {
    fd: Cell<i32>,
    /// Replay: where the next input starts in the file.
    offset: Cell<u64>,
}

impl ThreadInput {
    pub(crate) const fn new() -> ThreadInput {
        ThreadInput {
            fd: Cell::new(-1),
            offset: Cell::new(0),
        }
    }

    /// The file of thread `thread`, opened (record: created) on first use,
    /// kept above the program's descriptors.
    fn file(&self, thread: u32, record: bool) -> i32 {
        if self.fd.get() < 0 {
            let mut name_buf = [0u8; 48];
            let name = sys::thread_file_name(b"input-", thread, b".bin", &mut name_buf);
            let fd = descriptors::locked(|| {
                let fd = match sys::join(mode::TRACE_DIR.get(), name) {
                    Some(path) if record => sys::open_raw(
                        &path,
                        libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                    ),
                    Some(path) => sys::open_raw(&path, libc::O_RDONLY | libc::O_CLOEXEC),
                    None => -1,
                };
                descriptors::keep_above_floor(fd)
            });
            self.fd.set(fd);
        }
        self.fd.get()
    }

    /// Record: appends what an input call returned.
    pub(crate) fn save(&self, thread: u32, bytes: &[u8]) {
        let fd = self.file(thread, true);
        if fd < 0 {
            sys::warn(&[b"cannot write the thread's input file: replay will diverge"]);
            return;
        }
        sys::write_all(fd, bytes);
    }

    /// Replay: the next `buf.len()` recorded bytes, or false if the file
    /// does not have them (a damaged or foreign trace).
    pub(crate) fn load(&self, thread: u32, buf: &mut [u8]) -> bool {
        let fd = self.file(thread, false);
        let mut done = 0;
        while done < buf.len() {
            let at = self.offset.get() + done as u64;
            let rest = &mut buf[done..];
            // SAFETY: the kernel writes at most `rest.len()` bytes there.
            let n =
                unsafe { libc::syscall(libc::SYS_pread64, fd, rest.as_mut_ptr(), rest.len(), at) };
            if n <= 0 {
                return false;
            }
            done += n as usize;
        }
        self.offset.set(self.offset.get() + done as u64);
        true
    }

    /// Replay: whether the next `actual.len()` recorded bytes are `actual`
    /// (a read of the program's own pipe, done for real); false also when
    /// the file does not have them.
    pub(crate) fn matches(&self, thread: u32, actual: &[u8]) -> bool {
        let mut chunk = [0u8; 4096];
        actual.chunks(chunk.len()).all(|part| {
            let expected = &mut chunk[..part.len()];
            self.load(thread, expected) && expected == part
        })
    }

    /// At the thread's end.
    pub(crate) fn close(&self) {
        sys::close_raw(self.fd.replace(-1));
    }
}
