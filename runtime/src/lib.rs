//! The runtime injected into instrumented programs: it exports the
//! ThreadSanitizer ABI (`__tsan_*` hooks that gcc and clang emit with
//! `-fsanitize=thread`), interposes the pthread, allocator, memory, stdio and
//! time functions, and, when `RR_LITE_MODE=record`, writes every shared
//! access and synchronisation event of the program into a crash-proof
//! per-thread log whose Lamport clocks give a true global order.
//! Without a mode it is inert: hooks return at once, wrappers forward.
//!
//! This is the only crate with `unsafe` code and FFI. Rules for everything
//! in it: hooks never allocate (the runtime has its own allocator for
//! set-up), never take std locks, never unwind (panic = abort), and mark the
//! thread busy while they run so that nothing they call re-enters them.

#![deny(unsafe_op_in_unsafe_fn)]
// The exported C symbols have C names.
#![allow(non_snake_case)]

mod alloc;
mod chaos;
mod debugger;
mod descriptors;
mod events;
mod fast_tls;
mod handover;
mod heap;
mod hooks;
mod ids;
mod inherited;
mod init;
mod input;
mod interpose;
mod log;
mod mode;
mod own_code;
mod own_stack;
mod problems;
mod quantum;
mod raw_memory;
mod read_only;
mod real;
mod record;
mod replay;
mod segv_action;
mod site;
mod snapshot;
mod stripes;
mod sys;
mod thread;
mod thread_end;
mod tsc;

#[cfg(not(test))]
#[global_allocator]
static RUNTIME_ALLOCATOR: alloc::RuntimeAllocator = alloc::RuntimeAllocator::new();

type Vector = *const *const core::ffi::c_char;

/// glibc calls `.init_array` entries with (argc, argv, envp).
extern "C" fn on_load(_argc: core::ffi::c_int, argv: Vector, envp: Vector) {
    init::initialise(argv, envp);
}

#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn(core::ffi::c_int, Vector, Vector) = on_load;
