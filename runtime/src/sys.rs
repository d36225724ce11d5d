//! Thin wrappers over the system calls the runtime itself makes. None of
//! them allocates or goes through an interposed function, so they are safe to
//! call from inside hooks.

use core::sync::atomic::AtomicU32;

/// Blocks while `*word == expected` (or until woken / timed out / a signal).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT only reads the word through a valid reference and the
    // timespec lives across the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes every thread blocked in [`futex_wait`] on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE does not dereference memory beyond the word's address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// Writes all of `bytes` to `fd`, ignoring errors (used for diagnostics and
/// small runtime files, where there is nobody to report an error to).
pub fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe a live slice. The raw
        // system call: the runtime's own messages are not program output.
        let n = unsafe { libc::syscall(libc::SYS_write, fd, bytes.as_ptr(), bytes.len()) };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

pub fn errno() -> i32 {
    // SAFETY: __errno_location always returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}

pub fn set_errno(value: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// Prints a one-line diagnostic on stderr, prefixed with "rr-lite: ".
pub fn warn(parts: &[&[u8]]) {
    let mut line = [0u8; 512];
    let mut len = 0;
    for part in [b"rr-lite: ".as_slice()]
        .iter()
        .chain(parts)
        .chain([b"\n".as_slice()].iter())
    {
        let n = part.len().min(line.len() - len);
        line[len..len + n].copy_from_slice(&part[..n]);
        len += n;
    }
    write_all(2, &line[..len]);
}

/// Formats `v` in decimal into `buf`, returns the digits.
pub fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// Nanoseconds since the Unix epoch.
pub fn unix_time_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the timespec is a valid out-parameter; the raw syscall avoids
    // our clock_gettime interposer.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_REALTIME,
            &mut ts as *mut libc::timespec,
        )
    };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// `dir/name` as a NUL-terminated path, or None if too long.
fn join(dir: &[u8], name: &[u8]) -> Option<[u8; 4096]> {
    let mut path = [0u8; 4096];
    let total = dir.len() + 1 + name.len();
    if total >= path.len() {
        return None;
    }
    path[..dir.len()].copy_from_slice(dir);
    path[dir.len()] = b'/';
    path[dir.len() + 1..total].copy_from_slice(name);
    Some(path)
}

/// Renames `dir/from` to `dir/to` (atomic on one file system).
pub fn rename_in_dir(dir: &[u8], from: &[u8], to: &[u8]) -> bool {
    let (Some(from), Some(to)) = (join(dir, from), join(dir, to)) else {
        return false;
    };
    // SAFETY: both paths are NUL-terminated buffers.
    unsafe { libc::rename(from.as_ptr().cast(), to.as_ptr().cast()) == 0 }
}

/// Creates (truncating) a file in the trace directory; `name` is NUL-free.
/// Returns the descriptor or -1.
pub fn create_in_dir(dir: &[u8], name: &[u8]) -> i32 {
    let Some(path) = join(dir, name) else {
        return -1;
    };
    // SAFETY: `path` is NUL-terminated (zero-filled beyond `total`).
    unsafe {
        libc::open(
            path.as_ptr().cast(),
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        )
    }
}

pub fn getpid_raw() -> u32 {
    // SAFETY: getpid has no arguments and cannot fail; the raw syscall avoids
    // our getpid interposer.
    unsafe { libc::syscall(libc::SYS_getpid) as u32 }
}
