//! `rr-lite record --snapshot-files`: regular files the program opens for
//! reading are copied into the trace as it opens them (`files/<n>`, listed
//! in `files/index` as `<n> <path in hex>`), and replay opens the copy
//! instead, so a replay does not need them any more, or unchanged.
//!
//! A path the program opens for writing is read live from then on, in both
//! modes (its later contents are the program's own writes, which replay
//! repeats). Opens are descriptor events, ordered among threads and run
//! under the descriptor lock, so both modes see the same opens in the same
//! order and keep the same table.

use core::ffi::{CStr, c_char, c_int};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::mode::{self, Mode};
use crate::sys;

/// Environment variable that turns snapshots on (set by the recorder; kept
/// in the recorded environment, so replay sees it too).
pub(crate) const SNAPSHOT_ENV: &CStr = c"RR_LITE_SNAPSHOT_FILES";
/// Distinct paths the table holds; later ones are read live.
const SLOTS: usize = 4096;
/// Value of a path read live.
const LIVE: u32 = u32::MAX;

static ENABLED: AtomicBool = AtomicBool::new(false);
static LOADED: AtomicBool = AtomicBool::new(false);
/// Open addressing on the path's hash (0: empty).
static KEYS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Snapshot number + 1, or [`LIVE`].
static VALUES: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];
static NEXT: AtomicU32 = AtomicU32::new(0);

/// At start-up: whether the environment asks for snapshots.
pub(crate) fn enable(value: Option<&[u8]>) {
    ENABLED.store(value == Some(b"1"), Ordering::Relaxed);
}

fn hash(path: &[u8]) -> u64 {
    rr_lite_trace::codec::checksum::fnv1a(path) | 1
}

/// The slot of `key`, or the empty one where it would go (None: full).
fn slot(key: u64) -> Option<usize> {
    (0..SLOTS)
        .map(|i| (key as usize).wrapping_add(i) % SLOTS)
        .find(|&i| {
            matches!(KEYS[i].load(Ordering::Relaxed), 0) || KEYS[i].load(Ordering::Relaxed) == key
        })
}

fn value_of(key: u64) -> u32 {
    slot(key)
        .filter(|&i| KEYS[i].load(Ordering::Relaxed) == key)
        .map_or(0, |i| VALUES[i].load(Ordering::Relaxed))
}

fn set_value(key: u64, value: u32) {
    if let Some(i) = slot(key) {
        KEYS[i].store(key, Ordering::Relaxed);
        VALUES[i].store(value, Ordering::Relaxed);
    }
}

fn is_read_only(flags: c_int) -> bool {
    flags & libc::O_ACCMODE == libc::O_RDONLY && flags & (libc::O_CREAT | libc::O_TRUNC) == 0
}

/// Replay, before an open of `path` with `flags` (inside its event): the
/// snapshot to open instead, as a NUL-terminated path.
pub(crate) fn redirect(path: *const c_char, flags: c_int) -> Option<[u8; 4096]> {
    if !ENABLED.load(Ordering::Relaxed) || mode::current() != Mode::Replay || path.is_null() {
        return None;
    }
    load_index();
    // SAFETY: the program passed a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) }.to_bytes();
    let value = value_of(hash(path));
    if !is_read_only(flags) || value == 0 || value == LIVE {
        return None;
    }
    let mut name = [0u8; 48];
    sys::join(mode::TRACE_DIR.get(), snapshot_name(value - 1, &mut name))
}

/// After a rename gave `path` the contents of another name: the program's
/// own, as if it had opened `path` for writing (replay would otherwise
/// find a file it read there changed since the recording, made anew by
/// the replayed program itself).
pub(crate) fn replaced(path: *const c_char) {
    if mode::active() && !path.is_null() {
        opened(path, libc::O_WRONLY, 0);
    }
}

/// After an open of `path` with `flags` gave `fd` (inside its event): a
/// path opened for writing goes live; record copies a regular file opened
/// for reading the first time, or, without snapshots, notes its size and
/// modification time in `files-read`, so that replay can warn when the
/// file it will read live has changed.
pub(crate) fn opened(path: *const c_char, flags: c_int, fd: c_int) {
    if !mode::active() || fd < 0 || path.is_null() {
        return;
    }
    // SAFETY: the program passed a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) }.to_bytes();
    let key = hash(path);
    let enabled = ENABLED.load(Ordering::Relaxed);
    let record = mode::current() == Mode::Record;
    if !is_read_only(flags) {
        if record && !enabled && !matches!(value_of(key), 0 | LIVE) {
            // Noted as read, now written: its end state is the program's.
            append_line(b"files-read", &[b"w "], path);
        }
        set_value(key, LIVE);
        return;
    }
    if !record || value_of(key) != 0 || rr_lite_trace::bounded::is_per_process(path) {
        return;
    }
    let Some((size, mtime)) = regular_file(fd) else {
        return;
    };
    if !enabled {
        let mut a = [0u8; 20];
        let mut b = [0u8; 20];
        let size = sys::decimal(size, &mut a);
        let mtime = sys::decimal(mtime, &mut b);
        append_line(b"files-read", &[size, b" ", mtime, b" "], path);
        set_value(key, 1);
        return;
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    if copy_into_trace(fd, n, path) {
        set_value(key, n + 1);
    }
}

/// Record, after an open of `path` (relative to `dir`) created it: notes it
/// in `files-read` (`c <path in hex>`), so that a replay that finds it in
/// place (an output left from the recording) can say so if it diverges.
/// Only a path the recorded working directory resolves: absolute, or
/// relative to the working directory.
pub(crate) fn created(dir: c_int, path: *const c_char) {
    if path.is_null() {
        return;
    }
    // SAFETY: the program passed a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) }.to_bytes();
    if (dir == libc::AT_FDCWD || path.first() == Some(&b'/'))
        && !rr_lite_trace::bounded::is_per_process(path)
    {
        append_line(b"files-read", &[b"c "], path);
    }
}

/// Size and modification time (ns since the epoch) of a regular file.
fn regular_file(fd: c_int) -> Option<(u64, u64)> {
    // SAFETY: fstat writes the zeroed struct it is given (raw syscall).
    let st = unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) != 0 {
            return None;
        }
        st
    };
    (st.st_mode & libc::S_IFMT == libc::S_IFREG).then(|| {
        let mtime = (st.st_mtime as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_mtime_nsec as u64);
        (st.st_size as u64, mtime)
    })
}

