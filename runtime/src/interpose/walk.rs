//! `ftw` and `nftw`: glibc walks the tree with directory descriptors it
//! opens and closes inside libc, where the runtime does not see them,
//! between its calls of the program's function. Those descriptors take the
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
use crate::real;
use crate::site::with_site;

/// `ftw`'s function (and `ftw64`'s: `struct stat64` is `struct stat` here).
pub(crate) type FtwFn = unsafe extern "C" fn(*const c_char, *const libc::stat, c_int) -> c_int;
/// `nftw`'s function (its last argument, a `struct FTW *`, passed through).
pub(crate) type NftwFn =
    unsafe extern "C" fn(*const c_char, *const libc::stat, c_int, *mut c_void) -> c_int;

/// The walk this thread is in: the program's function, the call site, and
/// the open stretch with whether it took the descriptor lock.
struct Walk {
    function: usize,
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

/// Runs `run(trampolined)`, a walk calling the program's `function`, in
/// stretches: `run(true)` hands libc the trampoline below instead of it.
fn walk(function: usize, site: u64, run: impl FnOnce(bool) -> c_int) -> c_int {
    if !crate::mode::active() {
        return run(false);
    }
    // A walk started from another walk's function: that one's stretch is
    // closed (its function is running); it goes on when this one is done.
    let outer = WALK.take();
    WALK.set(Some(Walk {
        function,
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

/// Ends the stretch, runs the program's function, begins the next one.
fn call_back(call: impl FnOnce(usize) -> c_int) -> c_int {
    let Some(mut walk) = WALK.take() else {
        // Unreachable: the trampolines are only handed to libc by `walk`.
        return -1;
    };
    if let Some(stretch) = walk.stretch.take() {
        end(stretch);
    }
    let (function, site) = (walk.function, walk.site);
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
    call_back(|function| {
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
    call_back(|function| {
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
            walk(f as usize, site, |t| unsafe { real::$name(dir, pick(t), open_max) })
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
            walk(f as usize, site, |t| unsafe { real::$name(dir, pick(t), open_max, flags) })
        }
        with_site!($name => $imp, "r8");
    )*};
}

nftws! {
    nftw => nftw_impl;
    nftw64 => nftw64_impl;
}
