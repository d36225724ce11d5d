//! Descriptor numbers. The kernel gives out the lowest free number, so the
//! number a call returns depends on every open and close before it, in any
//! thread: each call that gives out descriptors (`descriptor-open`) or
//! frees them (`descriptor-close`) is an event on the descriptor table's
//! pseudo-address, with its result as the payload. Record holds that
//! stripe across the real call, so the recorded order is the order the
//! kernel saw; replay makes the same calls in that order and checks every
//! result (a different number is a divergence, not a different run).
//!
//! Calls that give out numbers also take the descriptor lock around the
//! real call (`crate::descriptors`: the runtime's own files are opened
//! under it). Those that may block (accept, opening a FIFO) take neither
//! the lock nor the stripe across the call: they are logged after it, like
//! a lock, and a number another thread takes meanwhile can make replay
//! report a divergence (README, limits).
//!
//! open, openat and fcntl are variadic in C; their optional argument is
//! declared as a plain one, which the x86-64 calling convention makes the
//! same (it is in its register whether the caller passed it or not).

use core::ffi::{c_char, c_int, c_uint, c_ulong};

use libc::{FILE, mode_t, sockaddr, socklen_t};
use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, Replayed};
use crate::real;
use crate::site::with_site;
use crate::sys;

/// A call's result with the errno it left (the runtime's bookkeeping after
/// the call may change errno; the program gets this one back).
#[derive(Debug, Clone, Copy)]
struct Outcome<T> {
    value: T,
    errno: c_int,
}

impl<T: Copy> Outcome<T> {
    fn of(op: impl FnOnce() -> T) -> Outcome<T> {
        let value = op();
        Outcome {
            value,
            errno: sys::errno(),
        }
    }

    /// The value, with errno as the call left it.
    fn give(self) -> T {
        sys::set_errno(self.errno);
        self.value
    }
}

/// The payload of a call that returns a descriptor, 0 or -1: the result,
/// or -errno if it failed (so that replay also checks how it failed).
fn number(o: &Outcome<c_int>) -> u64 {
    if o.value >= 0 {
        o.value as u64
    } else {
        -i64::from(o.errno) as u64
    }
}

/// Runs `op` under the descriptor lock while the runtime records or
/// replays (a process forked from a recording is inert: see `fork`).
fn locked<T>(op: impl FnOnce() -> T) -> T {
    if crate::mode::active() {
        crate::descriptors::locked(op)
    } else {
        op()
    }
}

/// A call that gives out descriptors and cannot block; `payload` says
/// which (see [`number`]).
fn giving_out(
    site: u64,
    op: impl FnOnce() -> c_int,
    payload: impl FnOnce(&Outcome<c_int>) -> u64,
) -> c_int {
    events::log_after_call(
        EventKind::DescriptorOpen,
        pseudo::DESCRIPTORS,
        0,
        site,
        || locked(|| Outcome::of(op)),
        payload,
    )
    .give()
}

/// A call that gives out a descriptor and may block (accept, opening a
/// FIFO): logged after it returns, its number the lowest free then
/// (`descriptors::lowest_free_number`).
fn giving_out_blocking(site: u64, op: impl FnOnce() -> c_int) -> c_int {
    events::log_after_blocking_call(
        EventKind::DescriptorOpen,
        pseudo::DESCRIPTORS,
        site,
        || Outcome::of(|| crate::descriptors::lowest_free_number(op())),
        |o| Some(number(o)),
        |_| Replayed::CallReal,
    )
    .give()
}

/// The status of what `path` (relative to `dir`) names now, following
/// symbolic links as an open does; None if nothing (or the path is bad).
fn stat_at(dir: c_int, path: *const c_char) -> Option<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-parameter; `path` is the
    // caller's NUL-terminated path. Raw: not a program call.
    unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        let found = libc::syscall(
            libc::SYS_newfstatat,
            dir,
            path,
            &mut st as *mut libc::stat,
            0,
        ) == 0;
        found.then_some(st)
    }
}

