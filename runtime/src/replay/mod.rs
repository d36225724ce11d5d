//! Replay mode: each thread counts its events and, at the points of its
//! plan, waits for other threads' progress, publishes its own, returns
//! recorded results, and checks that it is still on the recorded path.
//!
//! Progress protocol: thread T's slot in the shared state file holds `done`,
//! the number of T's events that have completed. A wait `(U, j)` before an
//! event waits until `done[U] > j`. An event completes when the thread
//! reaches its next hook (the instrumented access runs after the hook
//! returns) or, for interposed calls, when the real call returns; so a point
//! that others wait on (NOTIFY) leaves a pending publication that the next
//! hook, release point or the end of the wrapper carries out. Waiting spins
//! briefly (crossbeam Backoff) or yields the core a few times, each only
//! where it can help (`wait_style`), then parks on
//! its own futex word, having written what it waits for into
//! its slot, and the publisher wakes exactly the parked threads whose event
//! is now done. Sequential plans wait instead for
//! the global turn `seq` and publish `seq + 1`.

mod debug_stop;
mod plan;
mod shared;

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering};

use crossbeam_utils::Backoff;
use rr_lite_trace::plan::{PlanCursor, Point, addr_check, flags};
use rr_lite_trace::state::{Divergence, ThreadProgress, ThreadStatus};
use rr_lite_trace::{EventKind, fold_access_hash};

pub(crate) use debug_stop::position as debug_position;
pub(crate) use plan::{Plan, load_plan};

use crate::sys;

/// How often the end-of-recording wait looks at the other threads.
const END_POLL_NS: u64 = 2_000_000;
/// Yields of the core before a waiter parks.
const YIELD_ROUNDS: u32 = 4;
/// Longest a parked waiter sleeps before re-checking.
const PARK_TIMEOUT_NS: u64 = 100_000_000;
/// How long sequential replay waits for a turn whose owner sleeps outside
/// the runtime before it skips that turn (`pass_turn_of_sleeping_thread`).
const TURN_SKIP_AFTER_NS: u64 = 500_000_000;

/// What replay mode keeps for one thread. Only the owning thread touches it
/// (it lives in that thread's `ThreadState`).
#[derive(Debug)]
pub(crate) struct ReplayThread {
    /// The thread's logical id (its slot in the state file).
    id: Cell<u32>,
    /// Events counted so far (the next event's per-thread index).
    index: Cell<u64>,
    plan: Cell<Plan>,
    /// The plan's next point (decoded one ahead), and where the one after
    /// it starts. Both stay within 128 bytes, which the compiler copies
    /// inline (`trace::plan::RecentWaits`): a larger copy is a call to
    /// `memcpy`, the runtime's own interposed one.
    next: Cell<Option<Point<'static>>>,
    cursor: Cell<PlanCursor<'static>>,
    /// `next`'s index (`u64::MAX` if none) and flags, set with it: what the
    /// checks made at every point read, without copying the point out.
    next_index: Cell<u64>,
    next_flags: Cell<u8>,
    /// The index of that point or the recorded end, whichever comes first:
    /// the one compare of the fast path.
    next_point: Cell<u64>,
    /// The next point's waits are already done (blocking calls wait before
    /// the real call, then count the event).
    waited: Cell<bool>,
    /// The last point asks to publish `done` once it has completed.
    pending_done: Cell<bool>,
    /// `next_point`, or 0 while `pending_done`: the one compare of a plain
    /// access's fast path (`count_access`), which publishes first when it
    /// fails. Set with `next_point` and `pending_done`, never on its own.
    /// 0 until the thread's replay starts ([`start_thread`]), and always
    /// while recording: the access hooks' fast path (assembly,
    /// `crate::hooks::fast_count`) relies on it instead of reading the mode.
    access_stop: Cell<u64>,
    /// Sequential replay: the turn of the run this thread is in, passed on
    /// when the run ends (the thread's next run, a blocking call, its end).
    held_turn: Cell<Option<u64>>,
    /// Hash of the events so far (compared at thread exit).
    hash: Cell<u64>,
    /// The next entry of the plan's results array ([`take_result`]).
    next_result: Cell<u64>,
    /// `replay --debug --at`: the index of the event before which this
    /// thread stops in the debugger, or `u64::MAX`.
    debug_stop: Cell<u64>,
}

/// Where the access hooks' replay fast path (assembly,
/// `crate::hooks::fast_count`) finds the fields [`count_access`] reads and
/// writes, from the `ReplayThread`: `Cell<u64>`s, 8-byte words.
pub(crate) mod fast_path_offsets {
    use super::ReplayThread;
    use core::mem::offset_of;
    pub(crate) const INDEX: usize = offset_of!(ReplayThread, index);
    pub(crate) const ACCESS_STOP: usize = offset_of!(ReplayThread, access_stop);
    pub(crate) const HASH: usize = offset_of!(ReplayThread, hash);
    const _: () = assert!(size_of::<core::cell::Cell<u64>>() == 8);
}

