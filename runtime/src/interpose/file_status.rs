//! The file system's names: what `stat`, `lstat`, `fstatat` (and their
//! `64` forms, the same calls on x86-64), `access` and `faccessat` say
//! about a path, and the calls that change what a path names (`unlink`,
//! `unlinkat`, `rename`, `renameat`, `mkdir`, `rmdir`). Another thread may
//! create or delete the file at any moment (SQLite checks for its journal
//! while another connection's thread creates it), so each is an event on
//! the descriptor table's pseudo-address, where the opens and closes of
//! descriptors are logged too: a question is a read of it, a change a
//! write, and replay makes the calls, live, in the recorded order among
//! them. (Replaying a question's recorded answer instead was tried: a
//! file made again at replay has another inode, which `fstat` of its
//! descriptor reported live while the recorded `stat` of its name did not,
//! and SQLite took the file for renamed.)

use core::ffi::{c_char, c_int};

use rr_lite_trace::{EventKind, pseudo};

use crate::events;
use crate::real;
use crate::site::with_site;

/// A question about a path (`Read`) or a change of what one names
/// (`Write`): an event on the descriptor table, the call made while it is
/// held.
fn on_names(kind: EventKind, site: u64, call: impl FnOnce() -> c_int) -> c_int {
    events::log_after_call(kind, pseudo::DESCRIPTORS, 0, site, call, |_| 0)
}

extern "C" fn stat_impl(path: *const c_char, status: *mut libc::stat, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Read, site, || unsafe {
        real::stat(path, status)
    })
}
with_site!(stat => stat_impl, "rdx");
with_site!(stat64 => stat_impl, "rdx");

extern "C" fn lstat_impl(path: *const c_char, status: *mut libc::stat, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Read, site, || unsafe {
        real::lstat(path, status)
    })
}
with_site!(lstat => lstat_impl, "rdx");
with_site!(lstat64 => lstat_impl, "rdx");

extern "C" fn fstatat_impl(
    dir: c_int,
    path: *const c_char,
    status: *mut libc::stat,
    flags: c_int,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Read, site, || unsafe {
        real::fstatat(dir, path, status, flags)
    })
}
with_site!(fstatat => fstatat_impl, "r8");
with_site!(fstatat64 => fstatat_impl, "r8");

extern "C" fn access_impl(path: *const c_char, mode: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Read, site, || unsafe {
        real::access(path, mode)
    })
}
with_site!(access => access_impl, "rdx");

extern "C" fn faccessat_impl(
    dir: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Read, site, || unsafe {
        real::faccessat(dir, path, mode, flags)
    })
}
with_site!(faccessat => faccessat_impl, "r8");

extern "C" fn unlink_impl(path: *const c_char, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Write, site, || unsafe { real::unlink(path) })
}
with_site!(unlink => unlink_impl, "rsi");

extern "C" fn unlinkat_impl(dir: c_int, path: *const c_char, flags: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Write, site, || unsafe {
        real::unlinkat(dir, path, flags)
    })
}
with_site!(unlinkat => unlinkat_impl, "rcx");

extern "C" fn rename_impl(from: *const c_char, to: *const c_char, site: u64) -> c_int {
    on_names(EventKind::Write, site, || {
        // SAFETY: forwarding.
        let r = unsafe { real::rename(from, to) };
        if r == 0 {
            crate::snapshot::replaced(to);
        }
        r
    })
}
with_site!(rename => rename_impl, "rdx");

extern "C" fn renameat_impl(
    from_dir: c_int,
    from: *const c_char,
    to_dir: c_int,
    to: *const c_char,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Write, site, || unsafe {
        real::renameat(from_dir, from, to_dir, to)
    })
}
with_site!(renameat => renameat_impl, "r8");

extern "C" fn mkdir_impl(path: *const c_char, mode: libc::mode_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Write, site, || unsafe {
        real::mkdir(path, mode)
    })
}
with_site!(mkdir => mkdir_impl, "rdx");

extern "C" fn rmdir_impl(path: *const c_char, site: u64) -> c_int {
    // SAFETY: forwarding.
    on_names(EventKind::Write, site, || unsafe { real::rmdir(path) })
}
with_site!(rmdir => rmdir_impl, "rsi");
