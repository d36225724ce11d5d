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
//! briefly (crossbeam Backoff), then parks on the slot's futex word; a
//! publisher wakes the slot's sleepers. Sequential plans wait instead for
//! the global turn `seq` and publish `seq + 1`.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::Backoff;
use rr_lite_trace::plan::{
    Divergence, PLAN_HEADER_LEN, POINT_LEN, PlanVariant, ThreadStatus, WAIT_LEN, check_plan, flags,
    state,
};
use rr_lite_trace::{EventKind, fold_access_hash};

use crate::alloc::map_private;
use crate::sys;
use crate::thread::ThreadState;

/// How often the end-of-recording wait looks at the other threads.
const END_POLL_NS: u64 = 2_000_000;
/// Yields of the core before a waiter parks.
const YIELD_ROUNDS: u32 = 4;
/// Longest a parked waiter sleeps before re-checking.
const PARK_TIMEOUT_NS: u64 = 100_000_000;

/// The mapped state file (set once at start-up, before the mode).
static STATE: AtomicU64 = AtomicU64::new(0);
static STATE_THREADS: AtomicU32 = AtomicU32::new(0);

fn state_base() -> *mut u8 {
    STATE.load(Ordering::Acquire) as *mut u8
}

fn state_u64(offset: usize) -> &'static AtomicU64 {
    // SAFETY: the state file is mapped for the life of the process, its size
    // was checked against the thread count, and every offset used is an
    // aligned field inside it (see trace::plan::state).
    unsafe { &*(state_base().add(offset) as *const AtomicU64) }
}

fn state_u32(offset: usize) -> &'static AtomicU32 {
    // SAFETY: as for `state_u64`.
    unsafe { &*(state_base().add(offset) as *const AtomicU32) }
}

fn slot_u64(thread: u32, field: usize) -> &'static AtomicU64 {
    state_u64(state::slot(thread) + field)
}

fn slot_u32(thread: u32, field: usize) -> &'static AtomicU32 {
    state_u32(state::slot(thread) + field)
}

/// Maps a file of the session directory; returns (address, length).
fn map_file(dir: &[u8], name: &[u8], writable: bool) -> Option<(*mut u8, usize)> {
    let mut path = [0u8; 4096];
    let len = dir.len() + 1 + name.len();
    if len >= path.len() {
        return None;
    }
    path[..dir.len()].copy_from_slice(dir);
    path[dir.len()] = b'/';
    path[dir.len() + 1..len].copy_from_slice(name);
    let mode = if writable {
        libc::O_RDWR
    } else {
        libc::O_RDONLY
    };
    // SAFETY: `path` is NUL-terminated.
    let fd = unsafe { libc::open(path.as_ptr().cast(), mode | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: fstat on our descriptor into a zeroed struct.
    let size = unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            libc::close(fd);
            return None;
        }
        st.st_size as usize
    };
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    let rounded = size.max(1).div_ceil(4096) * 4096;
    let p = map_private(rounded, prot, libc::MAP_SHARED, fd, 0);
    // SAFETY: the mapping keeps its own reference to the file.
    unsafe { libc::close(fd) };
    (!p.is_null()).then_some((p, size))
}

/// Maps the session's state file. Returns false if it is missing or wrong.
pub fn map_state(session_dir: &[u8]) -> bool {
    let Some((p, len)) = map_file(
        session_dir,
        rr_lite_trace::plan::STATE_FILE.as_bytes(),
        true,
    ) else {
        return false;
    };
    // SAFETY: the mapping is at least `len` bytes.
    let bytes = unsafe { core::slice::from_raw_parts(p, len.min(state::HEADER_LEN)) };
    if len < state::HEADER_LEN || bytes[..8] != rr_lite_trace::plan::STATE_MAGIC {
        return false;
    }
    let threads = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if len < state::len(threads) {
        return false;
    }
    let variant = u32::from_le_bytes([bytes[36], bytes[37], bytes[38], bytes[39]]);
    let Some(variant) = PlanVariant::from_code(variant) else {
        return false;
    };
    let mut dir = [0u8; 4096];
    let trace = crate::mode::TRACE_DIR.get();
    let name = variant.dir_name().as_bytes();
    let len = trace.len() + 1 + name.len();
    if len >= dir.len() {
        return false;
    }
    dir[..trace.len()].copy_from_slice(trace);
    dir[trace.len()] = b'/';
    dir[trace.len() + 1..len].copy_from_slice(name);
    if !PLAN_DIR.set(&dir[..len]) {
        return false;
    }
    STATE_THREADS.store(threads, Ordering::Relaxed);
    STATE.store(p as u64, Ordering::Release);
    true
}

