//! stdio streams whose bytes come from outside the program. stdio reads
//! inside libc (glibc's internal `__read`; the `getc` macros read the
//! buffer directly), where the interposed `read` never sees it, so a
//! stream that `fopen`, `fdopen` or `popen` opens on a pipe, FIFO, socket
//! or character device (not a pipe of the program's own, not standard
//! input, which the supervisor feeds) reaches the program as an
//! `fopencookie` stream over the real one. stdio fills its buffer through
//! the cookie's read, which is the runtime's `read` (an `input` event: the
//! bytes saved at record, served at replay: `interpose::input`). Both
//! modes wrap the same streams, so the wrapper's allocation is an event
//! like any other; it comes after the opening call's event, not nested in
//! it (replay waits for a descriptor event's predecessors before the real
//! call, and an allocation after the open inside it could depend on
//! another thread's event that depends on the call's first allocation).
//!
//! `fileno` on a wrapper gives the real stream's descriptor; closing the
//! wrapper closes the real stream. popen's command runs again at replay
//! with its output unread; `pclose` then stops it, so the status it
//! returns is recorded and served.
//!
//! Limit: two threads reading one such stream at once take the stream's
//! lock (inside libc, not an event) in any order at replay; if it is not
//! the recorded one, replay reports the waits (a stall), it does not pass.

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use libc::{FILE, size_t, ssize_t};

use crate::site::with_site;
use crate::{events, mode, real};

/// glibc's `cookie_io_functions_t`.
#[repr(C)]
struct CookieFunctions {
    read: Option<extern "C" fn(*mut c_void, *mut c_char, size_t) -> ssize_t>,
    write: Option<extern "C" fn(*mut c_void, *const c_char, size_t) -> ssize_t>,
    seek: Option<extern "C" fn(*mut c_void, *mut i64, c_int) -> c_int>,
    close: Option<extern "C" fn(*mut c_void) -> c_int>,
}

unsafe extern "C" {
    fn fopencookie(
        cookie: *mut c_void,
        mode: *const c_char,
        functions: CookieFunctions,
    ) -> *mut FILE;
}

/// Streams from outside open at once that can be wrapped; later ones are
/// read live (with a warning).
const SLOTS: usize = 64;

/// A wrapped stream: the cookie `fopencookie` hands back to its functions.
struct Slot {
    /// The stream the program holds (0: free slot).
    wrapper: AtomicUsize,
    /// The real stream under it (0: free slot).
    real: AtomicUsize,
    /// The call site that opened it: its reads' site.
    site: AtomicU64,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        wrapper: AtomicUsize::new(0),
        real: AtomicUsize::new(0),
        site: AtomicU64::new(0),
    }
}; SLOTS];

/// Slots in use: `fileno` skips the search while none is.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Whether a stream opened with `mode` is read from.
fn reads(mode: *const c_char) -> bool {
    if mode.is_null() {
        return false;
    }
    // SAFETY: the program's NUL-terminated mode string.
    let mode = unsafe { core::ffi::CStr::from_ptr(mode) }.to_bytes();
    mode.first() == Some(&b'r') || mode.contains(&b'+')
}