/// Whether opening `path` (relative to `dir`) with `flags` may block: a
/// FIFO opened without O_NONBLOCK waits for its other end, which another
/// thread may be about to open.
fn may_block(dir: c_int, path: *const c_char, flags: c_int) -> bool {
    if flags & libc::O_NONBLOCK != 0 || path.is_null() || !crate::mode::active() {
        return false;
    }
    stat_at(dir, path).is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO)
}

/// open and its relatives: `op(path)` opens `path` (relative to `dir`), or
/// at replay the trace's snapshot of it (`crate::snapshot`).
fn opening(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    site: u64,
    op: impl FnOnce(*const c_char) -> c_int,
) -> c_int {
    if may_block(dir, path, flags) {
        return giving_out_blocking(site, || with_fifo_writer(dir, path, flags, || op(path)));
    }
    giving_out(site, || snapshotted(dir, path, flags, op), number)
}

/// Replay: runs `open`, the program's read-only open of the FIFO `path`
/// (relative to `dir`), while the runtime holds the FIFO open for writing,
/// so that it does not wait for a writer: the recording's writer, another
/// process, may be gone, and the bytes the program reads come from the
/// trace. Opening a FIFO for reading and writing never waits (Linux); the
/// runtime's descriptor sits above the program's range while held.
fn with_fifo_writer<R>(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    open: impl FnOnce() -> R,
) -> R {
    if crate::mode::current() != crate::mode::Mode::Replay
        || flags & libc::O_ACCMODE != libc::O_RDONLY
    {
        return open();
    }
    let writer = locked(|| {
        // SAFETY: the program's NUL-terminated path; raw, not the program's
        // open (not an event).
        let fd = unsafe {
            sys::open_raw_at(dir, path, libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC)
        };
        crate::descriptors::keep_above_floor(fd)
    });
    let result = open();
    if writer >= 0 {
        sys::close_raw(writer);
    }
    result
}

/// Runs an open of `path` (relative to `dir`) with `flags` (inside its
/// event), through the snapshot of the file if replay has one, and lets
/// the snapshots know, and whether the open created the file (record: an
/// output left in place changes what a replay finds).
fn snapshotted<R: OpenedDescriptor + Copy>(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    op: impl FnOnce(*const c_char) -> R,
) -> R {
    let may_create = flags & libc::O_CREAT != 0
        && crate::mode::current() == crate::mode::Mode::Record
        && !path.is_null()
        && stat_at(dir, path).is_none();
    let copy = crate::snapshot::redirect(path, flags);
    let result = op(copy.as_ref().map_or(path, |c| c.as_ptr().cast()));
    let fd = result.descriptor();
    crate::snapshot::opened(path, flags, fd);
    if may_create && fd >= 0 {
        crate::snapshot::created(dir, path);
    }
    result
}

/// What an open returns, as the descriptor it opened (-1 if none).
trait OpenedDescriptor {
    fn descriptor(self) -> c_int;
}

impl OpenedDescriptor for c_int {
    fn descriptor(self) -> c_int {
        self
    }
}

impl OpenedDescriptor for *mut FILE {
    fn descriptor(self) -> c_int {
        if self.is_null() {
            -1
        } else {
            // SAFETY: a FILE fopen just returned.
            unsafe { libc::fileno(self) }
        }
    }
}

/// The open(2) flags of an fopen mode string (for the snapshots: only
/// whether it reads only matters).
fn fopen_flags(mode: *const c_char) -> c_int {
    if mode.is_null() {
        return libc::O_RDONLY;
    }
    // SAFETY: the program passed a NUL-terminated mode.
    let mode = unsafe { core::ffi::CStr::from_ptr(mode) }.to_bytes();
    match mode.first() {
        Some(b'r') if !mode.contains(&b'+') => libc::O_RDONLY,
        _ => libc::O_RDWR | libc::O_CREAT,
    }
}

