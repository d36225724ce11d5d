//! Thin wrappers over the system calls the runtime itself makes. None of
//! them allocates or goes through an interposed function, so they are safe to
//! call from inside hooks.

use core::sync::atomic::AtomicU32;

/// Most threads one recording can have (over its whole life).
pub(crate) const MAX_THREADS: usize = 1 << 14;

/// Blocks while `*word == expected` (or until woken / timed out / a signal).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout_ns: u64) {
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
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    futex_wake(word, i32::MAX);
}

/// Wakes up to `count` threads blocked in [`futex_wait`] on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, count: i32) {
    // SAFETY: FUTEX_WAKE does not dereference memory beyond the word's address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            count,
        );
    }
}

/// Writes all of `bytes` to `fd`, ignoring errors (used for diagnostics and
/// small runtime files, where there is nobody to report an error to).
pub(crate) fn write_all(fd: i32, mut bytes: &[u8]) {
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

pub(crate) fn errno() -> i32 {
    // SAFETY: __errno_location always returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}

pub(crate) fn set_errno(value: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// Most bytes of a diagnostic line.
const LINE_MAX: usize = 1024;

/// `prefix`, then `parts`, then a newline, into `buf` (cut to fit, newline
/// kept).
fn line<'a>(buf: &'a mut [u8; LINE_MAX], prefix: &[u8], parts: &[&[u8]]) -> &'a [u8] {
    let mut len = 0;
    for part in [prefix].iter().chain(parts) {
        let n = part.len().min(buf.len() - 1 - len);
        buf[len..len + n].copy_from_slice(&part[..n]);
        len += n;
    }
    buf[len] = b'\n';
    &buf[..=len]
}

/// Prints a one-line diagnostic on stderr, prefixed with "rr-lite: ".
pub(crate) fn warn(parts: &[&[u8]]) {
    let mut buf = [0u8; LINE_MAX];
    write_all(2, line(&mut buf, b"rr-lite: ", parts));
}

/// Appends the line `parts` to `dir/name` (created if missing). Call
/// inside `descriptors::locked`.
pub(crate) fn append_line_in_dir(dir: &[u8], name: &[u8], parts: &[&[u8]]) {
    let Some(path) = join(dir, name) else {
        return;
    };
    let fd = open_raw(
        &path,
        libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
    );
    if fd >= 0 {
        let mut buf = [0u8; LINE_MAX];
        // One write: lines from several threads do not mix.
        write_all(fd, line(&mut buf, b"", parts));
        close_raw(fd);
    }
}

/// Formats `v` in hexadecimal (lower case, no prefix) into `buf`.
pub(crate) fn hex(mut v: u64, buf: &mut [u8; 16]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b"0123456789abcdef"[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// Formats `v` in decimal into `buf`, returns the digits.
pub(crate) fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
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
pub(crate) fn unix_time_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// Nanoseconds of the monotonic clock (for bounds on waits).
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the timespec is a valid out-parameter; the raw syscall avoids
    // our clock_gettime interposer.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            clock,
            &mut ts as *mut libc::timespec,
        )
    };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// `<prefix><NNNN><suffix>`: a per-thread file name, the thread id with at
/// least four digits (`thread-0003.log`, `input-0012.bin`).
pub(crate) fn thread_file_name<'a>(
    prefix: &[u8],
    thread: u32,
    suffix: &[u8],
    buf: &'a mut [u8; 48],
) -> &'a [u8] {
    let mut digits = [0u8; 20];
    let d = decimal(u64::from(thread), &mut digits);
    let zeros = 4usize.saturating_sub(d.len());
    concat(&[prefix, &b"0000"[..zeros], d, suffix], buf)
}