/// `stream`, just opened with `mode` at `site`, or its wrapper if its
/// bytes come from outside (see the module doc).
pub(super) fn wrap_if_outside(stream: *mut FILE, mode: *const c_char, site: u64) -> *mut FILE {
    if stream.is_null() || !mode::active() || !reads(mode) {
        return stream;
    }
    // SAFETY: a stream the real call just opened.
    let fd = unsafe { real::fileno(stream) };
    if fd <= 0 || !crate::input::is_recorded_input(fd) || crate::input::is_internal(fd) {
        return stream;
    }
    let Some(slot) = TABLE.iter().find(|s| {
        s.real
            .compare_exchange(0, stream as usize, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) else {
        crate::sys::warn(&[
            b"more than 64 streams from outside open at once: this one is read live",
        ]);
        return stream;
    };
    slot.site.store(site, Ordering::Relaxed);
    let functions = CookieFunctions {
        read: Some(cookie_read),
        write: Some(cookie_write),
        seek: None,
        close: Some(cookie_close),
    };
    let cookie = (slot as *const Slot).cast_mut().cast::<c_void>();
    // SAFETY: `cookie` is a static slot, valid for as long as the stream;
    // the functions match glibc's declarations.
    let wrapper = unsafe { fopencookie(cookie, mode, functions) };
    if wrapper.is_null() {
        slot.real.store(0, Ordering::Release);
        return stream;
    }
    slot.wrapper.store(wrapper as usize, Ordering::Release);
    LIVE.fetch_add(1, Ordering::AcqRel);
    wrapper
}

/// The slot a cookie function was given.
fn slot_of(cookie: *mut c_void) -> &'static Slot {
    // SAFETY: cookies are only ever addresses of TABLE's slots.
    unsafe { &*cookie.cast::<Slot>() }
}

/// The descriptor under a slot's stream.
fn descriptor(slot: &Slot) -> c_int {
    // SAFETY: the real stream stays open until the cookie's close.
    unsafe { real::fileno(slot.real.load(Ordering::Acquire) as *mut FILE) }
}

extern "C" fn cookie_read(cookie: *mut c_void, buf: *mut c_char, n: size_t) -> ssize_t {
    let slot = slot_of(cookie);
    let site = slot.site.load(Ordering::Relaxed);
    super::input::read_at(descriptor(slot), buf.cast(), n, site)
}

/// Writes of a read-write stream (a socket): the stdio call that flushes
/// is the output event.
extern "C" fn cookie_write(cookie: *mut c_void, buf: *const c_char, n: size_t) -> ssize_t {
    // SAFETY: stdio passes `n` readable bytes.
    unsafe { real::write(descriptor(slot_of(cookie)), buf.cast(), n) }
}

extern "C" fn cookie_close(cookie: *mut c_void) -> c_int {
    let slot = slot_of(cookie);
    let stream = slot.real.load(Ordering::Acquire) as *mut FILE;
    // SAFETY: the real stream, closed once, with its wrapper. For a popen
    // stream glibc's fclose is its pclose (it waits for the command).
    let result = unsafe { real::fclose(stream) };
    slot.wrapper.store(0, Ordering::Release);
    slot.real.store(0, Ordering::Release);
    LIVE.fetch_sub(1, Ordering::AcqRel);
    result
}

/// The real stream under `f` if it is a wrapper, else `f`.
fn unwrapped(f: *mut FILE) -> *mut FILE {
    if LIVE.load(Ordering::Acquire) == 0 || f.is_null() {
        return f;
    }
    TABLE
        .iter()
        .find(|s| s.wrapper.load(Ordering::Acquire) == f as usize)
        .map_or(f, |s| s.real.load(Ordering::Acquire) as *mut FILE)
}

extern "C" fn fileno_impl(f: *mut FILE, _site: u64) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::fileno(unwrapped(f)) }
}
with_site!(fileno => fileno_impl, "rsi");

extern "C" fn fileno_unlocked_impl(f: *mut FILE, _site: u64) -> c_int {
    // SAFETY: forwarding.
    unsafe { real::fileno_unlocked(unwrapped(f)) }
}
with_site!(fileno_unlocked => fileno_unlocked_impl, "rsi");

/// fdopen on a descriptor from outside (an accepted socket) wraps it.
extern "C" fn fdopen_impl(fd: c_int, mode: *const c_char, site: u64) -> *mut FILE {
    // SAFETY: forwarding.
    let stream = unsafe { real::fdopen(fd, mode) };
    wrap_if_outside(stream, mode, site)
}
with_site!(fdopen => fdopen_impl, "rdx");

/// popen gives out descriptors (its pipe) like fopen, and starts a command.
extern "C" fn popen_impl(command: *const c_char, mode: *const c_char, site: u64) -> *mut FILE {
    let stream = super::fd::fopen_call(core::ptr::null(), mode, site, |_| {
        // SAFETY: forwarding.
        super::process::starting_command(|| unsafe { real::popen(command, mode) })
    });
    wrap_if_outside(stream, mode, site)
}
with_site!(popen => popen_impl, "rdx");

/// pclose closes a descriptor (an event, as fclose) and returns the
/// command's status, a value from outside (see the module doc).
extern "C" fn pclose_impl(f: *mut FILE, site: u64) -> c_int {
    let fd = fileno_impl(f, site);
    // SAFETY: forwarding.
    let status = super::fd::closing_stream(fd, site, || unsafe { real::pclose(f) }, false);
    let errno = crate::sys::errno();
    let status = events::log_outside_value(site, || status as u32 as u64) as u32 as c_int;
    crate::sys::set_errno(errno);
    status
}
with_site!(pclose => pclose_impl, "rsi");
