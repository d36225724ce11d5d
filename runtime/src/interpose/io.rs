//! Output: `write` and the stdio family are events on a pseudo-address per
//! file descriptor, performed while its stripe is held, so lines printed by
//! several threads come out in the recorded order.
//!
//! stdio calls take the FILE lock first (after releasing the thread's
//! stripes), then the fd stripe: a program that holds the FILE lock itself
//! (flockfile) must never wait for a stripe while we wait for its lock.
//! stdio may allocate a buffer on first use; `nest_depth` makes that
//! allocator event nest inside the output instead of releasing its stripe.
//!
//! printf and friends are variadic, which stable Rust cannot define: a naked
//! stub builds the `va_list` the x86-64 System V ABI describes (saved
//! argument registers + overflow area) and calls the `v*printf` form.

use core::ffi::{c_char, c_int, c_void};

use libc::{FILE, size_t, ssize_t};
use rr_lite_trace::{EventKind, pseudo};

use crate::events;
use crate::real;
use crate::site::with_site;

unsafe extern "C" {
    static mut stdout: *mut FILE;
    static mut stderr: *mut FILE;
}

fn stdout_file() -> *mut FILE {
    // SAFETY: reading glibc's stdout pointer, initialised before main.
    unsafe { stdout }
}

fn stderr_file() -> *mut FILE {
    // SAFETY: as for stdout.
    unsafe { stderr }
}

/// Runs an output operation on `fd` as an event on its pseudo-address.
fn fd_output<R>(fd: c_int, len: u64, site: u64, op: impl FnOnce() -> R) -> R {
    if fd < 0 {
        return op();
    }
    events::log_output_before_call(pseudo::fd(fd as u32), len, site, op)
}

/// Runs a stdio operation on `f` as an output event on its descriptor,
/// under the FILE lock (taken in the recorded order: in replay, after the
/// output's recorded predecessors).
fn stdio_output<R>(f: *mut FILE, len: u64, site: u64, op: impl FnOnce() -> R) -> R {
    if f.is_null() || !crate::mode::active() {
        return op();
    }
    // SAFETY: `f` is the caller's live FILE; the lock is recursive, so the
    // real call taking it again is fine.
    events::before_next_event(|| unsafe { real::flockfile(f) });
    // SAFETY: as above.
    let fd = unsafe { libc::fileno(f) };
    let r = fd_output(fd, len, site, op);
    // SAFETY: releases the lock taken above.
    unsafe { real::funlockfile(f) };
    r
}

/// The pseudo-address of a stream's descriptor: a program's own FILE lock
/// calls are events there, ordered with every output on that descriptor
/// (the lock decides which output comes next).
fn stream_addr(f: *mut FILE) -> u64 {
    // SAFETY: `f` is the caller's live FILE.
    let fd = unsafe { libc::fileno(f) };
    pseudo::fd(fd.max(0) as u32)
}

/// A program's own flockfile: an event, so that replay takes the lock in
/// the recorded order.
extern "C" fn flockfile_impl(f: *mut FILE, site: u64) {
    events::log_after_blocking_call(
        EventKind::MutexLock,
        stream_addr(f),
        site,
        // SAFETY: forwarding.
        || unsafe { real::flockfile(f) },
        |_| Some(0),
        |_| events::Replayed::CallReal,
    )
}
with_site!(flockfile => flockfile_impl, "rsi");

extern "C" fn ftrylockfile_impl(f: *mut FILE, site: u64) -> c_int {
    // SAFETY: forwarding.
    let op = || unsafe { real::ftrylockfile(f) };
    events::log_after_call_or_recorded(
        EventKind::MutexTryLock,
        stream_addr(f),
        0,
        site,
        op,
        |&r| r as u64,
        |recorded| {
            if recorded == 0 {
                events::Replayed::CallReal
            } else {
                events::Replayed::Return(recorded as c_int)
            }
        },
    )
}
with_site!(ftrylockfile => ftrylockfile_impl, "rsi");

extern "C" fn funlockfile_impl(f: *mut FILE, site: u64) {
    // SAFETY: forwarding.
    events::log_after_call(
        EventKind::MutexUnlock,
        stream_addr(f),
        0,
        site,
        || unsafe { real::funlockfile(f) },
        |_| 0,
    )
}
with_site!(funlockfile => funlockfile_impl, "rsi");

/// write() and writev() are logged after the real call (see
/// `events::holding`); they allocate nothing, so nothing nests in them.
extern "C" fn write_impl(fd: c_int, buf: *const c_void, n: size_t, site: u64) -> ssize_t {
    // SAFETY: forwarding.
    let op = || unsafe { real::write(fd, buf, n) };
    if fd < 0 {
        return op();
    }
    events::log_after_nested_call(
        EventKind::Output,
        pseudo::fd(fd as u32),
        n as u64,
        site,
        op,
        |_| 0,
    )
}
with_site!(write => write_impl, "rcx");

extern "C" fn writev_impl(fd: c_int, iov: *const libc::iovec, n: c_int, site: u64) -> ssize_t {
    // SAFETY: forwarding.
    let op = || unsafe { real::writev(fd, iov, n) };
    if fd < 0 {
        return op();
    }
    events::log_after_nested_call(EventKind::Output, pseudo::fd(fd as u32), 0, site, op, |_| 0)
}
with_site!(writev => writev_impl, "rcx");

extern "C" fn puts_impl(s: *const c_char, site: u64) -> c_int {
    // SAFETY: forwarding.
    stdio_output(stdout_file(), 0, site, || unsafe { real::puts(s) })
}
with_site!(puts => puts_impl, "rsi");

