//! Which mode the runtime runs in, chosen once from the environment at
//! start-up. Until then, and without `RR_LITE_MODE`, the runtime is inert:
//! every hook returns at once and every interposed call goes straight to the
//! real function, so an instrumented binary started by hand runs normally.

use core::sync::atomic::{AtomicU8, Ordering};

/// Environment variable selecting the mode (`record` or `replay`).
pub(crate) const MODE_ENV: &core::ffi::CStr = c"RR_LITE_MODE";
/// Environment variable naming the trace directory (absolute path).
pub(crate) const TRACE_ENV: &core::ffi::CStr = c"RR_LITE_TRACE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Mode {
    Inert = 0,
    Record = 1,
    Replay = 2,
}

pub(crate) static MODE: AtomicU8 = AtomicU8::new(Mode::Inert as u8);

#[inline(always)]
pub(crate) fn current() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        1 => Mode::Record,
        2 => Mode::Replay,
        _ => Mode::Inert,
    }
}

/// Recording or replaying (the runtime tracks threads and events).
#[inline(always)]
pub(crate) fn active() -> bool {
    current() != Mode::Inert
}

pub(crate) fn set(mode: Mode) {
    MODE.store(mode as u8, Ordering::Release);
}

/// Environment variable naming the replay session (see trace::plan).
pub(crate) const SESSION_ENV: &core::ffi::CStr = c"RR_LITE_SESSION";

/// A path set once at start-up, as bytes without NUL.
pub(crate) struct PathSlot {
    bytes: core::cell::UnsafeCell<[u8; 4096]>,
    len: core::sync::atomic::AtomicUsize,
}

// SAFETY: written once by the initialising thread before the mode is set
// (before any other thread exists or reads it), read-only afterwards.
unsafe impl Sync for PathSlot {}

impl PathSlot {
    pub(crate) const fn new() -> PathSlot {
        PathSlot {
            bytes: core::cell::UnsafeCell::new([0; 4096]),
            len: core::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Stores `path` (once, at start-up); false if it does not fit.
    pub(crate) fn set(&self, path: &[u8]) -> bool {
        if path.is_empty() || path.len() >= 4096 {
            return false;
        }
        // SAFETY: see the Sync impl: single writer before any reader.
        unsafe { (&mut *self.bytes.get())[..path.len()].copy_from_slice(path) };
        self.len.store(path.len(), Ordering::Release);
        true
    }

    pub(crate) fn get(&self) -> &[u8] {
        let len = self.len.load(Ordering::Acquire);
        // SAFETY: never written again after `set` published the length.
        unsafe { &(&*self.bytes.get())[..len] }
    }
}

/// The trace directory.
pub(crate) static TRACE_DIR: PathSlot = PathSlot::new();
/// The replay session directory (inside the trace directory).
pub(crate) static SESSION_DIR: PathSlot = PathSlot::new();

/// Appends `label` and `count` (decimal) as a line to the trace's file
/// `file` (record mode, at the process's exit: PCT's steps, spins), under
/// the descriptor lock.
pub(crate) fn note_count(file: &str, label: &[u8], count: u64) {
    let mut digits = [0u8; 20];
    let count = crate::sys::decimal(count, &mut digits);
    crate::descriptors::locked(|| {
        crate::sys::append_line_in_dir(TRACE_DIR.get(), file.as_bytes(), &[label, count])
    });
}