/// Exports path-based opens: `$name(args) => dir, path, flags` says which
/// arguments are the directory, the path and the flags.
macro_rules! opens {
    ($($name:ident => $imp:ident($($arg:ident: $t:ty),*), $reg:literal,
       $dir:expr, $path:ident, $flags:expr;)*) => {$(
        extern "C" fn $imp($($arg: $t,)* site: u64) -> c_int {
            // SAFETY: forwarding.
            opening($dir, $path, $flags, site, |$path| unsafe { real::$name($($arg),*) })
        }
        with_site!($name => $imp, $reg);
    )*};
}

const CWD: c_int = libc::AT_FDCWD;
const CREAT: c_int = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;

opens! {
    open => open_impl(path: *const c_char, flags: c_int, mode: c_uint), "rcx", CWD, path, flags;
    open64 => open64_impl(path: *const c_char, flags: c_int, mode: c_uint), "rcx", CWD, path, flags;
    openat => openat_impl(dir: c_int, path: *const c_char, flags: c_int, mode: c_uint), "r8", dir, path, flags;
    openat64 => openat64_impl(dir: c_int, path: *const c_char, flags: c_int, mode: c_uint), "r8", dir, path, flags;
    __open_2 => open_2_impl(path: *const c_char, flags: c_int), "rdx", CWD, path, flags;
    __open64_2 => open64_2_impl(path: *const c_char, flags: c_int), "rdx", CWD, path, flags;
    __openat_2 => openat_2_impl(dir: c_int, path: *const c_char, flags: c_int), "rcx", dir, path, flags;
    __openat64_2 => openat64_2_impl(dir: c_int, path: *const c_char, flags: c_int), "rcx", dir, path, flags;
    creat => creat_impl(path: *const c_char, mode: mode_t), "rdx", CWD, path, CREAT;
    creat64 => creat64_impl(path: *const c_char, mode: mode_t), "rdx", CWD, path, CREAT;
}

/// Exports calls that give out one descriptor and cannot block.
macro_rules! gives_one {
    ($($name:ident => $imp:ident($($arg:ident: $t:ty),*), $reg:literal;)*) => {$(
        extern "C" fn $imp($($arg: $t,)* site: u64) -> c_int {
            // SAFETY: forwarding.
            giving_out(site, || unsafe { real::$name($($arg),*) }, number)
        }
        with_site!($name => $imp, $reg);
    )*};
}

gives_one! {
    socket => socket_impl(domain: c_int, kind: c_int, protocol: c_int), "rcx";
    dup => dup_impl(fd: c_int), "rsi";
    dup2 => dup2_impl(fd: c_int, to: c_int), "rdx";
    dup3 => dup3_impl(fd: c_int, to: c_int, flags: c_int), "rcx";
    epoll_create => epoll_create_impl(size: c_int), "rsi";
    epoll_create1 => epoll_create1_impl(flags: c_int), "rsi";
    eventfd => eventfd_impl(initial: c_uint, flags: c_int), "rdx";
    timerfd_create => timerfd_create_impl(clock: c_int, flags: c_int), "rdx";
    signalfd => signalfd_impl(fd: c_int, mask: *const libc::sigset_t, flags: c_int), "rcx";
    inotify_init => inotify_init_impl(), "rdi";
    inotify_init1 => inotify_init1_impl(flags: c_int), "rsi";
    memfd_create => memfd_create_impl(name: *const c_char, flags: c_uint), "rdx";
}

/// The length of the C string `s` (counted here: the runtime's own
/// `strlen` would be an event).
fn c_len(s: *const c_char) -> usize {
    let mut len = 0;
    // SAFETY: the caller's NUL-terminated string.
    while unsafe { *s.add(len) } != 0 {
        len += 1;
    }
    len
}

