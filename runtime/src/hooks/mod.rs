//! The ThreadSanitizer ABI: every `__tsan_*` function gcc and clang emit.
//!
//! Call sites: a hook's caller is the instrumented instruction, so the site
//! of an event is the hook's return address. Rust has no stable
//! `__builtin_return_address`, so each hook is a two-instruction naked stub
//! that loads `[rsp]` (the return address) into the first free argument
//! register and jumps to the implementation, which takes it as an extra
//! argument.

pub mod access;
pub mod atomic;
pub mod misc;

/// Exports `$name` as a stub that passes its return address in register
/// `$reg` (the first argument register the C signature leaves free) to
/// `$imp`, whose last parameter is `site: u64`.
macro_rules! with_site {
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
pub(crate) use with_site;
