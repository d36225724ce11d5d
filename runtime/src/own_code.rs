//! The address range of the runtime's own code, so that the memory
//! interposers can tell the runtime's memcpy calls (Rust emits them for
//! copies) from the program's, whatever state the thread is in.

use core::sync::atomic::{AtomicUsize, Ordering};

static START: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);

extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    wanted: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid info for each loaded object,
    // whose phdr array has dlpi_phnum entries.
    let info = unsafe { &*info };
    if info.dlpi_addr as usize != wanted as usize {
        return 0;
    }
    // SAFETY: as above.
    let headers =
        unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    for h in headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_X != 0)
    {
        let start = info.dlpi_addr as usize + h.p_vaddr as usize;
        START.store(start, Ordering::Relaxed);
        END.store(start + h.p_memsz as usize, Ordering::Release);
    }
    1
}

/// Finds the runtime's executable segment (once, at start-up).
pub(crate) fn locate() {
    // SAFETY: dladdr on an address inside this library fills `info`.
    let base = unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        if libc::dladdr(locate as *const () as *const libc::c_void, &mut info) == 0 {
            return;
        }
        info.dli_fbase
    };
    // SAFETY: the callback matches dl_iterate_phdr's signature.
    unsafe { libc::dl_iterate_phdr(Some(visit), base) };
}

/// True when `pc` is in the runtime's code.
#[inline]
pub(crate) fn contains(pc: u64) -> bool {
    let pc = pc as usize;
    pc >= START.load(Ordering::Relaxed) && pc < END.load(Ordering::Acquire)
}