impl ReplayThread {
    pub(crate) const fn new() -> ReplayThread {
        ReplayThread {
            id: Cell::new(u32::MAX),
            index: Cell::new(0),
            plan: Cell::new(Plan::NONE),
            next: Cell::new(None),
            cursor: Cell::new(PlanCursor::EMPTY),
            next_index: Cell::new(u64::MAX),
            next_flags: Cell::new(0),
            next_point: Cell::new(u64::MAX),
            waited: Cell::new(false),
            pending_done: Cell::new(false),
            access_stop: Cell::new(0),
            held_turn: Cell::new(None),
            hash: Cell::new(0),
            next_result: Cell::new(0),
            debug_stop: Cell::new(u64::MAX),
        }
    }

    /// This thread's slot in the state file (`start_thread` checked that
    /// the recording has the thread).
    fn progress(&self) -> &'static rr_lite_trace::state::ThreadProgress {
        match shared::slot(self.id.get()) {
            Some(slot) => slot,
            None => diverge(
                self,
                Divergence::UnknownThread,
                &DivergenceDetail::value(u64::from(self.id.get()), 0),
            ),
        }
    }
}

/// Runs `op`, a real call made after its event was counted, with the
/// thread's counted events protected from being taken as done while it
/// sleeps in it (see `Parking::done_by_sleeping_thread`).
pub(crate) fn guarded<R>(r: &ReplayThread, op: impl FnOnce() -> R) -> R {
    crate::handover::guarded(r.id.get(), op)
}

/// Opens the replay session: maps the state file and finds the plans.
/// Called by the main thread before any other starts: under `replay
/// --one-cpu always` it moves to the replayer's CPU here, and the threads
/// it creates inherit that.
pub(crate) fn open_session(session_dir: &[u8]) -> bool {
    if !shared::map_state(session_dir) {
        return false;
    }
    if let Some(cpu) = shared::header()
        .one_cpu
        .load(Ordering::Relaxed)
        .checked_sub(1)
    {
        sys::run_on_cpu(cpu);
    }
    plan::set_plan_dir(crate::mode::TRACE_DIR.get(), session_dir)
}

/// Where counting must stop next: the index of the next point, the
/// thread's recorded end or its debugger stop, whichever comes first.
fn next_stop(r: &ReplayThread) -> u64 {
    r.next_index
        .get()
        .min(r.plan.get().accesses)
        .min(r.debug_stop.get())
}

/// Moves on to the plan's next point.
fn advance(r: &ReplayThread) {
    let mut cursor = r.cursor.get();
    let next = cursor.next_point().map(in_this_mode);
    r.cursor.set(cursor);
    let (index, flags) = next.as_ref().map_or((u64::MAX, 0), |p| (p.index, p.flags));
    r.next.set(next);
    r.next_index.set(index);
    r.next_flags.set(flags);
}

/// The point as this replay follows it: the kept plans serve parallel and
/// sequential replay, and only sequential replay takes the turns.
fn in_this_mode(mut p: Point<'static>) -> Point<'static> {
    if !plan::takes_turns() {
        p.flags &= !flags::SEQUENCED;
    }
    p
}

/// The plan's points from the next one on (a copy of the cursor: looking
/// ahead moves nothing).
fn points_ahead(r: &ReplayThread) -> impl Iterator<Item = Point<'static>> {
    let mut cursor = r.cursor.get();
    r.next
        .get()
        .into_iter()
        .chain(core::iter::from_fn(move || cursor.next_point()))
}

/// Gives the thread its id and plan, and marks it started.
pub(crate) fn start_thread(r: &ReplayThread, id: u32, plan: Plan) {
    r.id.set(id);
    r.plan.set(plan);
    r.index.set(0);
    r.cursor.set(plan.cursor());
    advance(r);
    r.debug_stop.set(debug_stop::stop_index_of(id));
    set_next_point(r, next_stop(r));
    r.hash.set(rr_lite_trace::ACCESS_HASH_SEED);
    r.next_result.set(0);
    let me = r.progress();
    me.kernel_tid
        .store(crate::handover::kernel_tid(id), Ordering::Release);
    me.status
        .store(ThreadStatus::Running as u32, Ordering::Release);
}

/// The child of a fork runs inert: its copy of the forking thread's state
/// must not send its accesses down the counting fast path.
pub(crate) fn stop_counting(r: &ReplayThread) {
    r.access_stop.set(0);
}

