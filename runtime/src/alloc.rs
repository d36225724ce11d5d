//! The runtime's own memory: a bump allocator over a private mapping at a
//! fixed address, far from where the program's heap and mappings go.
//!
//! Why not malloc: the runtime must not change the program's heap (replay
//! reproduces heap addresses by replaying the program's own allocator calls
//! in order), and malloc is interposed, so using it from inside the runtime
//! would recurse. The runtime allocates only during setup, so memory is
//! never returned.

#![cfg_attr(test, allow(dead_code))]

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

/// Where the runtime's private mappings start (see ARCHITECTURE.md, "Address
/// space"). With ASLR off, Linux places the program's mappings near the top
/// of the address space and its heap after the executable near 0x5555...,
/// so this range stays free.
pub(crate) const PRIVATE_REGION: usize = 0x6000_0000_0000;
const ARENA_BASE: usize = PRIVATE_REGION;
const ARENA_LEN: usize = 1 << 30;
/// Log chunks and replay logs are mapped after the arena.
pub(crate) const MAPPING_REGION: usize = PRIVATE_REGION + ARENA_LEN;

/// Maps `len` bytes at the next free address of the mapping region (never
/// overlapping anything else: MAP_FIXED_NOREPLACE). Returns null on failure.
pub(crate) fn map_private(len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut u8 {
    static CURSOR: AtomicUsize = AtomicUsize::new(MAPPING_REGION);
    for _ in 0..64 {
        let at = CURSOR.fetch_add(len, Ordering::Relaxed);
        // MAP_FIXED_NOREPLACE never replaces an existing mapping.
        let p = crate::sys::mmap_raw(at, len, prot, flags | libc::MAP_FIXED_NOREPLACE, fd, offset);
        if p != libc::MAP_FAILED && p as usize == at {
            return p.cast();
        }
        if p != libc::MAP_FAILED {
            // An old kernel took the address as a hint only: give it back.
            crate::sys::munmap_raw(p, len);
        }
    }
    core::ptr::null_mut()
}

/// Reserves `len` bytes of address space at `base` (read-write, committed
/// only when touched). Fails rather than replace an existing mapping.
pub(crate) fn reserve_fixed(base: usize, len: usize) -> bool {
    // MAP_FIXED_NOREPLACE never replaces a mapping.
    let p = crate::sys::mmap_raw(
        base,
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
        -1,
        0,
    );
    p as usize == base
}

#[derive(Debug)]
pub(crate) struct RuntimeAllocator {
    next: AtomicUsize,
}

impl RuntimeAllocator {
    pub(crate) const fn new() -> RuntimeAllocator {
        RuntimeAllocator {
            next: AtomicUsize::new(0),
        }
    }

    fn arena(&self) -> usize {
        static MAPPED: AtomicUsize = AtomicUsize::new(0);
        if MAPPED.load(Ordering::Acquire) == 0 {
            let mapped = reserve_fixed(ARENA_BASE, ARENA_LEN);
            // A concurrent first call may have mapped it already (EEXIST).
            if mapped || crate::sys::errno() == libc::EEXIST {
                MAPPED.store(1, Ordering::Release);
            } else {
                return 0;
            }
        }
        ARENA_BASE
    }
}

// SAFETY: alloc returns distinct, suitably aligned blocks inside the arena or
// null; dealloc never touches memory.
unsafe impl GlobalAlloc for RuntimeAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.arena();
        if base == 0 {
            return core::ptr::null_mut();
        }
        let align = layout.align().max(16);
        let size = (layout.size() + align - 1) & !(align - 1);
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (cur + align - 1) & !(align - 1);
            if start + size > ARENA_LEN {
                return core::ptr::null_mut();
            }
            match self.next.compare_exchange_weak(
                cur,
                start + size,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return (base + start) as *mut u8,
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}
