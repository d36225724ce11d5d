//! The runtime runs on a stack of its own, so that what it leaves behind on
//! the program's stack is the same in every mode.
//!
//! Why: a hook runs on the stack below its caller's frame, and the bytes it
//! writes there stay after it returns. A program that reads a local it did
//! not initialise (PARSEC's raytrace sums a dot product into an
//! uninitialised `float`) reads what the last deeper call left, and that was
//! often the runtime: its record path, its replay path and its verifying
//! path write different values at different depths. The replay then
//! computes something else (raytrace: a NaN camera) without any event
//! telling it apart until much later. So every entry into the runtime
//! switches to the thread's own stack first: the program's stack then only
//! sees the entry's return address, which the program's `call` wrote.
//!
//! The mechanism: one word of static TLS (initial-exec, as in
//! [`crate::fast_tls`]), `rr_lite_stack_slot`: the top of the thread's own
//! stack where it is free (lower while program code runs from inside the
//! runtime, [`on_program_stack`]), or 0 (the inert runtime, or before the
//! thread's stack is mapped). An entry ([`switching_entry!`]) jumps to the
//! implementation where it is if the slot is 0 or the stack pointer is
//! already on the own stack (an entry nested inside the runtime, or a
//! signal handler interrupting it); else it moves to the slot's address,
//! saves the program's stack pointer there (at `top - 16`, where
//! [`on_program_stack`] finds it), calls the implementation and returns on
//! the program's stack. It uses only `r10` and `r11`, which no C argument
//! uses, so arguments (and `al` of a variadic call) pass unchanged, and it
//! writes no thread-local memory: about ten instructions an entry.
//!
//! Stacks: `STACK_LEN` bytes each at a fixed address per logical thread id
//! (`OWN_STACKS + id * STACK_LEN`, the lowest page a guard), mapped
//! `MAP_NORESERVE` when the thread starts: the same address in record and
//! replay, so nothing of the runtime's differs by where its stack is. A
//! finished thread's pages are given back (`MADV_DONTNEED`); the range stays
//! reserved, so a late hook (a destructor) finds zero pages, not a fault.
//!
//! Entries that call program code back (an exit's handlers, a library's
//! constructors in `dlopen`, directory walks' callbacks) stay on the
//! program's stack ([`crate::site::with_site_here`]), so the program's
//! frames never sit on the runtime's stack; the OpenMP region body goes back
//! to the program's stack through [`on_program_stack`].

use core::ffi::c_void;

crate::fast_tls::define_tls_word!("rr_lite_stack_slot");

/// Where the own stacks are (see ARCHITECTURE.md, "Address space"): after
/// the runtime's private arena and mappings (`crate::alloc`), far below the
/// program's mappings.
const OWN_STACKS: usize = 0x6800_0000_0000;
/// Bytes of one thread's own stack, its guard page included.
const STACK_LEN: usize = 1 << 20;
/// Threads with an own stack: ids below this (1 TiB of address space).
const MAX_THREADS: u32 = 1 << 20;
const PAGE: usize = 4096;

// The stacks stay clear of the runtime's mappings (1 TiB after their start)
// and of the program's (near the top of the 47-bit space).
const _: () = assert!(OWN_STACKS >= crate::alloc::MAPPING_REGION + (1 << 40));
const _: () = assert!(OWN_STACKS + MAX_THREADS as usize * STACK_LEN <= 0x7000_0000_0000);
// The entries' assembly compares against this length written out.
const _: () = assert!(STACK_LEN == 0x100000);

/// The assembly of a switching entry: `$prefix` (the site's load), then
/// `$call` on the own stack (see the module doc), or `$jump` where it is.
/// Shared by [`switching_entry!`], `crate::site::with_site!` and [`run`].
/// The call frame information lets debuggers and unwinders walk from the
/// implementation back to the program's frames: during the call the
/// caller's frame is at the program's stack pointer saved on top of the own
/// stack (`[rsp] + 8`). (`0x100000` is `STACK_LEN`.)
macro_rules! switch_and_call {
    ($prefix:expr, $call:literal, $jump:literal) => {
        concat!(
            ".cfi_startproc\n",
            $prefix,
            "\n",
            ".cfi_remember_state\n",
            "mov r11, qword ptr [rip + rr_lite_stack_slot@GOTTPOFF]\n",
            "mov r10, qword ptr fs:[r11]\n",
            "test r10, r10\n",
            "jz 2f\n",
            "mov r11, r10\n",
            "sub r11, rsp\n",
            "cmp r11, 0x100000\n",
            "jb 2f\n",
            "xchg rsp, r10\n",
            ".cfi_def_cfa r10, 8\n",
            "sub rsp, 8\n",
            "push r10\n",
            // CFA = [rsp] + 8 (DW_CFA_def_cfa_expression: breg7 0, deref, plus 8).
            ".cfi_escape 0x0f, 0x05, 0x77, 0x00, 0x06, 0x23, 0x08\n",
            $call,
            "\n",
            "pop rsp\n",
            ".cfi_def_cfa rsp, 8\n",
            "ret\n",
            "2:\n",
            ".cfi_restore_state\n",
            $jump,
            "\n",
            ".cfi_endproc\n",
        )
    };
}
pub(crate) use switch_and_call;

