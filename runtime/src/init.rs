//! Start-up (mode from the environment, main thread, module map, signal
//! handlers), thread registration and the end of threads and of the process.

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicBool, Ordering};

use rr_lite_trace::codec::NO_PARENT;
use rr_lite_trace::{EventKind, pseudo};

use crate::events;
use crate::log::LogWriter;
use crate::mode::{self, Mode};
use crate::sys;
use crate::thread::THREAD;

static INITIALISED: AtomicBool = AtomicBool::new(false);
static EXIT_LOGGED: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    static environ: *const *const c_char;
}

/// The value of `name` in a NUL-terminated `NAME=value` vector.
fn lookup(envp: *const *const c_char, name: &core::ffi::CStr) -> Option<&'static [u8]> {
    if envp.is_null() {
        return None;
    }
    let name = name.to_bytes();
    (0..)
        // SAFETY: envp is a NUL-terminated array of C strings (the process
        // environment), which lives as long as the process.
        .map(|i| unsafe { *envp.add(i) })
        .take_while(|entry| !entry.is_null())
        // SAFETY: each entry is a NUL-terminated string.
        .map(|entry| unsafe { core::ffi::CStr::from_ptr(entry) }.to_bytes())
        .find_map(|entry| entry.strip_prefix(name)?.strip_prefix(b"="))
}

/// Runs from `.init_array` (after libc is initialised, before the program's
/// constructors) with the process's argv and envp, and from `__tsan_init`.
/// gcc calls `__tsan_init` from the executable's `.preinit_array`, before
/// libc has set `environ`: such a call is deferred to the next one.
/// Only the first call that can see the environment does anything.
pub(crate) fn initialise(argv: *const *const c_char, envp: *const *const c_char) {
    let envp = if envp.is_null() {
        // SAFETY: reading libc's environ pointer (null before libc's init).
        unsafe { environ }
    } else {
        envp
    };
    if envp.is_null() || INITIALISED.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(requested) = lookup(envp, mode::MODE_ENV) else {
        return;
    };
    if requested != b"record" && requested != b"replay" {
        // Exec'd by a recorded or replayed program, whose counter trap the
        // exec kept: read the counter normally.
        crate::tsc::allow_reads();
    }
    let on_own_stack = |mode| {
        // Everything before `main` runs on the main thread's own stack: what
        // it leaves differs by mode, and main's frames go there.
        crate::own_stack::adopt(crate::thread::MAIN_THREAD);
        crate::own_stack::run(|| start(mode, argv, envp));
    };
    match requested {
        b"record" => on_own_stack(Mode::Record),
        b"replay" => on_own_stack(Mode::Replay),
        b"" | b"inert" => {}
        other => sys::warn(&[
            b"unknown RR_LITE_MODE '",
            other,
            b"': running without recording",
        ]),
    }
}

/// The program stops when `rr-lite record` or `replay` dies (killed with
/// SIGKILL, say): a recording nobody finishes would otherwise go on and
/// grow, a replay nobody watches could wait forever. The trace stays
/// `incomplete`. The recorder's thread that started the program waits for
/// it, so only the recorder's end sends the signal. If the recorder is
/// already gone (the program was adopted by init), stop now.
fn die_with_the_supervisor() {
    // SAFETY: prctl with an integer argument; getppid cannot fail (raw:
    // the program's getppid is interposed, an event).
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::syscall(libc::SYS_getppid) == 1 {
            libc::_exit(128 + libc::SIGKILL);
        }
    }
}

