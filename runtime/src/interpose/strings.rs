//! The C library's string and comparison functions (`strlen`, `strcmp`,
//! `memcmp`, `strcpy`, ...): each reads, and some write, memory another
//! thread may be writing, inside libc where no hook sees it, so each call
//! is an event of range reads and writes (`events::log_after_ranges`),
//! performed while their stripes are held. Found with SQLite, whose
//! threads compare and copy a shared header with `memcmp` and `memcpy`
//! (replays diverged or printed other results).
//!
//! The functions are the runtime's own byte loops, with glibc's results on
//! x86-64 (a comparison returns the difference of the first differing
//! bytes): the runtime cannot call back into libc's copies before it has
//! resolved them, and its own Rust code calls some of these symbols too
//! (those calls, from the runtime's code, go straight to the loops). The
//! loops read with volatile loads, which the compiler cannot turn back
//! into calls of these very functions.

use core::ffi::{c_char, c_int, c_void};

use libc::size_t;

use crate::events::{self, CallRange};
use crate::site::with_site;

/// The byte at `p + i`. Every pointer here comes from a C caller of these
/// functions, under their contract (module doc): the loops read only the
/// bytes it vouches for.
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
///
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
    if crate::own_code::contains(site) {
        return op();
    }
    events::log_after_ranges(site, ranges, measure, op)
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
    present: bool,
    site: u64,
    measure: impl Fn() -> [u64; 2],
    op: impl FnOnce() -> R,
) -> R {
    let ranges = [
        CallRange::read(a as u64, present),
        CallRange::read(b as u64, present),
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

extern "C" fn strlen_impl(s: *const c_char, site: u64) -> size_t {
    let len = || length(s, usize::MAX);
    reading(s.cast(), true, site, || len() as u64 + 1, len)
}
with_site!(strlen => strlen_impl, "rsi");

extern "C" fn strnlen_impl(s: *const c_char, max: size_t, site: u64) -> size_t {
    let len = || length(s, max);
    reading(s.cast(), max > 0, site, || through_nul(len(), max), len)
}
with_site!(strnlen => strnlen_impl, "rdx");

/// `strchr` (`last`: `strrchr`): the first (last) `c` in `s`, its NUL
/// included.
fn find_char(s: *const c_char, c: c_int, last: bool) -> *mut c_char {
    let c = c as u8;
    let mut found = core::ptr::null_mut();
    let mut i = 0;
    loop {
        let b = byte(s, i);
        if b == c {
            found = s.wrapping_add(i).cast_mut();
            if !last || b == 0 {
                return found;
            }
        }
        if b == 0 {
            return found;
        }
        i += 1;
    }
}

extern "C" fn strchr_impl(s: *const c_char, c: c_int, site: u64) -> *mut c_char {
    let measure = || length(s, usize::MAX) as u64 + 1;
    reading(s.cast(), true, site, measure, || find_char(s, c, false))
}
with_site!(strchr => strchr_impl, "rdx");

extern "C" fn strrchr_impl(s: *const c_char, c: c_int, site: u64) -> *mut c_char {
    let measure = || length(s, usize::MAX) as u64 + 1;
    reading(s.cast(), true, site, measure, || find_char(s, c, true))
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
    let at = || find_byte(s, c, n);
    let measure = || (at() + 1).min(n) as u64;
    reading(s, n > 0, site, measure, || match at() {
        i if i < n => s.wrapping_byte_add(i).cast_mut(),
        _ => core::ptr::null_mut(),
    })
}
with_site!(memchr => memchr_impl, "rcx");

/// Compares `a` and `b` over at most `n` bytes, stopping after a NUL if
/// `strings`: glibc's result (the difference of the first differing
/// bytes, as unsigned chars), and the bytes read.
fn compare(a: *const c_char, b: *const c_char, n: usize, strings: bool) -> (c_int, usize) {
    for i in 0..n {
        let (x, y) = (byte(a, i), byte(b, i));
        if x != y {
            return (c_int::from(x) - c_int::from(y), i + 1);
        }
        if strings && x == 0 {
            return (0, i + 1);
        }
    }
    (0, n)
}

extern "C" fn memcmp_impl(a: *const c_void, b: *const c_void, n: size_t, site: u64) -> c_int {
    // for `n` bytes of each, and the bytes read depend on the contents.)
    let cmp = || compare(a.cast(), b.cast(), n, false).0;
    reading_two((a, b), n > 0, site, || [n as u64; 2], cmp)
}
with_site!(memcmp => memcmp_impl, "rcx");
with_site!(bcmp => memcmp_impl, "rcx");

extern "C" fn strcmp_impl(a: *const c_char, b: *const c_char, site: u64) -> c_int {
    let measure = || compare(a, b, usize::MAX, true).1 as u64;
    let cmp = || compare(a, b, usize::MAX, true).0;
    reading_two((a.cast(), b.cast()), true, site, || [measure(); 2], cmp)
}
with_site!(strcmp => strcmp_impl, "rdx");

extern "C" fn strncmp_impl(a: *const c_char, b: *const c_char, n: size_t, site: u64) -> c_int {
    let measure = || compare(a, b, n, true).1 as u64;
    let cmp = || compare(a, b, n, true).0;
    reading_two((a.cast(), b.cast()), n > 0, site, || [measure(); 2], cmp)
}
with_site!(strncmp => strncmp_impl, "rcx");

/// Copies `len` bytes of `src` to `dst` and writes zeros up to `fill`.
fn copy_then_zero(dst: *mut c_char, src: *const c_char, len: usize, fill: usize) {
    for i in 0..fill {
        put_byte(dst, i, if i < len { byte(src, i) } else { 0 });
    }
}

/// `strcpy` and `stpcpy`: the copy's end (its NUL) in `dst`.
fn copy_string(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    let len = || length(src, usize::MAX);
    let measure = || [len() as u64 + 1; 2];
    copying((dst, src), true, site, measure, || {
        let n = len();
        copy_then_zero(dst, src, n, n + 1);
        dst.wrapping_add(n)
    })
}

extern "C" fn strcpy_impl(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    copy_string(dst, src, site);
    dst
}
with_site!(strcpy => strcpy_impl, "rdx");

extern "C" fn stpcpy_impl(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    copy_string(dst, src, site)
}
with_site!(stpcpy => stpcpy_impl, "rdx");

extern "C" fn strncpy_impl(
    dst: *mut c_char,
    src: *const c_char,
    n: size_t,
    site: u64,
) -> *mut c_char {
    let len = || length(src, n);
    let measure = || [through_nul(len(), n), n as u64];
    if n == 0 {
        return dst;
    }
    copying((dst, src), true, site, measure, || {
        copy_then_zero(dst, src, len(), n);
        dst
    })
}
with_site!(strncpy => strncpy_impl, "rcx");

/// `strcat` (`max` usize::MAX) and `strncat`: appends at most `max` bytes
/// of `src` and a NUL to the string at `dst`. The write range starts at
/// `dst`: it covers the read of `dst`'s own string too.
fn append(dst: *mut c_char, src: *const c_char, max: usize, site: u64) -> *mut c_char {
    let lens = || (length(dst, usize::MAX), length(src, max));
    let measure = || {
        let (d, s) = lens();
        [through_nul(s, max), (d + s + 1) as u64]
    };
    copying((dst, src), max > 0, site, measure, || {
        let (d, s) = lens();
        copy_then_zero(dst.wrapping_add(d), src, s, s + 1);
        dst
    })
}

extern "C" fn strcat_impl(dst: *mut c_char, src: *const c_char, site: u64) -> *mut c_char {
    append(dst, src, usize::MAX, site)
}
with_site!(strcat => strcat_impl, "rdx");

extern "C" fn strncat_impl(
    dst: *mut c_char,
    src: *const c_char,
    n: size_t,
    site: u64,
) -> *mut c_char {
    append(dst, src, n, site)
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
