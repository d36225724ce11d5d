//! The read-only segments of the modules loaded at start-up (their code
//! and constants: string literals, libstdc++'s type names), found once: a
//! C library call that only reads there (`strcmp` against a literal, the
//! comparison of two type names in a `dynamic_cast`) needs no order, since
//! no thread can write there, and is no event (string-heavy C++ recorded
//! twice the events for them). The segments are the same at record and
//! replay (the same modules at the same addresses), so both decide alike
//! from a call's arguments alone.

use core::sync::atomic::{AtomicUsize, Ordering};

/// Segments kept (a program with more read-only segments at start-up has
/// the rest treated as writable: more events, never fewer).
const MAX_SEGMENTS: usize = 64;

static STARTS: [AtomicUsize; MAX_SEGMENTS] = [const { AtomicUsize::new(0) }; MAX_SEGMENTS];
static ENDS: [AtomicUsize; MAX_SEGMENTS] = [const { AtomicUsize::new(0) }; MAX_SEGMENTS];
static COUNT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    _data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid info for each loaded object,
    // whose phdr array has dlpi_phnum entries.
    let info = unsafe { &*info };
    if info.dlpi_phdr.is_null() {
        return 0;
    }
    // SAFETY: as above.
    let headers =
        unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    for h in headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W == 0)
    {
        let n = COUNT.load(Ordering::Relaxed);
        if n == MAX_SEGMENTS {
            return 1;
        }
        let start = info.dlpi_addr as usize + h.p_vaddr as usize;
        STARTS[n].store(start, Ordering::Relaxed);
        ENDS[n].store(start + h.p_memsz as usize, Ordering::Relaxed);
        COUNT.store(n + 1, Ordering::Release);
    }
    0
}

/// Finds the segments (once, at start-up, before any thread but the first).
pub(crate) fn locate() {
    if COUNT.load(Ordering::Acquire) == 0 {
        // SAFETY: the callback matches dl_iterate_phdr's signature.
        unsafe { libc::dl_iterate_phdr(Some(visit), core::ptr::null_mut()) };
    }
}

/// Whether the `len` bytes at `addr` lie in one read-only segment.
pub(crate) fn holds(addr: usize, len: usize) -> bool {
    let n = COUNT.load(Ordering::Acquire);
    (0..n).any(|i| {
        let (start, end) = (
            STARTS[i].load(Ordering::Relaxed),
            ENDS[i].load(Ordering::Relaxed),
        );
        addr >= start && addr < end && len <= end - addr
    })
}

/// Whether a C string at `s` starts in a read-only segment (a constant: its
/// NUL is there too).
pub(crate) fn holds_string(s: *const libc::c_char) -> bool {
    holds(s as usize, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_read_only_and_buffers_are_not() {
        locate();
        static LITERAL: &[u8] = b"a constant string\0";
        assert!(holds_string(LITERAL.as_ptr().cast()));
        assert!(holds(LITERAL.as_ptr() as usize, LITERAL.len()));
        let on_stack = [1u8; 16];
        assert!(!holds(on_stack.as_ptr() as usize, 1));
        let mut written = 0u64;
        written += 1;
        assert!(!holds(core::ptr::addr_of!(written) as usize, 8));
        // A range running past the end of a segment is not held.
        assert!(!holds(LITERAL.as_ptr() as usize, usize::MAX / 2));
    }
}
