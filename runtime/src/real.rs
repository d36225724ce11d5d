//! The real implementations of the functions the runtime interposes, found
//! with `dlsym(RTLD_NEXT, ...)` on first use. The allocator is reached
//! through glibc's `__libc_*` entry points instead, because dlsym itself may
//! allocate and must not recurse into a half-resolved malloc.

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use libc::{pthread_attr_t, pthread_t, size_t, ssize_t, timespec};

/// Looks a symbol up in the objects after ours (libc), caching the result.
/// Aborts with a message if it is missing: the program cannot go on without it.
pub(crate) fn resolve(slot: &AtomicUsize, name: &'static str) -> usize {
    let cached = slot.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: `name` is a NUL-terminated literal; RTLD_NEXT is a valid handle.
    let addr = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    if addr == 0 {
        crate::sys::warn(&[
            b"cannot find the real ",
            name.trim_end_matches('\0').as_bytes(),
        ]);
        // SAFETY: abort never returns and has no preconditions.
        unsafe { libc::abort() };
    }
    slot.store(addr, Ordering::Relaxed);
    addr
}

/// `ftw`'s function (and `ftw64`'s: `struct stat64` is `struct stat` here).
pub(crate) type FtwFn = unsafe extern "C" fn(*const c_char, *const libc::stat, c_int) -> c_int;
/// `nftw`'s function (its last argument, a `struct FTW *`, passed through).
pub(crate) type NftwFn =
    unsafe extern "C" fn(*const c_char, *const libc::stat, c_int, *mut c_void) -> c_int;
/// `scandir`'s filter (`int (*)(const struct dirent *)`), or null.
pub(crate) type FilterFn = Option<unsafe extern "C" fn(*const c_void) -> c_int>;
/// `scandir`'s comparison (`int (*)(const struct dirent **, const struct
/// dirent **)`), or null.
pub(crate) type CompareFn = Option<unsafe extern "C" fn(*const c_void, *const c_void) -> c_int>;

/// [`resolve`] at start-up for a function an older C library may lack
/// (glibc 2.36's `arc4random`): left unresolved if missing, since no
/// program linked against that library can call it.
fn resolve_if_present(slot: &AtomicUsize, name: &'static str) -> usize {
    // SAFETY: as in `resolve`.
    let addr = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    slot.store(addr, Ordering::Relaxed);
    addr
}