/// Publishes what the last events completed, if a point asked for it.
#[inline]
pub(crate) fn publish_pending(r: &ReplayThread) {
    if r.pending_done.replace(false) {
        r.access_stop.set(r.next_point.get());
        publish_done(r, r.index.get());
    }
}

/// Sets where counting stops next (`next_point`), and the fast path's
/// stop with it unless a publication is pending.
fn set_next_point(r: &ReplayThread, stop: u64) {
    r.next_point.set(stop);
    if !r.pending_done.get() {
        r.access_stop.set(stop);
    }
}

/// A point's completion is to be published at the thread's next hook:
/// the next plain access leaves the fast path to do it.
fn arm_publication(r: &ReplayThread) {
    r.pending_done.set(true);
    r.access_stop.set(0);
}

/// Sequential replay: ends the thread's run, passing the turn on.
fn pass_held_turn(r: &ReplayThread) {
    if let Some(turn) = r.held_turn.take() {
        publish_turn(turn + 1);
    }
}

fn publish_done(r: &ReplayThread, done: u64) {
    let me = r.progress();
    me.done.store(done, Ordering::SeqCst);
    // Pairs with the waiter's registration (SeqCst): either it sees `done`
    // before it parks, or this sees it counted among the sleepers.
    if me.sleepers.load(Ordering::SeqCst) != 0 {
        wake_waiters_of(r.id.get(), done);
    }
}

/// Wakes exactly the threads parked for one of `thread`'s events that are
/// now done (each parks on its own futex word), not every thread parked
/// for a later event of it.
fn wake_waiters_of(thread: u32, done: u64) {
    for slot in shared::slots() {
        if slot.status.load(Ordering::SeqCst) == ThreadStatus::Waiting as u32
            && slot.wait_thread.load(Ordering::SeqCst) == thread
            && slot.wait_index.load(Ordering::SeqCst) < done
        {
            wake(slot);
        }
    }
}

/// Wakes a parked thread. It counts as on a core from now on, before the
/// kernel runs it: a spinner then makes room for it (see `wait_style`)
/// instead of keeping the core it needs.
fn wake(slot: &ThreadProgress) {
    let _ = slot.status.compare_exchange(
        ThreadStatus::Waiting as u32,
        ThreadStatus::Running as u32,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    slot.futex.fetch_add(1, Ordering::SeqCst);
    sys::futex_wake_all(&slot.futex);
}

/// Sequential replay, when a turn does not come: the recorded global order
/// can disagree with synchronisation the runtime does not see (libgomp's
/// thread dock, a raw futex in a helper library), and a thread asleep there
/// may own the turn. Two ways out, both only when the threads that could
/// take the turn sleep outside the runtime:
/// - the turn's owner has counted its event and sleeps: the event is done,
///   pass the turn on for it (its own publication later changes nothing);
/// - nobody waiting owns the turn and every other live thread is parked for
///   another thread's event or sleeps outside the runtime: the owner is
///   blocked before its event by a thread that waits for a later turn (or
///   not started by one: pthread_create waits early for the stack a thread
///   hands back at its end, which the linearisation of runs does not see);
///   skip to the earliest turn anyone waits for. With only parked threads
///   this is sure after the handover delay; a sleeper may also be about to
///   wake (a loaded machine), and skipping its turn then gives away the
///   recorded order, so with one this waits longer ([`TURN_SKIP_AFTER_NS`]).
fn pass_turn_of_sleeping_thread(parked_ns: u64) {
    let header = shared::header();
    let turn = header.turn.load(Ordering::SeqCst);
    let holder = header.turn_holder.load(Ordering::SeqCst);
    if holder != 0
        && header.turn_counted.load(Ordering::SeqCst) == turn
        && crate::handover::asleep_outside_runtime(holder - 1)
    {
        publish_turn(turn + 1);
        return;
    }
    let mut earliest_wanted = u64::MAX;
    let mut asleep_outside = false;
    for (u, slot) in (0..).zip(shared::slots()) {
        let wanted = slot.turn_wanted.load(Ordering::SeqCst);
        if wanted != 0 {
            earliest_wanted = earliest_wanted.min(wanted - 1);
            continue;
        }
        let status = slot.status.load(Ordering::SeqCst);
        let out_of_play = [
            ThreadStatus::NotStarted,
            ThreadStatus::Exited,
            ThreadStatus::AtEnd,
            // Parked for another thread's event: it moves only when that
            // thread does (a waker sets it Running before waking it).
            ThreadStatus::Waiting,
        ]
        .iter()
        .any(|&s| s as u32 == status);
        if out_of_play {
            continue;
        }
        if !crate::handover::asleep_outside_runtime(u) {
            return;
        }
        asleep_outside = true;
    }
    if asleep_outside && parked_ns < TURN_SKIP_AFTER_NS {
        return;
    }
    if earliest_wanted != u64::MAX && earliest_wanted > turn {
        publish_turn(earliest_wanted);
    }
}

/// Passes the sequential turn, waking only the thread that sleeps for it.
/// The turn only grows (`fetch_max`): a turn passed on by a waiter (see
/// `pass_turn_of_sleeping_thread`) is not taken back by the late publication.
fn publish_turn(turn: u64) {
    shared::header().turn.fetch_max(turn, Ordering::SeqCst);
    for slot in shared::slots() {
        if slot.turn_wanted.load(Ordering::SeqCst) == turn + 1 {
            wake(slot);
        }
    }
}

/// What a waiter waits for, and where it counts itself while parked (the
/// waiter parks on its own futex word; the publisher wakes it by name).
struct Parking<'a> {
    /// The waited-for thread's count of parked waiters (none for the
    /// sequential turn: its publisher looks at every slot's `turn_wanted`).
    sleepers: Option<&'a AtomicU32>,
    /// (thread, index) waited for; thread `u32::MAX` is the sequential turn.
    waiting_for: (u32, u64),
    timeout_ns: u64,
}

