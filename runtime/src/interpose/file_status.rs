//! What the file system says about a path: `stat`, `lstat`, `fstatat`
//! (and their `64` forms, the same calls on x86-64), `access` and
//! `faccessat`. Another thread may create, delete or change the file at
//! any moment (SQLite checks for its journal while another connection's
//! thread creates it), and replay's threads get there at other moments, or
//! find the recording's own files left behind, so the answers are recorded
//! like input: the result, `errno` and the `struct stat` go into the
//! thread's input (`input-NNNN.bin`), and replay hands them back without
//! asking the file system. (A replay of such a program printed other
//! results, exit 0, no report.)

use core::ffi::{c_char, c_int};

use crate::real;
use crate::site::with_site;

/// A recorded answer: the call's result and `errno`.
const ANSWER_LEN: usize = 8;
const STAT_LEN: usize = core::mem::size_of::<libc::stat>();

/// Records or replays one answer: `call` fills `status` (the caller's
/// buffer, or null for `access`) and returns the result.
fn answered(status: *mut libc::stat, call: impl FnOnce() -> c_int) -> c_int {
    use crate::mode::{self, Mode};
    let thread = crate::thread::THREAD.with(|t| t.is_tracked().then(|| t.id.get()));
    let (Some(id), true) = (thread, mode::active()) else {
        return call();
    };
    let mut bytes = [0u8; ANSWER_LEN + STAT_LEN];
    let len = ANSWER_LEN + if status.is_null() { 0 } else { STAT_LEN };
    match mode::current() {
        Mode::Record => {
            let ret = call();
            let errno = crate::sys::errno();
            bytes[..4].copy_from_slice(&ret.to_le_bytes());
            bytes[4..8].copy_from_slice(&errno.to_le_bytes());
            if ret == 0 && !status.is_null() {
                // SAFETY: the caller's buffer, which the call just filled.
                let filled = unsafe { core::slice::from_raw_parts(status.cast::<u8>(), STAT_LEN) };
                bytes[ANSWER_LEN..].copy_from_slice(filled);
            }
            crate::thread::THREAD.with(|t| t.input.save(id, &bytes[..len]));
            crate::sys::set_errno(errno);
            ret
        }
        Mode::Replay if crate::thread::THREAD.with(|t| t.input.load(id, &mut bytes[..len])) => {
            let ret = c_int::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let errno = c_int::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
            if ret == 0 && !status.is_null() {
                // SAFETY: the caller's buffer for a `struct stat`.
                let out = unsafe { core::slice::from_raw_parts_mut(status.cast::<u8>(), STAT_LEN) };
                out.copy_from_slice(&bytes[ANSWER_LEN..]);
            }
            crate::sys::set_errno(errno);
            ret
        }
        _ => call(),
    }
}

extern "C" fn stat_impl(path: *const c_char, status: *mut libc::stat, _site: u64) -> c_int {
    // SAFETY: forwarding.
    answered(status, || unsafe { real::stat(path, status) })
}
with_site!(stat => stat_impl, "rdx");
with_site!(stat64 => stat_impl, "rdx");

extern "C" fn lstat_impl(path: *const c_char, status: *mut libc::stat, _site: u64) -> c_int {
    // SAFETY: forwarding.
    answered(status, || unsafe { real::lstat(path, status) })
}
with_site!(lstat => lstat_impl, "rdx");
with_site!(lstat64 => lstat_impl, "rdx");

extern "C" fn fstatat_impl(
    dir: c_int,
    path: *const c_char,
    status: *mut libc::stat,
    flags: c_int,
    _site: u64,
) -> c_int {
    // SAFETY: forwarding.
    answered(status, || unsafe {
        real::fstatat(dir, path, status, flags)
    })
}
with_site!(fstatat => fstatat_impl, "r8");
with_site!(fstatat64 => fstatat_impl, "r8");

extern "C" fn access_impl(path: *const c_char, mode: c_int, _site: u64) -> c_int {
    // SAFETY: forwarding.
    answered(core::ptr::null_mut(), || unsafe {
        real::access(path, mode)
    })
}
with_site!(access => access_impl, "rdx");

extern "C" fn faccessat_impl(
    dir: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
    _site: u64,
) -> c_int {
    // SAFETY: forwarding.
    answered(core::ptr::null_mut(), || unsafe {
        real::faccessat(dir, path, mode, flags)
    })
}
with_site!(faccessat => faccessat_impl, "r8");
