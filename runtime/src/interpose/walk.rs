//! `ftw`, `nftw` and `scandir`: glibc walks the tree (or reads the
//! directory) with descriptors it opens and closes inside libc, where the
//! runtime does not see them, between its calls of the program's functions. Those descriptors take the
//! lowest free numbers, so another thread's `open` meanwhile gets another
//! number depending on how far the walk has got.
//!
//! The walk's own code is ordered like one descriptor call: each stretch of
//! it (from the start, or from a callback's return, to the next callback or
//! the end) is an `events::Stretch` on the descriptor table, with the
//! descriptor lock held (as the program's descriptor calls hold it, and
//! taken after the stripe, as they take it). The program's function runs
//! between stretches, free to open files, block or walk again: holding the
//! table across it could deadlock (pfscan's walker waits there for the
//! threads that open the files it lists).

use core::cell::Cell;
use core::ffi::{c_char, c_int, c_void};

use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Stretch};
use crate::real::{self, CompareFn, FilterFn, FtwFn, NftwFn};
// The walks call the program back: their entries stay on its stack.
use crate::site::with_site_here as with_site;

/// The walk this thread is in: the program's functions (scandir has two:
/// its filter and its comparison), the call site, and the open stretch with
/// whether it took the descriptor lock.
struct Walk {
    functions: [usize; 2],
    site: u64,
    stretch: Option<(Option<Stretch>, bool)>,
}

thread_local! {
    static WALK: Cell<Option<Walk>> = const { Cell::new(None) };
}

fn begin(site: u64) -> (Option<Stretch>, bool) {
    let stretch = events::stretch_begin(EventKind::Rmw, pseudo::DESCRIPTORS, site);
    (stretch, crate::descriptors::lock())
}

fn end((stretch, taken): (Option<Stretch>, bool)) {
    crate::descriptors::unlock(taken);
    if let Some(stretch) = stretch {
        events::stretch_end(stretch);
    }
}

/// Runs `run(trampolined)`, a walk calling the program's `functions`, in
/// stretches: `run(true)` hands libc the trampolines below instead.
fn walk(functions: [usize; 2], site: u64, run: impl FnOnce(bool) -> c_int) -> c_int {
    if !crate::mode::active() {
        return run(false);
    }
    // A walk started from another walk's function: that one's stretch is
    // closed (its function is running); it goes on when this one is done.
    let outer = WALK.take();
    WALK.set(Some(Walk {
        functions,
        site,
        stretch: Some(begin(site)),
    }));
    let result = run(true);
    if let Some(stretch) = WALK.take().and_then(|inner| inner.stretch) {
        end(stretch);
    }
    WALK.set(outer);
    result
}

/// Ends the stretch, runs the program's function `which`, begins the next
/// stretch.
fn call_back(which: usize, call: impl FnOnce(usize) -> c_int) -> c_int {
    let Some(mut walk) = WALK.take() else {
        // Unreachable: the trampolines are only handed to libc by `walk`.
        return -1;
    };
    if let Some(stretch) = walk.stretch.take() {
        end(stretch);
    }
    let (function, site) = (walk.functions[which], walk.site);
    WALK.set(Some(walk));
    let result = call(function);
    // The function's own walks restored this walk's state when they ended.
    if let Some(mut walk) = WALK.take() {
        walk.stretch = Some(begin(site));
        WALK.set(Some(walk));
    }
    result
}

unsafe extern "C" fn ftw_trampoline(
    path: *const c_char,
    sb: *const libc::stat,
    flag: c_int,
) -> c_int {
    call_back(0, |function| {
        // SAFETY: `function` is the program's ftw function, as `walk` got it.
        let f: FtwFn = unsafe { core::mem::transmute(function) };
        // SAFETY: calling it with what libc passed.
        unsafe { f(path, sb, flag) }
    })
}

unsafe extern "C" fn nftw_trampoline(
    path: *const c_char,
    sb: *const libc::stat,
    flag: c_int,
    ftw: *mut c_void,
) -> c_int {
    call_back(0, |function| {
        // SAFETY: `function` is the program's nftw function, as `walk` got it.
        let f: NftwFn = unsafe { core::mem::transmute(function) };
        // SAFETY: calling it with what libc passed.
        unsafe { f(path, sb, flag, ftw) }
    })
}