/// Where the plans of this replay are (`<trace>/plans-<variant>`).
static PLAN_DIR: crate::mode::PathSlot = crate::mode::PathSlot::new();

/// A thread's plan, mapped read-only.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    base: *const u8,
    points: u64,
    pub accesses: u64,
    pub access_hash: u64,
}

impl Plan {
    pub const NONE: Plan = Plan {
        base: core::ptr::null(),
        points: 0,
        accesses: 0,
        access_hash: 0,
    };

    fn u64_at(&self, offset: usize) -> u64 {
        // SAFETY: `check_plan` verified the file size against the counts,
        // and callers only read inside points/waits. Unaligned reads are
        // fine on x86-64 and `read_unaligned` says so.
        unsafe { (self.base.add(offset) as *const u64).read_unaligned() }
    }

    fn point(&self, n: u64) -> Point {
        let at = PLAN_HEADER_LEN + n as usize * POINT_LEN;
        let tail = self.u64_at(at + 32);
        Point {
            index: self.u64_at(at),
            seq: self.u64_at(at + 8),
            addr: self.u64_at(at + 16),
            payload: self.u64_at(at + 24),
            first_wait: tail as u32,
            waits: (tail >> 32) as u16,
            kind: (tail >> 48) as u8,
            flags: (tail >> 56) as u8,
        }
    }

    fn wait(&self, n: u32) -> (u32, u64) {
        let at = PLAN_HEADER_LEN + self.points as usize * POINT_LEN + n as usize * WAIT_LEN;
        (self.u64_at(at) as u32, self.u64_at(at + 8))
    }

    /// Index of point `n`, or u64::MAX past the end.
    pub fn index_of(&self, n: u64) -> u64 {
        if n < self.points {
            self.point(n).index
        } else {
            u64::MAX
        }
    }
}

/// One decoded point.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub index: u64,
    pub seq: u64,
    pub addr: u64,
    pub payload: u64,
    first_wait: u32,
    waits: u16,
    pub kind: u8,
    pub flags: u8,
}

/// Maps thread `t`'s plan.
pub fn load_plan(t: u32) -> Option<Plan> {
    let mut name = *b"thread-0000.plan";
    let mut digits = [0u8; 20];
    let d = sys::decimal(u64::from(t), &mut digits);
    if d.len() > 4 {
        return None;
    }
    name[11 - d.len()..11].copy_from_slice(d);
    let (p, len) = map_file(PLAN_DIR.get(), &name, false)?;
    // SAFETY: the mapping is `len` bytes long.
    let header = check_plan(unsafe { core::slice::from_raw_parts(p, len) }).ok()?;
    (header.thread == t).then_some(Plan {
        base: p,
        points: header.points,
        accesses: header.accesses,
        access_hash: header.access_hash,
    })
}

/// Where counting must stop next: the index of point `cursor` or the
/// thread's recorded end, whichever comes first.
fn next_stop(plan: &Plan, cursor: u64) -> u64 {
    plan.index_of(cursor).min(plan.accesses)
}

/// Marks the thread started and ready to count.
pub fn start_thread(t: &ThreadState, plan: Plan) {
    let id = t.id.get();
    if id >= STATE_THREADS.load(Ordering::Relaxed) {
        diverge(t, Divergence::UnknownThread, 0, 0, 0, 0, u64::from(id), 0);
    }
    t.plan.set(plan);
    t.cursor.set(0);
    t.next_point.set(next_stop(&plan, 0));
    t.hash.set(rr_lite_trace::ACCESS_HASH_SEED);
    slot_u32(id, state::STATUS).store(ThreadStatus::Running as u32, Ordering::Release);
}

/// Publishes what the last events completed, if a point asked for it.
#[inline]
pub fn publish_pending(t: &ThreadState) {
    if t.pending.get() == Pending::Nothing {
        return;
    }
    match t.pending.replace(Pending::Nothing) {
        Pending::Nothing => {}
        Pending::Done => publish_done(t.id.get(), t.index.get()),
        Pending::Turn(seq) => publish_turn(seq + 1),
    }
}