/// `parts` one after the other in `buf` (which must hold them all).
pub(crate) fn concat<'a>(parts: &[&[u8]], buf: &'a mut [u8]) -> &'a [u8] {
    let mut len = 0;
    for part in parts {
        buf[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    &buf[..len]
}

/// `dir/name` as a NUL-terminated path, or None if too long.
pub(crate) fn join(dir: &[u8], name: &[u8]) -> Option<[u8; 4096]> {
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
pub(crate) fn rename_in_dir(dir: &[u8], from: &[u8], to: &[u8]) -> bool {
    let (Some(from), Some(to)) = (join(dir, from), join(dir, to)) else {
        return false;
    };
    // SAFETY: both paths are NUL-terminated buffers.
    unsafe { libc::rename(from.as_ptr().cast(), to.as_ptr().cast()) == 0 }
}

/// Creates (truncating) a file in the trace directory; `name` is NUL-free.
/// Returns the descriptor or -1. Call inside `descriptors::locked`.
pub(crate) fn create_in_dir(dir: &[u8], name: &[u8]) -> i32 {
    let Some(path) = join(dir, name) else {
        return -1;
    };
    open_raw(
        &path,
        libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
    )
}

/// Opens the NUL-terminated `path` (a new file gets mode 0600: traces are
/// private, see `rr_lite_trace::private`). Returns the
/// descriptor or -1. The raw system call: the runtime's own files are not
/// the program's descriptor events. Call inside `descriptors::locked`.
pub(crate) fn open_raw(path: &[u8], flags: i32) -> i32 {
    debug_assert!(path.contains(&0), "NUL-terminated path");
    // SAFETY: `path` is NUL-terminated (checked above in debug builds, and
    // by every caller's construction).
    unsafe { open_raw_at(libc::AT_FDCWD, path.as_ptr().cast(), flags) }
}

/// [`open_raw`] of `path` relative to the directory `dir`.
///
/// # Safety
/// `path` is a NUL-terminated string.
pub(crate) unsafe fn open_raw_at(dir: i32, path: *const core::ffi::c_char, flags: i32) -> i32 {
    // SAFETY: the caller passes a NUL-terminated path; openat only reads it.
    unsafe { libc::syscall(libc::SYS_openat, dir, path, flags, 0o600) as i32 }
}

/// Closes one of the runtime's own descriptors (raw, like [`open_raw`]).
pub(crate) fn close_raw(fd: i32) {
    if fd >= 0 {
        // SAFETY: closing a descriptor the runtime owns.
        unsafe { libc::syscall(libc::SYS_close, fd) };
    }
}

/// The size of the file open on `fd`, if fstat works.
pub(crate) fn file_size(fd: i32) -> Option<u64> {
    // SAFETY: fstat writes the zeroed struct it is given.
    unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        (libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) == 0)
            .then_some(st.st_size as u64)
    }
}

/// Reads from `fd` into `buf` (raw): bytes read, 0 at the end, negative on
/// error.
pub(crate) fn read_raw(fd: i32, buf: &mut [u8]) -> isize {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) as isize }
}

/// The calling thread's kernel id.
pub(crate) fn gettid_raw() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Confines the calling thread (and the threads it creates from now on)
/// to CPU `cpu`. A CPU the kernel refuses (outside the cgroup) leaves the
/// mask as it was: replay is slower or faster for it, never wrong.
pub(crate) fn run_on_cpu(cpu: u32) {
    let mut mask = [0u64; 16];
    let Some(word) = mask.get_mut(cpu as usize / 64) else {
        return;
    };
    *word = 1 << (cpu % 64);
    // SAFETY: the kernel reads `size_of_val(&mask)` bytes of our buffer; a
    // raw call, so that the program's view of its mask (the interposed
    // wrappers serve the recorded one) is not involved.
    unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            0,
            core::mem::size_of_val(&mask),
            mask.as_ptr(),
        );
    }
}