/// Exports `$name` as an entry that runs `$imp` (same C signature, at most
/// six integer arguments: none on the stack) on the thread's own stack,
/// after `$prefix` (`crate::site::with_site!` loads the site there).
macro_rules! switching_entry {
    ($name:ident => $imp:path) => {
        crate::own_stack::switching_entry!($name => $imp, "");
    };
    ($name:ident => $imp:path, $prefix:expr) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                crate::own_stack::switch_and_call!($prefix, "call {imp}", "jmp {imp}"),
                imp = sym $imp,
            )
        }
    };
}
pub(crate) use switching_entry;

/// Calls `f(arg)` on the own stack (or where it is, as an entry does).
#[unsafe(naked)]
unsafe extern "C" fn call_on_own_stack(arg: *mut c_void, f: extern "C" fn(*mut c_void)) {
    core::arch::naked_asm!(switch_and_call!("", "call rsi", "jmp rsi"))
}

/// Runs `op` on the calling thread's own stack (for the runtime's own work
/// outside an entry: a thread's registration before its start routine, the
/// start-up before `main`).
pub(crate) fn run<F: FnOnce()>(op: F) {
    let mut op = Some(op);
    extern "C" fn shim<F: FnOnce()>(arg: *mut c_void) {
        // SAFETY: `arg` is the `Option<F>` of `run`, alive for the call.
        let op = unsafe { &mut *arg.cast::<Option<F>>() };
        if let Some(op) = op.take() {
            op();
        }
    }
    // SAFETY: `shim::<F>` takes the pointer to `op` it is given and runs it
    // once; the switch keeps every register the ABI asks a callee to keep.
    unsafe { call_on_own_stack((&mut op as *mut Option<F>).cast(), shim::<F>) };
}

/// Calls the program's `f(arg)` on the program's stack when the thread runs
/// on its own stack inside an entry (the OpenMP region body, which libgomp
/// calls from inside `GOMP_parallel`): just below the entry's return
/// address, where a native call would have put the frames, with the
/// callee-saved registers zeroed (the program's frames push them: the
/// runtime's values would differ by mode). Nested entries in `f` use the
/// own stack below the caller's frames.
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn on_program_stack(
    arg: *mut c_void,
    f: unsafe extern "C" fn(*mut c_void),
) {
    core::arch::naked_asm!(
        "mov r11, qword ptr [rip + rr_lite_stack_slot@GOTTPOFF]",
        "mov r10, qword ptr fs:[r11]",
        "test r10, r10",
        "jz 2f",
        "mov rax, r10",
        "sub rax, rsp",
        "cmp rax, 0x100000",
        "jae 2f",
        "push rbx",
        "push rbp",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        // The free top of this level, put back after the call.
        "push r10",
        // Entries in `f` switch to below these frames (16-byte aligned).
        "mov qword ptr fs:[r11], rsp",
        // The program's stack pointer at the entry, saved below the top.
        "mov r10, qword ptr [r10 - 16]",
        "xor ebx, ebx",
        "xor ebp, ebp",
        "xor r12d, r12d",
        "xor r13d, r13d",
        "xor r14d, r14d",
        "xor r15d, r15d",
        "lea rsp, [r10 - 8]",
        "and rsp, -16",
        "call rsi",
        "mov r11, qword ptr [rip + rr_lite_stack_slot@GOTTPOFF]",
        "mov rsp, qword ptr fs:[r11]",
        "pop r10",
        "mov qword ptr fs:[r11], r10",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbp",
        "pop rbx",
        "ret",
        "2:",
        "jmp rsi",
    )
}

fn stack_base(id: u32) -> usize {
    OWN_STACKS + id as usize * STACK_LEN
}

/// Maps the own stack of the calling thread (logical id `id`) and makes
/// entries use it. The same code and values in every mode, so what it
/// leaves on the program's stack is the same too. Without a stack (an id
/// past the range, or the address taken) entries run where they are.
pub(crate) fn adopt(id: u32) {
    if id >= MAX_THREADS {
        return;
    }
    let base = stack_base(id);
    if !crate::alloc::reserve_fixed(base, STACK_LEN) {
        return;
    }
    // The lowest page faults instead of running into the next stack.
    crate::sys::mprotect_raw(base, PAGE, libc::PROT_NONE);
    set_free_top(base + STACK_LEN);
}

/// Gives the pages of the calling thread's finished own stack back (the
/// range stays mapped: a late entry finds zeroed pages).
pub(crate) fn release(id: u32) {
    let top = stack_base(id) + STACK_LEN;
    let here = &top as *const usize as usize;
    if id >= MAX_THREADS || free_top() != top || (stack_base(id)..top).contains(&here) {
        // No stack, or the thread is on it (an entry that does not return).
        return;
    }
    crate::sys::madvise_raw(stack_base(id) + PAGE, STACK_LEN - PAGE, libc::MADV_DONTNEED);
}

fn set_free_top(top: usize) {
    crate::fast_tls::tls_word!(write "rr_lite_stack_slot", top);
}

fn free_top() -> usize {
    crate::fast_tls::tls_word!(read "rr_lite_stack_slot")
}
