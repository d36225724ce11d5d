//! The end of a thread: its exit event, logged once everything the thread
//! runs has run.
//!
//! After a thread's start routine returns (or pthread_exit unwinds it),
//! glibc runs its thread-local destructors (C++ `thread_local`,
//! `__cxa_thread_atexit_impl`), then its `pthread_key` destructors, in
//! rounds while they set values again. Those are program code: they access
//! memory, lock, allocate and print. So the exit event is logged from a
//! key destructor of the runtime's own, whose key is the last one glibc
//! keeps in the thread descriptor (31: no block to allocate or free), and
//! which re-arms itself until the last round: it runs after every
//! destructor of the keys below it, in every round. What still runs after
//! it is not recorded: destructors of keys 32 and up (and glibc's freeing
//! of their blocks), glibc's own per-thread clean-up.

use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use rr_lite_trace::{EventKind, pseudo};

use crate::events;
use crate::mode::{self, Mode};
use crate::thread::THREAD;

/// The last key glibc keeps in the thread descriptor.
const LAST_KEY_IN_DESCRIPTOR: libc::pthread_key_t = 31;
const NO_KEY: u32 = u32::MAX;

/// The key whose destructor logs the exit, or [`NO_KEY`].
static EXIT_KEY: AtomicU32 = AtomicU32::new(NO_KEY);
/// Rounds of key destructors glibc runs at most.
static ROUNDS: AtomicUsize = AtomicUsize::new(1);

/// Creates the exit key (at start-up, the same in record and replay):
/// takes keys until it gets the last one in the descriptor, then gives the
/// others back for the program. Without it (more keys in use already),
/// threads log their exit where their start routine ends.
pub(crate) fn create_exit_key() {
    let mut taken = [0 as libc::pthread_key_t; LAST_KEY_IN_DESCRIPTOR as usize];
    let mut count = 0;
    loop {
        let mut key = 0;
        // SAFETY: creates a key with our destructor into a local.
        if unsafe { libc::pthread_key_create(&mut key, Some(exit_key_destructor)) } != 0 {
            break;
        }
        if key == LAST_KEY_IN_DESCRIPTOR {
            EXIT_KEY.store(key, Ordering::Release);
            break;
        }
        if key > LAST_KEY_IN_DESCRIPTOR || count == taken.len() {
            // SAFETY: deleting the key just created.
            unsafe { libc::pthread_key_delete(key) };
            break;
        }
        taken[count] = key;
        count += 1;
    }
    for &key in &taken[..count] {
        // SAFETY: deleting keys created above, which nothing uses.
        unsafe { libc::pthread_key_delete(key) };
    }
    // SAFETY: sysconf has no preconditions.
    let rounds = unsafe { libc::sysconf(libc::_SC_THREAD_DESTRUCTOR_ITERATIONS) };
    ROUNDS.store(
        usize::try_from(rounds).unwrap_or(1).max(1),
        Ordering::Relaxed,
    );
}

fn exit_key() -> Option<libc::pthread_key_t> {
    let key = EXIT_KEY.load(Ordering::Acquire);
    (key != NO_KEY).then_some(key)
}

/// Arms the calling thread's exit key (at registration): its destructor
/// will log the thread's exit.
pub(crate) fn arm() {
    if let Some(key) = exit_key() {
        set_round(key, 1);
    }
}

fn set_round(key: libc::pthread_key_t, round: usize) {
    // SAFETY: a key of the descriptor's own block: setting it allocates
    // nothing and cannot fail.
    unsafe { libc::pthread_setspecific(key, round as *const c_void) };
}

/// Where the start routine ends (return or pthread_exit): logs the exit
/// unless the exit key's destructor will.
pub(crate) fn start_routine_ended() {
    if exit_key().is_none() {
        finish_thread();
    }
}

/// Called by glibc in each round of key destructors, after those of the
/// program's keys below it: arms itself for the next round, or in the last
/// one logs the thread's exit.
extern "C" fn exit_key_destructor(value: *mut c_void) {
    let round = value as usize;
    match exit_key() {
        Some(key) if round < ROUNDS.load(Ordering::Relaxed) => set_round(key, round + 1),
        _ => finish_thread(),
    }
}

/// Record: a thread ending while still inside a blocking call it never
/// returned from was cancelled there (or unwound out of it): the trace
/// cannot replay that, and says so (replay refuses it) instead of replaying
/// to a deadlock.
fn note_a_blocking_call_left() {
    static NOTED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    let left =
        events::with_tracked(|t, mode| mode == Mode::Record && t.record.left_a_blocking_call());
    if left == Some(true) && !NOTED.swap(true, Ordering::AcqRel) {
        crate::sys::warn(&[
            b"a thread ended inside a blocking call (cancelled by pthread_cancel there?): \
              the trace is marked incomplete",
        ]);
        crate::problems::note(&[
            b"a thread was cancelled inside a blocking call (pthread_cancel acting in \
              pthread_cond_wait, sem_wait, read...), or left one by pthread_exit or longjmp \
              from a signal handler: replay does not reproduce that",
        ]);
    }
}

/// Logs the thread's end on glibc's stack cache and its exit, and ends its
/// part: record releases its stripes
/// and closes its log, replay checks its event count and hash and publishes
/// everything. Later hooks on this thread are not seen.
pub(crate) fn finish_thread() {
    let Some(id) = events::with_tracked(|t, _| t.id.get()) else {
        return;
    };
    // A pool thread (libomp's, libgomp's) is often told to end through
    // synchronisation the runtime does not see, after it last logged: its
    // exit comes after everything logged so far, as in real time, so that
    // the merged order (sequential replay) does not put it before the
    // release that let it end.
    note_a_blocking_call_left();
    events::after_hidden_sync_with_all();
    events::log_event(EventKind::ThreadExit, pseudo::thread_exit(id), 0, 0, 0);
    if id != crate::thread::MAIN_THREAD {
        // What follows is glibc's teardown, which may hand this thread's
        // stack back to its cache and trim the cache of the stacks already
        // free there: an event on the stack cache, after which every thread
        // ordered before it there is gone, as before a create. It is the
        // thread's last: once marked, the thread needs no stripe again (a
        // creator holding the stack cache's stripe waits for it to be gone,
        // and that stripe may also be the one of this thread's exit).
        events::log_after_call(
            EventKind::ThreadStacks,
            pseudo::THREAD_STACKS,
            0,
            0,
            || {
                crate::thread::wait_until_handed_back_stacks_are_free();
                crate::thread::mark_stack_handed_back(id);
            },
            |_| 0,
        );
    }
    end_thread();
    crate::thread::mark_exited(id);
    crate::own_stack::release(id);
}

/// Ends the thread's part in its mode (also at the process's exit event).
pub(crate) fn end_thread() {
    let mode = mode::current();
    THREAD.with(|t| {
        if !t.is_tracked() {
            return;
        }
        t.enter();
        if mode == Mode::Replay {
            crate::replay::check_summary(&t.replay);
            crate::replay::finish_thread(&t.replay);
        } else {
            t.record.release_held();
            t.record.with_log(|log| log.close());
            crate::chaos::thread_finished(t.id.get());
        }
        t.input.close();
        t.mark_exited();
        t.leave();
    });
}
