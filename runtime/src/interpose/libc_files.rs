//! C library functions that open and close descriptors of their own inside
//! libc, where the runtime does not see them: the user and group databases
//! (`getpwnam` reads `/etc/passwd`...), the services and protocols files,
//! `getlogin` and `ttyname`, the processor count (`get_nprocs` reads
//! `/sys`), `glob` (without callbacks), locales, name resolution, dlopen
//! and the time zone. Their descriptors take the lowest
//! free numbers, so another thread's `open` meanwhile would get another
//! number at replay depending on how far the call has got.
//!
//! Each call is ordered like one descriptor call: an event on the
//! descriptor table before and after it (`events::log_around_call` with its
//! closing event), with the descriptor lock held across it, as the
//! program's own descriptor calls hold it. The databases are read live at
//! replay (the machine's files, like any regular file).

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use rr_lite_trace::{EventKind, pseudo};

use crate::events;
use crate::real;
use crate::site::{with_site, with_site_here};

/// Runs `op`, a libc call that opens and closes descriptors inside (or
/// takes the loader's locks, as `dlopen` does), as one ordered descriptor
/// call.
pub(super) fn ordered<R>(site: u64, op: impl FnOnce() -> R) -> R {
    if !crate::mode::active() {
        return op();
    }
    events::log_around_call(EventKind::Rmw, pseudo::DESCRIPTORS, 0, site, true, || {
        crate::descriptors::locked(op)
    })
}

/// Defines the interposed `$name`, forwarding its arguments to the real
/// function inside [`ordered`]; `$reg` is the register after the last
/// argument, where `with_site!` puts the call site.
macro_rules! ordered_call {
    ($name:ident, $imp:ident, $reg:literal, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        ordered_call!(@ with_site, $name, $imp, $reg, ($($arg: $ty),*) -> $ret);
    };
    (@ $entry:ident, $name:ident, $imp:ident, $reg:literal, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        extern "C" fn $imp($($arg: $ty,)* site: u64) -> $ret {
            // SAFETY: forwarding the program's arguments to the real function.
            ordered(site, || unsafe { real::$name($($arg),*) })
        }
        $entry!($name => $imp, $reg);
    };
}

type Passwd = *mut libc::passwd;
type Group = *mut libc::group;

ordered_call!(getpwnam, getpwnam_impl, "rsi", (name: *const c_char) -> Passwd);
ordered_call!(getpwuid, getpwuid_impl, "rsi", (uid: libc::uid_t) -> Passwd);
ordered_call!(getpwnam_r, getpwnam_r_impl, "r9",
    (name: *const c_char, pwd: Passwd, buf: *mut c_char, len: usize, result: *mut Passwd) -> c_int);
ordered_call!(getpwuid_r, getpwuid_r_impl, "r9",
    (uid: libc::uid_t, pwd: Passwd, buf: *mut c_char, len: usize, result: *mut Passwd) -> c_int);
ordered_call!(getpwent, getpwent_impl, "rdi", () -> Passwd);
ordered_call!(setpwent, setpwent_impl, "rdi", () -> ());
ordered_call!(endpwent, endpwent_impl, "rdi", () -> ());
ordered_call!(getgrnam, getgrnam_impl, "rsi", (name: *const c_char) -> Group);
ordered_call!(getgrgid, getgrgid_impl, "rsi", (gid: libc::gid_t) -> Group);
ordered_call!(getgrnam_r, getgrnam_r_impl, "r9",
    (name: *const c_char, grp: Group, buf: *mut c_char, len: usize, result: *mut Group) -> c_int);
ordered_call!(getgrgid_r, getgrgid_r_impl, "r9",
    (gid: libc::gid_t, grp: Group, buf: *mut c_char, len: usize, result: *mut Group) -> c_int);
ordered_call!(getgrent, getgrent_impl, "rdi", () -> Group);
ordered_call!(setgrent, setgrent_impl, "rdi", () -> ());
ordered_call!(endgrent, endgrent_impl, "rdi", () -> ());
ordered_call!(getgrouplist, getgrouplist_impl, "r8",
    (user: *const c_char, group: libc::gid_t, groups: *mut libc::gid_t, count: *mut c_int) -> c_int);
ordered_call!(getservbyname, getservbyname_impl, "rdx",
    (name: *const c_char, proto: *const c_char) -> *mut libc::servent);
ordered_call!(getservbyport, getservbyport_impl, "rdx",
    (port: c_int, proto: *const c_char) -> *mut libc::servent);
