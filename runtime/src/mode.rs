//! Which mode the runtime runs in, chosen once from the environment at
//! start-up. Until then, and without `RR_LITE_MODE`, the runtime is inert:
//! every hook returns at once and every interposed call goes straight to the
//! real function, so an instrumented binary started by hand runs normally.

use core::sync::atomic::{AtomicU8, Ordering};

/// Environment variable selecting the mode (`record` or `replay`).
pub const MODE_ENV: &core::ffi::CStr = c"RR_LITE_MODE";
/// Environment variable naming the trace directory (absolute path).
pub const TRACE_ENV: &core::ffi::CStr = c"RR_LITE_TRACE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    Inert = 0,
    Record = 1,
}

static MODE: AtomicU8 = AtomicU8::new(Mode::Inert as u8);

#[inline(always)]
pub fn current() -> Mode {
    if MODE.load(Ordering::Relaxed) == Mode::Record as u8 {
        Mode::Record
    } else {
        Mode::Inert
    }
}

#[inline(always)]
pub fn recording() -> bool {
    current() == Mode::Record
}

pub fn set(mode: Mode) {
    MODE.store(mode as u8, Ordering::Release);
}

/// The trace directory, as bytes without NUL (set once at start-up).
static mut TRACE_DIR: [u8; 4096] = [0; 4096];
static TRACE_DIR_LEN: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

pub fn set_trace_dir(dir: &[u8]) -> bool {
    if dir.is_empty() || dir.len() >= 4096 {
        return false;
    }
    // SAFETY: written once, by the initialising thread, before the mode is
    // set and before any other thread can read it.
    unsafe {
        let buf = &mut *core::ptr::addr_of_mut!(TRACE_DIR);
        buf[..dir.len()].copy_from_slice(dir);
    }
    TRACE_DIR_LEN.store(dir.len(), Ordering::Release);
    true
}

pub fn trace_dir() -> &'static [u8] {
    let len = TRACE_DIR_LEN.load(Ordering::Acquire);
    // SAFETY: the buffer is never written again after `set_trace_dir`
    // published its length.
    unsafe { &(&*core::ptr::addr_of!(TRACE_DIR))[..len] }
}