impl Parking<'_> {
    /// The event waited for has completed although its thread has not
    /// published it: the thread counted it and then went to sleep in a call
    /// the runtime does not see (its publication waits for its next hook),
    /// so nothing else can be in progress there (see `crate::handover`).
    fn done_by_sleeping_thread(&self, parked_ns: u64) -> bool {
        let (thread, index) = self.waiting_for;
        if thread == u32::MAX {
            pass_turn_of_sleeping_thread(parked_ns);
            return false;
        }
        shared::slot(thread).is_some_and(|other| {
            other.index.load(Ordering::SeqCst) > index
                && crate::handover::asleep_outside_runtime(thread)
        })
    }
}

/// How a waiter spends the time before it parks (see [`wait_style`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WaitStyle {
    /// Spin, then yield a few times: a core is free for the spinner.
    Spin,
    /// Yield a few times: the threads that want a core fill them, and the
    /// producer may be waiting for this one's.
    Yield,
    /// Park at once: the producer is parked, blocked or asleep; spinning
    /// or yielding would not bring its event closer.
    Park,
}

/// The cores this process may run on (its affinity mask, or one while
/// the replayer keeps the threads on one CPU), at least 1.
fn cores() -> u32 {
    if shared::header().one_cpu.load(Ordering::Relaxed) != 0 {
        return 1;
    }
    static CORES: AtomicU32 = AtomicU32::new(0);
    let known = CORES.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    let n = sys::cpus_in_affinity().max(1);
    CORES.store(n, Ordering::Relaxed);
    n
}

fn is_running(slot: &ThreadProgress) -> bool {
    slot.status.load(Ordering::Acquire) == ThreadStatus::Running as u32
}

/// Spin only while the waited-for thread may run and a core is left for
/// the spinner; yield while the threads that want a core outnumber the
/// cores; park at once while the producer is parked, blocked or asleep.
/// Spinning while the producer waits for a core takes that core from it:
/// 4 threads replayed on 1 core spent most of their time spinning
/// (shared_index 4.2 s, 1.1 s now), and on 2 cores a thread woken for its
/// turn waited for a spinner's core. `producer`: the waited-for thread
/// (none for the sequential turn, whose holder is not known).
fn wait_style(me: u32, producer: Option<u32>) -> WaitStyle {
    if producer.is_some_and(|p| !shared::slot(p).is_some_and(is_running)) {
        return WaitStyle::Park;
    }
    let others = (0..)
        .zip(shared::slots())
        .filter(|&(t, s)| t != me && is_running(s))
        .count();
    if (others as u32) < cores() {
        WaitStyle::Spin
    } else {
        WaitStyle::Yield
    }
}

