//! Chaos scheduling while recording (`rr-lite record --chaos`): the runtime
//! perturbs the interleaving so that rare schedules, and the bugs they
//! expose, come up in few runs. Whatever schedule results is recorded like
//! any other, and replay follows the trace: it never schedules chaotically
//! (this module is configured in record mode only).
//!
//! The recorder chooses the strategy in `RR_LITE_CHAOS`:
//!
//! * `pct:SEED:DEPTH:EVENTS`: Probabilistic Concurrency Testing (Burckhardt,
//!   Kothari, Musuvathi and Nagarakatte, ASPLOS 2010). Each thread gets a
//!   random priority, drawn from the seed and its logical id, above every
//!   change-point priority; DEPTH-1 change points are drawn uniformly in
//!   1..=EVENTS (the estimated number of steps of a run: events made while
//!   two threads or more live, bookkeeping ones left out, see [`is_step`]);
//!   when the run's step count reaches the i-th (from 1), the running
//!   thread's priority drops to the (DEPTH-i)-th lowest change-point
//!   priority. A thread ending the process waits below all of them
//!   ([`exiting`]). One thread at a time holds the *turn* and runs
//!   instrumented code: at each event a thread checks that it holds the turn
//!   and that no ready thread has a higher priority, else it hands the turn
//!   to the highest-priority ready thread and waits to get it back. The
//!   recording quantum stays on: a plain access on a stripe the thread
//!   keeps is no event of its own there, so PCT checks at every access
//!   instead ([`at_access`], after which the thread gives back what it
//!   keeps before waiting). A bug of
//!   depth d among n threads and k events is then found by one run with
//!   probability at least 1/(n k^(d-1)).
//! * `serial:SEED:SLICE` (`record --serialize`): the same turn as PCT,
//!   without change points: threads take turns round robin, each running
//!   1 to SLICE events (drawn from the seed, the thread and its turn
//!   number) while others are ready, as a single-core recorder (rr) runs
//!   them. Not a perturbation: a coarse schedule, so that threads sharing
//!   data at fine grain record few turns on it, and replay waits few
//!   times. Fast-path accesses (a stripe the thread kept since its
//!   previous access to it: its own data) do not wait for the turn, so
//!   threads still compute side by side.
//! * `random:SEED`: no serialisation. Threads sleep 10 to 400 µs at random
//!   events (one in 64 of a thread's first 1024 events, one in 65536 after)
//!   and yield the processor at others (one in 256, then one in 8192);
//!   under the recording quantum every access is such an event
//!   ([`at_access`]). Cheaper, without a guarantee.
//!
//! Liveness: chaos must never hang a program that would not hang.
//! * A thread about to block where the runtime sees it (join, condition
//!   wait, sleep, yield, read...) gives the turn away first ([`blocking`]);
//!   an ending thread gives it away ([`thread_finished`]). A lock is first
//!   tried: when it is held, the thread waits, not runnable, until a thread
//!   releases a lock ([`wait_for_lock`], [`lock_released`]), as in PCT.
//! * A thread that keeps the turn for [`MAX_TURN_EVENTS`] events while
//!   others are ready (a spin loop waiting for one of them) is demoted below
//!   every thread not demoted yet, or below every ready thread once one of
//!   them has dropped to a change-point priority (it may be the one waited
//!   for).
//! * A holder blocked where the runtime cannot see (a raw futex, a full
//!   pipe) makes no events: when none happened for [`STEAL_SLEEPER_AFTER_NS`]
//!   and it sleeps outside the runtime, or for [`STEAL_AFTER_NS`] and it
//!   sleeps in the kernel at all, or for [`STEAL_RUNNABLE_AFTER_NS`]
//!   whatever it does, the highest-priority ready thread takes the turn.
//!
//! Invariants: a thread waits for the turn only at the start of an event,
//! holding no stripe, so the holder never waits for a waiter's stripe;
//! `TURN` names a thread that runs (or blocked unseen), never one that
//! waits; every change of `TURN` or of a thread's state happens under the
//! scheduler lock, which is held for bookkeeping only, never across a wait.
//!
//! Determinism: with the same seed, on a program deterministic given its
//! schedule, PCT makes the same choices (priorities depend on the seed and
//! on logical ids, which creation order gives; change points on the event
//! count, which the turn serialises). Steals depend on time, so a program
//! that blocks where the runtime cannot see may not repeat its schedule.

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::sys::MAX_THREADS;

/// Environment variable carrying the strategy (see the module doc).
pub(crate) const CHAOS_ENV: &core::ffi::CStr = c"RR_LITE_CHAOS";