/// What a completed point must publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    Nothing,
    /// `done` of this thread = its event count.
    Done,
    /// The global turn passes to `seq + 1`.
    Turn(u64),
}

fn publish_done(thread: u32, done: u64) {
    store_done(thread, done);
    if slot_u32(thread, state::SLEEPERS).load(Ordering::SeqCst) != 0 {
        let word = slot_u32(thread, state::FUTEX);
        word.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake_all(word);
    }
}

/// Publishes progress without waking anyone (nobody waits on these events:
/// only the end-of-recording wait reads it, and it polls).
fn store_done(thread: u32, done: u64) {
    slot_u64(thread, state::DONE).store(done, Ordering::SeqCst);
}

/// Passes the sequential turn, waking only the thread that sleeps for it.
fn publish_turn(turn: u64) {
    state_u64(state::TURN).store(turn, Ordering::SeqCst);
    for u in 0..STATE_THREADS.load(Ordering::Relaxed) {
        if slot_u64(u, state::TURN_WANTED).load(Ordering::SeqCst) == turn + 1 {
            let word = slot_u32(u, state::FUTEX);
            word.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake_all(word);
        }
    }
}

/// Waits until `value` satisfies `ready`: spin, then park on `futex`
/// (sleepers counted in `sleepers`), recording what it waits for.
fn wait_until(
    me: u32,
    ready: impl Fn() -> bool,
    futex: &AtomicU32,
    sleepers: &AtomicU32,
    waiting_for: (u32, u64),
    park_timeout_ns: u64,
) {
    let backoff = Backoff::new();
    let mut spins = 0;
    while !ready() {
        // Spin, then yield the core a few times (with more threads than
        // cores, the predecessor may need it), then park.
        if spins < crate::stripes::SPIN_ROUNDS + YIELD_ROUNDS {
            if spins < crate::stripes::SPIN_ROUNDS {
                backoff.spin();
            } else {
                // SAFETY: sched_yield has no preconditions (raw: not our wrapper).
                unsafe { libc::syscall(libc::SYS_sched_yield) };
            }
            spins += 1;
            continue;
        }
        slot_u32(me, state::WAIT_THREAD).store(waiting_for.0, Ordering::Relaxed);
        slot_u64(me, state::WAIT_INDEX).store(waiting_for.1, Ordering::Relaxed);
        slot_u32(me, state::STATUS).store(ThreadStatus::Waiting as u32, Ordering::Release);
        sleepers.fetch_add(1, Ordering::SeqCst);
        let seen = futex.load(Ordering::SeqCst);
        if !ready() {
            sys::futex_wait(futex, seen, park_timeout_ns);
        }
        sleepers.fetch_sub(1, Ordering::SeqCst);
        slot_u32(me, state::STATUS).store(ThreadStatus::Running as u32, Ordering::Release);
    }
}

fn wait_for_point(t: &ThreadState, p: &Point) {
    let me = t.id.get();
    let plan = t.plan.get();
    if p.flags & flags::SEQUENCED != 0 {
        let turn = state_u64(state::TURN);
        let wanted = slot_u64(me, state::TURN_WANTED);
        // Registered before parking (SeqCst), checked after: the thread
        // passing the turn either sees the registration or we see the turn.
        wanted.store(p.seq + 1, Ordering::SeqCst);
        wait_until(
            me,
            || turn.load(Ordering::SeqCst) >= p.seq,
            slot_u32(me, state::FUTEX),
            state_u32(state::TURN_SLEEPERS),
            (u32::MAX, p.seq),
            PARK_TIMEOUT_NS,
        );
        wanted.store(0, Ordering::Relaxed);
    }
    for n in p.first_wait..p.first_wait + u32::from(p.waits) {
        let (thread, index) = plan.wait(n);
        if thread >= STATE_THREADS.load(Ordering::Relaxed) {
            continue;
        }
        let done = slot_u64(thread, state::DONE);
        wait_until(
            me,
            || done.load(Ordering::SeqCst) > index,
            slot_u32(thread, state::FUTEX),
            slot_u32(thread, state::SLEEPERS),
            (thread, index),
            PARK_TIMEOUT_NS,
        );
    }
}