ordered_call!(getprotobyname, getprotobyname_impl, "rsi", (name: *const c_char) -> *mut libc::protoent);
ordered_call!(getprotobynumber, getprotobynumber_impl, "rsi", (proto: c_int) -> *mut libc::protoent);
ordered_call!(getlogin, getlogin_impl, "rdi", () -> *mut c_char);
ordered_call!(getlogin_r, getlogin_r_impl, "rdx", (buf: *mut c_char, len: usize) -> c_int);
ordered_call!(ttyname, ttyname_impl, "rsi", (fd: c_int) -> *mut c_char);
ordered_call!(ttyname_r, ttyname_r_impl, "rcx", (fd: c_int, buf: *mut c_char, len: usize) -> c_int);
ordered_call!(get_nprocs, get_nprocs_impl, "rdi", () -> c_int);
ordered_call!(get_nprocs_conf, get_nprocs_conf_impl, "rdi", () -> c_int);

// The locale files, name resolution (`/etc/hosts`, `/etc/resolv.conf`,
// sockets to the resolver: the answers themselves are live at replay),
// shared libraries (dlopen: a library's constructors run inside, as nested
// events) and the time zone (the first local-time conversion reads
// `/etc/localtime`; later ones open nothing, but which call is first
// depends on the threads).
ordered_call!(setlocale, setlocale_impl, "rdx", (category: c_int, locale: *const c_char) -> *mut c_char);
ordered_call!(newlocale, newlocale_impl, "rcx",
    (mask: c_int, locale: *const c_char, base: libc::locale_t) -> libc::locale_t);
ordered_call!(getaddrinfo, getaddrinfo_impl, "r8",
    (node: *const c_char, service: *const c_char, hints: *const libc::addrinfo,
     res: *mut *mut libc::addrinfo) -> c_int);
ordered_call!(gethostbyname, gethostbyname_impl, "rsi", (name: *const c_char) -> *mut libc::hostent);
// Their constructors and destructors are program code: on the program's stack.
ordered_call!(@ with_site_here, dlopen, dlopen_impl, "rdx", (file: *const c_char, flags: c_int) -> *mut c_void);
ordered_call!(@ with_site_here, dlclose, dlclose_impl, "rsi", (handle: *mut c_void) -> c_int);

// `dlsym` takes the loader's lock too, and allocates inside it when the
// symbol is missing (`_dl_exception_create`): unordered, a replay could
// give the lock to a thread whose allocation then waited for another
// thread blocked on the lock (every replay of threads looking symbols up
// while others opened and closed libraries deadlocked). So it is ordered
// like `dlopen`. The answer of a lookup in `RTLD_DEFAULT` or `RTLD_NEXT`
// depends on the caller: the object holding dlsym's return address. So
// the runtime calls the real `dlsym` with a return address in the
// caller's object: a `ret` byte (0xc3) in the page of the program's call,
// which returns again, into the runtime ([`call_returning_through`]).
// Without one in that page (rare), the entry jumps to the real `dlsym`
// with the program's return address in place, unordered, as before.
static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

/// `dlsym`'s entry: [`dlsym_impl`] with the call's site and, for
/// `RTLD_DEFAULT` (0) and `RTLD_NEXT` (-1), the address of a `ret` byte in
/// the site's page, searched after the site, then before it (else straight
/// to the real one, found first if need be, the arguments kept).
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym() {
    core::arch::naked_asm!(
        crate::own_stack::switch_and_call!(
            concat!(
                "mov rdx, [rsp]\n",
                "xor ecx, ecx\n",
                "lea rax, [rdi + 1]\n",
                "cmp rax, 1\n",
                "ja 9f\n",
                "mov r10, rdx\n",
                "7:\n",
                "cmp byte ptr [r10], 0xc3\n",
                "je 8f\n",
                "inc r10\n",
                "test r10d, 0xfff\n",
                "jnz 7b\n",
                "mov r10, rdx\n",
                "and r10, -4096\n",
                "6:\n",
                "cmp r10, rdx\n",
                "jae 5f\n",
                "cmp byte ptr [r10], 0xc3\n",
                "je 8f\n",
                "inc r10\n",
                "jmp 6b\n",
                "5:\n",
                crate::site::jump_to_real!(),
                "8:\n",
                "mov rcx, r10\n",
                "9:\n",
            ),
            "call {imp}",
            "jmp {imp}"
        ),
        imp = sym dlsym_impl,
        slot = sym REAL_DLSYM,
        find = sym find_real_dlsym,
    )
}

