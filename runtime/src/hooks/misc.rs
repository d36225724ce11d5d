//! The rest of the ABI: start-up, function entry/exit, annotations, fibers.

use core::ffi::{c_char, c_void};

use rr_lite_trace::EventKind;

use crate::events;
use crate::own_stack::switching_entry;
use crate::site::with_site;

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_init() {
    crate::init::initialise(core::ptr::null(), core::ptr::null());
}

/// Function entry and exit are hooks too: giving back the stripes kept
/// from the previous access here (or once their quantum is over) keeps lock
/// hold times short.
extern "C" fn func_entry(_caller: *mut c_void) {
    events::pass_hook();
}
switching_entry!(__tsan_func_entry => func_entry);

/// Returns 0, which the program (declaring it void) ignores: a `void main`
/// exits with whatever `rax` holds after this, its last call, and that
/// must not depend on the path the runtime took (record, replay, the
/// quantum), or the exit status would differ between them.
extern "C" fn func_exit() -> u64 {
    events::pass_hook();
    0
}
switching_entry!(__tsan_func_exit => func_exit);

/// `__tsan_acquire`/`__tsan_release` annotate a happens-before edge through
/// an address; modelled as a read and a write of it, which orders them.
/// (They return what the access hooks return: `events::LEFT_IN_RAX`.)
extern "C" fn acquire(addr: u64, site: u64) -> u64 {
    events::log_sized_access::<{ EventKind::Read as u8 }, 1>(addr, site)
}

extern "C" fn release(addr: u64, site: u64) -> u64 {
    events::log_sized_access::<{ EventKind::Write as u8 }, 1>(addr, site)
}

with_site!(__tsan_acquire => acquire, "rsi");
with_site!(__tsan_release => release, "rsi");

/// Annotations whose effect is already captured: the primitives they
/// describe are made of atomics, which are recorded themselves.
macro_rules! no_op_hooks {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($(_: $t),*) {}
    )*};
}

no_op_hooks! {
    __tsan_mutex_create(a: *mut c_void, f: u32);
    __tsan_mutex_destroy(a: *mut c_void, f: u32);
    __tsan_mutex_pre_lock(a: *mut c_void, f: u32);
    __tsan_mutex_post_lock(a: *mut c_void, f: u32, r: i32);
    __tsan_mutex_post_unlock(a: *mut c_void, f: u32);
    __tsan_mutex_pre_signal(a: *mut c_void, f: u32);
    __tsan_mutex_post_signal(a: *mut c_void, f: u32);
    __tsan_mutex_pre_divert(a: *mut c_void, f: u32);
    __tsan_mutex_post_divert(a: *mut c_void, f: u32);
    __tsan_ignore_thread_begin();
    __tsan_ignore_thread_end();
    __tsan_flush_memory();
    __tsan_external_register_header(t: *mut c_void, h: *const c_char);
    __tsan_external_assign_tag(a: *mut c_void, t: *mut c_void);
    __tsan_destroy_fiber(f: *mut c_void);
    __tsan_switch_to_fiber(f: *mut c_void, flags: u32);
    __tsan_set_fiber_name(f: *mut c_void, n: *const c_char);
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_mutex_pre_unlock(_a: *mut c_void, _f: u32) -> i32 {
    0
}

/// External (library-defined) objects: a read or write of the object.
extern "C" fn external_read(addr: *mut c_void, pc: *mut c_void, _tag: *mut c_void) -> u64 {
    events::log_sized_access::<{ EventKind::Read as u8 }, 1>(addr as u64, pc as u64)
}
switching_entry!(__tsan_external_read => external_read);

extern "C" fn external_write(addr: *mut c_void, pc: *mut c_void, _tag: *mut c_void) -> u64 {
    events::log_sized_access::<{ EventKind::Write as u8 }, 1>(addr as u64, pc as u64)
}
switching_entry!(__tsan_external_write => external_write);

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_external_register_tag(_name: *const c_char) -> *mut c_void {
    core::ptr::dangling_mut::<c_void>()
}

/// Fibers are not supported (documented limit): one fiber per thread.
static FIBER: u8 = 0;

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_get_current_fiber() -> *mut c_void {
    core::ptr::addr_of!(FIBER) as *mut c_void
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_create_fiber(_flags: u32) -> *mut c_void {
    core::ptr::addr_of!(FIBER) as *mut c_void
}

// ThreadSanitizer's dynamic annotations (`dynamic_annotations.h`), which
// code that detects the sanitizer (`__SANITIZE_THREAD__`, defined by
// `-fsanitize=thread`) calls: moodycamel's readerwriterqueue, Abseil,
// folly. Without them such a program did not link. Every one does
// nothing: what they tell a race detector (a happens-before pair made of
// relaxed atomics and fences, benign races, ignored accesses, locks made
// of atomics) a recording orders by the accesses themselves. (Logging a
// happens-before pair as an access of its address, as `__tsan_release`
// is, would order more than the program does.) Valgrind's
// `RunningOnValgrind`, which TSan's runtime also defines, is left out on
// purpose: LLVM's OpenMP tool for TSan (libarcher, which libomp loads)
// takes its presence for TSan's and then crashed the program.
// (No parameter is declared: the caller's arguments are its business in
// this ABI, and none is read.)
no_op_hooks! {
    AnnotateHappensBefore();
    AnnotateHappensAfter();
    AnnotateBenignRace();
    AnnotateBenignRaceSized();
    AnnotateIgnoreReadsBegin();
    AnnotateIgnoreReadsEnd();
    AnnotateIgnoreWritesBegin();
    AnnotateIgnoreWritesEnd();
    AnnotateIgnoreSyncBegin();
    AnnotateIgnoreSyncEnd();
    AnnotateRWLockCreate();
    AnnotateRWLockCreateStatic();
    AnnotateRWLockDestroy();
    AnnotateRWLockAcquired();
    AnnotateRWLockReleased();
    AnnotateNewMemory();
    AnnotateThreadName();
    AnnotateMutexIsUsedAsCondVar();
    AnnotateMutexIsNotPHB();
    AnnotateCondVarSignal();
    AnnotateCondVarSignalAll();
    AnnotateCondVarWait();
    AnnotatePublishMemoryRange();
    AnnotateUnpublishMemoryRange();
    AnnotatePCQCreate();
    AnnotatePCQDestroy();
    AnnotatePCQPut();
    AnnotatePCQGet();
    AnnotateFlushState();
    AnnotateFlushExpectedRaces();
    AnnotateExpectRace();
    AnnotateEnableRaceDetection();
    AnnotateTraceMemory();
    AnnotateNoOp();
    AnnotateMemoryIsInitialized();
    AnnotateMemoryIsUninitialized();
}