/// The six characters before the last `after` of `template` that
/// `mkstemp` and its relatives replace, if they are `XXXXXX` (else the call
/// fails with EINVAL, the same in every run).
fn name_suffix<'a>(template: *mut c_char, after: usize) -> Option<&'a mut [u8]> {
    if template.is_null() {
        return None;
    }
    let start = c_len(template).checked_sub(after)?.checked_sub(6)?;
    // SAFETY: six bytes of the template, which the call rewrites.
    let suffix = unsafe { core::slice::from_raw_parts_mut(template.add(start).cast::<u8>(), 6) };
    (suffix == b"XXXXXX").then_some(suffix)
}

/// A name glibc draws inside libc (`mkstemp`, `mkdtemp`): while recording,
/// `draw` makes the real call and the six characters it chose go into the
/// thread's input (`input-NNNN.bin`); at replay they come back into
/// `suffix` and `make` creates the recorded name instead, so a program that
/// prints or passes on the name sees the recorded one.
fn drawn_name<R>(suffix: &mut [u8], draw: impl FnOnce() -> R, make: impl FnOnce() -> R) -> R {
    use crate::mode::{self, Mode};
    let thread = crate::thread::THREAD.with(|t| t.is_tracked().then(|| t.id.get()));
    match (mode::current(), thread) {
        (Mode::Record, Some(id)) => {
            let r = draw();
            crate::thread::THREAD.with(|t| t.input.save(id, suffix));
            r
        }
        (Mode::Replay, Some(id)) if crate::thread::THREAD.with(|t| t.input.load(id, suffix)) => {
            make()
        }
        _ => draw(),
    }
}

/// `mkstemp` and its relatives (`after`: the length of the name's end
/// after the X's, for `mkstemps`; a negative one fails with EINVAL, the
/// same in every run): a descriptor call whose file name is drawn
/// ([`drawn_name`]); replay opens the recorded name (truncated: the
/// recording's file may still be there).
fn temp_file(
    template: *mut c_char,
    after: c_int,
    flags: c_int,
    site: u64,
    draw: impl FnOnce() -> c_int,
) -> c_int {
    let suffix = usize::try_from(after)
        .ok()
        .and_then(|after| name_suffix(template, after));
    let Some(suffix) = suffix else {
        return giving_out(site, draw, number);
    };
    let make = || {
        let flags = flags | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC;
        // SAFETY: the template, now the recorded name.
        unsafe { real::open(template, flags, 0o600) }
    };
    giving_out(site, || drawn_name(suffix, draw, make), number)
}

extern "C" fn mkstemp_impl(template: *mut c_char, site: u64) -> c_int {
    // SAFETY: forwarding.
    temp_file(template, 0, 0, site, || unsafe { real::mkstemp(template) })
}
with_site!(mkstemp => mkstemp_impl, "rsi");
// (What `mkstemp` is with `_FILE_OFFSET_BITS=64`: the same call on x86-64.)
with_site!(mkstemp64 => mkstemp_impl, "rsi");

extern "C" fn mkostemp_impl(template: *mut c_char, flags: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    temp_file(template, 0, flags, site, || unsafe {
        real::mkostemp(template, flags)
    })
}
with_site!(mkostemp => mkostemp_impl, "rdx");
with_site!(mkostemp64 => mkostemp_impl, "rdx");

extern "C" fn mkstemps_impl(template: *mut c_char, after: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    temp_file(template, after, 0, site, || unsafe {
        real::mkstemps(template, after)
    })
}
with_site!(mkstemps => mkstemps_impl, "rdx");
with_site!(mkstemps64 => mkstemps_impl, "rdx");

extern "C" fn mkostemps_impl(
    template: *mut c_char,
    after: c_int,
    flags: c_int,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    temp_file(template, after, flags, site, || unsafe {
        real::mkostemps(template, after, flags)
    })
}
with_site!(mkostemps => mkostemps_impl, "rcx");
with_site!(mkostemps64 => mkostemps_impl, "rcx");

