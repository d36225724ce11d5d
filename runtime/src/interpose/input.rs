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

/// Where a read puts its bytes: one buffer, or the vector of a `readv` or
/// `recvmsg`.
#[derive(Clone, Copy)]
enum Buffers {
    One(*mut u8, usize),
    Vector(*const libc::iovec, usize),
}

impl Buffers {
    fn one(buf: *mut c_void, n: size_t) -> Buffers {
        Buffers::One(buf.cast(), n)
    }

    fn parts(&self) -> &[libc::iovec] {
        match *self {
            Buffers::One(..) => &[],
            Buffers::Vector(v, count) if v.is_null() || count == 0 => &[],
            // SAFETY: the program's vector of `count` buffers, which lives
            // for the whole call.
            Buffers::Vector(v, count) => unsafe { core::slice::from_raw_parts(v, count) },
        }
    }

    fn capacity(&self) -> usize {
        match *self {
            Buffers::One(_, n) => n,
            Buffers::Vector(..) => self
                .parts()
                .iter()
                .fold(0usize, |sum, part| sum.saturating_add(part.iov_len)),
        }
    }

    /// Calls `f` on the first `n` bytes, buffer by buffer, while it returns
    /// true; whether it always did.
    fn each(&self, n: usize, mut f: impl FnMut(&mut [u8]) -> bool) -> bool {
        let one;
        let parts = match *self {
            Buffers::One(p, len) => {
                one = [libc::iovec {
                    iov_base: p.cast(),
                    iov_len: len,
                }];
                &one[..]
            }
            Buffers::Vector(..) => self.parts(),
        };
        let mut left = n;
        for part in parts {
            let take = part.iov_len.min(left);
            if take == 0 {
                continue;
            }
            // SAFETY: the program gave `iov_len >= take` writable bytes at
            // `iov_base` for this call.
            let bytes =
                unsafe { core::slice::from_raw_parts_mut(part.iov_base.cast::<u8>(), take) };
            if !f(bytes) {
                return false;
            }
            left -= take;
        }
        true
    }
}