/// Waits until `ready()`: spin or yield while that may help, then park
/// (see the module doc and [`wait_style`]).
fn wait_until(r: &ReplayThread, ready: impl Fn() -> bool, parking: Parking<'_>) {
    let me = r.progress();
    let id = r.id.get();
    let producer = Some(parking.waiting_for.0).filter(|&t| t != u32::MAX);
    let mut parked_since = None;
    while !ready() {
        if spin_or_yield(id, producer, &ready) {
            return;
        }
        let since = *parked_since.get_or_insert_with(sys::monotonic_ns);
        let parked_ns = sys::monotonic_ns().saturating_sub(since);
        if parked_ns > crate::handover::HANDOVER_AFTER_NS
            && parking.done_by_sleeping_thread(parked_ns)
        {
            return;
        }
        me.wait_thread
            .store(parking.waiting_for.0, Ordering::Relaxed);
        me.wait_index
            .store(parking.waiting_for.1, Ordering::Relaxed);
        // Where it waits, for a deadlock report (points publish the index
        // only as they complete: a report once named an event eight before).
        me.index.store(r.index.get(), Ordering::Relaxed);
        // Read before the status says Waiting: a waker that sees Waiting
        // (and sets it back to Running, see `wake`) bumps the word after
        // this, so the wait below returns at once instead of sleeping
        // through a wake-up that no later publication repeats.
        let seen = me.futex.load(Ordering::SeqCst);
        me.status
            .store(ThreadStatus::Waiting as u32, Ordering::SeqCst);
        if let Some(sleepers) = parking.sleepers {
            sleepers.fetch_add(1, Ordering::SeqCst);
        }
        if !ready() {
            shared::header().parks.fetch_add(1, Ordering::Relaxed);
            let timeout = parking
                .timeout_ns
                .min(crate::handover::HANDOVER_AFTER_NS / 2);
            // Inside a call holding the descriptor lock (localtime's
            // allocations), the thread waited for may need the lock.
            crate::descriptors::lent_while(|| sys::futex_wait(&me.futex, seen, timeout));
        }
        if let Some(sleepers) = parking.sleepers {
            sleepers.fetch_sub(1, Ordering::SeqCst);
        }
        me.status
            .store(ThreadStatus::Running as u32, Ordering::Release);
    }
}

/// The time before parking, as [`wait_style`] says: a bounded spin, a few
/// yields, or nothing. Returns whether `ready()` came true.
fn spin_or_yield(me: u32, producer: Option<u32>, ready: &impl Fn() -> bool) -> bool {
    let backoff = Backoff::new();
    let (mut spins, mut yields) = (0, 0);
    while !ready() {
        match wait_style(me, producer) {
            WaitStyle::Spin if spins < crate::stripes::SPIN_ROUNDS => {
                spins += 1;
                backoff.spin();
            }
            WaitStyle::Spin | WaitStyle::Yield if yields < YIELD_ROUNDS => {
                // SAFETY: sched_yield has no preconditions (raw: not our wrapper).
                unsafe { libc::syscall(libc::SYS_sched_yield) };
                yields += 1;
            }
            _ => return false,
        }
    }
    true
}

fn wait_for_point(r: &ReplayThread, p: &Point) {
    if p.flags & flags::SEQUENCED != 0 {
        let me = r.progress();
        let turn = &shared::header().turn;
        // Registered before parking (SeqCst), checked after: the thread
        // passing the turn either sees the registration or we see the turn.
        me.turn_wanted.store(p.seq + 1, Ordering::SeqCst);
        let parking = Parking {
            sleepers: None,
            waiting_for: (u32::MAX, p.seq),
            timeout_ns: PARK_TIMEOUT_NS,
        };
        wait_until(r, || turn.load(Ordering::SeqCst) >= p.seq, parking);
        me.turn_wanted.store(0, Ordering::Relaxed);
    }
    wait_for_other_threads(r, p);
}

/// Waits for the events of other threads that point `p` waits for.
fn wait_for_other_threads(r: &ReplayThread, p: &Point) {
    for (thread, index) in p.waits() {
        // A wait on a thread the recording does not have cannot be met:
        // the plan checks should have refused it; skip rather than hang.
        let Some(other) = shared::slot(thread) else {
            continue;
        };
        let parking = Parking {
            sleepers: Some(&other.sleepers),
            waiting_for: (thread, index),
            timeout_ns: PARK_TIMEOUT_NS,
        };
        wait_until(r, || other.done.load(Ordering::SeqCst) > index, parking);
    }
}

/// The thread's next point of `kind` carrying a recorded result, within
/// the next few points (no waiting).
pub(crate) fn find_ahead(r: &ReplayThread, kind: EventKind) -> Option<Point<'static>> {
    const LOOK_AHEAD: usize = 64;
    points_ahead(r)
        .take(LOOK_AHEAD)
        .find(|p| p.kind == kind as u8 && p.flags & flags::PAYLOAD != 0)
}

/// Before a real call whose own event comes after the events nested in it
/// (fopen: its allocation, then the descriptor it took): waits for what the
/// call's event, the next point of `kind` within a few points, waits for in
/// other threads, so that what the call does (take the lowest free
/// descriptor) happens after them, as recorded. Sequential turns are left
/// to each event (the nested ones come first). Nothing is waited for if no
/// such event is near (the check at the event reports a divergence, where
/// waiting for later events could hang).
///
/// Only that point's predecessors: record held the event's stripe from
/// before the call, so they all came before the nested events. A nested
/// event's own predecessors may come after an earlier nested event (another
/// thread allocated between fclose's two frees): waiting for them before
/// the call would wait for this thread itself. Each nested event waits for
/// its own when it is counted.
pub(crate) fn wait_through(r: &ReplayThread, kind: EventKind) {
    /// Most events a call nests before its own.
    const NEAR: u64 = 8;
    // Only a kind that is always a point: else a later event's point
    // would be taken for this call's.
    if !rr_lite_trace::plan::always_a_point(kind) {
        return;
    }
    let near = r.index.get() + NEAR;
    let own = points_ahead(r)
        .take_while(|p| p.index <= near)
        .find(|p| p.kind == kind as u8);
    if let Some(p) = own {
        give_turn_away_if_blocked(r, &p);
        wait_for_other_threads(r, &p);
    }
}