macro_rules! ftws {
    ($($name:ident => $imp:ident;)*) => {$(
        extern "C" fn $imp(dir: *const c_char, f: FtwFn, open_max: c_int, site: u64) -> c_int {
            let pick = |trampolined: bool| if trampolined { ftw_trampoline as FtwFn } else { f };
            // SAFETY: forwarding, with the trampoline that calls `f`.
            walk([f as usize, 0], site, |t| unsafe { real::$name(dir, pick(t), open_max) })
        }
        with_site!($name => $imp, "rcx");
    )*};
}

ftws! {
    ftw => ftw_impl;
    ftw64 => ftw64_impl;
}

macro_rules! nftws {
    ($($name:ident => $imp:ident;)*) => {$(
        extern "C" fn $imp(dir: *const c_char, f: NftwFn, open_max: c_int, flags: c_int, site: u64) -> c_int {
            let pick = |trampolined: bool| if trampolined { nftw_trampoline as NftwFn } else { f };
            // SAFETY: forwarding, with the trampoline that calls `f`.
            walk([f as usize, 0], site, |t| unsafe { real::$name(dir, pick(t), open_max, flags) })
        }
        with_site!($name => $imp, "r8");
    )*};
}

nftws! {
    nftw => nftw_impl;
    nftw64 => nftw64_impl;
}

unsafe extern "C" fn filter_trampoline(entry: *const c_void) -> c_int {
    call_back(0, |function| {
        // SAFETY: `function` is the program's (non-null) filter.
        let f: unsafe extern "C" fn(*const c_void) -> c_int =
            unsafe { core::mem::transmute(function) };
        // SAFETY: calling it with what libc passed.
        unsafe { f(entry) }
    })
}

unsafe extern "C" fn compare_trampoline(a: *const c_void, b: *const c_void) -> c_int {
    call_back(1, |function| {
        // SAFETY: `function` is the program's (non-null) comparison.
        let f: unsafe extern "C" fn(*const c_void, *const c_void) -> c_int =
            unsafe { core::mem::transmute(function) };
        // SAFETY: calling it with what libc passed.
        unsafe { f(a, b) }
    })
}

/// The functions libc gets: the trampolines when the walk is in stretches,
/// the program's own otherwise; null stays null.
fn scandir_functions(
    trampolined: bool,
    filter: FilterFn,
    compare: CompareFn,
) -> (FilterFn, CompareFn) {
    if !trampolined {
        return (filter, compare);
    }
    (
        filter.map(|_| filter_trampoline as unsafe extern "C" fn(*const c_void) -> c_int),
        compare.map(|_| {
            compare_trampoline as unsafe extern "C" fn(*const c_void, *const c_void) -> c_int
        }),
    )
}

fn scandir_addresses(filter: FilterFn, compare: CompareFn) -> [usize; 2] {
    [
        filter.map_or(0, |f| f as usize),
        compare.map_or(0, |f| f as usize),
    ]
}

macro_rules! scandirs {
    ($($name:ident => $imp:ident;)*) => {$(
        extern "C" fn $imp(dir: *const c_char, list: *mut c_void, filter: FilterFn, compare: CompareFn, site: u64) -> c_int {
            // SAFETY: forwarding, with the trampolines that call the program's functions.
            walk(scandir_addresses(filter, compare), site, |t| unsafe {
                let (filter, compare) = scandir_functions(t, filter, compare);
                real::$name(dir, list, filter, compare)
            })
        }
        with_site!($name => $imp, "r8");
    )*};
}

scandirs! {
    scandir => scandir_impl;
    scandir64 => scandir64_impl;
}

extern "C" fn scandirat_impl(
    dir_fd: c_int,
    dir: *const c_char,
    list: *mut c_void,
    filter: FilterFn,
    compare: CompareFn,
    site: u64,
) -> c_int {
    // SAFETY: forwarding, with the trampolines that call the program's functions.
    walk(scandir_addresses(filter, compare), site, |t| unsafe {
        let (filter, compare) = scandir_functions(t, filter, compare);
        real::scandirat(dir_fd, dir, list, filter, compare)
    })
}
with_site!(scandirat => scandirat_impl, "r9");