macro_rules! real_functions {
    ($resolve_all:ident with $at_start:ident:
     $( fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => { paste::paste! {
        $( #[allow(non_upper_case_globals)] static [<SLOT_ $name>]: AtomicUsize = AtomicUsize::new(0); )*

        /// Resolves every real function of this list at start-up, so that no
        /// lookup (which may allocate) happens later in the middle of an
        /// event.
        pub(crate) fn $resolve_all() {
            $( $at_start(&[<SLOT_ $name>], concat!(stringify!($name), "\0")); )*
        }

        $(
            /// Calls the next definition of this C function (normally libc's).
            ///
            /// # Safety
            /// Same contract as the C function.
            pub(crate) unsafe fn $name($($arg: $ty),*) -> $ret {
                let addr = resolve(&[<SLOT_ $name>], concat!(stringify!($name), "\0"));
                // SAFETY: dlsym found the C symbol of this name, whose type is
                // the one declared here (from the C headers).
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { core::mem::transmute(addr) };
                // SAFETY: forwarded contract of the C function.
                unsafe { f($($arg),*) }
            }
        )*
    }};
}

pub(crate) type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
type Mutex = libc::pthread_mutex_t;
type Cond = libc::pthread_cond_t;
type RwLock = libc::pthread_rwlock_t;

real_functions! {
    resolve_all with resolve:
    fn pthread_create(t: *mut pthread_t, attr: *const pthread_attr_t, start: StartRoutine, arg: *mut c_void) -> c_int;
    fn pthread_join(t: pthread_t, ret: *mut *mut c_void) -> c_int;
    fn pthread_exit(ret: *mut c_void) -> ();
    fn pthread_detach(t: pthread_t) -> c_int;
    fn pthread_mutex_lock(m: *mut Mutex) -> c_int;
    fn pthread_mutex_trylock(m: *mut Mutex) -> c_int;
    fn pthread_mutex_timedlock(m: *mut Mutex, abstime: *const timespec) -> c_int;
    fn pthread_mutex_unlock(m: *mut Mutex) -> c_int;
    fn pthread_rwlock_rdlock(l: *mut RwLock) -> c_int;
    fn pthread_rwlock_tryrdlock(l: *mut RwLock) -> c_int;
    fn pthread_rwlock_timedrdlock(l: *mut RwLock, abstime: *const timespec) -> c_int;
    fn pthread_rwlock_wrlock(l: *mut RwLock) -> c_int;
    fn pthread_rwlock_trywrlock(l: *mut RwLock) -> c_int;
    fn pthread_rwlock_timedwrlock(l: *mut RwLock, abstime: *const timespec) -> c_int;
    fn pthread_rwlock_unlock(l: *mut RwLock) -> c_int;
    fn pthread_cond_signal(c: *mut Cond) -> c_int;
    fn pthread_cond_broadcast(c: *mut Cond) -> c_int;
    fn pthread_cond_wait(c: *mut Cond, m: *mut Mutex) -> c_int;
    fn pthread_cond_timedwait(c: *mut Cond, m: *mut Mutex, abstime: *const timespec) -> c_int;
    fn pthread_cond_clockwait(c: *mut Cond, m: *mut Mutex, clock: libc::clockid_t, abstime: *const timespec) -> c_int;
    fn pthread_barrier_wait(b: *mut libc::pthread_barrier_t) -> c_int;
    fn pthread_spin_lock(s: *mut libc::pthread_spinlock_t) -> c_int;
    fn pthread_spin_trylock(s: *mut libc::pthread_spinlock_t) -> c_int;
    fn pthread_spin_unlock(s: *mut libc::pthread_spinlock_t) -> c_int;
    fn pthread_mutex_init(m: *mut Mutex, attr: *const libc::pthread_mutexattr_t) -> c_int;
    fn pthread_mutex_destroy(m: *mut Mutex) -> c_int;
    fn pthread_cond_init(c: *mut Cond, attr: *const libc::pthread_condattr_t) -> c_int;
    fn pthread_cond_destroy(c: *mut Cond) -> c_int;
    fn pthread_rwlock_init(l: *mut RwLock, attr: *const libc::pthread_rwlockattr_t) -> c_int;
    fn pthread_rwlock_destroy(l: *mut RwLock) -> c_int;
    fn pthread_spin_init(s: *mut libc::pthread_spinlock_t, pshared: c_int) -> c_int;
    fn pthread_spin_destroy(s: *mut libc::pthread_spinlock_t) -> c_int;
    fn pthread_barrier_init(b: *mut libc::pthread_barrier_t, attr: *const libc::pthread_barrierattr_t, count: libc::c_uint) -> c_int;
    fn pthread_barrier_destroy(b: *mut libc::pthread_barrier_t) -> c_int;
    fn sem_init(s: *mut libc::sem_t, pshared: c_int, value: libc::c_uint) -> c_int;
    fn sem_destroy(s: *mut libc::sem_t) -> c_int;
    fn mtx_init(m: *mut Mutex, kind: c_int) -> c_int;
    fn mtx_destroy(m: *mut Mutex) -> ();
    fn cnd_init(c: *mut Cond) -> c_int;
    fn cnd_destroy(c: *mut Cond) -> ();
    fn sem_post(s: *mut libc::sem_t) -> c_int;
    fn sem_wait(s: *mut libc::sem_t) -> c_int;
    fn sem_trywait(s: *mut libc::sem_t) -> c_int;
    fn sem_timedwait(s: *mut libc::sem_t, abstime: *const timespec) -> c_int;
    fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void;
    fn valloc(size: size_t) -> *mut c_void;
    fn pvalloc(size: size_t) -> *mut c_void;
    fn malloc_usable_size(p: *mut c_void) -> size_t;
    fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    fn writev(fd: c_int, iov: *const libc::iovec, n: c_int) -> ssize_t;
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    fn vprintf(fmt: *const c_char, ap: *mut c_void) -> c_int;
    fn vfprintf(f: *mut libc::FILE, fmt: *const c_char, ap: *mut c_void) -> c_int;
    fn vdprintf(fd: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
    fn __vfprintf_chk(f: *mut libc::FILE, flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
    fn __vprintf_chk(flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
    fn puts(s: *const c_char) -> c_int;
    fn fputs(s: *const c_char, f: *mut libc::FILE) -> c_int;
    fn putchar(c: c_int) -> c_int;
    fn fputc(c: c_int, f: *mut libc::FILE) -> c_int;
    fn putc(c: c_int, f: *mut libc::FILE) -> c_int;
    fn fwrite(p: *const c_void, size: size_t, n: size_t, f: *mut libc::FILE) -> size_t;
    fn fflush(f: *mut libc::FILE) -> c_int;
    fn flockfile(f: *mut libc::FILE) -> ();
    fn ftrylockfile(f: *mut libc::FILE) -> c_int;
    fn funlockfile(f: *mut libc::FILE) -> ();
    fn perror(s: *const c_char) -> ();
    fn rand() -> c_int;
    fn random() -> libc::c_long;
    fn srand(seed: libc::c_uint) -> ();
    fn srandom(seed: libc::c_uint) -> ();
    fn lrand48() -> libc::c_long;
    fn mrand48() -> libc::c_long;
    fn drand48() -> f64;
    fn time(t: *mut libc::time_t) -> libc::time_t;
    fn clock_gettime(clock: libc::clockid_t, ts: *mut timespec) -> c_int;
    fn gettimeofday(tv: *mut libc::timeval, tz: *mut c_void) -> c_int;
    fn clock() -> libc::clock_t;
    fn times(buf: *mut libc::tms) -> libc::clock_t;
    fn timespec_get(ts: *mut timespec, base: c_int) -> c_int;
    fn getrusage(who: c_int, usage: *mut libc::rusage) -> c_int;
    fn getloadavg(loadavg: *mut f64, nelem: c_int) -> c_int;
    fn sysinfo(info: *mut libc::sysinfo) -> c_int;
    fn getpid() -> libc::pid_t;
    fn getppid() -> libc::pid_t;
    fn gettid() -> libc::pid_t;
    fn kill(pid: libc::pid_t, sig: c_int) -> c_int;
    fn tgkill(tgid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> c_int;
    fn sigqueue(pid: libc::pid_t, sig: c_int, value: libc::sigval) -> c_int;
    fn setpriority(which: c_int, who: libc::id_t, prio: c_int) -> c_int;
    fn getpriority(which: c_int, who: libc::id_t) -> c_int;
    fn sched_setaffinity(pid: libc::pid_t, size: size_t, mask: *const libc::cpu_set_t) -> c_int;
    fn sched_setscheduler(pid: libc::pid_t, policy: c_int, param: *const libc::sched_param) -> c_int;
    fn sched_getscheduler(pid: libc::pid_t) -> c_int;
    fn sched_setparam(pid: libc::pid_t, param: *const libc::sched_param) -> c_int;
    fn sched_getparam(pid: libc::pid_t, param: *mut libc::sched_param) -> c_int;
    fn exit(status: c_int) -> ();
    fn _exit(status: c_int) -> ();
    fn _Exit(status: c_int) -> ();
    fn sleep(s: libc::c_uint) -> libc::c_uint;
    fn usleep(us: libc::useconds_t) -> c_int;
    fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    fn clock_nanosleep(clock: libc::clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    fn sched_yield() -> c_int;
    fn sigaction(signal: c_int, action: *const libc::sigaction, old: *mut libc::sigaction) -> c_int;
    fn signal(signal: c_int, handler: libc::sighandler_t) -> libc::sighandler_t;
    fn __sysv_signal(signal: c_int, handler: libc::sighandler_t) -> libc::sighandler_t;
    fn thrd_sleep(duration: *const timespec, remaining: *mut timespec) -> c_int;
    fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout: c_int) -> c_int;
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *mut libc::timeval) -> c_int;
    fn pause() -> c_int;
    fn strlen(s: *const c_char) -> size_t;
    fn strnlen(s: *const c_char, max: size_t) -> size_t;
    fn strchr(s: *const c_char, c: c_int) -> *mut c_char;
    fn strrchr(s: *const c_char, c: c_int) -> *mut c_char;
    fn memchr(s: *const c_void, c: c_int, n: size_t) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: size_t) -> c_int;
    fn strcmp(a: *const c_char, b: *const c_char) -> c_int;
    fn strncmp(a: *const c_char, b: *const c_char, n: size_t) -> c_int;
    fn strcpy(dst: *mut c_char, src: *const c_char) -> *mut c_char;
    fn stpcpy(dst: *mut c_char, src: *const c_char) -> *mut c_char;
    fn strncpy(dst: *mut c_char, src: *const c_char, n: size_t) -> *mut c_char;
    fn strcat(dst: *mut c_char, src: *const c_char) -> *mut c_char;
    fn strncat(dst: *mut c_char, src: *const c_char, n: size_t) -> *mut c_char;
    fn stat(path: *const c_char, status: *mut libc::stat) -> c_int;
    fn lstat(path: *const c_char, status: *mut libc::stat) -> c_int;
    fn fstatat(dir: c_int, path: *const c_char, status: *mut libc::stat, flags: c_int) -> c_int;
    fn access(path: *const c_char, mode: c_int) -> c_int;
    fn faccessat(dir: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int;
    fn unlink(path: *const c_char) -> c_int;
    fn unlinkat(dir: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn rename(from: *const c_char, to: *const c_char) -> c_int;
    fn renameat(from_dir: c_int, from: *const c_char, to_dir: c_int, to: *const c_char) -> c_int;
    fn mkdir(path: *const c_char, mode: libc::mode_t) -> c_int;
    fn rmdir(path: *const c_char) -> c_int;
    fn sigwait(set: *const libc::sigset_t, sig: *mut c_int) -> c_int;
    fn sigwaitinfo(set: *const libc::sigset_t, info: *mut libc::siginfo_t) -> c_int;
    fn sigtimedwait(set: *const libc::sigset_t, info: *mut libc::siginfo_t, timeout: *const timespec) -> c_int;
    fn sigsuspend(mask: *const libc::sigset_t) -> c_int;
    fn open(path: *const c_char, flags: c_int, mode: libc::c_uint) -> c_int;
    fn open64(path: *const c_char, flags: c_int, mode: libc::c_uint) -> c_int;
    fn openat(dir: c_int, path: *const c_char, flags: c_int, mode: libc::c_uint) -> c_int;
    fn openat64(dir: c_int, path: *const c_char, flags: c_int, mode: libc::c_uint) -> c_int;
    fn __open_2(path: *const c_char, flags: c_int) -> c_int;
    fn __open64_2(path: *const c_char, flags: c_int) -> c_int;
    fn __openat_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn __openat64_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn creat(path: *const c_char, mode: libc::mode_t) -> c_int;
    fn creat64(path: *const c_char, mode: libc::mode_t) -> c_int;
    fn socket(domain: c_int, kind: c_int, protocol: c_int) -> c_int;
    fn socketpair(domain: c_int, kind: c_int, protocol: c_int, fds: *mut c_int) -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
    fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn dup2(fd: c_int, to: c_int) -> c_int;
    fn dup3(fd: c_int, to: c_int, flags: c_int) -> c_int;
    fn fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int;
    fn fcntl64(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int;
    fn accept(fd: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t) -> c_int;
    fn accept4(fd: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t, flags: c_int) -> c_int;
    fn epoll_create(size: c_int) -> c_int;
    fn epoll_create1(flags: c_int) -> c_int;
    fn eventfd(initial: libc::c_uint, flags: c_int) -> c_int;
    fn timerfd_create(clock: c_int, flags: c_int) -> c_int;
    fn signalfd(fd: c_int, mask: *const libc::sigset_t, flags: c_int) -> c_int;
    fn inotify_init() -> c_int;
    fn inotify_init1(flags: c_int) -> c_int;
    fn memfd_create(name: *const c_char, flags: libc::c_uint) -> c_int;
    fn mkstemp(template: *mut c_char) -> c_int;
    fn mkostemp(template: *mut c_char, flags: c_int) -> c_int;
    fn mkdtemp(template: *mut c_char) -> *mut c_char;
    fn tmpnam(s: *mut c_char) -> *mut c_char;
    fn tmpnam_r(s: *mut c_char) -> *mut c_char;
    fn tempnam(dir: *const c_char, prefix: *const c_char) -> *mut c_char;
    fn mkstemps(template: *mut c_char, after: c_int) -> c_int;
    fn mkostemps(template: *mut c_char, after: c_int, flags: c_int) -> c_int;
    fn tmpfile() -> *mut libc::FILE;
    fn tmpfile64() -> *mut libc::FILE;
    fn opendir(path: *const c_char) -> *mut libc::DIR;
    fn closedir(d: *mut libc::DIR) -> c_int;
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fn fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fn close(fd: c_int) -> c_int;
    fn fclose(f: *mut libc::FILE) -> c_int;
    fn fork() -> libc::pid_t;
    fn fdopen(fd: c_int, mode: *const c_char) -> *mut libc::FILE;
    fn popen(command: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fn pclose(f: *mut libc::FILE) -> c_int;
    fn fileno(f: *mut libc::FILE) -> c_int;
    fn fileno_unlocked(f: *mut libc::FILE) -> c_int;
    fn system(command: *const c_char) -> c_int;
    fn posix_spawn(pid: *mut libc::pid_t, path: *const c_char, actions: *const libc::posix_spawn_file_actions_t, attr: *const libc::posix_spawnattr_t, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int;
    fn posix_spawnp(pid: *mut libc::pid_t, file: *const c_char, actions: *const libc::posix_spawn_file_actions_t, attr: *const libc::posix_spawnattr_t, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int;
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
    fn execv(path: *const c_char, argv: *const *const c_char) -> c_int;
    fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int;
    fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, from: *mut libc::sockaddr, len: *mut libc::socklen_t) -> ssize_t;
    fn getrandom(buf: *mut c_void, n: size_t, flags: libc::c_uint) -> ssize_t;
    fn getentropy(buf: *mut c_void, n: size_t) -> c_int;
    fn readv(fd: c_int, iov: *const libc::iovec, count: c_int) -> ssize_t;
    fn ftw(dir: *const c_char, f: FtwFn, open_max: c_int) -> c_int;
    fn ftw64(dir: *const c_char, f: FtwFn, open_max: c_int) -> c_int;
    fn nftw(dir: *const c_char, f: NftwFn, open_max: c_int, flags: c_int) -> c_int;
    fn nftw64(dir: *const c_char, f: NftwFn, open_max: c_int, flags: c_int) -> c_int;
    fn scandir(dir: *const c_char, list: *mut c_void, filter: FilterFn, compare: CompareFn) -> c_int;
    fn scandir64(dir: *const c_char, list: *mut c_void, filter: FilterFn, compare: CompareFn) -> c_int;
    fn scandirat(dir_fd: c_int, dir: *const c_char, list: *mut c_void, filter: FilterFn, compare: CompareFn) -> c_int;
    fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> ssize_t;
    fn getpwnam(name: *const c_char) -> *mut libc::passwd;
    fn getpwuid(uid: libc::uid_t) -> *mut libc::passwd;
    fn getpwnam_r(name: *const c_char, pwd: *mut libc::passwd, buf: *mut c_char, len: size_t, result: *mut *mut libc::passwd) -> c_int;
    fn getpwuid_r(uid: libc::uid_t, pwd: *mut libc::passwd, buf: *mut c_char, len: size_t, result: *mut *mut libc::passwd) -> c_int;
    fn getpwent() -> *mut libc::passwd;
    fn setpwent() -> ();
    fn endpwent() -> ();
    fn getgrnam(name: *const c_char) -> *mut libc::group;
    fn getgrgid(gid: libc::gid_t) -> *mut libc::group;
    fn getgrnam_r(name: *const c_char, grp: *mut libc::group, buf: *mut c_char, len: size_t, result: *mut *mut libc::group) -> c_int;
    fn getgrgid_r(gid: libc::gid_t, grp: *mut libc::group, buf: *mut c_char, len: size_t, result: *mut *mut libc::group) -> c_int;
    fn getgrent() -> *mut libc::group;
    fn setgrent() -> ();
    fn endgrent() -> ();
    fn getgrouplist(user: *const c_char, group: libc::gid_t, groups: *mut libc::gid_t, count: *mut c_int) -> c_int;
    fn getservbyname(name: *const c_char, proto: *const c_char) -> *mut libc::servent;
    fn getservbyport(port: c_int, proto: *const c_char) -> *mut libc::servent;
    fn getprotobyname(name: *const c_char) -> *mut libc::protoent;
    fn getprotobynumber(proto: c_int) -> *mut libc::protoent;
    fn getlogin() -> *mut c_char;
    fn getlogin_r(buf: *mut c_char, len: size_t) -> c_int;
    fn ttyname(fd: c_int) -> *mut c_char;
    fn ttyname_r(fd: c_int, buf: *mut c_char, len: size_t) -> c_int;
    fn sched_getaffinity(pid: libc::pid_t, size: size_t, mask: *mut libc::cpu_set_t) -> c_int;
    fn pthread_getaffinity_np(t: pthread_t, size: size_t, mask: *mut libc::cpu_set_t) -> c_int;
    fn sched_getcpu() -> c_int;
    fn get_nprocs() -> c_int;
    fn get_nprocs_conf() -> c_int;
    fn sysconf(name: c_int) -> libc::c_long;
    fn get_avphys_pages() -> libc::c_long;
    fn setlocale(category: c_int, locale: *const c_char) -> *mut c_char;
    fn newlocale(mask: c_int, locale: *const c_char, base: libc::locale_t) -> libc::locale_t;
    fn getaddrinfo(node: *const c_char, service: *const c_char, hints: *const libc::addrinfo, res: *mut *mut libc::addrinfo) -> c_int;
    fn gethostbyname(name: *const c_char) -> *mut libc::hostent;
    fn dlopen(file: *const c_char, flags: c_int) -> *mut c_void;
    fn dlclose(handle: *mut c_void) -> c_int;
    fn tzset() -> ();
    fn localtime(t: *const libc::time_t) -> *mut libc::tm;
    fn localtime_r(t: *const libc::time_t, out: *mut libc::tm) -> *mut libc::tm;
    fn mktime(tm: *mut libc::tm) -> libc::time_t;
    fn ctime(t: *const libc::time_t) -> *mut c_char;
    fn glob(pattern: *const c_char, flags: c_int, errfunc: *const c_void, pglob: *mut libc::glob_t) -> c_int;
}

unsafe extern "C" {
    pub(crate) fn __libc_malloc(size: size_t) -> *mut c_void;
    pub(crate) fn __libc_calloc(n: size_t, size: size_t) -> *mut c_void;
    pub(crate) fn __libc_realloc(p: *mut c_void, size: size_t) -> *mut c_void;
    pub(crate) fn __libc_free(p: *mut c_void);
    pub(crate) fn __libc_memalign(align: size_t, size: size_t) -> *mut c_void;
}

// glibc 2.36 and later; libstdc++'s, in C++ programs only.
real_functions! {
    resolve_newer with resolve_if_present:
    fn __cxa_guard_acquire(guard: *mut c_void) -> c_int;
    fn __cxa_guard_release(guard: *mut c_void) -> ();
    fn __cxa_guard_abort(guard: *mut c_void) -> ();
    fn arc4random() -> u32;
    fn arc4random_uniform(bound: u32) -> u32;
    fn arc4random_buf(buf: *mut c_void, n: size_t) -> ();
    fn _ZNSt13random_device9_M_getvalEv(device: *mut c_void) -> core::ffi::c_uint;
    fn _ZNSt13random_device16_M_getval_pretr1Ev(device: *mut c_void) -> core::ffi::c_uint;
    fn _ZNKSt5ctypeIcE13_M_widen_initEv(ctype: *const c_void) -> ();
    fn _ZNKSt5ctypeIcE14_M_narrow_initEv(ctype: *const c_void) -> ();
    fn _ZNSt15__exception_ptr13exception_ptr9_M_addrefEv(ptr: *mut c_void) -> ();
    fn _ZNSt15__exception_ptr13exception_ptr10_M_releaseEv(ptr: *mut c_void) -> ();
    fn __cxa_end_catch() -> ();
}