/// The thread's next point of `kind` carrying a recorded result, within
/// the next few points (no waiting).
pub fn find_ahead(t: &ThreadState, kind: EventKind) -> Option<Point> {
    const LOOK_AHEAD: u64 = 64;
    let plan = t.plan.get();
    (t.cursor.get()..plan.points.min(t.cursor.get() + LOOK_AHEAD))
        .map(|n| plan.point(n))
        .find(|p| p.kind == kind as u8 && p.flags & flags::PAYLOAD != 0)
}

/// If the thread's next event is a point, waits for what it waits on (once).
/// Blocking calls do this before the real call, so that a lock is taken in
/// the recorded order. Returns the point.
pub fn wait_next(t: &ThreadState) -> Option<Point> {
    let plan = t.plan.get();
    if t.index.get() != t.next_point.get() || t.cursor.get() >= plan.points {
        return None;
    }
    if plan.point(t.cursor.get()).index != t.index.get() {
        // The recorded end, not a point.
        return None;
    }
    let p = t.plan.get().point(t.cursor.get());
    if !t.waited.replace(true) {
        wait_for_point(t, &p);
    }
    Some(p)
}

/// Counts one event: advances the index and hash and, at a point, waits
/// (unless already done), checks the event and arms its publication.
#[inline]
pub fn count(t: &ThreadState, kind: EventKind, addr: u64, site: u64) -> Option<Point> {
    // A pending turn must pass before this event can wait for its own; a
    // pending `done` is covered by the later, larger publication (publishing
    // it now would tell waiters an event completed that is still running).
    if let Pending::Turn(_) = t.pending.get() {
        publish_pending(t);
    }
    let index = t.index.get();
    t.hash.set(fold_access_hash(t.hash.get(), kind, addr));
    // `next_point` is the next point's index or the recorded end, whichever
    // comes first: one compare on the fast path.
    if index != t.next_point.get() {
        t.index.set(index + 1);
        return None;
    }
    count_at_point(t, kind, addr, site, index)
}

#[cold]
#[inline(never)]
fn count_at_point(
    t: &ThreadState,
    kind: EventKind,
    addr: u64,
    site: u64,
    index: u64,
) -> Option<Point> {
    stop_at_recorded_end(t);
    let p = wait_next(t)?;
    t.waited.set(false);
    if p.flags & flags::CHECK != 0 && (p.kind != kind as u8 || p.addr != addr) {
        diverge(
            t,
            Divergence::Event,
            p.kind,
            p.addr,
            kind as u8,
            addr,
            site,
            0,
        );
    }
    t.index.set(index + 1);
    slot_u64(t.id.get(), state::INDEX).store(index + 1, Ordering::Relaxed);
    let cursor = t.cursor.get() + 1;
    t.cursor.set(cursor);
    t.next_point.set(next_stop(&t.plan.get(), cursor));
    if p.flags & flags::SEQUENCED != 0 {
        t.pending.set(Pending::Turn(p.seq));
    } else if p.flags & flags::NOTIFY != 0 {
        t.pending.set(Pending::Done);
    }
    Some(p)
}

/// Stops the thread for good if it has done every event the recording has
/// for it (see `park_at_end`).
pub fn stop_at_recorded_end(t: &ThreadState) {
    if t.index.get() >= t.plan.get().accesses {
        park_at_end(t);
    }
}

/// The thread is past its last recorded event: the recording ended while it
/// ran (another thread crashed or called exit). It publishes everything and
/// stops here until the process ends the same way.
fn park_at_end(t: &ThreadState) -> ! {
    let me = t.id.get();
    publish_pending(t);
    publish_done(me, t.index.get());
    slot_u32(me, state::STATUS).store(ThreadStatus::AtEnd as u32, Ordering::Release);
    let word = slot_u32(me, state::FUTEX);
    loop {
        let seen = word.load(Ordering::SeqCst);
        sys::futex_wait(word, seen, PARK_TIMEOUT_NS * 10);
    }
}

/// Stops the calling thread for good (the process ends elsewhere).
pub fn wait_forever() -> ! {
    static NEVER: AtomicU32 = AtomicU32::new(0);
    loop {
        sys::futex_wait(&NEVER, 0, u64::MAX / 2);
    }
}