/// Record and replay start the same way (same calls, same order), so the
/// program finds the same heap and mappings in both.
fn start(mode: Mode, argv: *const *const c_char, envp: *const *const c_char) {
    ensure_no_aslr(argv, envp);
    let Some(dir) = lookup(envp, mode::TRACE_ENV).filter(|d| mode::TRACE_DIR.set(d)) else {
        sys::warn(&[b"RR_LITE_MODE needs RR_LITE_TRACE=<trace directory>: running normally"]);
        return;
    };
    // (Before the runtime opens anything of its own.)
    match mode {
        Mode::Record => crate::inherited::note(dir),
        _ => crate::inherited::restore(dir),
    }
    die_with_the_supervisor();
    crate::snapshot::enable(lookup(envp, crate::snapshot::SNAPSHOT_ENV));
    crate::real::resolve_all();
    crate::real::resolve_newer();
    crate::raw_memory::resolve_all();
    crate::own_code::locate();
    crate::read_only::locate();
    load_unwinder();
    if mode == Mode::Replay && !open_replay_session(dir, envp) {
        // SAFETY: the replayer cannot run this program as recorded.
        unsafe { libc::_exit(rr_lite_trace::plan::DIVERGENCE_STATUS) };
    }
    if mode == Mode::Record {
        copy_module_map(dir);
        remove_stale_openmp_registration();
    }
    if !crate::heap::reserve() {
        sys::warn(&[b"cannot reserve the heap range: heap addresses may differ at replay"]);
    }
    crate::thread_end::create_exit_key();
    if mode == Mode::Record {
        crate::chaos::configure(lookup(envp, crate::chaos::CHAOS_ENV));
        crate::quantum::configure(lookup(envp, crate::quantum::QUANTUM_ENV));
    }
    register_thread(mode, 0, NO_PARENT);
    install_fatal_signal_handlers();
    if !crate::tsc::trap_reads() {
        sys::warn(&[b"cannot trap rdtsc: time-stamp counter reads will differ at replay"]);
    }
    // SAFETY: registering a handler that runs at exit with the status.
    unsafe { on_exit(at_exit, core::ptr::null_mut()) };
    // SAFETY: registering a handler that runs in the child of a fork.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    leave_children_inert(envp);
    mode::set(mode);
}

/// Record: removes libomp's registration file named after this process
/// (`/dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>`), which can only be left by
/// an ended process that had the same id (libomp registers at its first
/// call, later than this). Found there, libomp would take the file over
/// through another path of its start-up, with events that a replay, which
/// removes such files before it starts (`replayer::leftovers`), does not
/// make: both modes start without it.
fn remove_stale_openmp_registration() {
    let mut path = [0u8; 96];
    let mut pid_digits = [0u8; 20];
    let mut uid_digits = [0u8; 20];
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let path = sys::concat(
        &[
            b"/dev/shm/__KMP_REGISTERED_LIB_",
            sys::decimal(u64::from(sys::getpid_raw()), &mut pid_digits),
            b"_",
            sys::decimal(u64::from(uid), &mut uid_digits),
            b"\0",
        ],
        &mut path,
    );
    // SAFETY: a NUL-terminated path in a local buffer (at most 30 + 20 +
    // 1 + 20 + 1 bytes); unlink only reads it. Raw: the runtime's `unlink`
    // is an event of the program's.
    unsafe { libc::syscall(libc::SYS_unlink, path.as_ptr()) };
}

/// Loads the stack unwinder (libgcc_s) now, the same way in record and
/// replay. glibc loads it on the first pthread_exit or cancellation, in
/// whichever thread gets there first, and loading it allocates: a race
/// the recorded order of allocations does not hold. Done here, before the
/// mode is set, it is glibc's allocator that serves it and no thread races
/// for it. glibc (2.34 and later) shares the loaded unwinder between
/// backtrace() and thread exit, so one backtrace() does it.
fn load_unwinder() {
    let mut frame = [core::ptr::null_mut(); 1];
    // SAFETY: backtrace writes at most one frame address into `frame`.
    unsafe { libc::backtrace(frame.as_mut_ptr(), 1) };
}

/// Finds the session directory and maps the shared state.
fn open_replay_session(trace: &[u8], envp: *const *const c_char) -> bool {
    let Some(session) = lookup(envp, mode::SESSION_ENV) else {
        sys::warn(&[b"replay needs RR_LITE_SESSION (run it through rr-lite replay)"]);
        return false;
    };
    let mut path = [0u8; 4096];
    let prefix = b"/replay-";
    let len = trace.len() + prefix.len() + session.len();
    if len >= path.len() {
        return false;
    }
    path[..trace.len()].copy_from_slice(trace);
    path[trace.len()..trace.len() + prefix.len()].copy_from_slice(prefix);
    path[trace.len() + prefix.len()..len].copy_from_slice(session);
    if !mode::SESSION_DIR.set(&path[..len]) || !crate::replay::open_session(&path[..len]) {
        sys::warn(&[b"cannot open the replay session in the trace directory"]);
        return false;
    }
    true
}