/// Sequential replay: a call whose early wait ([`wait_through`]) is not met
/// does not keep the turn of the run it starts. The linearisation orders
/// runs by each point's own waits, and the early wait belongs to a later
/// point (pthread_create waits for the stack a thread hands back at its
/// end, and that thread's last run came after the create's run): holding
/// the turn meanwhile left every thread waiting until the turn skip (500
/// ms). The call's events still wait for their own predecessors, so the
/// replay stays exact; they only leave the one-at-a-time order.
fn give_turn_away_if_blocked(r: &ReplayThread, early: &Point) {
    let Some(start) = point_at(r, r.index.get()).filter(|p| p.flags & flags::SEQUENCED != 0) else {
        return;
    };
    let met = early.waits().all(|(thread, index)| {
        shared::slot(thread).is_none_or(|s| s.done.load(Ordering::SeqCst) > index)
    });
    if !met && shared::header().turn.load(Ordering::SeqCst) == start.seq {
        publish_turn(start.seq + 1);
    }
}

/// Whether the recording crashed at the thread's next event: the point at
/// its current index is the fatal signal. A call whose event is logged after
/// it then crashed inside (trylock on a freed mutex, memcpy from a bad
/// pointer): replay makes the real call without counting an event the
/// recording does not have, and it crashes the same way.
pub(crate) fn crash_is_next(r: &ReplayThread) -> bool {
    r.index.get() == r.next_point.get()
        && point_at(r, r.index.get()).is_some_and(|p| p.kind == EventKind::FatalSignal as u8)
}

/// If the thread's next event is a point, waits for what it waits on (once).
/// Blocking calls do this before the real call, so that a lock is taken in
/// the recorded order. Returns the point.
pub(crate) fn wait_next(r: &ReplayThread) -> Option<Point<'static>> {
    if r.index.get() != r.next_point.get() {
        return None;
    }
    // At the recorded end rather than a point: nothing to wait for.
    let p = point_at(r, r.index.get())?;
    if !r.waited.replace(true) {
        wait_for_point(r, &p);
        if p.index == r.debug_stop.get() {
            stop_for_debugger(r, p.index);
        }
    }
    Some(p)
}

/// The recorded result of the thread's next event of a kind whose results
/// the plan holds in its array (`rr_lite_trace::plan::in_results`: random
/// numbers, values from outside, allocations), taken in order; `None` once the array is
/// used up (the thread makes more such calls than recorded: it diverged,
/// which the count at its end reports).
pub(crate) fn take_result(r: &ReplayThread) -> Option<u64> {
    let i = r.next_result.get();
    let result = r.plan.get().result(i)?;
    r.next_result.set(i + 1);
    Some(result)
}

/// The plan's next point, if it is the event at `index`.
fn point_at(r: &ReplayThread, index: u64) -> Option<Point<'static>> {
    if r.next_index.get() != index {
        return None;
    }
    r.next.get()
}

/// `replay --debug --at`: the thread is about to perform its event `index`,
/// the one it stops before (once).
#[cold]
fn stop_for_debugger(r: &ReplayThread, index: u64) {
    r.debug_stop.set(u64::MAX);
    debug_stop::rr_lite_debug_stop(r.id.get(), index);
}

/// Counts a plain access (a compiler hook's event): [`publish_pending`]
/// then [`count`], in the fewest instructions when neither has anything to
/// do (no publication pending, no point here), which is nearly every
/// access: no call, no stack frame (the hooks inline this), and the
/// index compared once. The access hooks run this fast branch in assembly
/// on the program's stack before they switch stacks
/// (`crate::hooks::fast_count`): a change here must change it there.
#[inline(always)]
pub(crate) fn count_access(r: &ReplayThread, kind: EventKind, addr: u64, site: u64) {
    let index = r.index.get();
    debug_assert!(
        r.pending_done.get() || r.access_stop.get() == r.next_point.get() || r.id.get() == u32::MAX
    );
    debug_assert!(index <= r.next_point.get(), "counted past a point");
    if index < r.access_stop.get() {
        r.hash
            .set(fold_access_hash(r.hash.get(), index, kind, addr));
        r.index.set(index + 1);
        return;
    }
    count_access_at_stop(r, kind, addr, site);
}