/// CPUs in the calling thread's affinity mask (0 if the call fails).
pub(crate) fn cpus_in_affinity() -> u32 {
    let mut mask = [0u64; 16];
    // SAFETY: the kernel writes at most `size_of_val(&mask)` bytes into our
    // buffer and returns how many; a raw call (no allocation, no wrapper).
    let written = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            0,
            core::mem::size_of_val(&mask),
            mask.as_mut_ptr(),
        )
    };
    if written <= 0 {
        return 0;
    }
    let words = (written as usize / 8).min(mask.len());
    mask[..words].iter().map(|w| w.count_ones()).sum()
}

pub(crate) fn getpid_raw() -> u32 {
    // SAFETY: getpid has no arguments and cannot fail; the raw syscall avoids
    // our getpid interposer.
    unsafe { libc::syscall(libc::SYS_getpid) as u32 }
}

/// Whether kernel thread `tid` of this process exists (signal 0 only
/// checks).
pub(crate) fn thread_exists(tid: u32) -> bool {
    // SAFETY: signal 0 sends nothing; a raw call, out of the program's way.
    unsafe { libc::syscall(libc::SYS_tgkill, getpid_raw(), tid, 0) == 0 }
}

/// Stops the calling thread for good (the process ends elsewhere).
pub(crate) fn wait_forever() -> ! {
    static NEVER: AtomicU32 = AtomicU32::new(0);
    loop {
        futex_wait(&NEVER, 0, u64::MAX / 2);
    }
}

/// mmap as a raw system call: the runtime's own mappings never go through
/// its interposed `mmap`, which makes program mappings events.
pub(crate) fn mmap_raw(
    addr: usize,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    offset: i64,
) -> *mut core::ffi::c_void {
    // SAFETY: the kernel checks every argument; an error comes back as a
    // negative value, which is MAP_FAILED (-1) or another small negative.
    let r = unsafe {
        kernel(
            libc::SYS_mmap,
            [
                addr as i64,
                len as i64,
                prot.into(),
                flags.into(),
                fd.into(),
                offset,
            ],
        )
    };
    if (-4095..0).contains(&r) {
        set_errno(-r as i32);
        libc::MAP_FAILED
    } else {
        r as *mut core::ffi::c_void
    }
}

/// System call `number` with `args` by the `syscall` instruction: the
/// kernel's result (-errno on failure), `errno` untouched. No call, no
/// stack: a new thread maps its runtime stack with these while still on the
/// program's stack, where anything written stays for the program to find
/// (`tests/c/replay_stale_stack.c`).
///
/// # Safety
/// As the system call's: the caller vouches for its arguments.
pub(crate) unsafe fn kernel(number: i64, args: [i64; 6]) -> i64 {
    let result: i64;
    // SAFETY: the caller's system call; the kernel clobbers only rcx and
    // r11 besides rax, and uses no user stack.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") number => result,
            in("rdi") args[0],
            in("rsi") args[1],
            in("rdx") args[2],
            in("r10") args[3],
            in("r8") args[4],
            in("r9") args[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    result
}

/// mprotect of the runtime's own mapping, as a raw system call.
pub(crate) fn mprotect_raw(addr: usize, len: usize, prot: i32) {
    // SAFETY: changes the protection of a range the runtime mapped itself.
    unsafe {
        kernel(
            libc::SYS_mprotect,
            [addr as i64, len as i64, prot.into(), 0, 0, 0],
        )
    };
}

/// madvise of the runtime's own mapping, as a raw system call.
pub(crate) fn madvise_raw(addr: usize, len: usize, advice: i32) {
    // SAFETY: advice on a range the runtime mapped itself.
    unsafe {
        kernel(
            libc::SYS_madvise,
            [addr as i64, len as i64, advice.into(), 0, 0, 0],
        )
    };
}

/// munmap as a raw system call (see [`mmap_raw`]).
pub(crate) fn munmap_raw(addr: *mut core::ffi::c_void, len: usize) {
    // SAFETY: unmapping a range the runtime mapped itself.
    unsafe { kernel(libc::SYS_munmap, [addr as i64, len as i64, 0, 0, 0, 0]) };
}
