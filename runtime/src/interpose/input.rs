//! Reads that may return input from outside the program (see
//! `crate::input`): an `input` event whose payload is the count, with the
//! bytes saved in record and served (or, for the program's own pipes, read
//! for real and checked) in replay. Other reads (regular files, standard
//! input) only release the thread's stripes first: they may block.

use core::ffi::{c_int, c_uint, c_void};

use libc::{size_t, sockaddr, socklen_t, ssize_t};
use rr_lite_trace::state::Divergence;
use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Replayed};
use crate::replay::DivergenceDetail;
use crate::site::with_site;
use crate::thread::THREAD;
use crate::{mode, real, sys};

/// A read's result and the errno it left.
type Outcome = (ssize_t, c_int);

/// Runs `op`, a read of at most `n` bytes into `buf` from `fd`.
fn read_call(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    site: u64,
    op: impl FnOnce() -> ssize_t,
) -> ssize_t {
    if !crate::input::is_recorded_input(fd) {
        return events::sleeping_call(op);
    }
    let source = if crate::input::is_internal(fd) {
        Source::OwnPipe(fd)
    } else {
        Source::Outside
    };
    input_call(pseudo::fd(fd as u32), buf, n, site, source, op)
}

/// Where replay takes an input's bytes from.
#[derive(Clone, Copy)]
enum Source {
    /// The trace: the recorded bytes.
    Outside,
    /// A pipe or socket pair the program made: read for real, checked.
    OwnPipe(c_int),
}

fn input_call(
    addr: u64,
    buf: *mut c_void,
    n: size_t,
    site: u64,
    source: Source,
    op: impl FnOnce() -> ssize_t,
) -> ssize_t {
    let (r, errno) = events::log_after_blocking_call(
        EventKind::Input,
        addr,
        site,
        || {
            let r = op();
            let outcome = (r, sys::errno());
            if r > 0 && mode::current() == mode::Mode::Record {
                // SAFETY: the call just wrote `r` bytes at `buf`.
                let bytes = unsafe { core::slice::from_raw_parts(buf as *const u8, r as usize) };
                THREAD.with(|t| {
                    if t.is_tracked() {
                        t.input.save(t.id.get(), bytes);
                    }
                });
            }
            outcome
        },
        |&(r, errno)| {
            Some(if r >= 0 {
                r as u64
            } else {
                -i64::from(errno) as u64
            })
        },
        |recorded| Replayed::Return(replay_input(recorded, addr, buf, n, site, source)),
    );
    sys::set_errno(errno);
    r
}

/// Replay: gives the program the recorded input (`recorded`: the count or
/// -errno); a trace without those bytes, or a pipe of the program's that
/// now holds others, is a divergence.
fn replay_input(
    recorded: u64,
    addr: u64,
    buf: *mut c_void,
    n: size_t,
    site: u64,
    source: Source,
) -> Outcome {
    let count = recorded as i64;
    if count < 0 {
        return (-1, (-count) as c_int);
    }
    let fail = |actual: u64| -> ! {
        let detail = DivergenceDetail {
            expected_kind: EventKind::Input as u8,
            expected_addr: addr,
            actual_kind: EventKind::Input as u8,
            actual_addr: addr,
            site,
            expected_value: recorded,
            actual_value: actual,
            counted: false,
        };
        THREAD.with(|t| crate::replay::diverge(&t.replay, Divergence::Result, &detail))
    };
    let count = count as usize;
    if count > n {
        fail(n as u64);
    }
    // SAFETY: the program gave `n >= count` writable bytes at `buf`.
    let dst = unsafe { core::slice::from_raw_parts_mut(buf as *mut u8, count) };
    match source {
        Source::Outside => {
            if !THREAD.with(|t| t.input.load(t.id.get(), dst)) {
                fail(u64::MAX);
            }
        }
        Source::OwnPipe(fd) => {
            let got = read_exactly(fd, dst);
            if got != count || !THREAD.with(|t| t.input.matches(t.id.get(), dst)) {
                fail(got as u64);
            }
        }
    }
    (count as ssize_t, 0)
}

/// Reads `dst.len()` bytes from `fd` (a pipe of the program's, whose writer
/// replay runs too), or fewer at its end; returns how many.
fn read_exactly(fd: c_int, dst: &mut [u8]) -> usize {
    let mut done = 0;
    while done < dst.len() {
        let rest = &mut dst[done..];
        // SAFETY: the kernel writes at most `rest.len()` bytes there.
        let r = unsafe { real::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match r {
            r if r > 0 => done += r as usize,
            r if r < 0 && sys::errno() == libc::EINTR => {}
            _ => break,
        }
    }
    done
}

extern "C" fn read_impl(fd: c_int, buf: *mut c_void, n: size_t, site: u64) -> ssize_t {
    // SAFETY: forwarding.
    read_call(fd, buf, n, site, || unsafe { real::read(fd, buf, n) })
}
with_site!(read => read_impl, "rcx");

extern "C" fn recv_impl(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    site: u64,
) -> ssize_t {
    // SAFETY: forwarding.
    read_call(fd, buf, n, site, || unsafe {
        real::recv(fd, buf, n, flags)
    })
}
with_site!(recv => recv_impl, "r8");

/// Six arguments leave no register for the call site: logged without one.
#[unsafe(no_mangle)]
pub extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    from: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    // The sender's address is not recorded: it is whatever the real call
    // leaves (nothing, when replay serves the bytes).
    // SAFETY: forwarding.
    read_call(fd, buf, n, 0, || unsafe {
        real::recvfrom(fd, buf, n, flags, from, len)
    })
}

extern "C" fn getrandom_impl(buf: *mut c_void, n: size_t, flags: c_uint, site: u64) -> ssize_t {
    if !mode::active() {
        // SAFETY: forwarding.
        return unsafe { real::getrandom(buf, n, flags) };
    }
    // SAFETY: forwarding.
    input_call(pseudo::RANDOM, buf, n, site, Source::Outside, || unsafe {
        real::getrandom(buf, n, flags)
    })
}
with_site!(getrandom => getrandom_impl, "rcx");