/// The child of a fork is not the recorded (or replayed) process: it runs
/// unrecorded, inert, so that it writes nothing into the parent's logs or
/// replay state (record has noted the fork: see interpose/process.rs).
/// Runs first among the child's fork handlers (registered at start-up,
/// before the program's), with only the forking thread alive.
extern "C" fn after_fork_in_child() {
    mode::set(Mode::Inert);
    if let Some(t) = crate::fast_tls::registered() {
        crate::replay::stop_counting(&t.replay);
    }
    // The counter trap is inherited, and kept across exec: the child, and
    // whatever it execs, run normally.
    crate::tsc::allow_reads();
    crate::heap::serve_forked_child();
    crate::descriptors::forget_holder();
}

/// Sets RR_LITE_MODE to "inert" in the process's own environment (in
/// place, the same in record and replay), so that a program it starts
/// (exec, system, popen) runs unrecorded instead of recording into, or
/// replaying from, this process's trace.
fn leave_children_inert(envp: *const *const c_char) {
    let Some(value) = lookup(envp, mode::MODE_ENV) else {
        return;
    };
    const INERT: &[u8] = b"inert";
    if value.len() < INERT.len() {
        return;
    }
    // SAFETY: `value` is the value part of an entry of the environment
    // the process started with (on its stack, writable; nothing that runs
    // before the runtime's start-up replaces RR_LITE_MODE), at least as
    // long as INERT, so INERT and the NUL after it stay within its bytes
    // and its own NUL.
    unsafe {
        let p = value.as_ptr().cast_mut();
        core::ptr::copy_nonoverlapping(INERT.as_ptr(), p, INERT.len());
        *p.add(INERT.len()) = 0;
    }
}

