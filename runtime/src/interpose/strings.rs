//! The C library's string and comparison functions (`strlen`, `strcmp`,
//! `memcmp`, `strcpy`, ...): each reads, and some write, memory another
//! thread may be writing, inside libc where no hook sees it, so each call
//! is an event of range reads and writes (`events::log_after_ranges`)
//! around the real call, made while their stripes are held. Found with
//! SQLite, whose threads compare and copy a shared header with `memcmp`
//! and `memcpy` (replays diverged or printed other results).
//!
//! The ranges are measured with the runtime's own byte loops (volatile
//! loads, which the compiler cannot turn back into calls of these very
//! functions); the runtime's own Rust code, which calls some of these
//! symbols too, goes straight to the real functions.

use core::ffi::{c_char, c_int, c_void};

use libc::size_t;

use crate::events::{self, CallRange};
use crate::real;
use crate::site::with_site;

/// The byte at `p + i`. Every pointer here comes from a C caller of these
/// functions, under their contract (a NUL-terminated string, or a buffer
/// of the count given): the loops read only the bytes it vouches for.
fn byte(p: *const c_char, i: usize) -> u8 {
    // SAFETY: a byte of the caller's string or buffer (see above).
    unsafe { p.add(i).cast::<u8>().read_volatile() }
}

/// Writes `b` at `p + i`, a byte of the caller's destination buffer.
fn put_byte(p: *mut c_char, i: usize, b: u8) {
    // SAFETY: within the destination the caller vouches for (see `byte`).
    unsafe { p.add(i).cast::<u8>().write_volatile(b) }
}

/// Length of the C string `s`, at most `max`.
fn length(s: *const c_char, max: usize) -> usize {
    let mut n = 0;
    while n < max && byte(s, n) != 0 {
        n += 1;
    }
    n
}

/// Bytes of a string read up to `max` bytes: through its NUL, or `max`.
fn through_nul(len: usize, max: usize) -> u64 {
    (len + 1).min(max) as u64
}

/// A call touching `ranges` (`measure`: their lengths), an event unless
/// it comes from the runtime's own code.
fn ranges_call<R>(
    site: u64,
    ranges: [CallRange; 2],
    measure: impl Fn() -> [u64; 2],
    op: impl FnOnce() -> R,
) -> R {
    if crate::own_code::contains(site) || !ranges.iter().any(|r| r.present()) {
        return op();
    }
    events::log_after_ranges(site, ranges, measure, op)
}

/// Whether a call reads the C string at `s` as an event: not in a
/// read-only segment (`crate::read_only`), where no thread can write.
fn writable_string(s: *const c_char) -> bool {
    !crate::read_only::holds_string(s)
}

/// Whether a call reads the `n` bytes at `p` as an event (see
/// [`writable_string`]).
fn writable_bytes(p: *const c_void, n: usize) -> bool {
    n > 0 && !crate::read_only::holds(p as usize, n)
}

/// A call reading the one range `[s, s + measure())`.
fn reading<R>(
    s: *const c_void,
    present: bool,
    site: u64,
    measure: impl Fn() -> u64,
    op: impl FnOnce() -> R,
) -> R {
    let ranges = [
        CallRange::read(s as u64, present),
        CallRange::read(0, false),
    ];
    ranges_call(site, ranges, || [measure(), 0], op)
}

/// A call reading two ranges.
fn reading_two<R>(
    (a, b): (*const c_void, *const c_void),
    (a_present, b_present): (bool, bool),
    site: u64,
    measure: impl Fn() -> [u64; 2],
    op: impl FnOnce() -> R,
) -> R {
    let ranges = [
        CallRange::read(a as u64, a_present),
        CallRange::read(b as u64, b_present),
    ];
    ranges_call(site, ranges, measure, op)
}

/// A call reading `[src, ..)` (if `read`) and writing `[dst, ..)`
/// (`measure`: both lengths).
fn copying<R>(
    (dst, src): (*mut c_char, *const c_char),
    read: bool,
    site: u64,
    measure: impl Fn() -> [u64; 2],
    op: impl FnOnce() -> R,
) -> R {
    let ranges = [
        CallRange::read(src as u64, read),
        CallRange::write(dst as u64, true),
    ];
    ranges_call(site, ranges, measure, op)
}

