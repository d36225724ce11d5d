//! The time-stamp counter (`rdtsc`, `rdtscp`): a value that differs from run
//! to run, read by an instruction rather than a call, so interposition
//! cannot see it. In record and replay modes the runtime makes the
//! instruction fault (`prctl(PR_SET_TSC, PR_TSC_SIGSEGV)`, inherited by every
//! thread created afterwards), and the SIGSEGV handler emulates it: in the
//! program's code the value is an event like `clock_gettime`'s (logged at
//! record, returned at replay); inside the vDSO (glibc's clock_gettime,
//! whose result is itself an event) and libomp (which times its spinning
//! with it) it is the real counter, unlogged.

use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};

/// The vDSO's address range, where the counter is read for the real clock.
static VDSO_START: AtomicUsize = AtomicUsize::new(0);
static VDSO_END: AtomicUsize = AtomicUsize::new(0);

/// Makes the counter-reading instructions fault in this thread and every
/// thread it creates from now on. Returns false if the kernel refuses.
pub(crate) fn trap_reads() -> bool {
    locate_vdso();
    // SAFETY: prctl with integer arguments; only changes this thread's flag.
    unsafe {
        libc::syscall(
            libc::SYS_prctl,
            libc::PR_SET_TSC,
            libc::PR_TSC_SIGSEGV,
            0,
            0,
            0,
        ) == 0
    }
}

/// Lets this thread (and threads and programs it starts) read the counter
/// again: a forked child runs unrecorded, without the handler.
pub(crate) fn allow_reads() {
    // SAFETY: prctl with integer arguments; only changes this thread's flag.
    unsafe {
        libc::syscall(
            libc::SYS_prctl,
            libc::PR_SET_TSC,
            libc::PR_TSC_ENABLE,
            0,
            0,
            0,
        )
    };
}

/// Reads the real counter (briefly allowing it for this thread).
fn read_counter() -> u64 {
    // SAFETY: prctl with integer arguments; rdtsc has no preconditions once
    // allowed; the flag is put back at once.
    unsafe {
        libc::syscall(
            libc::SYS_prctl,
            libc::PR_SET_TSC,
            libc::PR_TSC_ENABLE,
            0,
            0,
            0,
        );
        let value = core::arch::x86_64::_rdtsc();
        libc::syscall(
            libc::SYS_prctl,
            libc::PR_SET_TSC,
            libc::PR_TSC_SIGSEGV,
            0,
            0,
            0,
        );
        value
    }
}

/// Finds the vDSO from the auxiliary vector and its program headers (once:
/// the trap is set again after every command a thread starts).
fn locate_vdso() {
    if VDSO_START.load(Ordering::Relaxed) != 0 {
        return;
    }
    // SAFETY: getauxval only reads the auxiliary vector.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    if base == 0 {
        return;
    }
    // SAFETY: the kernel maps a complete ELF image at `base`: the header's
    // program-header table lies inside it.
    let end = unsafe {
        let header = base as *const u8;
        let phoff = header.add(32).cast::<u64>().read_unaligned() as usize;
        let phentsize = usize::from(header.add(54).cast::<u16>().read_unaligned());
        let phnum = usize::from(header.add(56).cast::<u16>().read_unaligned());
        (0..phnum)
            .map(|i| header.add(phoff + i * phentsize))
            .filter(|ph| ph.cast::<u32>().read_unaligned() == libc::PT_LOAD)
            .map(|ph| {
                let vaddr = ph.add(16).cast::<u64>().read_unaligned() as usize;
                let memsz = ph.add(40).cast::<u64>().read_unaligned() as usize;
                vaddr + memsz
            })
            .max()
            .unwrap_or(0)
    };
    VDSO_START.store(base, Ordering::Relaxed);
    VDSO_END.store(base + end.max(4096), Ordering::Relaxed);
}

/// The length of a counter-reading instruction at `pc` (rdtsc: 2 bytes,
/// rdtscp: 3), or None.
fn counter_read_at(pc: usize) -> Option<usize> {
    // SAFETY: `pc` is the address of the instruction that just faulted, so
    // its bytes are mapped and readable (x86 code is readable).
    let bytes = unsafe { core::ptr::read_unaligned(pc as *const [u8; 3]) };
    match bytes {
        [0x0f, 0x31, _] => Some(2),
        [0x0f, 0x01, 0xf9] => Some(3),
        _ => None,
    }
}

/// If the SIGSEGV described by `context` is a trapped counter read,
/// performs it (see the module doc) and returns true: the handler then
/// returns and the thread goes on after the instruction.
pub(crate) fn emulate(context: *mut c_void) -> bool {
    let uc = context.cast::<libc::ucontext_t>();
    // SAFETY: the kernel passes a valid ucontext to SA_SIGINFO handlers.
    let pc = unsafe { (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] } as usize;
    let Some(len) = counter_read_at(pc) else {
        return false;
    };
    let in_vdso = pc >= VDSO_START.load(Ordering::Relaxed) && pc < VDSO_END.load(Ordering::Relaxed);
    let value = if in_vdso {
        read_counter()
    } else {
        crate::events::log_clock_value(pc as u64, read_counter)
    };
    // SAFETY: as above; the registers rdtsc(p) writes, and the instruction
    // pointer past it, so the thread resumes as if it had executed.
    unsafe {
        let regs = &mut (*uc).uc_mcontext.gregs;
        regs[libc::REG_RAX as usize] = (value & 0xffff_ffff) as i64;
        regs[libc::REG_RDX as usize] = (value >> 32) as i64;
        if len == 3 {
            // rdtscp also loads IA32_TSC_AUX (the CPU number): fixed, so
            // that it is the same at replay.
            regs[libc::REG_RCX as usize] = 0;
        }
        regs[libc::REG_RIP as usize] += len as i64;
    }
    true
}