/// Publishes all the thread's events as done (before a real call that may
/// block, so that the end-of-recording wait below sees it).
pub fn publish_all(t: &ThreadState) {
    match t.pending.get() {
        Pending::Done => publish_pending(t),
        Pending::Turn(_) => {
            publish_pending(t);
            store_done(t.id.get(), t.index.get());
        }
        Pending::Nothing => store_done(t.id.get(), t.index.get()),
    }
    stop_at_recorded_end(t);
}

pub fn set_status(t: &ThreadState, status: ThreadStatus) {
    slot_u32(t.id.get(), state::STATUS).store(status as u32, Ordering::Release);
}

/// Before the process ends (exit, fatal signal) as it did in the recording:
/// waits until every other thread has done all its recorded events, so the
/// program's output up to the end is the recorded one.
pub fn wait_for_others(t: &ThreadState) {
    let me = t.id.get();
    for u in (0..STATE_THREADS.load(Ordering::Relaxed)).filter(|&u| u != me) {
        let recorded = slot_u64(u, state::RECORDED).load(Ordering::Relaxed);
        let done = slot_u64(u, state::DONE);
        // Progress published quietly is not woken for: poll briefly.
        wait_until(
            me,
            || done.load(Ordering::SeqCst) >= recorded,
            slot_u32(u, state::FUTEX),
            slot_u32(u, state::SLEEPERS),
            (u, recorded.saturating_sub(1)),
            END_POLL_NS,
        );
    }
}

/// The thread's events so far match the recording in number and hash.
pub fn check_summary(t: &ThreadState) {
    let plan = t.plan.get();
    if plan.base.is_null() {
        return;
    }
    let (count, hash) = (t.index.get(), t.hash.get());
    if count != plan.accesses || hash != plan.access_hash {
        let (expected, actual) = if count != plan.accesses {
            (plan.accesses, count)
        } else {
            (plan.access_hash, hash)
        };
        diverge(t, Divergence::Summary, 0, 0, 0, 0, expected, actual);
    }
}

/// Marks the thread finished: everything it did is published.
pub fn finish_thread(t: &ThreadState) {
    publish_pending(t);
    let id = t.id.get();
    publish_done(id, u64::MAX);
    slot_u32(id, state::STATUS).store(ThreadStatus::Exited as u32, Ordering::Release);
}

/// Reports a divergence in the state file (first one wins) and ends the
/// process with the divergence status; the replayer prints the report.
#[allow(clippy::too_many_arguments)]
pub fn diverge(
    t: &ThreadState,
    what: Divergence,
    expected_kind: u8,
    expected_addr: u64,
    actual_kind: u8,
    actual_addr: u64,
    site_or_expected: u64,
    actual_value: u64,
) -> ! {
    let first = state_u32(state::DIVERGED)
        .compare_exchange(0, what as u32, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        state_u64(state::DIV_THREAD).store(u64::from(t.id.get()), Ordering::Relaxed);
        state_u64(state::DIV_INDEX).store(t.index.get(), Ordering::Relaxed);
        state_u32(state::DIV_EXPECTED_KIND).store(u32::from(expected_kind), Ordering::Relaxed);
        state_u32(state::DIV_ACTUAL_KIND).store(u32::from(actual_kind), Ordering::Relaxed);
        state_u64(state::DIV_EXPECTED_ADDR).store(expected_addr, Ordering::Relaxed);
        state_u64(state::DIV_ACTUAL_ADDR).store(actual_addr, Ordering::Relaxed);
        let (site, expected_value) = match what {
            Divergence::Event | Divergence::HeapAddress | Divergence::Result => {
                (site_or_expected, 0)
            }
            _ => (0, site_or_expected),
        };
        state_u64(state::DIV_ACTUAL_SITE).store(site, Ordering::Relaxed);
        state_u64(state::DIV_EXPECTED_VALUE).store(expected_value, Ordering::Relaxed);
        state_u64(state::DIV_ACTUAL_VALUE).store(actual_value, Ordering::SeqCst);
    }
    // SAFETY: ends the whole process at once (the raw system call: not our
    // _exit wrapper, and none of the program's exit handlers: it has left
    // the recorded path).
    unsafe { libc::syscall(libc::SYS_exit_group, rr_lite_trace::plan::DIVERGENCE_STATUS) };
    unreachable!("exit_group returned")
}