/// `files/<n>` (8 digits).
fn snapshot_name(n: u32, buf: &mut [u8; 48]) -> &[u8] {
    let mut digits = [0u8; 20];
    let d = sys::decimal(u64::from(n), &mut digits);
    let zeros = 8usize.saturating_sub(d.len());
    sys::concat(&[b"files/", &b"00000000"[..zeros], d], buf)
}

/// Copies the file open on `fd` (without moving its offset) into
/// `files/<n>` and lists it in the index.
fn copy_into_trace(fd: c_int, n: u32, path: &[u8]) -> bool {
    let dir = mode::TRACE_DIR.get();
    if let Some(files) = sys::join(dir, b"files") {
        // SAFETY: a NUL-terminated path; EEXIST is fine.
        unsafe { libc::syscall(libc::SYS_mkdirat, libc::AT_FDCWD, files.as_ptr(), 0o700) };
    }
    let mut name = [0u8; 48];
    let copy = sys::create_in_dir(dir, snapshot_name(n, &mut name));
    if copy < 0 {
        sys::warn(&[b"cannot snapshot a file into the trace: it is read live at replay"]);
        return false;
    }
    let size = sys::file_size(fd).unwrap_or(0);
    let mut offset: libc::off_t = 0;
    let mut ok = true;
    while (offset as u64) < size {
        // SAFETY: sendfile reads `fd` from `offset` (which it advances; the
        // descriptor's own offset stays) into our file.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sendfile,
                copy,
                fd,
                &mut offset as *mut libc::off_t,
                size - offset as u64,
            )
        };
        if r <= 0 {
            ok = false;
            break;
        }
    }
    sys::close_raw(copy);
    if ok {
        append_index(n, path);
    }
    ok
}

/// `<n> <path in hex>\n` appended to `files/index`.
fn append_index(n: u32, path: &[u8]) {
    let mut digits = [0u8; 20];
    let number = sys::decimal(u64::from(n), &mut digits);
    append_line(b"files/index", &[number, b" "], path);
}

/// Appends `<prefix...><path in hex>\n` to the trace's file `name`.
fn append_line(name: &[u8], prefix: &[&[u8]], path: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0u8; 8192];
    let path = &path[..path.len().min(hex.len() / 2)];
    for (i, &b) in path.iter().enumerate() {
        hex[2 * i] = HEX[usize::from(b >> 4)];
        hex[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    let mut parts: [&[u8]; 6] = [&[]; 6];
    let used = prefix.len().min(parts.len() - 1);
    parts[..used].copy_from_slice(&prefix[..used]);
    parts[used] = &hex[..2 * path.len()];
    sys::append_line_in_dir(mode::TRACE_DIR.get(), name, &parts[..=used]);
}

/// Replay: fills the table from `files/index` once.
fn load_index() {
    if LOADED.swap(true, Ordering::Relaxed) {
        return;
    }
    let Some(path) = sys::join(mode::TRACE_DIR.get(), b"files/index") else {
        return;
    };
    let fd = sys::open_raw(&path, libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut line = [0u8; 8300];
    let mut len = 0;
    let mut chunk = [0u8; 4096];
    loop {
        let n = sys::read_raw(fd, &mut chunk);
        if n <= 0 {
            break;
        }
        for &b in &chunk[..n as usize] {
            if b == b'\n' {
                index_line(&line[..len]);
                len = 0;
            } else if len < line.len() {
                line[len] = b;
                len += 1;
            }
        }
    }
    sys::close_raw(fd);
}

/// One `<n> <hex>` line: snapshot `n` holds `path`. Malformed lines are
/// skipped (the path is then read live, and replay checks what follows).
fn index_line(line: &[u8]) {
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return;
    };
    let (number, hex) = (&line[..space], &line[space + 1..]);
    let Some(n) = number.iter().try_fold(0u32, |acc, &d| {
        d.is_ascii_digit()
            .then(|| acc.checked_mul(10)?.checked_add(u32::from(d - b'0')))?
    }) else {
        return;
    };
    if !hex.len().is_multiple_of(2) || n == u32::MAX - 1 {
        return;
    }
    let mut path = [0u8; 4096];
    let len = hex.len() / 2;
    if len > path.len() {
        return;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|v| v as u8);
    for i in 0..len {
        let (Some(hi), Some(lo)) = (digit(hex[2 * i]), digit(hex[2 * i + 1])) else {
            return;
        };
        path[i] = hi << 4 | lo;
    }
    let key = hash(&path[..len]);
    if value_of(key) == 0 {
        set_value(key, n + 1);
    }
}