extern "C" fn fputs_impl(s: *const c_char, f: *mut FILE, site: u64) -> c_int {
    // SAFETY: forwarding.
    stdio_output(f, 0, site, || unsafe { real::fputs(s, f) })
}
with_site!(fputs => fputs_impl, "rdx");

extern "C" fn putchar_impl(c: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    stdio_output(stdout_file(), 1, site, || unsafe { real::putchar(c) })
}
with_site!(putchar => putchar_impl, "rsi");

extern "C" fn fputc_impl(c: c_int, f: *mut FILE, site: u64) -> c_int {
    // SAFETY: forwarding.
    stdio_output(f, 1, site, || unsafe { real::fputc(c, f) })
}
with_site!(fputc => fputc_impl, "rdx");

extern "C" fn putc_impl(c: c_int, f: *mut FILE, site: u64) -> c_int {
    // SAFETY: forwarding.
    stdio_output(f, 1, site, || unsafe { real::putc(c, f) })
}
with_site!(putc => putc_impl, "rdx");
with_site!(_IO_putc => putc_impl, "rdx");

extern "C" fn fwrite_impl(
    p: *const c_void,
    size: size_t,
    n: size_t,
    f: *mut FILE,
    site: u64,
) -> size_t {
    // SAFETY: forwarding.
    stdio_output(f, (size * n) as u64, site, || unsafe {
        real::fwrite(p, size, n, f)
    })
}
with_site!(fwrite => fwrite_impl, "r8");

extern "C" fn fflush_impl(f: *mut FILE, site: u64) -> c_int {
    // SAFETY: forwarding; fflush(NULL) flushes every stream and is not
    // attributed to one descriptor.
    stdio_output(f, 0, site, || unsafe { real::fflush(f) })
}
with_site!(fflush => fflush_impl, "rsi");

extern "C" fn perror_impl(s: *const c_char, site: u64) {
    // SAFETY: forwarding.
    stdio_output(stderr_file(), 0, site, || unsafe { real::perror(s) })
}
with_site!(perror => perror_impl, "rsi");

extern "C" fn vprintf_impl(fmt: *const c_char, ap: *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding; `ap` is the caller's va_list.
    stdio_output(stdout_file(), 0, site, || unsafe { real::vprintf(fmt, ap) })
}
with_site!(vprintf => vprintf_impl, "rdx");

extern "C" fn vfprintf_impl(f: *mut FILE, fmt: *const c_char, ap: *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding.
    stdio_output(f, 0, site, || unsafe { real::vfprintf(f, fmt, ap) })
}
with_site!(vfprintf => vfprintf_impl, "rcx");

extern "C" fn vdprintf_impl(fd: c_int, fmt: *const c_char, ap: *mut c_void, site: u64) -> c_int {
    // SAFETY: forwarding.
    fd_output(fd, 0, site, || unsafe { real::vdprintf(fd, fmt, ap) })
}
with_site!(vdprintf => vdprintf_impl, "rcx");

extern "C" fn vprintf_chk_impl(
    flag: c_int,
    fmt: *const c_char,
    ap: *mut c_void,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    stdio_output(stdout_file(), 0, site, || unsafe {
        real::__vprintf_chk(flag, fmt, ap)
    })
}
with_site!(__vprintf_chk => vprintf_chk_impl, "rcx");

extern "C" fn vfprintf_chk_impl(
    f: *mut FILE,
    flag: c_int,
    fmt: *const c_char,
    ap: *mut c_void,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    stdio_output(f, 0, site, || unsafe {
        real::__vfprintf_chk(f, flag, fmt, ap)
    })
}
with_site!(__vfprintf_chk => vfprintf_chk_impl, "r8");

/// Exports a variadic `$name` whose first `$named` arguments are named: the
/// stub saves the six argument registers and, if `al` says vector registers
/// were used, xmm0-7, builds a va_list over them and the caller's stack
/// arguments, and calls `$imp(named..., va_list*, site)`, with the va_list
/// pointer in `$va` and the site in `$site`.
macro_rules! variadic {
    ($name:ident => $imp:path, named = $named:literal, va = $va:literal, site = $site:literal) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "push rbp",
                "mov rbp, rsp",
                "sub rsp, 208",
                "mov [rsp], rdi",
                "mov [rsp + 8], rsi",
                "mov [rsp + 16], rdx",
                "mov [rsp + 24], rcx",
                "mov [rsp + 32], r8",
                "mov [rsp + 40], r9",
                "test al, al",
                "je 2f",
                "movaps [rsp + 48], xmm0",
                "movaps [rsp + 64], xmm1",
                "movaps [rsp + 80], xmm2",
                "movaps [rsp + 96], xmm3",
                "movaps [rsp + 112], xmm4",
                "movaps [rsp + 128], xmm5",
                "movaps [rsp + 144], xmm6",
                "movaps [rsp + 160], xmm7",
                "2:",
                concat!("mov dword ptr [rsp + 176], ", $named, " * 8"),
                "mov dword ptr [rsp + 180], 48",
                "lea rax, [rbp + 16]",
                "mov [rsp + 184], rax",
                "mov [rsp + 192], rsp",
                concat!("lea ", $va, ", [rsp + 176]"),
                concat!("mov ", $site, ", [rbp + 8]"),
                "call {imp}",
                "leave",
                "ret",
                imp = sym $imp,
            )
        }
    };
}

variadic!(printf => vprintf_impl, named = 1, va = "rsi", site = "rdx");
variadic!(fprintf => vfprintf_impl, named = 2, va = "rdx", site = "rcx");
variadic!(dprintf => vdprintf_impl, named = 2, va = "rdx", site = "rcx");
variadic!(__printf_chk => vprintf_chk_impl, named = 2, va = "rdx", site = "rcx");
variadic!(__fprintf_chk => vfprintf_chk_impl, named = 3, va = "rcx", site = "r8");
