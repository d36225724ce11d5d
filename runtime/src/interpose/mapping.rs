//! Memory mappings. The kernel picks a mapping's address from what is
//! already mapped, so two threads mapping files at once get addresses in
//! the order their calls reached it. `mmap`, `munmap` and `mremap` are
//! allocator-style events (`alloc`/`free` on the mappings' pseudo-address,
//! the address as the payload): record holds that stripe across the real
//! call, so the recorded order is the kernel's; replay makes the calls in
//! that order and asks for each mapping at its recorded address
//! (`MAP_FIXED_NOREPLACE`), and an address it cannot have is a divergence.

use core::ffi::{c_int, c_void};

use libc::{off_t, size_t};
use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Replayed};
use crate::sys;

fn address(p: *mut c_void) -> u64 {
    p as u64
}

unsafe extern "C" fn mmap_impl(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    let real =
        |at: *mut c_void, flags: c_int| sys::mmap_raw(at as usize, len, prot, flags, fd, offset);
    events::log_after_call_or_recorded(
        EventKind::Alloc,
        pseudo::MAPPINGS,
        len as u64,
        0,
        || real(addr, flags),
        |&p| address(p),
        |recorded| {
            let fixed = flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0;
            if fixed || recorded == address(libc::MAP_FAILED) {
                return Replayed::CallReal;
            }
            // Ask for the recorded address; if it is taken, the plain call
            // gives another one and the result check reports it.
            let p = real(recorded as *mut c_void, flags | libc::MAP_FIXED_NOREPLACE);
            if address(p) == recorded {
                Replayed::Return(p)
            } else {
                if p != libc::MAP_FAILED {
                    sys::munmap_raw(p, len);
                }
                Replayed::CallReal
            }
        },
    )
}

/// `mmap` and `mmap64` (the same call on x86-64).
macro_rules! mmap_entries {
    ($($name:ident),*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            addr: *mut c_void,
            len: size_t,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            offset: off_t,
        ) -> *mut c_void {
            // SAFETY: forwarding the caller's arguments.
            unsafe { mmap_impl(addr, len, prot, flags, fd, offset) }
        }
    )*};
}

mmap_entries!(mmap, mmap64);

#[unsafe(no_mangle)]
pub extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    events::log_after_call(
        EventKind::Free,
        pseudo::MAPPINGS,
        len as u64,
        0,
        || {
            // SAFETY: the caller's range; the kernel checks it.
            let r = unsafe { libc::syscall(libc::SYS_munmap, addr, len) };
            if r < 0 {
                sys::set_errno(-r as c_int);
                -1
            } else {
                0
            }
        },
        |_| address(addr),
    )
}

/// `mremap`: variadic in C (a new address follows with MREMAP_FIXED),
/// declared with it as a plain argument, which the x86-64 calling
/// convention makes the same.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    events::log_after_call(
        EventKind::Alloc,
        pseudo::MAPPINGS,
        new_len as u64,
        0,
        || {
            // SAFETY: the caller's arguments; the kernel checks them.
            let r =
                unsafe { libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr) };
            if (-4095..0).contains(&r) {
                sys::set_errno(-r as c_int);
                libc::MAP_FAILED
            } else {
                r as *mut c_void
            }
        },
        |&p| address(p),
    )
}