/// Events a thread may run on one turn while others are ready, before it
/// is demoted (a spinning thread must let the one it waits for run).
const MAX_TURN_EVENTS: u64 = 20_000;
/// Without any event for this long, the best ready thread takes the turn
/// from a holder asleep in the kernel (blocked where the runtime does not
/// see, or in an output to a full pipe).
const STEAL_AFTER_NS: u64 = 20_000_000;
/// The same for a holder that is runnable (a spin the runtime does not
/// see, or only a busy machine): taking the turn from it lets threads run
/// side by side, which may also let another thread's crash end the process
/// between its real call and that call's event.
const STEAL_RUNNABLE_AFTER_NS: u64 = 1_000_000_000;
/// The same under the serial schedule, which wants no particular order,
/// only coarse turns: a holder computing on its own data (the fast path
/// takes no turn) or spinning there lets the others have the turn after a
/// time slice.
const STEAL_RUNNABLE_SERIAL_NS: u64 = 2_000_000;
/// The same when the holder sleeps in the kernel outside the runtime.
const STEAL_SLEEPER_AFTER_NS: u64 = 1_000_000;
/// How long a waiter sleeps between looks at the holder.
const WAIT_SLICE_NS: u64 = 500_000;
/// Random: a thread's first events, where pauses are frequent.
const EARLY_EVENTS: u64 = 1024;
/// Most change points (`--pct-depth` at most this + 1).
const MAX_CHANGES: usize = 15;

const OFF: u8 = 0;
const PCT: u8 = 1;
const RANDOM: u8 = 2;
const SERIAL: u8 = 3;

/// A thread's place in the schedule.
const ABSENT: u32 = 0;
/// Waiting for the turn.
const READY: u32 = 1;
/// Holding the turn, or running without it until its next event (after a
/// steal, or back from a call before its next event).
const RUNNING: u32 = 2;
/// In a call that may block; it gave the turn away.
const BLOCKED: u32 = 3;
/// Wants a lock that another thread holds: not ready until a thread
/// releases a lock, blocks or ends ([`lock_released`]).
const LOCK_WAIT: u32 = 4;
/// Joins a thread that has not ended: ready again when that thread ends
/// ([`thread_finished`]), not when the kernel wakes it.
const JOINING: u32 = 5;

/// Priorities, from high to low: initial ones above `DEMOTED_START`;
/// demoted ones (spinners) below it and above `LOWEST_CHANGE_POINT +
/// MAX_CHANGES`; change-point ones from there down to
/// `LOWEST_CHANGE_POINT`; spinners demoted below them (`DEEP_DEMOTED_START`
/// down); `EXIT_PRIORITY`; `SPINNER_AT_EXIT`. (0 stands for "no thread
/// ready" in `BEST_READY`.)
const INITIAL_BASE: u64 = 1 << 40;
const DEMOTED_START: u64 = 1 << 39;
const LOWEST_CHANGE_POINT: u64 = 1 << 38;
/// Where spinners go once a ready thread has dropped to a change-point
/// priority (or below): a spinner waiting for that thread, kept above it,
/// would spin for ever ([`demote_below_undemoted`]).
const DEEP_DEMOTED_START: u64 = LOWEST_CHANGE_POINT - 1;
/// A thread ending the process ([`exiting`]) waits below every other...
const EXIT_PRIORITY: u64 = 2;
/// ...except spinners demoted while it waits, which would otherwise keep
/// it from ending the process for ever.
const SPINNER_AT_EXIT: u64 = 1;
const _: () = assert!(DEEP_DEMOTED_START > EXIT_PRIORITY + (1 << 32));
const _: () = assert!(EXIT_PRIORITY > SPINNER_AT_EXIT && SPINNER_AT_EXIT > 0);

#[derive(Debug)]
struct Slot {
    priority: AtomicU64,
    state: AtomicU32,
    /// Futex word: bumped when the turn is handed to this thread.
    wake: AtomicU32,
    /// Events since the thread took the turn (PCT) or since it started
    /// (random). Only the thread itself touches it.
    events: AtomicU64,
    /// Events the thread may run on this turn while others are ready
    /// ([`turn_limit`]). Only the thread itself touches it (and
    /// [`enter_ready`], before it runs).
    limit: AtomicU64,
    /// Turns the thread has taken (serial: draws its slices).
    turns: AtomicU64,
    /// The thread's random generator (random). Only the thread touches it.
    rng: AtomicU64,
    /// Set while the thread waits in [`wait_for_turn`]: handed the turn, it
    /// is about to wake, and nobody may take the turn from it meanwhile
    /// (on a busy machine waking takes milliseconds).
    waiting: AtomicBool,
    /// The thread this one joins, while `JOINING`.
    joins: AtomicU32,
    /// Created and not at its first event yet: handed the turn, it will
    /// take it once it has started (which may take a while), so nobody
    /// takes the turn from it meanwhile.
    starting: AtomicBool,
}

static SLOTS: [Slot; MAX_THREADS] = [const {
    Slot {
        priority: AtomicU64::new(0),
        state: AtomicU32::new(ABSENT),
        wake: AtomicU32::new(0),
        events: AtomicU64::new(0),
        limit: AtomicU64::new(MAX_TURN_EVENTS),
        turns: AtomicU64::new(0),
        rng: AtomicU64::new(0),
        waiting: AtomicBool::new(false),
        joins: AtomicU32::new(NOBODY),
        starting: AtomicBool::new(false),
    }
}; MAX_THREADS];

