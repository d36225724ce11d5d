//! The replay state file, mapped once as typed shared memory: a
//! [`StateHeader`] and one [`ThreadProgress`] per recorded thread (layout and
//! size checks in `rr_lite_trace::state`).

use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use rr_lite_trace::state::{HEADER_LEN, STATE_FILE, StateHeader, ThreadProgress};

use crate::alloc::map_private;

/// The mapped header; its slots follow it. Null until `map_state`.
static HEADER: AtomicPtr<StateHeader> = AtomicPtr::new(core::ptr::null_mut());
static THREADS: AtomicU32 = AtomicU32::new(0);
/// Stands in before the file is mapped (no slots, nothing diverged).
static UNMAPPED: StateHeader = StateHeader::new(0, 0);

/// The state file's header.
pub(crate) fn header() -> &'static StateHeader {
    let p = HEADER.load(Ordering::Acquire);
    if p.is_null() {
        return &UNMAPPED;
    }
    // SAFETY: `map_state` stored a page-aligned shared mapping of at least
    // `HEADER_LEN` bytes that is never unmapped; `StateHeader` is
    // `#[repr(C)]` of integers and atomics, valid for any bytes, and the
    // fields written concurrently are atomics.
    unsafe { &*p }
}

/// Every thread's slot (empty before the file is mapped).
pub(crate) fn slots() -> &'static [ThreadProgress] {
    let p = HEADER.load(Ordering::Acquire);
    if p.is_null() {
        return &[];
    }
    // SAFETY: `StateHeader::check` verified that the mapping holds
    // `THREADS` slots after the 128-byte header (8-aligned: asserted in
    // rr_lite_trace::state); slots are `#[repr(C)]` atomics, valid for any
    // bytes; the mapping lives as long as the process.
    unsafe {
        core::slice::from_raw_parts(
            p.cast::<u8>().add(HEADER_LEN).cast::<ThreadProgress>(),
            THREADS.load(Ordering::Relaxed) as usize,
        )
    }
}

/// Thread `t`'s slot, if the recording has thread `t`.
pub(crate) fn slot(t: u32) -> Option<&'static ThreadProgress> {
    slots().get(t as usize)
}

/// Maps the session's state file. Returns false if it is missing or wrong.
pub(crate) fn map_state(session_dir: &[u8]) -> bool {
    let Some((p, len)) = map_file(session_dir, STATE_FILE.as_bytes(), true) else {
        return false;
    };
    if len < HEADER_LEN {
        return false;
    }
    // SAFETY: as in `header`: an aligned mapping of at least HEADER_LEN
    // bytes, never unmapped.
    let header = unsafe { &*p.cast::<StateHeader>() };
    let Ok(threads) = header.check(len) else {
        return false;
    };
    THREADS.store(threads, Ordering::Relaxed);
    HEADER.store(p.cast(), Ordering::Release);
    true
}

/// Maps a file of `dir`; returns (address, length).
pub(crate) fn map_file(dir: &[u8], name: &[u8], writable: bool) -> Option<(*mut u8, usize)> {
    let path = crate::sys::join(dir, name)?;
    let mode = if writable {
        libc::O_RDWR
    } else {
        libc::O_RDONLY
    };
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // Opened only for the moment it takes to map it (crate::descriptors).
    crate::descriptors::locked(|| {
        let fd = crate::sys::open_raw(&path, mode | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mapped = crate::sys::file_size(fd).and_then(|size| {
            let size = size as usize;
            let rounded = size.max(1).div_ceil(4096) * 4096;
            let p = map_private(rounded, prot, libc::MAP_SHARED, fd, 0);
            (!p.is_null()).then_some((p, size))
        });
        // The mapping keeps its own reference to the file.
        crate::sys::close_raw(fd);
        mapped
    })
}