/// [`count_access`] off its fast path: a publication is pending, or the
/// access is a point (or the recorded end, or the debugger's stop).
#[cold]
#[inline(never)]
fn count_access_at_stop(r: &ReplayThread, kind: EventKind, addr: u64, site: u64) {
    publish_pending(r);
    let _ = count(r, kind, addr, site);
}

/// Counts one event: advances the index and hash and, at a point, waits
/// (unless already done), checks the event and arms its publication.
#[inline]
pub(crate) fn count(
    r: &ReplayThread,
    kind: EventKind,
    addr: u64,
    site: u64,
) -> Option<Point<'static>> {
    // A pending `done` is covered by the later, larger publication
    // (publishing it now would tell waiters an event completed that is
    // still running); a held turn passes only where the run ends.
    let index = r.index.get();
    r.hash
        .set(fold_access_hash(r.hash.get(), index, kind, addr));
    // `next_point` is the next point's index or the recorded end, whichever
    // comes first: one compare on the fast path.
    if index != r.next_point.get() {
        r.index.set(index + 1);
        return None;
    }
    count_at_point(r, kind, addr, site, index)
}

#[cold]
#[inline(never)]
fn count_at_point(
    r: &ReplayThread,
    kind: EventKind,
    addr: u64,
    site: u64,
    index: u64,
) -> Option<Point<'static>> {
    if index == r.debug_stop.get() && point_at(r, index).is_none() {
        // The debugger's stop, not a point: nothing to wait for first (at a
        // point, `wait_next` stops once the waits are done).
        stop_for_debugger(r, index);
        set_next_point(r, next_stop(r));
        if index != r.next_point.get() {
            r.index.set(index + 1);
            return None;
        }
    }
    stop_at_recorded_end(r);
    if r.index.get() == r.next_point.get() && r.next_flags.get() & flags::SEQUENCED != 0 {
        // This event starts the thread's next run: the previous one ended
        // with the previous event, which has completed.
        pass_held_turn(r);
    }
    let p = wait_next(r)?;
    r.waited.set(false);
    if p.flags & flags::CHECK != 0 && (p.kind != kind as u8 || p.addr_check != addr_check(addr)) {
        let detail = DivergenceDetail {
            expected_kind: p.kind,
            // The report takes the recorded address from the trace.
            expected_addr: 0,
            actual_kind: kind as u8,
            actual_addr: addr,
            site,
            ..DivergenceDetail::default()
        };
        diverge(r, Divergence::Event, &detail);
    }
    r.index.set(index + 1);
    r.progress().index.store(index + 1, Ordering::Relaxed);
    advance(r);
    set_next_point(r, next_stop(r));
    if p.flags & flags::SEQUENCED != 0 {
        let header = shared::header();
        header.turn_holder.store(r.id.get() + 1, Ordering::SeqCst);
        header.turn_counted.store(p.seq, Ordering::SeqCst);
        r.held_turn.set(Some(p.seq));
    }
    if p.flags & flags::NOTIFY != 0 {
        arm_publication(r);
    }
    Some(p)
}

/// Stops the thread for good if it has done every event the recording has
/// for it (see `park_at_end`).
pub(crate) fn stop_at_recorded_end(r: &ReplayThread) {
    if r.index.get() >= r.plan.get().accesses {
        park_at_end(r);
    }
}

/// The thread is past its last recorded event: the recording ended while it
/// ran (another thread crashed or called exit). It publishes everything and
/// stops here until the process ends the same way.
fn park_at_end(r: &ReplayThread) -> ! {
    publish_pending(r);
    pass_held_turn(r);
    publish_done(r, r.index.get());
    let me = r.progress();
    me.status
        .store(ThreadStatus::AtEnd as u32, Ordering::Release);
    loop {
        let seen = me.futex.load(Ordering::SeqCst);
        crate::descriptors::lent_while(|| sys::futex_wait(&me.futex, seen, PARK_TIMEOUT_NS * 10));
    }
}

/// Publishes all the thread's events as done (before a real call that may
/// block, so that the end-of-recording wait below sees it).
pub(crate) fn publish_all(r: &ReplayThread) {
    publish_all_and_go_on(r);
    stop_at_recorded_end(r);
}

/// [`publish_all`] for a thread that goes on past its last recorded event
/// on purpose: the one ending the process, which waits for the others'
/// recorded ends and then exits as recorded.
pub(crate) fn publish_all_and_go_on(r: &ReplayThread) {
    // A thread that may block ends its sequential run here: the dependency
    // waits still order everything that conflicts after it.
    pass_held_turn(r);
    if r.pending_done.get() {
        publish_pending(r);
    } else {
        // Nobody waits on these events: only the end-of-recording wait
        // reads them, and it polls.
        r.progress().done.store(r.index.get(), Ordering::SeqCst);
    }
}