static STRATEGY: AtomicU8 = AtomicU8::new(OFF);
static SEED: AtomicU64 = AtomicU64::new(0);
static DEPTH: AtomicU64 = AtomicU64::new(1);
/// Serial: the longest turn, in events.
static SLICE: AtomicU64 = AtomicU64::new(MAX_TURN_EVENTS);
static CHANGE_POINTS: [AtomicU64; MAX_CHANGES] = [const { AtomicU64::new(u64::MAX) }; MAX_CHANGES];
static NEXT_CHANGE: AtomicUsize = AtomicUsize::new(0);
/// Events so far in the run made while two threads or more were live
/// (PCT's step count: a priority change while one thread runs alone
/// would change nothing it could race with).
static STEP: AtomicU64 = AtomicU64::new(0);
/// Threads in the schedule (ready, running or blocked).
static LIVE: AtomicU32 = AtomicU32::new(0);
/// No thread holds the turn.
const NOBODY: u32 = u32::MAX;
/// The thread holding the turn, or `NOBODY`.
static TURN: AtomicU32 = AtomicU32::new(NOBODY);
/// Highest priority among ready threads (0: none), for the per-event check.
static BEST_READY: AtomicU64 = AtomicU64::new(0);
/// One past the highest logical id registered.
static THREADS: AtomicU32 = AtomicU32::new(0);
static NEXT_DEMOTED: AtomicU64 = AtomicU64::new(DEMOTED_START);
static NEXT_DEEP_DEMOTED: AtomicU64 = AtomicU64::new(DEEP_DEMOTED_START);
static LOCK: AtomicBool = AtomicBool::new(false);
/// The thread waiting in [`exiting`] to end the process, or `NOBODY`.
static EXITING: AtomicU32 = AtomicU32::new(NOBODY);
/// Threads in `LOCK_WAIT` (a fast check for [`lock_released`]).
static LOCK_WAITERS: AtomicU32 = AtomicU32::new(0);

/// splitmix64: a good 64-bit mix, used as the generator everywhere here
/// (and by `crate::quantum`).
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Reads the strategy from `RR_LITE_CHAOS` (record mode, before the main
/// thread registers). A malformed value is reported and ignored.
pub(crate) fn configure(value: Option<&[u8]>) {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return;
    };
    let mut fields = value.split(|&b| b == b':');
    let strategy = fields.next().unwrap_or_default();
    let mut number = || fields.next().and_then(parse_u64);
    let ok = match strategy {
        b"random" => number().map(|seed| {
            SEED.store(seed, Ordering::Relaxed);
            STRATEGY.store(RANDOM, Ordering::Release);
        }),
        b"serial" => match (number(), number()) {
            (Some(seed), Some(slice)) => {
                configure_serial(seed, slice);
                Some(())
            }
            _ => None,
        },
        b"pct" => match (number(), number(), number()) {
            (Some(seed), Some(depth), Some(events)) => {
                configure_pct(seed, depth, events);
                Some(())
            }
            _ => None,
        },
        _ => None,
    };
    if ok.is_none() {
        crate::sys::warn(&[
            b"RR_LITE_CHAOS must be pct:SEED:DEPTH:EVENTS, serial:SEED:SLICE or random:SEED, not '",
            value,
            b"': recording without chaos",
        ]);
    }
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then_some(())
            .and(n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
    })
}

fn configure_pct(seed: u64, depth: u64, events: u64) {
    let depth = depth.clamp(1, MAX_CHANGES as u64 + 1);
    let events = events.max(1);
    let changes = (depth - 1) as usize;
    let mut points = [u64::MAX; MAX_CHANGES];
    for (i, point) in points.iter_mut().enumerate().take(changes) {
        *point = 1 + mix(seed ^ mix(0xc4a0_5000 + i as u64)) % events;
    }
    points[..changes].sort_unstable();
    for (slot, point) in CHANGE_POINTS.iter().zip(points) {
        slot.store(point, Ordering::Relaxed);
    }
    SEED.store(seed, Ordering::Relaxed);
    DEPTH.store(depth, Ordering::Relaxed);
    STRATEGY.store(PCT, Ordering::Release);
}

/// Serial turns of 1 to `slice` events, no change points.
fn configure_serial(seed: u64, slice: u64) {
    SLICE.store(slice.max(1), Ordering::Relaxed);
    SEED.store(seed, Ordering::Relaxed);
    STRATEGY.store(SERIAL, Ordering::Release);
}

/// The events thread `id` (slot `s`) may run on the turn it takes now
/// while others are ready: PCT's spinner bound, or a serial slice drawn
/// from the seed, the thread and its turn number (so the same seed gives
/// the same slices on a program whose schedule it decides).
fn turn_limit(id: u32, s: &Slot) -> u64 {
    if strategy() != SERIAL {
        return MAX_TURN_EVENTS;
    }
    let turn = s.turns.fetch_add(1, Ordering::Relaxed);
    let draw = mix(SEED.load(Ordering::Relaxed) ^ mix((u64::from(id) << 40) ^ turn));
    1 + draw % SLICE.load(Ordering::Relaxed)
}

/// At the process's exit: notes how many steps PCT counted, in the trace's
/// `chaos-steps` (the recorder's estimate for the next run).
pub(crate) fn note_steps() {
    if strategy() != PCT {
        return;
    }
    crate::mode::note_count(
        rr_lite_trace::dir::CHAOS_STEPS_FILE,
        b"steps ",
        STEP.load(Ordering::Relaxed),
    );
}

/// PCT or serial is on: one thread at a time runs instrumented code
/// (holding the turn).
pub(crate) fn serialises() -> bool {
    matches!(strategy(), PCT | SERIAL)
}