/// A call reading the whole C string at `s` (for `strchr`: the bytes it
/// reads up to a match depend on the contents, so all of them).
fn reading_string<R>(s: *const c_char, site: u64, op: impl FnOnce() -> R) -> R {
    let measure = || length(s, usize::MAX) as u64 + 1;
    reading(s.cast(), writable_string(s), site, measure, op)
}

extern "C" fn strlen_impl(s: *const c_char, site: u64) -> size_t {
    // SAFETY: forwarding.
    reading_string(s, site, || unsafe { real::strlen(s) })
}
with_site!(strlen => strlen_impl, "rsi");

extern "C" fn strnlen_impl(s: *const c_char, max: size_t, site: u64) -> size_t {
    let measure = || through_nul(length(s, max), max);
    // SAFETY: forwarding.
    reading(
        s.cast(),
        max > 0 && writable_string(s),
        site,
        measure,
        || unsafe { real::strnlen(s, max) },
    )
}
with_site!(strnlen => strnlen_impl, "rdx");

extern "C" fn strchr_impl(s: *const c_char, c: c_int, site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    reading_string(s, site, || unsafe { real::strchr(s, c) })
}
with_site!(strchr => strchr_impl, "rdx");

extern "C" fn strrchr_impl(s: *const c_char, c: c_int, site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    reading_string(s, site, || unsafe { real::strrchr(s, c) })
}
with_site!(strrchr => strrchr_impl, "rdx");

/// Index of the first `c` in the `n` bytes at `s`, or `n`.
fn find_byte(s: *const c_void, c: c_int, n: usize) -> usize {
    let mut i = 0;
    while i < n && byte(s.cast(), i) != c as u8 {
        i += 1;
    }
    i
}

extern "C" fn memchr_impl(s: *const c_void, c: c_int, n: size_t, site: u64) -> *mut c_void {
    // (Up to the match only: `n` may be larger than the buffer.)
    let measure = || (find_byte(s, c, n) + 1).min(n) as u64;
    // SAFETY: forwarding.
    reading(s, writable_bytes(s, n), site, measure, || unsafe {
        real::memchr(s, c, n)
    })
}
with_site!(memchr => memchr_impl, "rcx");

/// The bytes a comparison of `a` and `b` over at most `n` bytes reads,
/// stopping after a NUL if `strings`: through the first difference.
fn compared(a: *const c_char, b: *const c_char, n: usize, strings: bool) -> u64 {
    for i in 0..n {
        let x = byte(a, i);
        if x != byte(b, i) || (strings && x == 0) {
            return i as u64 + 1;
        }
    }
    n as u64
}

extern "C" fn memcmp_impl(a: *const c_void, b: *const c_void, n: size_t, site: u64) -> c_int {
    // (Both ranges whole: the caller vouches for `n` bytes of each.)
    // SAFETY: forwarding.
    reading_two(
        (a, b),
        (writable_bytes(a, n), writable_bytes(b, n)),
        site,
        || [n as u64; 2],
        || unsafe { real::memcmp(a, b, n) },
    )
}
with_site!(memcmp => memcmp_impl, "rcx");
with_site!(bcmp => memcmp_impl, "rcx");

extern "C" fn strcmp_impl(a: *const c_char, b: *const c_char, site: u64) -> c_int {
    let measure = || [compared(a, b, usize::MAX, true); 2];
    // SAFETY: forwarding.
    reading_two(
        (a.cast(), b.cast()),
        (writable_string(a), writable_string(b)),
        site,
        measure,
        || unsafe { real::strcmp(a, b) },
    )
}
with_site!(strcmp => strcmp_impl, "rdx");

extern "C" fn strncmp_impl(a: *const c_char, b: *const c_char, n: size_t, site: u64) -> c_int {
    let measure = || [compared(a, b, n, true); 2];
    // SAFETY: forwarding.
    reading_two(
        (a.cast(), b.cast()),
        (n > 0 && writable_string(a), n > 0 && writable_string(b)),
        site,
        measure,
        || unsafe { real::strncmp(a, b, n) },
    )
}
with_site!(strncmp => strncmp_impl, "rcx");