pub(crate) fn set_status(r: &ReplayThread, status: ThreadStatus) {
    r.progress().status.store(status as u32, Ordering::Release);
}

/// Before the process ends (exit, fatal signal) as it did in the recording:
/// waits until every other thread has done all its recorded events, so the
/// program's output up to the end is the recorded one.
pub(crate) fn wait_for_others(r: &ReplayThread) {
    let me = r.id.get();
    for (u, other) in (0..).zip(shared::slots()).filter(|&(u, _)| u != me) {
        let recorded = other.recorded.load(Ordering::Relaxed);
        // Progress published quietly is not woken for: poll briefly.
        let parking = Parking {
            sleepers: Some(&other.sleepers),
            waiting_for: (u, recorded.saturating_sub(1)),
            timeout_ns: END_POLL_NS,
        };
        wait_until(r, || other.done.load(Ordering::SeqCst) >= recorded, parking);
    }
}

/// The thread's events so far match the recording in number and hash.
pub(crate) fn check_summary(r: &ReplayThread) {
    let plan = r.plan.get();
    if plan.is_none() {
        return;
    }
    let (count, hash) = (r.index.get(), r.hash.get());
    if count != plan.accesses {
        diverge(
            r,
            Divergence::Summary,
            &DivergenceDetail::value(plan.accesses, count),
        );
    }
    if hash != plan.access_hash {
        diverge(
            r,
            Divergence::Summary,
            &DivergenceDetail::value(plan.access_hash, hash),
        );
    }
}

/// Marks the thread finished: everything it did is published.
pub(crate) fn finish_thread(r: &ReplayThread) {
    publish_pending(r);
    pass_held_turn(r);
    publish_done(r, u64::MAX);
    let me = r.progress();
    me.status
        .store(ThreadStatus::Exited as u32, Ordering::Release);
}

/// What a divergence report says beyond where it happened.
#[derive(Debug, Default)]
pub(crate) struct DivergenceDetail {
    pub(crate) expected_kind: u8,
    pub(crate) expected_addr: u64,
    pub(crate) actual_kind: u8,
    pub(crate) actual_addr: u64,
    /// Call site of the diverging event.
    pub(crate) site: u64,
    pub(crate) expected_value: u64,
    pub(crate) actual_value: u64,
    /// The event is the last one counted, not the next (a real call's
    /// result, checked after the call).
    pub(crate) counted: bool,
}

impl DivergenceDetail {
    /// A divergence in a value (count, hash, thread id).
    pub(crate) fn value(expected: u64, actual: u64) -> DivergenceDetail {
        DivergenceDetail {
            expected_value: expected,
            actual_value: actual,
            ..DivergenceDetail::default()
        }
    }
}

/// A thread the runtime never registered ran instrumented code: its events
/// are not in any plan.
pub(crate) fn diverge_untracked() -> ! {
    diverge(
        &ReplayThread::new(),
        Divergence::UnknownThread,
        &DivergenceDetail::value(u64::from(u32::MAX), 0),
    )
}

/// Reports a divergence in the state file (first one wins) and ends the
/// process with the divergence status; the replayer prints the report.
pub(crate) fn diverge(r: &ReplayThread, what: Divergence, detail: &DivergenceDetail) -> ! {
    let header = shared::header();
    let first = header
        .diverged
        .compare_exchange(0, what as u32, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        let report = &header.divergence;
        report
            .thread
            .store(u64::from(r.id.get()), Ordering::Relaxed);
        let index = r.index.get() - u64::from(detail.counted && r.index.get() > 0);
        report.index.store(index, Ordering::Relaxed);
        report
            .expected_kind
            .store(u32::from(detail.expected_kind), Ordering::Relaxed);
        report
            .actual_kind
            .store(u32::from(detail.actual_kind), Ordering::Relaxed);
        report
            .expected_addr
            .store(detail.expected_addr, Ordering::Relaxed);
        report
            .actual_addr
            .store(detail.actual_addr, Ordering::Relaxed);
        report.actual_site.store(detail.site, Ordering::Relaxed);
        report
            .expected_value
            .store(detail.expected_value, Ordering::Relaxed);
        report
            .actual_value
            .store(detail.actual_value, Ordering::SeqCst);
    }
    // SAFETY: ends the whole process at once (the raw system call: not our
    // _exit wrapper, and none of the program's exit handlers: it has left
    // the recorded path).
    unsafe { libc::syscall(libc::SYS_exit_group, rr_lite_trace::plan::DIVERGENCE_STATUS) };
    unreachable!("exit_group returned")
}