/// Finds the C library's `dlsym` (by version, with `dlvsym`, which is not
/// interposed) into [`REAL_DLSYM`]; aborts if there is none.
extern "C" fn find_real_dlsym() -> usize {
    let known = REAL_DLSYM.load(Ordering::Acquire);
    if known != 0 {
        return known;
    }
    // glibc 2.34 moved it from libdl into libc with a new version.
    for version in [c"GLIBC_2.34", c"GLIBC_2.2.5"] {
        // SAFETY: NUL-terminated names; RTLD_NEXT is a valid handle.
        let addr = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
        if !addr.is_null() {
            REAL_DLSYM.store(addr as usize, Ordering::Release);
            return addr as usize;
        }
    }
    crate::sys::warn(&[b"cannot find the real dlsym"]);
    // SAFETY: abort never returns and has no preconditions.
    unsafe { libc::abort() }
}

type Dlsym = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// Calls `real(handle, name)` (dlsym) so that its return address is
/// `ret_byte`, a `ret` instruction in the caller's object: dlsym answers
/// for that object, returns there, and that `ret` comes back here.
#[unsafe(naked)]
unsafe extern "C" fn call_returning_through(
    handle: *mut c_void,
    name: *const c_char,
    real: Dlsym,
    ret_byte: usize,
) -> *mut c_void {
    core::arch::naked_asm!(
        "lea rax, [rip + 2f]",
        "push rax",
        "push rcx",
        "jmp rdx",
        "2:",
        "ret",
    )
}

/// `dlsym`, ordered like `dlopen`: in the caller's object through
/// `ret_byte` for `RTLD_DEFAULT` and `RTLD_NEXT`, else (0) as it is. The
/// runtime's own calls go straight through.
extern "C" fn dlsym_impl(
    handle: *mut c_void,
    name: *const c_char,
    site: u64,
    ret_byte: usize,
) -> *mut c_void {
    // SAFETY: the C library's dlsym, whose signature this is.
    let real: Dlsym = unsafe { core::mem::transmute(find_real_dlsym()) };
    let call = || match ret_byte {
        // SAFETY: forwarding the program's arguments.
        0 => unsafe { real(handle, name) },
        // SAFETY: as above; `ret_byte` is a 0xc3 byte the entry found in
        // the executable page of the call's site.
        _ => unsafe { call_returning_through(handle, name, real, ret_byte) },
    };
    if crate::own_code::contains(site) {
        return call();
    }
    ordered(site, call)
}
ordered_call!(tzset, tzset_impl, "rdi", () -> ());
ordered_call!(localtime, localtime_impl, "rsi", (t: *const libc::time_t) -> *mut libc::tm);
ordered_call!(localtime_r, localtime_r_impl, "rdx",
    (t: *const libc::time_t, out: *mut libc::tm) -> *mut libc::tm);
ordered_call!(mktime, mktime_impl, "rsi", (tm: *mut libc::tm) -> libc::time_t);
ordered_call!(ctime, ctime_impl, "rsi", (t: *const libc::time_t) -> *mut c_char);

/// `sysconf`: the processor counts read `/sys`; the free memory
/// (`_SC_AVPHYS_PAGES`, from the kernel's `sysinfo` inside libc) differs
/// from run to run and is replayed (the rest pass through).
extern "C" fn sysconf_impl(name: c_int, site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    let call = || unsafe { real::sysconf(name) };
    match name {
        libc::_SC_NPROCESSORS_ONLN | libc::_SC_NPROCESSORS_CONF => ordered(site, call),
        libc::_SC_AVPHYS_PAGES => events::log_outside_value(site, || call() as u64) as libc::c_long,
        _ => call(),
    }
}
with_site!(sysconf => sysconf_impl, "rsi");

/// `get_avphys_pages`: the free memory, as `sysconf(_SC_AVPHYS_PAGES)`.
extern "C" fn get_avphys_pages_impl(site: u64) -> libc::c_long {
    // SAFETY: forwarding.
    events::log_outside_value(site, || unsafe { real::get_avphys_pages() } as u64) as libc::c_long
}
with_site!(get_avphys_pages => get_avphys_pages_impl, "rdi");

/// `glob` without callbacks (no error function, no `GLOB_ALTDIRFUNC`): with
/// them the program's code would run inside the ordered call, which may
/// wait for another thread's descriptor call (the walk of
/// `interpose::walk` cuts its stretches there instead).
extern "C" fn glob_impl(
    pattern: *const c_char,
    flags: c_int,
    errfunc: *const c_void,
    pglob: *mut libc::glob_t,
    site: u64,
) -> c_int {
    // SAFETY: forwarding.
    let call = || unsafe { real::glob(pattern, flags, errfunc, pglob) };
    if errfunc.is_null() && flags & GLOB_ALTDIRFUNC == 0 {
        ordered(site, call)
    } else {
        call()
    }
}
with_site!(glob => glob_impl, "r8");

/// glibc's `GLOB_ALTDIRFUNC` (`<glob.h>`).
const GLOB_ALTDIRFUNC: c_int = 1 << 9;
