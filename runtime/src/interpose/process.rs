//! fork: a forking program cannot be recorded yet (the child would need a
//! trace of its own). Record warns, naming the call site, and notes it in
//! the trace, which makes the trace incomplete (replay refuses it), then
//! lets the fork proceed: the child runs unrecorded (inert: see
//! `init::after_fork_in_child`), the parent goes on being recorded.

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