/// `mkdtemp`: no descriptor, a drawn name ([`drawn_name`]); replay makes
/// the recorded directory (there already: the recording's, kept).
extern "C" fn mkdtemp_impl(template: *mut c_char, _site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    let draw = || unsafe { real::mkdtemp(template) };
    let Some(suffix) = name_suffix(template, 0) else {
        return draw();
    };
    let make = || {
        // SAFETY: the template, now the recorded name. Raw: not a program call.
        let r = unsafe { libc::syscall(libc::SYS_mkdir, template, 0o700) };
        if r == 0 || sys::errno() == libc::EEXIST {
            template
        } else {
            core::ptr::null_mut()
        }
    };
    if !crate::mode::active() {
        return draw();
    }
    drawn_name(suffix, draw, make)
}
with_site!(mkdtemp => mkdtemp_impl, "rsi");

/// `tmpnam`, `tmpnam_r` and `tempnam`: a name made up inside libc (its last
/// six characters drawn), nothing created. While recording, those six go
/// into the thread's input; at replay the real call makes the name again
/// (the same directory and prefix) and they come back over its end, so a
/// program that prints or uses the name sees the recorded one. A null
/// result is kept as six zero bytes.
fn made_up_name(make: impl FnOnce() -> *mut c_char) -> *mut c_char {
    use crate::mode::{self, Mode};
    let thread = crate::thread::THREAD.with(|t| t.is_tracked().then(|| t.id.get()));
    let (Some(id), Some(mode @ (Mode::Record | Mode::Replay))) =
        (thread, mode::active().then(mode::current))
    else {
        return make();
    };
    let name = make();
    let mut drawn = [0u8; 6];
    let end = name_end(name);
    if mode == Mode::Record {
        if let Some(end) = end {
            drawn.copy_from_slice(end);
        }
        crate::thread::THREAD.with(|t| t.input.save(id, &drawn));
        return name;
    }
    if !crate::thread::THREAD.with(|t| t.input.load(id, &mut drawn)) {
        return name;
    }
    match end {
        _ if drawn == [0; 6] => core::ptr::null_mut(),
        Some(end) => {
            end.copy_from_slice(&drawn);
            name
        }
        // (Made at the recording, not now: nothing to put the name in.)
        None => core::ptr::null_mut(),
    }
}

/// The last six bytes of the C string `name`, if it has that many.
fn name_end<'a>(name: *mut c_char) -> Option<&'a mut [u8]> {
    if name.is_null() {
        return None;
    }
    let len = c_len(name);
    // SAFETY: the last six bytes of the name libc just returned.
    (len >= 6)
        .then(|| unsafe { core::slice::from_raw_parts_mut(name.add(len - 6).cast::<u8>(), 6) })
}

extern "C" fn tmpnam_impl(s: *mut c_char, _site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    made_up_name(|| unsafe { real::tmpnam(s) })
}
with_site!(tmpnam => tmpnam_impl, "rsi");

extern "C" fn tmpnam_r_impl(s: *mut c_char, _site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    made_up_name(|| unsafe { real::tmpnam_r(s) })
}
with_site!(tmpnam_r => tmpnam_r_impl, "rsi");

extern "C" fn tempnam_impl(dir: *const c_char, prefix: *const c_char, _site: u64) -> *mut c_char {
    // SAFETY: forwarding.
    made_up_name(|| unsafe { real::tempnam(dir, prefix) })
}
with_site!(tempnam => tempnam_impl, "rdx");

/// pipe, pipe2, socketpair: two descriptors, `first | second << 32`.
fn giving_pair(fds: *mut c_int, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    giving_out(site, op, |o| {
        if o.value != 0 || fds.is_null() {
            return number(o);
        }
        // SAFETY: the call succeeded, so it wrote both descriptors.
        let (first, second) = unsafe { (*fds, *fds.add(1)) };
        // Both ends are the program's: replay reads them for real.
        crate::input::mark_internal(first);
        crate::input::mark_internal(second);
        u64::from(first as u32) | u64::from(second as u32) << 32
    })
}

