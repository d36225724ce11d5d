//! The descriptors a program starts with. The kernel gives out the lowest
//! free number, so one more or one fewer inherited from whatever started
//! the program (a shell's `3>file`, `/usr/bin/time -o`, a test harness,
//! gdbserver) moves every number the program's `open` returns. Record
//! writes the descriptors open at start-up, below [`SCANNED`], into the
//! trace's `descriptors` file (docs/FORMAT.md); replay makes the same ones
//! open before the program runs: `/dev/null` where one is missing, and one
//! the recording did not have closed. Without it such a replay reported
//! "the call returned 3 where the recording has 4" at the program's first
//! `open`, with no word of the cause.

use crate::sys;

/// Descriptors looked at (a leaked one is a low number; the runtime keeps
/// its own above `crate::descriptors`'s floor).
const SCANNED: usize = 256;

/// The trace file that lists them.
const FILE: &[u8] = b"descriptors";

/// Which of the descriptors below [`SCANNED`] are open now (one `poll`:
/// a closed one comes back `POLLNVAL`).
fn open_now() -> [bool; SCANNED] {
    let mut fds = [libc::pollfd {
        fd: 0,
        events: 0,
        revents: 0,
    }; SCANNED];
    for (n, p) in fds.iter_mut().enumerate() {
        p.fd = n as i32;
    }
    // SAFETY: `fds` is an array of SCANNED pollfd the kernel fills in.
    let ready = unsafe { libc::syscall(libc::SYS_poll, fds.as_mut_ptr(), SCANNED, 0) };
    let mut open = [false; SCANNED];
    if ready < 0 {
        // (Cannot tell: leave the program's descriptors as they are.)
        return open;
    }
    for (n, p) in fds.iter().enumerate() {
        open[n] = p.revents & libc::POLLNVAL == 0;
    }
    open
}

/// Record: writes the descriptors open at start-up into the trace
/// (`dir`), a decimal number a line. Call before the runtime opens
/// anything of its own.
pub(crate) fn note(dir: &[u8]) {
    let open = open_now();
    let mut text = [0u8; 4 * SCANNED];
    let mut len = 0;
    let mut digits = [0u8; 20];
    for fd in (0..SCANNED).filter(|&fd| open[fd]) {
        let number = sys::decimal(fd as u64, &mut digits);
        text[len..len + number.len()].copy_from_slice(number);
        text[len + number.len()] = b'\n';
        len += number.len() + 1;
    }
    let file = sys::create_in_dir(dir, FILE);
    if file >= 0 {
        sys::write_all(file, &text[..len]);
        sys::close_raw(file);
    }
}

/// Replay: makes the descriptors below [`SCANNED`] open as the trace
/// (`dir`) says they were at the recording's start-up; nothing if the
/// trace does not say (older traces). Call before the runtime opens
/// anything it keeps.
pub(crate) fn restore(dir: &[u8]) {
    let Some(recorded) = recorded(dir) else {
        return;
    };
    let open = open_now();
    for fd in 0..SCANNED {
        match (recorded[fd], open[fd]) {
            (true, false) => open_null_at(fd as i32),
            (false, true) => sys::close_raw(fd as i32),
            _ => {}
        }
    }
}

/// The descriptors the trace lists, or None if it has no such file.
fn recorded(dir: &[u8]) -> Option<[bool; SCANNED]> {
    let path = sys::join(dir, FILE)?;
    let fd = sys::open_raw(&path, libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 4 * SCANNED];
    let mut len = 0;
    while len < buf.len() {
        let n = sys::read_raw(fd, &mut buf[len..]);
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    sys::close_raw(fd);
    let mut open = [false; SCANNED];
    for line in buf[..len].split(|&b| b == b'\n') {
        let number = core::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse::<usize>().ok());
        if let Some(fd) = number.filter(|&fd| fd < SCANNED) {
            open[fd] = true;
        }
    }
    Some(open)
}

/// Opens `/dev/null` (read and write) as descriptor `fd`.
fn open_null_at(fd: i32) {
    let null = sys::open_raw(b"/dev/null\0", libc::O_RDWR);
    if null < 0 || null == fd {
        return;
    }
    // SAFETY: dup3 onto a free number, then the temporary closed.
    unsafe { libc::syscall(libc::SYS_dup3, null, fd, 0) };
    sys::close_raw(null);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_descriptors_are_seen_open_and_a_closed_one_closed() {
        let open = open_now();
        // (The test harness keeps its standard error open.)
        assert!(open[2]);
        let null = sys::open_raw(b"/dev/null\0", libc::O_RDONLY);
        assert!(null >= 0 && (null as usize) < SCANNED);
        assert!(open_now()[null as usize]);
        sys::close_raw(null);
        assert!(!open_now()[null as usize]);
    }
}