/// Whether the serial schedule is on (`record --serialize`).
pub(crate) fn serial() -> bool {
    strategy() == SERIAL
}

/// Whether every access is a schedule point ([`at_access`]): PCT and
/// random, not the serial schedule.
pub(crate) fn at_every_access() -> bool {
    matches!(strategy(), PCT | RANDOM)
}

/// Whether chaos scheduling is on (record mode, `RR_LITE_CHAOS` set).
#[inline(always)]
pub(crate) fn enabled() -> bool {
    strategy() != OFF
}

#[inline(always)]
fn strategy() -> u8 {
    STRATEGY.load(Ordering::Acquire)
}

fn slot(id: u32) -> Option<&'static Slot> {
    SLOTS.get(id as usize)
}

/// `id`'s slot when PCT schedules and the thread is in the schedule.
fn scheduled_slot(id: u32) -> Option<&'static Slot> {
    pct_slot(id).filter(|s| s.state.load(Ordering::Relaxed) != ABSENT)
}

/// `id`'s slot when the turn schedules (PCT or serial).
fn pct_slot(id: u32) -> Option<&'static Slot> {
    serialises().then(|| slot(id)).flatten()
}

/// The scheduler lock: a spin lock (held for a scan of the thread table at
/// most), yielding the processor while it waits. Raw `sched_yield`: some
/// callers run outside the runtime's busy mark (inside pthread_create's or
/// an unlock's real call), where the interposed yield would count as a
/// blocking call and give the turn away.
fn locked<R>(f: impl FnOnce() -> R) -> R {
    let mut spins = 0u32;
    while LOCK.swap(true, Ordering::Acquire) {
        spins += 1;
        if spins < 64 {
            core::hint::spin_loop();
        } else {
            // SAFETY: no arguments.
            unsafe { libc::syscall(libc::SYS_sched_yield) };
        }
    }
    let r = f();
    LOCK.store(false, Ordering::Release);
    r
}

/// The creator of thread `id` saw the creation succeed: under PCT the new
/// thread is ready from now on, with its priority, so that the creator's
/// next event already competes with it (the child's own start comes later,
/// at a moment the kernel chooses).
pub(crate) fn thread_created(id: u32) {
    if serialises() {
        if let Some(s) = slot(id) {
            s.starting.store(true, Ordering::Release);
        }
        locked(|| enter_ready(id));
    }
}

/// Under the lock: thread `id` joins the schedule, ready, unless its
/// creator entered it already.
fn enter_ready(id: u32) {
    let Some(s) = slot(id) else { return };
    if s.state.load(Ordering::Relaxed) != ABSENT {
        return;
    }
    let priority = INITIAL_BASE + (mix(SEED.load(Ordering::Relaxed) ^ mix(u64::from(id))) >> 24);
    s.priority.store(priority, Ordering::Relaxed);
    s.events.store(0, Ordering::Relaxed);
    s.limit.store(turn_limit(id, s), Ordering::Relaxed);
    THREADS.fetch_max(id + 1, Ordering::Relaxed);
    LIVE.fetch_add(1, Ordering::Relaxed);
    s.state.store(READY, Ordering::Relaxed);
    if TURN.load(Ordering::Relaxed) == NOBODY {
        give_turn(id);
    }
    update_best_ready();
}