/// `strcpy` and `stpcpy`: the string at `src` read whole, as many bytes
/// written at `dst`.
fn copying_string<R>(dst: *mut c_char, src: *const c_char, site: u64, op: impl FnOnce() -> R) -> R {
    let measure = || [length(src, usize::MAX) as u64 + 1; 2];
    copying((dst, src), writable_string(src), site, measure, op)
}

extern "C" fn strcpy_impl(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    copying_string(dst, src, site, || unsafe { real::strcpy(dst, src) })
}
with_site!(strcpy => strcpy_impl, "rdx");

extern "C" fn stpcpy_impl(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    copying_string(dst, src, site, || unsafe { real::stpcpy(dst, src) })
}
with_site!(stpcpy => stpcpy_impl, "rdx");

extern "C" fn strncpy_impl(
    dst: *mut c_char,
    src: *const c_char,
    n: size_t,
    site: u64,
) -> *mut c_char {
    // (It writes all `n` bytes, zeros after the string.)
    let measure = || [through_nul(length(src, n), n), n as u64];
    if n == 0 {
        return dst;
    }
    // SAFETY: forwarding.
    copying((dst, src), writable_string(src), site, measure, || unsafe {
        real::strncpy(dst, src, n)
    })
}
with_site!(strncpy => strncpy_impl, "rcx");

/// The ranges `strcat` (`max` usize::MAX) and `strncat` touch: at most `max`
/// bytes of `src` read, and `dst`'s string with the appended bytes and NUL
/// written (the range starts at `dst`: it covers the read of `dst`'s own
/// string too).
fn appended(dst: *const c_char, src: *const c_char, max: usize) -> [u64; 2] {
    let (d, s) = (length(dst, usize::MAX), length(src, max));
    [through_nul(s, max), (d + s + 1) as u64]
}

extern "C" fn strcat_impl(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    let measure = || appended(dst, src, usize::MAX);
    // SAFETY: forwarding.
    copying((dst, src), writable_string(src), site, measure, || unsafe {
        real::strcat(dst, src)
    })
}
with_site!(strcat => strcat_impl, "rdx");

extern "C" fn strncat_impl(
    dst: *mut c_char,
    src: *const c_char,
    n: size_t,
    site: u64,
) -> *mut c_char {
    let measure = || appended(dst, src, n);
    // SAFETY: forwarding.
    copying(
        (dst, src),
        n > 0 && writable_string(src),
        site,
        measure,
        || unsafe { real::strncat(dst, src, n) },
    )
}
with_site!(strncat => strncat_impl, "rcx");

/// `strdup` and `strndup` (`max` usize::MAX for `strdup`): libc's own
/// copy inside them is not seen, so the runtime makes them of the program's
/// calls: the string's length (an event), the allocation (an event) and
/// the copy (an event), as libc does them, one after the other.
fn duplicate(s: *const c_char, max: usize, site: u64) -> *mut c_char {
    let len = if max == usize::MAX {
        strlen_impl(s, site)
    } else {
        strnlen_impl(s, max, site)
    };
    let copy = super::alloc::malloc_impl(len + 1, site).cast::<c_char>();
    if copy.is_null() {
        return copy;
    }
    if len > 0 {
        super::mem::memcpy_impl(copy.cast(), s.cast(), len, site);
    }
    // (The new block is the thread's alone until it hands it out.)
    put_byte(copy, len, 0);
    copy
}

extern "C" fn strdup_impl(s: *const c_char, site: u64) -> *mut c_char {
    duplicate(s, usize::MAX, site)
}
with_site!(strdup => strdup_impl, "rsi");
with_site!(__strdup => strdup_impl, "rsi");

extern "C" fn strndup_impl(s: *const c_char, n: size_t, site: u64) -> *mut c_char {
    duplicate(s, n, site)
}
with_site!(strndup => strndup_impl, "rdx");
with_site!(__strndup => strndup_impl, "rdx");
