//! Call sites: a hook's caller is the instrumented instruction, so the site
//! of an event is the hook's return address (for interposed functions: the
//! return address of the call into them). Rust has no stable
//! `__builtin_return_address`, so each hook is a two-instruction naked stub
//! that loads `[rsp]` (the return address) into the first free argument
//! register and jumps to the implementation, which takes it as an extra
//! argument. The stub also moves to the runtime's own stack
//! (`crate::own_stack`).

/// Exports `$name` as a stub that passes its return address in register
/// `$reg` (the first argument register the C signature leaves free) to
/// `$imp`, whose last parameter is `site: u64`, and runs `$imp` on the
/// thread's own stack (`crate::own_stack`).
macro_rules! with_site {
    ($name:ident => $imp:path, $reg:literal) => {
        crate::own_stack::switching_entry!($name => $imp, concat!("mov ", $reg, ", [rsp]"));
    };
}
pub(crate) use with_site;

/// [`with_site!`] for an entry that runs program code inside (an exit's
/// handlers, a library's constructors, a walk's callbacks): it stays on the
/// program's stack, where those frames belong.
macro_rules! with_site_here {
    ($name:ident => $imp:path, $reg:literal) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", [rsp]"),
                "jmp {imp}",
                imp = sym $imp,
            )
        }
    };
}
pub(crate) use with_site_here;

/// The assembly of an entry's jump to the C library's function of two
/// arguments (in `rdi`, `rsi`): its address from `{slot}`, or from `{find}`
/// (an `extern "C" fn() -> usize` that fills the slot) the first time, the
/// arguments and the program's return address kept, so that the runtime
/// does not stand between the program and that function (`dlsym`'s caller,
/// an exception out of a once routine). The template of a `naked_asm!`.
macro_rules! jump_to_real {
    () => {
        concat!(
            "mov rax, qword ptr [rip + {slot}]\n",
            "test rax, rax\n",
            "jz 3f\n",
            "jmp rax\n",
            "3:\n",
            "push rdi\n",
            "push rsi\n",
            "sub rsp, 8\n",
            "call {find}\n",
            "add rsp, 8\n",
            "pop rsi\n",
            "pop rdi\n",
            "jmp rax\n",
        )
    };
}
pub(crate) use jump_to_real;

/// Most bytes of a site described by [`describe`].
pub(crate) const DESCRIBED_MAX: usize = 600;

/// The call at return address `site` as `<file>+0x<offset>`: the call
/// instruction's offset in its module (what `addr2line -e <file>` takes
/// for a position-independent executable or library), or the bare address
/// if no module holds it. The runtime cannot read debug information; this
/// names the call site without it.
pub(crate) fn describe(site: u64, buf: &mut [u8; DESCRIBED_MAX]) -> &[u8] {
    let call = site.saturating_sub(1);
    // SAFETY: dladdr only reads the loader's tables and fills `info`; the
    // file name it returns lives as long as the module stays loaded.
    let (file, base) = unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        if libc::dladdr(call as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            (&b""[..], 0)
        } else {
            let name = core::ffi::CStr::from_ptr(info.dli_fname).to_bytes();
            (name, info.dli_fbase as u64)
        }
    };
    let mut digits = [0u8; 16];
    let offset = crate::sys::hex(call - base, &mut digits);
    let mut len = 0;
    for part in [file, if file.is_empty() { b"0x" } else { b"+0x" }, offset] {
        let n = part.len().min(buf.len() - len);
        buf[len..len + n].copy_from_slice(&part[..n]);
        len += n;
    }
    &buf[..len]
}