unsafe extern "C" {
    fn on_exit(f: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

/// Addresses must be the same at record and replay: re-execute with ASLR
/// off if it is on (rr-lite record turns it off already; this covers a
/// program started by hand with RR_LITE_MODE set).
fn ensure_no_aslr(argv: *const *const c_char, envp: *const *const c_char) {
    const QUERY: libc::c_ulong = 0xffff_ffff;
    // SAFETY: personality(0xffffffff) only queries.
    let persona = unsafe { libc::personality(QUERY) };
    if persona < 0 || persona & libc::ADDR_NO_RANDOMIZE != 0 || argv.is_null() {
        return;
    }
    // SAFETY: sets a flag of this process, inherited by the exec below.
    unsafe { libc::personality((persona | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) };
    // SAFETY: argv and envp are the program's NUL-terminated vectors;
    // execve only returns on failure.
    unsafe { libc::execve(c"/proc/self/exe".as_ptr(), argv, envp) };
    sys::warn(&[b"cannot re-execute with ASLR off: addresses may differ at replay"]);
}

/// Copies /proc/self/maps into the trace (module map for call sites).
fn copy_module_map(dir: &[u8]) {
    crate::descriptors::locked(|| {
        let out = sys::create_in_dir(dir, rr_lite_trace::dir::MAPS_FILE.as_bytes());
        let input = sys::open_raw(b"/proc/self/maps\0", libc::O_RDONLY | libc::O_CLOEXEC);
        if out >= 0 && input >= 0 {
            let mut buf = [0u8; 4096];
            loop {
                let n = sys::read_raw(input, &mut buf);
                if n <= 0 {
                    break;
                }
                sys::write_all(out, &buf[..n as usize]);
            }
        }
        sys::close_raw(out);
        sys::close_raw(input);
    });
}

/// Record: a thread's log could not be created (`errno`, 0 if unknown).
/// Said once per run. The thread runs unrecorded; every log still open
/// carries the mark when
/// it closes (`LogWriter::close`), since the note in the trace directory may
/// be refused as the log was (a sandbox such as Landlock, entered by the
/// program before it started threads).
fn log_not_created(errno: i32) {
    let first = !crate::problems::LOG_FAILED.swap(true, Ordering::Relaxed);
    let why: &[u8] = match errno {
        libc::EACCES | libc::EPERM => {
            b"permission denied (did the program enter a sandbox, such as Landlock?)"
        }
        libc::ENOSPC | libc::EDQUOT => b"no space left on the disk",
        libc::EROFS => b"read-only file system",
        libc::EMFILE | libc::ENFILE => b"too many open files",
        libc::ENOMEM => b"out of memory for its mapping",
        _ => b"the system refused it",
    };
    if !first {
        return;
    }
    let mut number = [0u8; 20];
    let number = sys::decimal(errno as u64, &mut number);
    // (No number when the failure left none: not "errno 0".)
    let (open, number, close): (&[u8], &[u8], &[u8]) = if errno > 0 {
        (b" (errno ", number, b")")
    } else {
        (b"", b"", b"")
    };
    sys::warn(&[
        b"cannot create a thread log in the trace directory: ",
        why,
        open,
        number,
        close,
        b": the thread runs unrecorded and the trace is incomplete",
    ]);
    crate::problems::note(&[
        b"a thread log could not be created (",
        why,
        b"): that thread's events are not in the trace",
    ]);
}

/// Gives the calling thread its logical id and its log (record) or plan
/// (replay).
pub(crate) fn register_thread(mode: Mode, id: u32, parent: u32) {
    THREAD.with(|t| {
        t.enter();
        t.register(id);
        t.record.set_id(id);
        crate::thread::set_kernel_tid(id);
        crate::fast_tls::set_current(t);
        if mode == Mode::Record {
            match LogWriter::create(mode::TRACE_DIR.get(), id, parent) {
                Ok(log) => t.record.with_log(|slot| *slot = log),
                Err(errno) => {
                    t.record.log_not_created();
                    log_not_created(errno);
                }
            }
            crate::chaos::thread_started(id);
        } else {
            match crate::replay::load_plan(id) {
                Some(plan) => crate::replay::start_thread(&t.replay, id, plan),
                // The main thread always has a plan: without it (a damaged
                // or missing file), stop rather than wait for nothing.
                None if id == crate::thread::MAIN_THREAD => {
                    sys::warn(&[b"cannot load the main thread's replay plan: stopping"]);
                    // SAFETY: ends the process at once; nothing has run yet.
                    unsafe { libc::_exit(rr_lite_trace::plan::DIVERGENCE_STATUS) };
                }
                // Created in the recording (its creator's plan had the id)
                // but the process ended before it logged anything: it never
                // runs the program's code here either.
                None => sys::wait_forever(),
            }
        }
        crate::thread_end::arm();
        t.leave();
    });
}

/// Logs the exit status once, from exit()/_exit() or the on_exit handler.
pub(crate) fn log_process_exit(status: c_int, site: u64) {
    let Some(id) = events::with_tracked(|t, _| t.id.get()) else {
        return;
    };
    // Chaos first (record only): the exit may wait for other threads; a
    // concurrent exit then finds the event not logged yet and logs it.
    if !EXIT_LOGGED.load(Ordering::Acquire) {
        crate::chaos::exiting(id);
    }
    if EXIT_LOGGED.swap(true, Ordering::AcqRel) {
        return;
    }
    events::drain_outputs();
    if mode::current() == Mode::Record {
        crate::chaos::note_steps();
        crate::record::note_spins();
    }
    // The exit event comes first: other threads may have logged events
    // ordered after it while the process was ending (another thread's
    // crash), which replay must let run before it waits for their ends.
    events::log_event(
        EventKind::ProcessExit,
        pseudo::PROCESS,
        0,
        site,
        status as u32 as u64,
    );
    wait_for_recorded_end();
    crate::thread_end::end_thread();
}

/// Replay: before the process ends (exit, crash), the other threads do
/// every event the recording has for them, and no more.
fn wait_for_recorded_end() {
    if mode::current() != Mode::Replay {
        return;
    }
    THREAD.with(|t| {
        t.enter();
        crate::replay::publish_all_and_go_on(&t.replay);
        crate::replay::wait_for_others(&t.replay);
        t.leave();
    });
}

static EXIT_SITE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Remembers where exit() was called, for the exit event.
pub(crate) fn note_exit_site(site: u64) {
    EXIT_SITE.store(site, Ordering::Relaxed);
}

/// Return from main ends in glibc's own call to exit, which does not go
/// through our wrapper: this handler catches it.
extern "C" fn at_exit(status: c_int, _arg: *mut c_void) {
    log_process_exit(status, EXIT_SITE.load(Ordering::Relaxed));
}

const FATAL_SIGNALS: [c_int; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGTRAP,
];

/// Logs which thread took a fatal signal, where, then lets it kill the
/// process as it would have (SA_RESETHAND restores the default action; the
/// faulting instruction runs again, or abort raises again).
extern "C" fn on_fatal_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let saved_errno = sys::errno();
    if signal == libc::SIGSEGV {
        if crate::tsc::emulate(context) {
            sys::set_errno(saved_errno);
            return;
        }
        // Not a counter read: the program's own handler's, if it has one
        // (`crate::segv_action`).
        if crate::segv_action::run_program_handler(signal, info, context) {
            sys::set_errno(saved_errno);
            return;
        }
        // A real fault, the program's action the default. SIGSEGV is installed without
        // SA_RESETHAND (counter reads come back here), so restore the
        // default action by hand before the instruction runs again.
        reset_to_default(signal);
    }
    // SAFETY: the kernel passes a valid siginfo and ucontext to SA_SIGINFO
    // handlers.
    let (fault_addr, pc) = unsafe {
        let uc = context.cast::<libc::ucontext_t>();
        // si_addr means a faulting address only for signals the kernel
        // raised for a fault (si_code > 0); abort's tgkill puts pid and uid
        // there, which differ between runs.
        let addr = if (*info).si_code > 0 {
            (*info).si_addr() as u64
        } else {
            0
        };
        (addr, (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64)
    };
    if events::with_tracked(|_, _| ()).is_some() {
        events::drain_outputs();
        // The event first, as at exit (`log_process_exit`).
        events::log_event(EventKind::FatalSignal, fault_addr, 0, pc, signal as u64);
        wait_for_recorded_end();
        events::release();
    }
    sys::set_errno(saved_errno);
}

fn install_fatal_signal_handlers() {
    for signal in FATAL_SIGNALS {
        // A fatal signal ends the process after one delivery; SIGSEGV also
        // carries the trapped counter reads (crate::tsc) and must stay.
        let once = if signal == libc::SIGSEGV {
            0
        } else {
            libc::SA_RESETHAND
        };
        install_handler(signal, once);
    }
    // The program's SIGSEGV actions are kept by the runtime from now on.
    crate::segv_action::own_segv();
}

/// Installs the runtime's handler for `signal`, with `flags` beside the
/// ones it always has. (The real sigaction: the program's, interposed,
/// keeps SIGSEGV's action aside.)
fn install_handler(signal: c_int, flags: c_int) {
    // SAFETY: a zeroed sigaction is a valid starting point; the handler
    // has the SA_SIGINFO signature.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = on_fatal_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | flags | libc::SA_NODEFER;
        libc::sigemptyset(&mut action.sa_mask);
        crate::real::sigaction(signal, &action, core::ptr::null_mut());
    }
}

/// Installs the runtime's SIGSEGV handler again with `flags` added: the
/// program asked for `SA_ONSTACK` (a handler for stack overflows).
pub(crate) fn reinstall_segv_handler(flags: c_int) {
    install_handler(libc::SIGSEGV, flags);
}

/// Puts `signal` back to its default action.
fn reset_to_default(signal: c_int) {
    // SAFETY: installing SIG_DFL with a zeroed, valid sigaction.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        crate::real::sigaction(signal, &action, core::ptr::null_mut());
    }
}