/// Runs `op`, a read from `fd` into `bufs`.
fn read_call(fd: c_int, bufs: Buffers, site: u64, op: impl FnOnce() -> ssize_t) -> ssize_t {
    if !crate::input::is_recorded_input(fd) {
        return events::sleeping_call(op);
    }
    let source = if crate::input::is_internal(fd) {
        Source::OwnPipe(fd)
    } else {
        Source::Outside
    };
    input_call(pseudo::fd(fd as u32), bufs, site, source, op)
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
    bufs: Buffers,
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
                THREAD.with(|t| {
                    if t.is_tracked() {
                        bufs.each(r as usize, |bytes| {
                            t.input.save(t.id.get(), bytes);
                            true
                        });
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
        |recorded| Replayed::Return(replay_input(recorded, addr, bufs, site, source)),
    );
    sys::set_errno(errno);
    r
}

/// Replay: gives the program the recorded input (`recorded`: the count or
/// -errno); a trace without those bytes, or a pipe of the program's that
/// now holds others, is a divergence.
fn replay_input(recorded: u64, addr: u64, bufs: Buffers, site: u64, source: Source) -> Outcome {
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
    let capacity = bufs.capacity();
    if count > capacity {
        fail(capacity as u64);
    }
    let served = THREAD.with(|t| match source {
        Source::Outside => bufs.each(count, |dst| t.input.load(t.id.get(), dst)),
        Source::OwnPipe(fd) => bufs.each(count, |dst| {
            read_exactly(fd, dst) == dst.len() && t.input.matches(t.id.get(), dst)
        }),
    });
    if !served {
        fail(u64::MAX);
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
    read_at(fd, buf, n, site)
}

/// `read(fd, buf, n)` from `site`: the program's, or stdio's filling a
/// stream from outside (`interpose::streams`).
pub(super) fn read_at(fd: c_int, buf: *mut c_void, n: size_t, site: u64) -> ssize_t {
    // SAFETY: forwarding.
    read_call(fd, Buffers::one(buf, n), site, || unsafe {
        real::read(fd, buf, n)
    })
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
    read_call(fd, Buffers::one(buf, n), site, || unsafe {
        real::recv(fd, buf, n, flags)
    })
}
with_site!(recv => recv_impl, "r8");

crate::own_stack::switching_entry!(recvfrom => recvfrom_impl);

/// Six arguments leave no register for the call site: logged without one.
extern "C" fn recvfrom_impl(
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
    read_call(fd, Buffers::one(buf, n), 0, || unsafe {
        real::recvfrom(fd, buf, n, flags, from, len)
    })
}

/// `n` random bytes into `buf` from outside the program (`fill` makes the
/// real call and returns how many it gave, or -1): recorded as input, the
/// recorded ones at replay.
fn random_bytes(buf: *mut c_void, n: size_t, site: u64, fill: impl FnOnce() -> ssize_t) -> ssize_t {
    if !mode::active() {
        return fill();
    }
    input_call(
        pseudo::RANDOM,
        Buffers::one(buf, n),
        site,
        Source::Outside,
        fill,
    )
}

pub(crate) extern "C" fn getrandom_impl(
    buf: *mut c_void,
    n: size_t,
    flags: c_uint,
    site: u64,
) -> ssize_t {
    // SAFETY: forwarding.
    random_bytes(buf, n, site, || unsafe { real::getrandom(buf, n, flags) })
}
with_site!(getrandom => getrandom_impl, "rcx");

/// `getentropy` (at most 256 bytes, 0 or -1): glibc asks the kernel inside
/// libc, so its bytes are recorded as `getrandom`'s.
extern "C" fn getentropy_impl(buf: *mut c_void, n: size_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    let call = || unsafe { real::getentropy(buf, n) };
    if n == 0 || n > 256 {
        // (Nothing read, or EINVAL: the same in every run.)
        return call();
    }
    let r = random_bytes(buf, n, site, || if call() == 0 { n as ssize_t } else { -1 });
    if r < 0 { -1 } else { 0 }
}
with_site!(getentropy => getentropy_impl, "rdx");

/// `arc4random_buf`: `n` random bytes, generated inside libc (glibc 2.36:
/// from the kernel's `getrandom`, not seen), recorded as input.
extern "C" fn arc4random_buf_impl(buf: *mut c_void, n: size_t, site: u64) {
    random_bytes(buf, n, site, || {
        // SAFETY: forwarding.
        unsafe { real::arc4random_buf(buf, n) };
        n as ssize_t
    });
}
with_site!(arc4random_buf => arc4random_buf_impl, "rdx");

extern "C" fn readv_impl(fd: c_int, iov: *const libc::iovec, count: c_int, site: u64) -> ssize_t {
    let bufs = Buffers::Vector(iov, usize::try_from(count).unwrap_or(0));
    // SAFETY: forwarding.
    read_call(fd, bufs, site, || unsafe { real::readv(fd, iov, count) })
}
with_site!(readv => readv_impl, "rcx");

/// `recvmsg`: the data bytes are input like `recv`'s. Served from the
/// trace at replay, the message has no control data (descriptors or
/// credentials from another process cannot be replayed) and its sender
/// address is whatever the program left there.
extern "C" fn recvmsg_impl(fd: c_int, msg: *mut libc::msghdr, flags: c_int, site: u64) -> ssize_t {
    if msg.is_null() {
        // SAFETY: forwarding (the kernel reports the bad address).
        return unsafe { real::recvmsg(fd, msg, flags) };
    }
    // SAFETY: the program's message header, valid for the call.
    let (iov, count) = unsafe { ((*msg).msg_iov, (*msg).msg_iovlen) };
    let served = mode::current() == mode::Mode::Replay
        && crate::input::is_recorded_input(fd)
        && !crate::input::is_internal(fd);
    // SAFETY: forwarding.
    let r = read_call(fd, Buffers::Vector(iov, count), site, || unsafe {
        real::recvmsg(fd, msg, flags)
    });
    if served && r >= 0 {
        // SAFETY: as above.
        unsafe {
            (*msg).msg_controllen = 0;
            (*msg).msg_flags = 0;
        }
    }
    r
}
with_site!(recvmsg => recvmsg_impl, "rcx");

/// `sched_getaffinity` and `pthread_getaffinity_np`: the CPUs a thread may
/// run on come from outside the program, and replay may run it on others
/// (`replay --one-cpu`), while the program sizes its work by them (libgomp
/// its teams, `std::thread::available_parallelism`). The mask is input:
/// saved in record, served in replay. `op` makes the real call and returns
/// 0 or an error number; so does this.
fn affinity_call(
    mask: *mut libc::cpu_set_t,
    size: size_t,
    site: u64,
    op: impl FnOnce() -> c_int,
) -> c_int {
    if !mode::active() || mask.is_null() {
        return op();
    }
    let bufs = Buffers::one(mask.cast(), size);
    let r = input_call(pseudo::CPUS, bufs, site, Source::Outside, || match op() {
        0 => size as ssize_t,
        error => {
            sys::set_errno(error);
            -1
        }
    });
    if r >= 0 { 0 } else { sys::errno() }
}

extern "C" fn sched_getaffinity_impl(
    pid: libc::pid_t,
    size: size_t,
    mask: *mut libc::cpu_set_t,
    site: u64,
) -> c_int {
    let r = affinity_call(mask, size, site, || {
        // SAFETY: forwarding.
        match unsafe { real::sched_getaffinity(pid, size, mask) } {
            0 => 0,
            _ => sys::errno(),
        }
    });
    if r == 0 {
        0
    } else {
        sys::set_errno(r);
        -1
    }
}
with_site!(sched_getaffinity => sched_getaffinity_impl, "rcx");

extern "C" fn pthread_getaffinity_np_impl(
    thread: libc::pthread_t,
    size: size_t,
    mask: *mut libc::cpu_set_t,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    affinity_call(mask, size, site, || unsafe {
        real::pthread_getaffinity_np(thread, size, mask)
    })
}
with_site!(pthread_getaffinity_np => pthread_getaffinity_np_impl, "rcx");

/// `sched_getcpu`: where the thread runs now, a value from outside.
extern "C" fn sched_getcpu_impl(site: u64) -> c_int {
    // SAFETY: forwarding.
    events::log_outside_value(site, || unsafe { real::sched_getcpu() } as u32 as u64) as u32
        as c_int
}
with_site!(sched_getcpu => sched_getcpu_impl, "rdi");