extern "C" fn pipe_impl(fds: *mut c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    giving_pair(fds, site, || unsafe { real::pipe(fds) })
}
with_site!(pipe => pipe_impl, "rsi");

extern "C" fn pipe2_impl(fds: *mut c_int, flags: c_int, site: u64) -> c_int {
    // SAFETY: forwarding.
    giving_pair(fds, site, || unsafe { real::pipe2(fds, flags) })
}
with_site!(pipe2 => pipe2_impl, "rdx");

extern "C" fn socketpair_impl(
    domain: c_int,
    kind: c_int,
    protocol: c_int,
    fds: *mut c_int,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    giving_pair(fds, site, || unsafe {
        real::socketpair(domain, kind, protocol, fds)
    })
}
with_site!(socketpair => socketpair_impl, "r8");

/// fcntl gives out a descriptor only for F_DUPFD and F_DUPFD_CLOEXEC; the
/// other commands go straight to the real call.
fn fcntl_call(cmd: c_int, site: u64, op: impl FnOnce() -> c_int) -> c_int {
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        giving_out(site, op, number)
    } else {
        op()
    }
}

extern "C" fn fcntl_impl(fd: c_int, cmd: c_int, arg: c_ulong, site: u64) -> c_int {
    // SAFETY: forwarding.
    fcntl_call(cmd, site, || unsafe { real::fcntl(fd, cmd, arg) })
}
with_site!(fcntl => fcntl_impl, "rcx");

extern "C" fn fcntl64_impl(fd: c_int, cmd: c_int, arg: c_ulong, site: u64) -> c_int {
    // SAFETY: forwarding.
    fcntl_call(cmd, site, || unsafe { real::fcntl64(fd, cmd, arg) })
}
with_site!(fcntl64 => fcntl64_impl, "rcx");

extern "C" fn accept_impl(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, site: u64) -> c_int {
    // SAFETY: forwarding.
    giving_out_blocking(site, || unsafe { real::accept(fd, addr, len) })
}
with_site!(accept => accept_impl, "rcx");

extern "C" fn accept4_impl(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    giving_out_blocking(site, || unsafe { real::accept4(fd, addr, len, flags) })
}
with_site!(accept4 => accept4_impl, "r8");

/// fopen allocates its FILE (an allocator event nested in it) and opens
/// the file: the descriptor event comes after the allocation.
pub(super) fn fopen_call(
    path: *const c_char,
    mode: *const c_char,
    site: u64,
    op: impl FnOnce(*const c_char) -> *mut FILE,
) -> *mut FILE {
    let payload = |o: &Outcome<*mut FILE>| {
        if o.value.is_null() {
            return -i64::from(o.errno) as u64;
        }
        // SAFETY: a FILE fopen just returned.
        unsafe { libc::fileno(o.value) as u64 }
    };
    if may_block(libc::AT_FDCWD, path, 0) {
        let flags = fopen_flags(mode);
        return events::log_after_blocking_call(
            EventKind::DescriptorOpen,
            pseudo::DESCRIPTORS,
            site,
            || Outcome::of(|| with_fifo_writer(libc::AT_FDCWD, path, flags, || op(path))),
            |o| Some(payload(o)),
            |_| Replayed::CallReal,
        )
        .give();
    }
    events::log_after_nested_call(
        EventKind::DescriptorOpen,
        pseudo::DESCRIPTORS,
        0,
        site,
        || locked(|| Outcome::of(|| snapshotted(CWD, path, fopen_flags(mode), op))),
        payload,
    )
    .give()
}

extern "C" fn fopen_impl(path: *const c_char, mode: *const c_char, site: u64) -> *mut FILE {
    // SAFETY: forwarding.
    let stream = fopen_call(path, mode, site, |path| unsafe { real::fopen(path, mode) });
    super::streams::wrap_if_outside(stream, mode, site)
}
with_site!(fopen => fopen_impl, "rdx");

