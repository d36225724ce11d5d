//! Starting other processes.
//!
//! fork: a forking program cannot be recorded yet (the child would need a
//! trace of its own). Record warns, naming the call site, and notes it in
//! the trace, which makes the trace incomplete (replay refuses it), then
//! lets the fork proceed: the child runs unrecorded (inert: see
//! `init::after_fork_in_child`), the parent goes on being recorded.
//!
//! Commands (system, popen, posix_spawn, exec): they run unrecorded, in
//! both modes (the environment says inert: `init::leave_children_inert`).
//! glibc starts them with `clone(CLONE_VM | CLONE_VFORK)`, which runs no
//! fork handler, so the child would inherit the counter trap
//! (`crate::tsc`) into the command it execs, whose loader reads the
//! counter and dies of SIGSEGV: the calling thread lifts the trap around
//! the call. `system`'s status comes from outside (what the command
//! found): recorded, and served at replay, where the command runs again.
//! popen is in `streams`.

use core::ffi::c_char;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::events;
use crate::mode::{self, Mode};
use crate::real;
use crate::site::{self, with_site};

extern "C" fn fork_impl(site: u64) -> libc::pid_t {
    if mode::current() == Mode::Record {
        note_fork(site);
    }
    // Copying the address space takes a while: nothing needs to wait.
    events::before_blocking();
    // SAFETY: forwarding.
    unsafe { real::fork() }
}
with_site!(fork => fork_impl, "rdi");
// A vfork child may only exec or _exit, which a fork child may too; one
// wrapper frame cannot be shared by two processes, so vfork forks.
with_site!(vfork => fork_impl, "rdi");

/// Warns about the first fork and notes it in the trace.
fn note_fork(site: u64) {
    static NOTED: AtomicBool = AtomicBool::new(false);
    if NOTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let mut buf = [0u8; site::DESCRIBED_MAX];
    let at = site::describe(site, &mut buf);
    let what: [&[u8]; 3] = [
        b"the program called fork() at ",
        at,
        b": forking programs cannot be recorded yet",
    ];
    crate::sys::warn(&what);
    crate::problems::note(&[what[0], what[1], what[2], b" (the child ran unrecorded)"]);
}

/// Runs `op`, which starts a command, with the counter trap lifted for
/// the calling thread (inherited by the command: see the module doc).
pub(super) fn starting_command<R>(op: impl FnOnce() -> R) -> R {
    if !mode::active() {
        return op();
    }
    crate::tsc::allow_reads();
    let result = op();
    crate::tsc::trap_reads();
    result
}

extern "C" fn system_impl(command: *const c_char, site: u64) -> libc::c_int {
    // SAFETY: forwarding.
    let run = || starting_command(|| unsafe { real::system(command) });
    if command.is_null() {
        // Only asks whether a shell exists.
        return run();
    }
    let status = events::blocking_call(run);
    events::log_outside_value(site, || status as u32 as u64) as u32 as libc::c_int
}
with_site!(system => system_impl, "rsi");

/// posix_spawn has six arguments: no register is left for the call site.
#[unsafe(no_mangle)]
pub extern "C" fn posix_spawn(
    pid: *mut libc::pid_t,
    path: *const c_char,
    actions: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> libc::c_int {
    // SAFETY: forwarding.
    starting_command(|| unsafe { real::posix_spawn(pid, path, actions, attr, argv, envp) })
}

/// As `posix_spawn`, searching PATH.
#[unsafe(no_mangle)]
pub extern "C" fn posix_spawnp(
    pid: *mut libc::pid_t,
    file: *const c_char,
    actions: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> libc::c_int {
    // SAFETY: forwarding.
    starting_command(|| unsafe { real::posix_spawnp(pid, file, actions, attr, argv, envp) })
}

type Argv = *const *const c_char;

/// exec replaces the program (the trace ends there); the new image keeps
/// the trap unless lifted. They return only on failure, trap restored.
#[unsafe(no_mangle)]
pub extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> libc::c_int {
    // SAFETY: forwarding.
    starting_command(|| unsafe { real::execve(path, argv, envp) })
}

#[unsafe(no_mangle)]
pub extern "C" fn execv(path: *const c_char, argv: Argv) -> libc::c_int {
    // SAFETY: forwarding.
    starting_command(|| unsafe { real::execv(path, argv) })
}

#[unsafe(no_mangle)]
pub extern "C" fn execvp(file: *const c_char, argv: Argv) -> libc::c_int {
    // SAFETY: forwarding.
    starting_command(|| unsafe { real::execvp(file, argv) })
}

#[unsafe(no_mangle)]
pub extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> libc::c_int {
    // SAFETY: forwarding.
    starting_command(|| unsafe { real::execvpe(file, argv, envp) })
}