/// A thread registered (record mode): PCT enters it in the schedule if its
/// creator did not (the main thread, which starts with the turn); random
/// seeds its generator.
pub(crate) fn thread_started(id: u32) {
    let Some(s) = slot(id) else { return };
    match strategy() {
        PCT | SERIAL => locked(|| enter_ready(id)),
        RANDOM => {
            s.rng.store(
                mix(SEED.load(Ordering::Relaxed) ^ mix(u64::from(id))),
                Ordering::Relaxed,
            );
            s.events.store(0, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// The thread is about to end the process (exit, or return from main)
/// while other threads live: PCT drops it below every other thread and
/// gives way, so the others run until they block or end first. Programs
/// often end without joining their threads, and their bugs need the
/// workers done; an exit at the exiting thread's own priority (or after a
/// change point lowered a worker) would cut most schedules short. Exits
/// that interrupt a thread stay reachable where the thread blocks. A
/// spinning thread demoted meanwhile drops below the exiting one
/// ([`give_way`]): a worker that never ends does not keep the process
/// from ending.
pub(crate) fn exiting(id: u32) {
    let Some(s) = scheduled_slot(id) else { return };
    if LIVE.load(Ordering::Relaxed) < 2 {
        return;
    }
    locked(|| {
        s.priority.store(EXIT_PRIORITY, Ordering::Relaxed);
        EXITING.store(id, Ordering::Relaxed);
    });
    give_way(id, s, false);
}

/// Under the lock: `s` ranks below every thread not demoted yet (and
/// above the change-point priorities), or, if a ready thread has dropped
/// to a change-point priority or below, below every ready thread: the
/// spinner may wait for it (PCT lets a thread run only while no ready one
/// ranks higher, so a spinner left above the thread it waits for would
/// spin for ever: `tests/c/replay_spin_ring.c` under `--chaos=pct` did).
/// Each demotion goes below the one before, so spinners take turns with
/// the threads they wait for.
fn demote_below_undemoted(s: &Slot) {
    let (next, floor) = if ready_at_or_below_change_points(s) {
        (&NEXT_DEEP_DEMOTED, EXIT_PRIORITY + 1)
    } else {
        (&NEXT_DEMOTED, LOWEST_CHANGE_POINT + MAX_CHANGES as u64)
    };
    let low = next.fetch_sub(1, Ordering::Relaxed).max(floor);
    s.priority.store(
        low.min(s.priority.load(Ordering::Relaxed)),
        Ordering::Relaxed,
    );
}

/// Under the lock: whether a ready thread other than `s` ranks at a
/// change-point priority or below (not an exiting one).
fn ready_at_or_below_change_points(s: &Slot) -> bool {
    registered().iter().any(|other| {
        let p = other.priority.load(Ordering::Relaxed);
        !core::ptr::eq(other, s)
            && other.state.load(Ordering::Relaxed) == READY
            && p > EXIT_PRIORITY
            && p < LOWEST_CHANGE_POINT + MAX_CHANGES as u64
    })
}

/// A thread logged its last event: it gives the turn away for good.
pub(crate) fn thread_finished(id: u32) {
    let Some(s) = pct_slot(id) else { return };
    locked(|| {
        if s.state.swap(ABSENT, Ordering::Relaxed) != ABSENT {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
        wake_lock_waiters();
        wake_joiners_of(id);
        pass_turn_if_held(id);
    });
}

/// Under the lock: the threads joining `id` are ready.
fn wake_joiners_of(id: u32) {
    make_ready(|s| {
        s.state.load(Ordering::Relaxed) == JOINING && s.joins.load(Ordering::Relaxed) == id
    });
}

/// The thread is about to join `target`: it gives the turn away and is
/// ready again once `target` ends (a point of the schedule, where PCT makes
/// the joiner runnable), not when the kernel wakes it. If `target` has
/// ended already (its last step is taken; only glibc's teardown is left),
/// the joiner keeps the turn through the short wait.
pub(crate) fn joining(id: u32, target: u32) {
    let Some(s) = pct_slot(id) else { return };
    locked(|| {
        let ended = slot(target).is_none_or(|t| t.state.load(Ordering::Relaxed) == ABSENT);
        if ended || s.state.load(Ordering::Relaxed) == ABSENT {
            return;
        }
        s.joins.store(target, Ordering::Relaxed);
        s.state.store(JOINING, Ordering::Relaxed);
        wake_lock_waiters();
        pass_turn_if_held(id);
    });
}

/// The thread is about to make a call that may block: it gives the turn to
/// the best ready thread, and takes it back at its next event.
pub(crate) fn blocking(id: u32) {
    let Some(s) = scheduled_slot(id) else { return };
    locked(|| {
        s.state.store(BLOCKED, Ordering::Relaxed);
        // The call may release a lock (a condition wait does).
        wake_lock_waiters();
        pass_turn_if_held(id);
    });
}

/// Whether an event on `addr` is a PCT step, a place where a change point
/// may fall. Bookkeeping events that no other thread's outcome depends on
/// directly are not: a thread's start and end (and joins, ordered on its
/// end), the thread-stack cache (and the mappings, on the same
/// pseudo-address), the allocator, the process's exit. A
/// priority change at one of them would have the same effect at the
/// thread's next step, so counting them only dilutes the change points
/// (in a small program they are half of its events).
#[inline]
pub(crate) fn is_step(addr: u64) -> bool {
    use rr_lite_trace::pseudo;
    !(matches!(
        addr,
        pseudo::HEAP | pseudo::THREAD_STACKS | pseudo::PROCESS | pseudo::CLOCK
    ) || pseudo::is_thread_start_or_exit(addr))
}

/// The start of an event of thread `id`, which holds no stripe: PCT waits
/// here for the turn, random may pause. `step`: the event is one PCT
/// counts (see [`is_step`]).
#[inline]
pub(crate) fn before_event(id: u32, step: bool) {
    match strategy() {
        OFF => {}
        PCT | SERIAL => pct_event(id, step),
        _ => random_event(id),
    }
}

/// Serial: whether thread `id` may take a new stripe now without waiting
/// for the turn (it holds the turn, its slice is not over or nobody else is
/// ready), counting the event if so. Under the recording quantum a plain
/// access takes a stripe without passing [`before_event`]; it calls this
/// first, and [`before_event`] (holding nothing) when it says no.
#[inline]
pub(crate) fn keeps_turn(id: u32) -> bool {
    let Some(s) = slot(id) else { return true };
    if s.state.load(Ordering::Relaxed) == ABSENT {
        return true;
    }
    let events = s.events.load(Ordering::Relaxed) + 1;
    let keeps = may_go_on(id, s, events);
    if keeps {
        s.events.store(events, Ordering::Relaxed);
    }
    keeps
}

/// Whether thread `id` (slot `s`), at its `events`-th event of this turn,
/// goes on without giving way: it holds the turn, no ready thread ranks
/// above it, and its turn's events are not used up while others are ready.
#[inline]
fn may_go_on(id: u32, s: &Slot, events: u64) -> bool {
    let best_ready = BEST_READY.load(Ordering::Acquire);
    TURN.load(Ordering::Acquire) == id
        && best_ready <= s.priority.load(Ordering::Relaxed)
        && (events < s.limit.load(Ordering::Relaxed) || best_ready == 0)
}

/// Serial: thread `id`, holding no stripe, spins (reads one stripe again
/// and again, `RecordThread::spins_on_kept`): it goes to the back of the
/// round and waits for its next turn, since what it waits for needs
/// another thread to run. (Its slice would otherwise go by in polls, each
/// logged.)
pub(crate) fn spinning(id: u32) {
    let Some(s) = scheduled_slot(id) else { return };
    if strategy() == SERIAL && BEST_READY.load(Ordering::Acquire) != 0 {
        give_way(id, s, true);
    }
}

/// Chaos under the recording quantum, at the start of an access that may
/// find the thread keeping stripes: the checks of [`before_event`] without
/// waiting or pausing. `Some(stop)`: the thread must release every stripe,
/// then call [`stop_at_access`].
#[inline]
pub(crate) fn at_access(id: u32) -> Option<Stop> {
    match strategy() {
        PCT => pct_access(id),
        RANDOM => random_draw(id).map(Stop::Pause),
        _ => None,
    }
}

/// PCT's part of [`at_access`]: the turn, the step and the turn's events.
#[inline]
fn pct_access(id: u32) -> Option<Stop> {
    let s = entering_event(id)?;
    if TURN.load(Ordering::Acquire) != id {
        return Some(Stop::NotItsTurn);
    }
    count_step(s);
    turn_event(id, s).map(|demote| Stop::GiveWay { demote })
}

/// The slot of thread `id` at the start of one of its events, if it is
/// scheduled (no longer starting).
#[inline]
fn entering_event(id: u32) -> Option<&'static Slot> {
    let s = slot(id)?;
    if s.state.load(Ordering::Relaxed) == ABSENT {
        return None;
    }
    s.starting.store(false, Ordering::Release);
    Some(s)
}

/// Counts an event of the turn holder `id` (slot `s`) on its turn: `None`
/// if it goes on, else whether it gives the turn away demoted (its turn's
/// events are used up).
#[inline]
fn turn_event(id: u32, s: &Slot) -> Option<bool> {
    let events = s.events.load(Ordering::Relaxed) + 1;
    s.events.store(events, Ordering::Relaxed);
    (!may_go_on(id, s, events)).then(|| events >= s.limit.load(Ordering::Relaxed))
}

/// Why [`at_access`] stops a thread.
#[derive(Clone, Copy)]
pub(crate) enum Stop {
    /// PCT: another thread holds the turn (this one was robbed of it, or
    /// is back from a call); its step is counted once it has the turn.
    NotItsTurn,
    /// PCT: its step is counted; it gives the turn away (`demote`: its
    /// turn's events are used up).
    GiveWay { demote: bool },
    /// Random: a pause.
    Pause(Pause),
}

/// The slow path of [`at_access`], the thread holding no stripe now.
#[cold]
pub(crate) fn stop_at_access(id: u32, stop: Stop) {
    match stop {
        Stop::NotItsTurn => pct_event(id, true),
        Stop::GiveWay { demote } => {
            if let Some(s) = slot(id) {
                give_way(id, s, demote);
            }
        }
        Stop::Pause(pause) => pause.take(),
    }
}

/// Counts a step of the turn holder `s`, and changes its priority at a
/// change point.
#[inline]
fn count_step(s: &Slot) {
    if LIVE.load(Ordering::Relaxed) >= 2 {
        let step = STEP.fetch_add(1, Ordering::Relaxed) + 1;
        let change = NEXT_CHANGE.load(Ordering::Relaxed);
        if change < MAX_CHANGES && step >= CHANGE_POINTS[change].load(Ordering::Relaxed) {
            change_priority(s, change);
        }
    }
}

fn pct_event(id: u32, step: bool) {
    let Some(s) = entering_event(id) else { return };
    if TURN.load(Ordering::Acquire) != id {
        // Back from a call, or robbed of the turn: only the holder counts
        // steps, so that the count (and where change points fall) does
        // not depend on when the kernel lets a thread run.
        give_way(id, s, false);
    }
    if step {
        count_step(s);
    }
    if let Some(demote) = turn_event(id, s) {
        give_way(id, s, demote);
    }
}

/// The `change`-th change point (from 0) is reached: the running thread's
/// priority drops to the (DEPTH-1-change)-th lowest change-point
/// priority, below every thread's initial one.
#[cold]
fn change_priority(s: &Slot, change: usize) {
    locked(|| {
        if NEXT_CHANGE
            .compare_exchange(change, change + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            let depth = DEPTH.load(Ordering::Relaxed);
            s.priority.store(
                LOWEST_CHANGE_POINT + depth.saturating_sub(2 + change as u64),
                Ordering::Relaxed,
            );
        }
    });
}

/// Slow path of an event: become ready, hand the turn on if this thread
/// holds it (or nobody does), and wait until it comes back.
#[cold]
fn give_way(id: u32, s: &Slot, demote: bool) {
    locked(|| {
        if demote && TURN.load(Ordering::Relaxed) == id {
            if EXITING.load(Ordering::Relaxed) == NOBODY {
                demote_below_undemoted(s);
            } else {
                s.priority.store(SPINNER_AT_EXIT, Ordering::Relaxed);
            }
        }
        s.state.store(READY, Ordering::Relaxed);
        reschedule(id);
    });
    wait_for_turn(id, s);
    s.events.store(0, Ordering::Relaxed);
    s.limit.store(turn_limit(id, s), Ordering::Relaxed);
}

/// PCT: the lock this thread (holding the turn) wants is held by another.
/// As in PCT, it is not runnable until a thread releases a lock: it hands
/// the turn to the best ready thread and waits, then tries again (the
/// caller loops). Whether it gets the lock then depends on the schedule
/// only, not on when the kernel wakes a blocked thread. False when no
/// other thread is ready (the holder blocked elsewhere): the caller then
/// blocks for real.
pub(crate) fn wait_for_lock(id: u32) -> bool {
    let Some(s) = slot(id) else { return false };
    let handed = locked(|| {
        if TURN.load(Ordering::Relaxed) != id {
            return false;
        }
        let Some((other, _)) = best_ready_thread() else {
            return false;
        };
        s.state.store(LOCK_WAIT, Ordering::Relaxed);
        LOCK_WAITERS.fetch_add(1, Ordering::Relaxed);
        give_turn(other);
        update_best_ready();
        true
    });
    if handed {
        wait_for_turn(id, s);
        s.events.store(0, Ordering::Relaxed);
    }
    handed
}

/// A lock (mutex, rwlock, spin lock, semaphore) was released: the threads
/// waiting for one are ready again.
pub(crate) fn lock_released() {
    if serialises() && LOCK_WAITERS.load(Ordering::Relaxed) != 0 {
        locked(|| {
            wake_lock_waiters();
            update_best_ready();
        });
    }
}

/// Under the lock: every `LOCK_WAIT` thread becomes ready.
fn wake_lock_waiters() {
    if LOCK_WAITERS.load(Ordering::Relaxed) != 0 {
        make_ready(|s| s.state.load(Ordering::Relaxed) == LOCK_WAIT);
        LOCK_WAITERS.store(0, Ordering::Relaxed);
    }
}

/// The slots of the threads registered so far, by logical id.
fn registered() -> &'static [Slot] {
    let threads = THREADS.load(Ordering::Relaxed).min(MAX_THREADS as u32);
    &SLOTS[..threads as usize]
}

/// Under the lock: the threads for which `waits` holds become ready.
fn make_ready(waits: impl Fn(&Slot) -> bool) {
    for s in registered() {
        if waits(s) {
            s.state.store(READY, Ordering::Relaxed);
        }
    }
}

/// Waits until the turn is this thread's, taking it from a holder that
/// makes no events for too long.
fn wait_for_turn(id: u32, s: &Slot) {
    s.waiting.store(true, Ordering::Release);
    wait_for_turn_marked(id, s);
    s.waiting.store(false, Ordering::Release);
}

fn wait_for_turn_marked(id: u32, s: &Slot) {
    let mut last_step = STEP.load(Ordering::Relaxed);
    let mut quiet_since = crate::sys::monotonic_ns();
    loop {
        let seen = s.wake.load(Ordering::Acquire);
        if TURN.load(Ordering::Acquire) == id {
            return;
        }
        crate::descriptors::lent_while(|| crate::sys::futex_wait(&s.wake, seen, WAIT_SLICE_NS));
        let step = STEP.load(Ordering::Relaxed);
        let now = crate::sys::monotonic_ns();
        if step != last_step {
            last_step = step;
            quiet_since = now;
            continue;
        }
        if s.state.load(Ordering::Relaxed) == RUNNING && TURN.load(Ordering::Acquire) != id {
            taken_before_woken(id, s);
        }
        let quiet = now.saturating_sub(quiet_since);
        if quiet >= STEAL_AFTER_NS && s.state.load(Ordering::Relaxed) == LOCK_WAIT {
            // The lock went free where nothing here saw it: ready again.
            locked(|| {
                if s.state.load(Ordering::Relaxed) == LOCK_WAIT {
                    s.state.store(READY, Ordering::Relaxed);
                    LOCK_WAITERS.fetch_sub(1, Ordering::Relaxed);
                }
                update_best_ready();
            });
        }
        if quiet >= STEAL_SLEEPER_AFTER_NS && holder_is_stuck(quiet) {
            try_steal(id, s);
        }
    }
}

/// The turn was handed to this waiting thread, then stolen by another
/// before it woke up (a loaded machine): it is a ready thread again, or it
/// would wait for ever, neither ready nor holding the turn.
#[cold]
fn taken_before_woken(id: u32, s: &Slot) {
    locked(|| {
        if s.state.load(Ordering::Relaxed) == RUNNING && TURN.load(Ordering::Relaxed) != id {
            s.state.store(READY, Ordering::Relaxed);
            reschedule(id);
        }
    });
}

/// The holder made no event for `quiet` ns: it blocked where the runtime
/// does not see, or runs long outside instrumented code (or nobody holds
/// the turn).
fn holder_is_stuck(quiet: u64) -> bool {
    let holder = TURN.load(Ordering::Acquire);
    let runnable_bound = if strategy() == SERIAL {
        STEAL_RUNNABLE_SERIAL_NS
    } else {
        STEAL_RUNNABLE_AFTER_NS
    };
    if holder == NOBODY || quiet >= runnable_bound {
        return true;
    }
    let coming = slot(holder)
        .is_some_and(|h| h.waiting.load(Ordering::Acquire) || h.starting.load(Ordering::Acquire));
    if coming {
        return false;
    }
    if quiet >= STEAL_AFTER_NS {
        return crate::handover::sleeps_in_kernel(holder);
    }
    crate::handover::asleep_outside_runtime(holder)
}

/// Takes the turn if this thread is still the best ready one.
fn try_steal(id: u32, s: &Slot) {
    locked(|| {
        if TURN.load(Ordering::Relaxed) == id || s.state.load(Ordering::Relaxed) != READY {
            return;
        }
        if best_ready_thread().is_some_and(|(best, _)| best == id) {
            give_turn(id);
            update_best_ready();
        }
    });
}

/// The ready thread with the highest priority (ties: the lowest id).
fn best_ready_thread() -> Option<(u32, u64)> {
    let mut best: Option<(u32, u64)> = None;
    for (id, s) in (0u32..).zip(registered()) {
        if s.state.load(Ordering::Relaxed) != READY {
            continue;
        }
        let p = s.priority.load(Ordering::Relaxed);
        if best.is_none_or(|(_, bp)| p > bp) {
            best = Some((id, p));
        }
    }
    best
}

/// Under the lock, after `id` became ready: if the turn is `id`'s or
/// nobody's, it goes to the best ready thread (maybe `id`); `BEST_READY`
/// is brought up to date either way.
fn reschedule(id: u32) {
    if TURN.load(Ordering::Relaxed) == NOBODY {
        hand_turn_to_best();
    } else {
        pass_turn_if_held(id);
    }
}

/// Under the lock, after `id`'s state changed: if `id` holds the turn, it
/// goes to the best ready thread; `BEST_READY` is brought up to date
/// either way.
fn pass_turn_if_held(id: u32) {
    if TURN.load(Ordering::Relaxed) == id {
        hand_turn_to_best();
    } else {
        update_best_ready();
    }
}

/// Under the lock: the turn goes to the best ready thread, or to nobody.
fn hand_turn_to_best() {
    match best_ready_thread() {
        Some((best, _)) => give_turn(best),
        None => TURN.store(NOBODY, Ordering::Release),
    }
    update_best_ready();
}

/// Under the lock: `to` (ready) gets the turn and is woken.
fn give_turn(to: u32) {
    let s = &SLOTS[to as usize];
    s.state.store(RUNNING, Ordering::Relaxed);
    TURN.store(to, Ordering::Release);
    s.wake.fetch_add(1, Ordering::Release);
    crate::sys::futex_wake_all(&s.wake);
}

/// Under the lock: refreshes `BEST_READY`.
fn update_best_ready() {
    let best = best_ready_thread().map_or(0, |(_, p)| p);
    BEST_READY.store(best, Ordering::Release);
}

fn random_event(id: u32) {
    if let Some(pause) = random_draw(id) {
        pause.take();
    }
}

/// A pause of the random strategy.
#[derive(Clone, Copy)]
pub(crate) enum Pause {
    Sleep { ns: u64 },
    Yield,
}

impl Pause {
    fn take(self) {
        match self {
            Pause::Sleep { ns } => {
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: ns as libc::c_long,
                };
                // SAFETY: a valid timespec; the raw call, not the runtime's
                // own sleep wrapper (which would end the event).
                unsafe {
                    libc::syscall(
                        libc::SYS_nanosleep,
                        &pause as *const libc::timespec,
                        core::ptr::null_mut::<libc::timespec>(),
                    )
                };
            }
            // SAFETY: no arguments.
            Pause::Yield => unsafe {
                libc::syscall(libc::SYS_sched_yield);
            },
        }
    }
}

/// Random: counts an event of thread `id` and draws whether it pauses.
#[inline]
fn random_draw(id: u32) -> Option<Pause> {
    let s = slot(id)?;
    let events = s.events.load(Ordering::Relaxed) + 1;
    s.events.store(events, Ordering::Relaxed);
    let r = mix(s.rng.load(Ordering::Relaxed));
    s.rng.store(r, Ordering::Relaxed);
    // Often early in a thread (where order violations are), rarely after:
    // a pause may come inside a critical section and stall every thread
    // that waits for it, so the long-run rate keeps the cost under 2x.
    let (sleep_mask, yield_mask) = if events <= EARLY_EVENTS {
        (63, 255)
    } else {
        (65_535, 8_191)
    };
    if r & sleep_mask == 0 {
        Some(Pause::Sleep {
            ns: 10_000 + (r >> 32) % 390_000,
        })
    } else if (r >> 16) & yield_mask == 0 {
        Some(Pause::Yield)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_strictly() {
        assert_eq!(parse_u64(b"123"), Some(123));
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b"99999999999999999999999"), None);
    }

    #[test]
    fn priorities_are_ordered_by_kind() {
        let initial = INITIAL_BASE + (mix(7) >> 24);
        assert!(initial > DEMOTED_START);
        assert!(DEMOTED_START > LOWEST_CHANGE_POINT + MAX_CHANGES as u64);
        assert!(INITIAL_BASE + (u64::MAX >> 24) > initial);
    }
}