extern "C" fn fopen64_impl(path: *const c_char, mode: *const c_char, site: u64) -> *mut FILE {
    // SAFETY: forwarding.
    let stream = fopen_call(path, mode, site, |path| unsafe {
        real::fopen64(path, mode)
    });
    super::streams::wrap_if_outside(stream, mode, site)
}
with_site!(fopen64 => fopen64_impl, "rdx");

extern "C" fn tmpfile_impl(site: u64) -> *mut FILE {
    // SAFETY: forwarding.
    fopen_call(core::ptr::null(), c"w+".as_ptr(), site, |_| unsafe {
        real::tmpfile()
    })
}
with_site!(tmpfile => tmpfile_impl, "rdi");

extern "C" fn tmpfile64_impl(site: u64) -> *mut FILE {
    // SAFETY: forwarding.
    fopen_call(core::ptr::null(), c"w+".as_ptr(), site, |_| unsafe {
        real::tmpfile64()
    })
}
with_site!(tmpfile64 => tmpfile64_impl, "rdi");

/// opendir allocates its DIR (nested) and opens the directory (a directory
/// cannot block an open): like fopen.
extern "C" fn opendir_impl(path: *const c_char, site: u64) -> *mut libc::DIR {
    events::log_after_nested_call(
        EventKind::DescriptorOpen,
        pseudo::DESCRIPTORS,
        0,
        site,
        // SAFETY: forwarding.
        || locked(|| Outcome::of(|| unsafe { real::opendir(path) })),
        |o| {
            if o.value.is_null() {
                return -i64::from(o.errno) as u64;
            }
            // SAFETY: a DIR opendir just returned.
            unsafe { libc::dirfd(o.value) as u64 }
        },
    )
    .give()
}
with_site!(opendir => opendir_impl, "rsi");

/// Closes `fd` through `op`, a library call that also frees its stream
/// (nested in it): fclose, closedir, pclose. With `checked`, replay checks
/// the result (pclose's is the command's status: only whether it failed).
pub(super) fn closing_stream(
    fd: c_int,
    site: u64,
    op: impl FnOnce() -> c_int,
    checked: bool,
) -> c_int {
    events::log_after_nested_call(
        EventKind::DescriptorClose,
        pseudo::DESCRIPTORS,
        0,
        site,
        || {
            crate::input::forget(fd);
            Outcome::of(op)
        },
        |o| {
            if checked || o.value < 0 { number(o) } else { 0 }
        },
    )
    .give()
}

/// closedir closes the descriptor and frees the DIR (nested in it).
extern "C" fn closedir_impl(d: *mut libc::DIR, site: u64) -> c_int {
    let fd = if d.is_null() {
        -1
    } else {
        // SAFETY: the program's open DIR, about to be closed.
        unsafe { libc::dirfd(d) }
    };
    // SAFETY: forwarding.
    closing_stream(fd, site, || unsafe { real::closedir(d) }, true)
}
with_site!(closedir => closedir_impl, "rsi");

/// close frees a number the next call that gives one out may take: an
/// event in the same order. It gives none out, so it needs no lock.
extern "C" fn close_impl(fd: c_int, site: u64) -> c_int {
    events::log_after_call(
        EventKind::DescriptorClose,
        pseudo::DESCRIPTORS,
        0,
        site,
        || {
            crate::input::forget(fd);
            // SAFETY: forwarding.
            Outcome::of(|| unsafe { real::close(fd) })
        },
        number,
    )
    .give()
}
with_site!(close => close_impl, "rsi");

/// fclose closes the descriptor and frees the FILE (nested in it).
extern "C" fn fclose_impl(f: *mut FILE, site: u64) -> c_int {
    let fd = if f.is_null() {
        -1
    } else {
        // SAFETY: the program's open FILE, about to be closed.
        unsafe { libc::fileno(f) }
    };
    // SAFETY: forwarding.
    closing_stream(fd, site, || unsafe { real::fclose(f) }, true)
}
with_site!(fclose => fclose_impl, "rsi");
