//! Record mode's part of a thread: its Lamport clock, the stripes it keeps
//! locked until its next hook, and its log. The event core
//! (`crate::events`) decides when to lock, log and release; this module
//! does it.
//!
//! Ordering rule (ARCHITECTURE.md, "Recording a true global order"): an
//! entry is appended only while the thread holds the stripes of its
//! address, with `clock = max(thread clock, stripe clocks) + 1`; released
//! stripes carry the holder's clock, so whoever takes them next logs later.

use core::cell::{Cell, UnsafeCell};

use rr_lite_trace::codec::Entry;
use rr_lite_trace::{EventKind, PRIVATE_CLOCK_STEP, SYNCED_CLOCK_STEP};

use crate::log::LogWriter;
use crate::quantum::{Kept, Recent};
use crate::stripes::StripeSet;

/// `RecordThread::held_one` when nothing is held.
const HELD_NOTHING: u32 = u32::MAX;
/// `RecordThread::held_one` when the held set is more than one stripe.
const HELD_SEVERAL: u32 = u32::MAX - 1;

/// Deepest nesting of calls that keep their stripe (stack cache, create,
/// allocation: three in practice).
const MAX_NESTED: usize = 8;
/// Reads in a row of one kept stripe after which a thread is taken to spin
/// on it and gives back the kept stripes other threads wait for
/// (`RecordThread::spins_on_kept`).
const SPIN_READS: u32 = 4;
/// `RecordThread::polled` when no stripe is being counted.
const NOT_POLLED: u32 = u32::MAX;
/// Serial schedule: fast-path reads of one held stripe in a row taken for
/// polling (`RecordThread::spins_serially`).
const SERIAL_SPIN_READS: u32 = 64;
/// Lock-free reads in a row of one read-shared stripe (a flag several
/// threads poll: a spin barrier) after which the thread gives the
/// processor away, holding nothing (`RecordThread::give_way`): each poll
/// is an event, tens of times dearer than natively, and with more threads
/// than cores the thread that ends the spin may be waiting for one.
const SHARED_POLLS_PER_YIELD: u32 = 1024;
/// Tries of a lock in a row that found it busy (a trylock loop) after
/// which the thread gives the processor away, for the same reason.
const BUSY_TRIES_PER_YIELD: u32 = 4;
/// Hooks reading only the stripe held from the last access after which
/// the thread gives the processor away (`RecordThread::polls_held`).
const HELD_POLLS_PER_YIELD: u32 = 1024;
/// Times threads of this process gave way ([`RecordThread::give_way`]),
/// noted in the trace at its exit ([`note_spins`]).
static SPIN_YIELDS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// At the process's exit (recording): how often its threads gave way while
/// spinning, in the trace's `spins` file, if they did; the recorder tells
/// the user what spinning costs a recording.
pub(crate) fn note_spins() {
    let yields = SPIN_YIELDS.load(core::sync::atomic::Ordering::Relaxed);
    if yields > 0 {
        crate::mode::note_count(rr_lite_trace::dir::SPINS_FILE, b"yields ", yields);
    }
}

/// What record mode keeps for one thread. Only the owning thread touches it
/// (it lives in that thread's `ThreadState`; `Cell` fields make it `!Sync`).
#[derive(Debug)]
pub(crate) struct RecordThread {
    /// The thread's logical id: it holds stripes under it.
    id: Cell<u32>,
    clock: Cell<u64>,
    /// The clock of the thread's last entry that was not a private step:
    /// where its current run of private steps in the analysis order starts
    /// (ARCHITECTURE.md, "Private steps"; [`Self::shared_read`]).
    synced_clock: Cell<u64>,
    /// Where it publishes `clock` for other threads
    /// (`handover::clock_slot`).
    published_clock: Cell<&'static core::sync::atomic::AtomicU64>,
    /// Stripes kept locked until the next hook.
    held: Cell<StripeSet>,
    /// `held` as one number, for the fast path (`hold_access_fast`): its
    /// single stripe, [`HELD_NOTHING`] or [`HELD_SEVERAL`]. Set with it
    /// (`set_held`), never on its own.
    held_one: Cell<u32>,
    /// The hook at which the thread took `held` (for the quantum).
    held_since: Cell<u32>,
    /// `held` is one stripe no other thread took before: it joins the
    /// recent ones after its access (`crate::quantum::Recent`).
    held_private: Cell<bool>,
    /// `held` is one stripe read in turn by several threads, and this one
    /// only read it: it becomes read-shared at its release
    /// (`StripeSet::share`).
    held_share: Cell<bool>,
    /// The kept stripe the thread read last (`NOT_POLLED` once written),
    /// and how many times in a row (`Self::spins_on_kept`).
    polled: Cell<u32>,
    polls: Cell<u32>,
    /// Serial schedule only: fast-path reads of the held stripe in a row
    /// (a thread polling a flag it holds; see [`SERIAL_SPIN_READS`]).
    same_reads: Cell<u32>,
    /// The hook at which the thread last accessed a stripe other than the
    /// one it holds from its last access, or wrote it
    /// (`Self::polls_held`).
    held_from: Cell<u32>,
    /// Lock-free reads in a row of the read-shared stripe being read
    /// ([`SHARED_POLLS_PER_YIELD`]), and tries in a row that found a lock
    /// busy ([`BUSY_TRIES_PER_YIELD`]).
    shared_polls: Cell<u32>,
    busy_tries: Cell<u32>,
    /// The serial schedule is on (`record --serialize`): read from the
    /// thread's own line on the fast path rather than from the global.
    serial: Cell<bool>,
    /// PCT or random chaos is on (`record --chaos`): every access under
    /// the quantum is a schedule point ([`Self::chaos_point`]).
    chaos_points: Cell<bool>,
    /// The quantum while a plain access may try the fast path without
    /// looking further (quantum on, outside calls, no chaos point), 0
    /// otherwise: one load instead of four ([`Self::fast_quantum`]). Set
    /// to 0 before any of those changes ([`Self::refresh_fast`] after).
    fast_quantum: Cell<u32>,
    /// Stripe + 1 of the last access while that was a read of a
    /// read-shared stripe without its lock (0 otherwise), as published
    /// (`handover::start_reading`).
    reading: Cell<u32>,
    /// Stripes of earlier plain accesses kept for the quantum
    /// (`crate::quantum`).
    kept: Kept,
    /// Private stripes of recent plain accesses still held
    /// (`crate::quantum::Recent`).
    recent: Recent,
    /// Above zero inside an interposed call that keeps its stripe locked
    /// across the real call (output, pthread_create), so that an allocator
    /// call made inside it (stdio's buffer, the new thread's DTV) nests
    /// instead of releasing that stripe.
    nest_depth: Cell<u32>,
    /// Inside a blocking call whose event is logged after it returns: the
    /// call's own events may come after a wait the runtime does not see.
    in_blocking_call: Cell<bool>,
    /// Stripes locked by nested acquisitions, innermost last: a nested
    /// event on one of them (pthread_create's DTV allocation when the new
    /// thread's start stripe is the heap's) must not lock it again.
    nested: Cell<[u32; MAX_NESTED]>,
    nested_len: Cell<usize>,
    /// Inside a call that keeps its event's stripes (`held`, kept until the
    /// call returns): the stripes of the last event nested in it, released
    /// at the next hook instead of `held` (those of `held` and `nested`
    /// left out: they are locked already).
    nested_held: Cell<StripeSet>,
    log: UnsafeCell<LogWriter>,
    /// Set while `log` is borrowed: catches a re-entrant path that the
    /// thread's busy mark should have kept out.
    log_in_use: Cell<bool>,
    /// Set once a log write failed (disk full): reported once.
    log_failed: Cell<bool>,
}

impl RecordThread {
    pub(crate) const fn new() -> RecordThread {
        RecordThread {
            id: Cell::new(u32::MAX),
            clock: Cell::new(0),
            synced_clock: Cell::new(0),
            published_clock: Cell::new(&crate::handover::NOWHERE),
            held: Cell::new(StripeSet::EMPTY),
            held_one: Cell::new(HELD_NOTHING),
            held_since: Cell::new(0),
            held_private: Cell::new(false),
            polled: Cell::new(NOT_POLLED),
            same_reads: Cell::new(0),
            held_from: Cell::new(0),
            shared_polls: Cell::new(0),
            busy_tries: Cell::new(0),
            serial: Cell::new(false),
            chaos_points: Cell::new(false),
            fast_quantum: Cell::new(0),
            polls: Cell::new(0),
            held_share: Cell::new(false),
            reading: Cell::new(0),
            kept: Kept::new(),
            recent: Recent::new(),
            nest_depth: Cell::new(0),
            in_blocking_call: Cell::new(false),
            nested: Cell::new([0; MAX_NESTED]),
            nested_len: Cell::new(0),
            nested_held: Cell::new(StripeSet::EMPTY),
            log: UnsafeCell::new(LogWriter::CLOSED),
            log_in_use: Cell::new(false),
            log_failed: Cell::new(false),
        }
    }

    /// Sets the thread's logical id (at registration).
    pub(crate) fn set_id(&self, id: u32) {
        self.id.set(id);
        self.published_clock.set(crate::handover::clock_slot(id));
        self.serial.set(crate::chaos::serial());
        self.chaos_points.set(crate::chaos::at_every_access());
        self.refresh_fast();
    }

    /// The quantum if a plain access may go straight to the fast path
    /// (`hold_access_fast`): what [`Self::quantum`] says, with no chaos
    /// point to make first; 0 otherwise.
    #[inline(always)]
    pub(crate) fn fast_quantum(&self) -> u32 {
        let fast = self.fast_quantum.get();
        debug_assert!(
            fast == 0 || (Some(fast) == self.quantum() && !self.chaos_points.get()),
            "a stale fast-path gate"
        );
        fast
    }

    /// Sets [`Self::fast_quantum`] from the state it sums up.
    fn refresh_fast(&self) {
        let fast = match self.quantum() {
            Some(quantum) if !self.chaos_points.get() => quantum,
            _ => 0,
        };
        self.fast_quantum.set(fast);
    }

    /// Chaos under the quantum, at the start of an access (plain, or an
    /// operation holding its stripe as one): the access is a schedule
    /// point, as without the quantum, where PCT may make the thread give
    /// the turn away and random may pause it. It gives back every stripe
    /// it keeps first: a thread waiting for the turn holds none, so the
    /// holder never waits for a waiter's stripe, and a pause lets the
    /// others take what it was using. Without chaos, one load.
    #[inline(always)]
    pub(crate) fn chaos_point(&self) {
        if self.chaos_points.get() {
            self.chaos_point_slow();
        }
    }

    #[inline(never)]
    fn chaos_point_slow(&self) {
        let me = self.id.get();
        if let Some(stop) = crate::chaos::at_access(me) {
            self.release_held();
            crate::chaos::stop_at_access(me, stop);
        }
    }

    /// Runs `op`, a real call made while holding stripes on purpose, with
    /// those stripes protected from handover (`crate::handover`).
    pub(crate) fn guarded<R>(&self, op: impl FnOnce() -> R) -> R {
        crate::handover::guarded(self.id.get(), op)
    }

    /// Runs `f` with the log writer (see [`Self::borrow_log`]).
    pub(crate) fn with_log<R>(&self, f: impl FnOnce(&mut LogWriter) -> R) -> R {
        f(self.borrow_log().writer())
    }

    /// The log writer, borrowed until the guard drops. The event core
    /// calls this only while the thread is marked busy, which keeps the
    /// signal handler and nested hooks (the only re-entrant paths) out.
    /// A guard, not a closure: the record hook's append is inlined through
    /// it (a closure was compiled out of line, with a frame of its own).
    #[inline(always)]
    fn borrow_log(&self) -> LogBorrow<'_> {
        assert!(!self.log_in_use.replace(true), "thread log re-entered");
        LogBorrow { thread: self }
    }

    /// Unlocks the stripes kept from the previous hook, and those kept for
    /// the quantum, carrying the thread's clock.
    pub(crate) fn release_held(&self) {
        self.stop_reading();
        if self.nest_depth.get() > 0 {
            debug_assert!(
                self.kept.is_empty() && self.recent.is_empty(),
                "stripes kept inside a call"
            );
            self.release_nested_held();
            return;
        }
        let held = self.held.get();
        if !held.is_empty() {
            self.release_held_set(held, self.held_share.get());
            self.set_held(StripeSet::EMPTY, false);
        }
        if !self.kept.is_empty() || !self.recent.is_empty() {
            self.release_kept();
        }
    }

    /// Unlocks `held`, the last access's stripes, making its stripe
    /// read-shared if it was read in turn (`share`: `held_share`).
    fn release_held_set(&self, held: StripeSet, share: bool) {
        if share && let Some(stripe) = held.single() {
            StripeSet::share(stripe);
        }
        self.release_set(held);
    }

    /// [`Self::stop_reading`] if the stripe last read without a lock is
    /// no longer read-shared, else nothing: a thread ending the sharing
    /// clears the flag first and waits for the mark, so the reader clears
    /// it at its next hook. Keeping the mark while the stripe stays shared
    /// spares the full fence of marking it again (an LU's pivot row read
    /// between writes of the thread's own row: a fence per element).
    /// Only on paths that do not wait for a stripe.
    #[inline(always)]
    pub(crate) fn stop_reading_unless_shared(&self) {
        let reading = self.reading.get();
        if reading != 0 && !StripeSet::is_shared(reading - 1) {
            self.stop_reading();
        }
    }

    /// The last access was a read of a read-shared stripe without its
    /// lock: at this hook it is done, and a thread ending the sharing need
    /// not wait for it.
    #[inline]
    pub(crate) fn stop_reading(&self) {
        if self.reading.get() != 0 {
            self.reading.set(0);
            crate::handover::stop_reading(self.id.get());
        }
    }

    /// Logs a plain read of `stripe` without its lock, if the stripe is
    /// read-shared (several threads read it in turn, none wrote since):
    /// the last access's stripes go back as at any access, the read is
    /// published as in flight until the next hook (`handover::
    /// start_reading`), and its clock is past the stripe's last write.
    /// Returns false, holding nothing new, if the stripe is not read-shared.
    /// Only under the `quantum` (not inside calls).
    #[inline(always)]
    pub(crate) fn try_shared_read(&self, stripe: u32, quantum: u32, access: PlainAccess) -> bool {
        // Inline: every plain read looks; the rest is out of line. (The
        // access's fields as arguments: a `PlainAccess` by value or by
        // reference was stored on the stack before the look, at every read.)
        let PlainAccess {
            kind,
            addr,
            size,
            site,
        } = access;
        StripeSet::is_shared(stripe) && self.shared_read(stripe, quantum, kind, addr, size, site)
    }

    /// [`Self::try_shared_read`] once the stripe was seen shared.
    #[cold]
    #[inline(never)]
    fn shared_read(
        &self,
        stripe: u32,
        quantum: u32,
        kind: EventKind,
        addr: u64,
        size: u64,
        site: u64,
    ) -> bool {
        let access = PlainAccess {
            kind,
            addr,
            size,
            site,
        };
        if self.reading.get() == stripe + 1 {
            let polls = self.shared_polls.get().wrapping_add(1);
            self.shared_polls.set(polls);
            if polls.is_multiple_of(SHARED_POLLS_PER_YIELD) {
                // (The mark goes too: set again below.)
                self.give_way();
            }
        } else {
            self.shared_polls.set(0);
        }
        if self.reading.get() != stripe + 1 {
            // (The mark moves from the last stripe read, if any, at once.)
            crate::handover::start_reading(self.id.get(), stripe);
            self.reading.set(stripe + 1);
            // Looked at again after the mark, fenced: a thread ending the
            // sharing now either waits for this read or was first.
            if !StripeSet::is_shared(stripe) {
                self.stop_reading();
                return false;
            }
        }
        let now = self.kept.tick();
        if !self.keeps_held_across(now, quantum) {
            self.retire_held(now, quantum, None);
        }
        let (clock, synced) = self.clock_on(stripe);
        self.log_plain_access(clock, access, synced);
        true
    }

    /// The clock of an entry on `stripe` (locked by this thread, or
    /// read-shared and read without its lock), and whether it is a synced
    /// step. A private step if the stripe's clock is below the thread's
    /// synced clock, the start of its current run of private steps: the
    /// analysis order handed that run's first entry out only after every
    /// other log's entries below it, so everything on the stripe came
    /// before and the entry may go on in the run (the next taker, or the
    /// write that ends a sharing, takes a clock past it: ARCHITECTURE.md,
    /// "Private steps"). Threads reading a shared row between their own
    /// accesses (LU's pivot row, n-body's positions), or taking stripes
    /// nobody else touched lately (a sort's scattered writes), then stay in
    /// one run instead of ending it at each (39 M runs of 3 entries in
    /// `lu 500 4`). Otherwise past the stripe's clock.
    #[inline]
    fn clock_on(&self, stripe: u32) -> (u64, bool) {
        let stripe_clock = StripeSet::stripe_clock(stripe);
        if stripe_clock < self.synced_clock.get() {
            (self.clock.get() + PRIVATE_CLOCK_STEP, false)
        } else {
            let clock = self.clock.get().max(stripe_clock) + SYNCED_CLOCK_STEP;
            (clock, true)
        }
    }

    /// Gives back the recent stripes due at hook `now` (what `retire_held`
    /// does when nothing is kept), out of the fast path's line: a scan
    /// every 32nd hook sent that hook down the general path, some 450
    /// instructions (14 per access of a loop over private data).
    #[cold]
    #[inline(never)]
    fn release_expired_recent(&self, now: u32) {
        while let Some(stripe) = self.recent.pop_expired(now) {
            self.release_set(StripeSet::of_stripe(stripe));
        }
    }

    /// Whether a read without a lock at hook `now` may leave the last
    /// access's stripe held as it is, instead of retiring it: it is one
    /// private stripe that `retire_held` would only move among the recent
    /// ones (still held), nothing is kept for the quantum and no recent
    /// stripe is due. An LU's row then stays held across the pivot row's
    /// read between its own read and write (`hold_access_fast` finds it
    /// held), instead of going to the recent ones and being traded back.
    #[inline]
    fn keeps_held_across(&self, now: u32, quantum: u32) -> bool {
        let held = self.held_one.get();
        self.kept.is_empty()
            && !crate::quantum::recent_scan_at(now)
            && (held == HELD_NOTHING || self.held_retires_to_recent(held, now, quantum))
    }

    /// Whether `retire_held` at hook `now` would only move the held stripe
    /// (`held`, from `held_one`) among the recent ones: one private stripe
    /// whose quantum is over. (Its own test of the quantum, not the caller's:
    /// taking the caller's made the fast path two instructions longer.)
    #[inline(always)]
    fn held_retires_to_recent(&self, held: u32, now: u32, quantum: u32) -> bool {
        held < HELD_SEVERAL
            && self.held_private.get()
            && now.wrapping_sub(self.held_since.get()) >= quantum
    }

    /// Unlocks `set`, carrying the thread's clock.
    fn release_set(&self, set: StripeSet) {
        set.raise_clock(self.clock.get());
        if !set.unlock(self.id.get()) {
            self.catch_up_after_takeover();
        }
    }

    /// A stripe was taken over while this thread slept in a call the
    /// runtime does not see: order what follows after what woke it.
    fn catch_up_after_takeover(&self) {
        let past = crate::handover::clock_past_all();
        self.clock.set(self.clock.get().max(past));
    }

    /// Gives the processor away holding nothing (no thread waits for this
    /// one's stripes meanwhile): a thread that spins, on a flag or on a
    /// busy lock, lets the thread it waits for run, which on a machine with
    /// fewer cores than threads may be waiting for a core. Between events.
    pub(crate) fn give_way(&self) {
        SPIN_YIELDS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        self.release_held();
        self.release_kept();
        // SAFETY: no arguments (raw: not the interposed sched_yield, which
        // is an event).
        unsafe { libc::syscall(libc::SYS_sched_yield) };
    }

    /// A try of a lock found it `busy`, or took it (recording): every
    /// [`BUSY_TRIES_PER_YIELD`]th busy try in a row gives way.
    /// (Not inside a call that keeps its stripes: a lock tried by a
    /// library call the runtime records whole.)
    pub(crate) fn lock_tried(&self, busy: bool) {
        let tries = if busy { self.busy_tries.get() + 1 } else { 0 };
        self.busy_tries.set(tries);
        if busy && tries.is_multiple_of(BUSY_TRIES_PER_YIELD) && self.outside_calls() {
            self.give_way();
        }
    }

    /// Unlocks every stripe kept for the quantum, and the recent ones.
    fn release_kept(&self) {
        while let Some(stripe) = self.kept.pop().or_else(|| self.recent.pop()) {
            self.release_set(StripeSet::of_stripe(stripe));
        }
    }

    /// Sets `held`, its one-number form `held_one`, and `held_share`.
    #[inline(always)]
    fn set_held(&self, set: StripeSet, share: bool) {
        self.held.set(set);
        self.held_share.set(share);
        self.held_one.set(match set.single() {
            Some(stripe) => stripe,
            None if set.is_empty() => HELD_NOTHING,
            None => HELD_SEVERAL,
        });
    }

    /// The common case of [`Self::hold_access`] in a few instructions: the
    /// access's one `stripe` is the one the thread holds from its last
    /// access, or one of its recent private stripes; no other thread waits
    /// for it; the last access's stripe is not kept for the quantum (its
    /// quantum is over), and while stripes are kept, the hook is not one
    /// where the general path looks at them (or it is one they are used
    /// at: [`Self::hold_kept_fast`]). Does what `hold_access`
    /// does then (the hook counted, the recent stripes due at this hook
    /// given back, the last access's private stripe among the recent ones,
    /// `stripe` held for this access) and returns true; returns false
    /// otherwise, having changed nothing but maybe given back recent
    /// stripes that were due. A loop walking its own data takes this path
    /// at nearly every access.
    #[inline(always)]
    pub(crate) fn hold_access_fast(&self, stripe: u32, quantum: u32, writes: bool) -> bool {
        let now = self.kept.hooks().wrapping_add(1);
        let held = self.held_one.get();
        let held_expired = now.wrapping_sub(self.held_since.get()) >= quantum;
        if !self.kept.is_empty() || (held == stripe && !held_expired) {
            if self.hold_kept_fast(stripe, writes, now, (held, held_expired)) {
                return true;
            }
            // A private stripe, as below, unless the kept ones are due a
            // look (the general path's, at every 8th hook).
            if crate::quantum::kept_scan_at(now) {
                return false;
            }
        }
        // (Giving back the recent stripes that are due leaves it as it is.)
        if crate::quantum::recent_scan_at(now) {
            self.release_expired_recent(now);
            // (Looked at here, every few hooks: off the fast path's line.)
            if !writes && held == stripe && self.polls_held(now) {
                return false;
            }
        }
        let me = self.id.get();
        if self.serial.get() && self.spins_serially(held == stripe && !writes) {
            return false;
        }
        if held == stripe {
            // `retire_held` would keep it for the next access.
            if !held_expired || !StripeSet::reusable(stripe, me) {
                return false;
            }
        } else {
            self.held_from.set(now);
            // `retire_held` would put the held stripe among the recent ones
            // (private, quantum over) or have nothing to retire.
            let retires_to_recent = self.held_retires_to_recent(held, now, quantum);
            if !(held == HELD_NOTHING || retires_to_recent) {
                return false;
            }
            let Some(at) = self.recent.slot_of(stripe) else {
                return false;
            };
            if !StripeSet::reusable(stripe, me) {
                return false;
            }
            if retires_to_recent {
                self.recent.trade(at, held, now);
            } else {
                self.recent.free(at);
            }
            // (`set_held`, spelled out: its match on the set is known here.)
            self.held.set(StripeSet::of_stripe(stripe));
            self.held_one.set(stripe);
            self.held_share.set(false);
            self.held_private.set(true);
        }
        self.kept.set_hooks(now);
        StripeSet::claim(stripe, me, writes);
        if writes {
            self.held_share.set(false);
            self.held_from.set(now);
        }
        self.held_since.set(now.wrapping_sub(quantum));
        true
    }

    /// [`Self::hold_access_fast`] while stripes are kept for the quantum: an
    /// access to the last access's stripe, still in its quantum, or to a
    /// kept one, which the last access's stripe then replaces in its slot
    /// (`quantum::Kept::trade`; one whose quantum is over, a private one,
    /// goes among the recent ones instead). `held`: the last access's
    /// stripe (`held_one`) and whether its quantum is over. Does what
    /// [`Self::hold_access`] does then, except the scan of the kept stripes
    /// due, left to the general path every [`crate::quantum::kept_scan_at`]
    /// hook (every recent scan among them), and returns true; changes
    /// nothing and returns false otherwise. A
    /// thread bumping a shared index between writes to a buffer (two kept
    /// stripes) took the general path at every access: some 25 ns each.
    /// The stripe has been locked by this thread since its last access to
    /// it, as for a recent one, so the access is a private step.
    #[inline]
    fn hold_kept_fast(
        &self,
        stripe: u32,
        writes: bool,
        now: u32,
        (held, held_expired): (u32, bool),
    ) -> bool {
        if crate::quantum::kept_scan_at(now) || self.serial.get() || held >= HELD_SEVERAL {
            return false;
        }
        let same = held == stripe;
        if held_expired && (same || !self.held_private.get()) {
            // (Its quantum over: the private fast path's, or the general
            // path gives it back.)
            return false;
        }
        let me = self.id.get();
        let at = if same {
            None
        } else {
            let Some(at) = self.kept.slot_of(stripe) else {
                return false;
            };
            Some(at)
        };
        let same_read = same && !writes;
        if (same_read && self.polls_held(now))
            || !StripeSet::still_held(stripe, me)
            || self.would_spin_on_kept(stripe, writes)
        {
            return false;
        }
        // Committed: the general path's steps for this access, in order.
        self.kept.set_hooks(now);
        if !same_read {
            self.held_from.set(now);
        }
        self.count_kept_use(stripe, writes);
        let since = match at {
            None => {
                self.kept.use_taken_again(stripe);
                None
            }
            Some(at) if !held_expired => {
                Some(self.kept.trade(at, held, self.held_since.get(), now))
            }
            Some(_) => {
                let since = self.kept.take(stripe);
                if let Some(evicted) = self.recent.insert(held, now) {
                    self.release_set(StripeSet::of_stripe(evicted));
                }
                since
            }
        };
        if let Some(since) = since {
            self.held_since.set(since);
            self.held.set(StripeSet::of_stripe(stripe));
            self.held_one.set(stripe);
        }
        if writes {
            StripeSet::note_write(stripe);
        }
        self.held_share.set(false);
        self.held_private.set(false);
        true
    }

    /// Serial schedule: counts a fast-path access (`same_read`: a read of
    /// the stripe held from the last access); true once the thread has
    /// read one stripe [`SERIAL_SPIN_READS`] times in a row, which then
    /// takes the general path ([`Self::hold_access`] gives the turn away).
    /// A loop walking its data moves to the next stripe every few accesses.
    #[cold]
    fn spins_serially(&self, same_read: bool) -> bool {
        let n = if same_read {
            self.same_reads.get() + 1
        } else {
            0
        };
        self.same_reads.set(n);
        n >= SERIAL_SPIN_READS
    }

    /// Whether the thread, at hook `now`, has read only the stripe held
    /// from its last access for [`HELD_POLLS_PER_YIELD`] hooks or more
    /// (since `held_from`): it then gives the processor away
    /// ([`Self::give_way`], on the general path). A thread polling an index
    /// or a flag whose writer is not running (with more threads than cores,
    /// the writer may wait for the core) reads the same stripe hook after
    /// hook, each read a logged event; a loop walking data moves to another
    /// stripe every few accesses. Not in the serial schedule
    /// ([`Self::spins_serially`]) nor under chaos, which handle spinning
    /// their own way, nor inside calls.
    #[cold]
    fn polls_held(&self, now: u32) -> bool {
        now.wrapping_sub(self.held_from.get()) >= HELD_POLLS_PER_YIELD
            && !self.serial.get()
            && !self.chaos_points.get()
            && self.outside_calls()
    }

    /// Whether the quantum applies now: on, and outside the calls that
    /// keep stripes of their own.
    #[inline]
    pub(crate) fn quantum(&self) -> Option<u32> {
        let quantum = crate::quantum::get();
        (quantum > 0 && self.outside_calls()).then_some(quantum)
    }

    /// Not inside a call that keeps stripes of its own (nested events).
    #[inline(always)]
    fn outside_calls(&self) -> bool {
        self.nest_depth.get() == 0 && self.nested_len.get() == 0
    }

    /// At a hook that is not an event (function entry or exit): the last
    /// access's stripe is kept for the quantum, or unlocked.
    pub(crate) fn pass_hook(&self) {
        match self.quantum() {
            Some(quantum) => {
                self.retire_held(self.kept.tick(), quantum, None);
            }
            None => self.release_held(),
        }
    }

    /// Moves the last access's single stripe to the kept ones (a set of
    /// several is unlocked), and unlocks the kept stripes whose quantum is
    /// over. Returns true if the last access's stripe stays held for the
    /// next access, whose single stripe is `next`, instead: the same, not
    /// kept for the
    /// quantum, that no other thread waits for (unlocking and locking it
    /// again at once, three locked instructions, would change nothing:
    /// `StripeSet::reusable`).
    fn retire_held(&self, now: u32, quantum: u32, next: Option<u32>) -> bool {
        let held = self.held.get();
        let share = self.held_share.get();
        self.set_held(StripeSet::EMPTY, false);
        let since = self.held_since.get();
        let mut reused = false;
        match held.single() {
            Some(stripe) if now.wrapping_sub(since) < quantum => {
                if let Some(evicted) = self.kept.insert(stripe, since, now) {
                    self.release_set(StripeSet::of_stripe(evicted));
                }
            }
            // (A stripe number, not the set: a copy of the set just built
            // field by field would stall on its stores.)
            Some(stripe) if next == Some(stripe) && StripeSet::reusable(stripe, self.id.get()) => {
                self.set_held(held, share);
                reused = true;
            }
            Some(stripe) if self.held_private.get() => {
                if let Some(evicted) = self.recent.insert(stripe, now) {
                    self.release_set(StripeSet::of_stripe(evicted));
                }
            }
            _ if !held.is_empty() => self.release_held_set(held, share),
            _ => {}
        }
        let me = self.id.get();
        // (Not `reusable`: another thread waits for it, or took it
        // over while this one slept; either way it goes back now.)
        while let Some(stripe) = self
            .kept
            .pop_expired(now, quantum)
            .or_else(|| {
                self.kept
                    .pop_idle_wanted(now, |stripe| !StripeSet::reusable(stripe, me))
            })
            .or_else(|| self.recent.pop_expired(now))
        {
            self.release_set(StripeSet::of_stripe(stripe));
        }
        reused
    }

    /// [`Self::hold_next`] for a plain access, under the quantum: a stripe
    /// kept from an earlier access is used as it is; a new one is taken
    /// only if free (the kept ones are unlocked before waiting for it).
    /// `writes`: the access writes (only written stripes are kept: see
    /// `StripeSet::claim`).
    /// `want`: the access's block stripes; a single block's access holds
    /// its region's stripe instead while the region is whole (see
    /// "Regions" in `crate::stripes`). Returns the set held.
    #[inline]
    pub(crate) fn hold_access(&self, want: StripeSet, writes: bool) -> StripeSet {
        let Some(quantum) = self.quantum() else {
            self.hold_next(want);
            return want;
        };
        let now = self.kept.tick();
        let me = self.id.get();
        let mut set = want.for_plain_lock();
        let mut single = set.single();
        let same_read = !writes && single == Some(self.held_one.get());
        if self.serial.get() && self.spins_serially(same_read) {
            // Serial: polling what it holds (a plain flag on the fast path,
            // an atomic here), the thread waits for another, which needs
            // the turn.
            self.same_reads.set(0);
            self.release_held();
            crate::chaos::spinning(me);
        } else if !same_read {
            self.held_from.set(now);
        } else if self.polls_held(now) {
            self.held_from.set(now);
            self.give_way();
        }
        // (`retire_held` reuses only a single stripe.)
        if self.retire_held(now, quantum, single)
            && let Some(stripe) = single
        {
            let private = self.held_private.get();
            self.hold_again(set, stripe, writes, now.wrapping_sub(quantum), private);
            return set;
        }
        if let Some(stripe) = single
            && let Some(since) = self.kept.take(stripe)
        {
            if !StripeSet::still_held(stripe, me) {
                self.catch_up_after_takeover();
            } else if self.spins_on_kept(stripe, writes)
                && (self.serial.get() || !StripeSet::reusable(stripe, me))
            {
                // It goes back too, and this thread takes its turn after
                // the thread that waits for it (serial: after the others,
                // whose turn it is, since it waits for one of them).
                self.release_set(StripeSet::of_stripe(stripe));
                if self.serial.get() {
                    self.release_kept();
                    crate::chaos::spinning(me);
                }
            } else {
                if writes {
                    StripeSet::note_write(stripe);
                }
                self.set_held(set, false);
                self.held_since.set(since);
                self.held_private.set(false);
                return set;
            }
        }
        if let Some(stripe) = single
            && self.recent.take(stripe)
        {
            if StripeSet::reusable(stripe, me) {
                self.hold_again(set, stripe, writes, now.wrapping_sub(quantum), true);
                return set;
            }
            // Another thread waits for it, or took it over while this one
            // slept: it goes back, and this thread takes its turn.
            self.release_set(StripeSet::of_stripe(stripe));
        }
        if self.serial.get() && !crate::chaos::keeps_turn(me) {
            // The serial schedule (`record --serialize`): a new stripe only
            // on the thread's turn, waited for holding nothing.
            self.release_kept();
            crate::chaos::before_event(me, true);
        }
        if let Some(stripe) = single
            && StripeSet::is_region(stripe)
        {
            if StripeSet::region_contended(stripe, me) {
                // Threads share the region: its blocks' own stripes from
                // now on (split waiting holding nothing, as below).
                self.release_kept();
                StripeSet::split_region_of(stripe, me);
            }
            if StripeSet::region_is_split(stripe) {
                set = want;
                single = set.single();
            }
        }
        if (self.kept.is_empty() && self.recent.is_empty()) || !set.try_lock_single(me) {
            // Wait holding nothing: no thread waits for stripes a waiting
            // thread keeps.
            self.release_kept();
            set.lock(me);
        }
        if single.is_some_and(StripeSet::region_is_split) {
            // Split by another thread before this one got the region's
            // stripe: the block's own instead, taken holding nothing.
            self.release_set(set);
            self.release_kept();
            set = want;
            single = set.single();
            set.lock(me);
        }
        // A stripe several threads read in turn becomes read-shared when
        // this read is done, so that the next readers take no lock.
        let share = !writes && single.is_some_and(|stripe| StripeSet::read_in_turn(stripe, me));
        self.set_held(set, share);
        // Only a shared, written stripe is worth keeping, and only while
        // kept ones are used again: the others go back at the next hook as
        // without a quantum (their start is a quantum ago), which spares
        // the kept list the walk over private data and the other threads
        // the wait.
        self.held_private
            .set(single.is_some_and(|stripe| StripeSet::private_to(stripe, me)));
        let since = match single {
            Some(stripe)
                if StripeSet::claim(stripe, me, writes)
                    && !StripeSet::note_written_in_turn(stripe)
                    && self
                        .kept
                        .worth_keeping(quantum, crate::quantum::keeping_paid(stripe)) =>
            {
                self.kept.jittered_start(now, quantum, me)
            }
            _ => now.wrapping_sub(quantum),
        };
        self.held_since.set(since);
        set
    }

    /// Counts an access to kept `stripe` (`writes`: a write); returns
    /// true, having given back every other kept stripe another thread
    /// waits for, if the thread spins on it: the access is the
    /// [`SPIN_READS`]th read of that stripe with no write to it and no read
    /// of another kept stripe between. A thread waiting for a flag or a
    /// ring buffer's index reads it hook after hook (counting its polls in
    /// other data, maybe), while the thread it waits for may wait for a
    /// stripe it keeps (the flag's, the buffer's): keeping them would stop
    /// that thread until their quantum ends or they sit unused for
    /// `quantum::IDLE_HOOKS`, recorded as that many useless polls. A thread
    /// that writes what it reads (bumping a shared index, moving a ring
    /// buffer's head) or reads other kept data between (consuming from the
    /// buffer) keeps it.
    fn spins_on_kept(&self, stripe: u32, writes: bool) -> bool {
        if !self.would_spin_on_kept(stripe, writes) {
            self.count_kept_use(stripe, writes);
            return false;
        }
        self.polls.set(0);
        let me = self.id.get();
        while let Some(kept) = self.kept.pop_wanted(|s| !StripeSet::reusable(s, me)) {
            self.release_set(StripeSet::of_stripe(kept));
        }
        true
    }

    /// Whether an access to kept `stripe` (`writes`: a write) is the
    /// [`SPIN_READS`]th read of it in a row ([`Self::spins_on_kept`]).
    #[inline]
    fn would_spin_on_kept(&self, stripe: u32, writes: bool) -> bool {
        !writes && self.polled.get() == stripe && self.polls.get() + 1 >= SPIN_READS
    }

    /// Counts an access to kept `stripe` that is no spin
    /// ([`Self::spins_on_kept`]'s count).
    #[inline]
    fn count_kept_use(&self, stripe: u32, writes: bool) {
        let same = self.polled.get() == stripe;
        if writes {
            // (A write elsewhere, a poll counter maybe, breaks no spin.)
            if same {
                self.polled.set(NOT_POLLED);
            }
            return;
        }
        self.polls.set(if same { self.polls.get() + 1 } else { 1 });
        self.polled.set(stripe);
    }

    /// Holds `set`, whose single `stripe` the thread still holds from an
    /// earlier access (the last one, or a recent one), for this access:
    /// `private` (it joins the recent ones after), since hook `since`.
    #[inline]
    fn hold_again(&self, set: StripeSet, stripe: u32, writes: bool, since: u32, private: bool) {
        StripeSet::claim(stripe, self.id.get(), writes);
        self.set_held(set, self.held_share.get() && !writes);
        self.held_private.set(private);
        self.held_since.set(since);
    }

    /// Releases the stripes kept from the previous hook, at a point where
    /// chaos scheduling may stop the thread for others (it holds nothing
    /// then, unless inside a call that keeps its stripe). `step`: the event
    /// is one PCT counts (see [`crate::chaos::is_step`]).
    #[inline]
    pub(crate) fn release_at_schedule_point(&self, step: bool) {
        self.release_held();
        // Chaos off (the usual case) costs one load here.
        if crate::chaos::enabled() && self.outside_calls() {
            crate::chaos::before_event(self.id.get(), step);
        }
    }

    /// Ends the previous event (its stripes unlocked, at a schedule point)
    /// and locks `set` until the next hook: the start of every top-level
    /// event that touches program memory.
    #[inline]
    pub(crate) fn hold_next(&self, set: StripeSet) {
        self.hold_next_counted(set, true);
    }

    /// [`Self::hold_next`] for an event that PCT counts as a step or not.
    #[inline]
    fn hold_next_counted(&self, set: StripeSet, step: bool) {
        self.release_at_schedule_point(step);
        self.hold(set);
    }

    /// Locks `set` (everything held was released first) and keeps it until
    /// the next hook.
    fn hold(&self, set: StripeSet) {
        if self.nest_depth.get() > 0 {
            debug_assert!(self.nested_held.get().is_empty(), "release first");
            set.lock_where(self.id.get(), |i| !self.owns(i));
            self.nested_held.set(set);
            return;
        }
        debug_assert!(self.held.get().is_empty(), "release before taking more");
        set.lock(self.id.get());
        self.set_held(set, false);
        self.held_private.set(false);
    }

    /// Whether stripe `i` is locked by this thread for the call it is in
    /// (the call's own stripes, or an enclosing nested acquisition's).
    fn owns(&self, i: u32) -> bool {
        self.held.get().contains(i) || self.holds_nested(i)
    }

    /// Unlocks the stripes of the last event nested in a kept call.
    fn release_nested_held(&self) {
        let set = self.nested_held.get();
        if !set.is_empty() {
            set.raise_clock(self.clock.get());
            set.unlock_where(self.id.get(), |i| !self.owns(i));
            self.nested_held.set(StripeSet::EMPTY);
        }
    }

    /// Appends an entry whose stripes the thread holds (an interposed
    /// call's event; the compiler-instrumented accesses take `append_on`).
    pub(crate) fn append(&self, kind: EventKind, addr: u64, size: u64, site: u64, payload: u64) {
        if self.in_blocking_call.get() {
            // Logged by library code after a wait no stripe shows (libomp
            // formats a message after its `ordered` wait): its place in the
            // global order must follow the release, as it did in time (see
            // `splitter/src/recorded.rs`). Only interposed calls log
            // there: an uninstrumented library makes no instrumented access.
            self.clock_past_all_threads();
        }
        self.append_on(
            StripeSet::for_access(addr, size),
            kind,
            addr,
            size,
            site,
            payload,
        );
    }

    /// [`Self::append`] when the caller already has the entry's stripe set.
    pub(crate) fn append_on(
        &self,
        set: StripeSet,
        kind: EventKind,
        addr: u64,
        size: u64,
        site: u64,
        payload: u64,
    ) {
        let clock = if kind == EventKind::Time {
            // A value read from outside: nothing writes its pseudo-address,
            // so it needs no lock, only a place in program order.
            self.clock.get() + SYNCED_CLOCK_STEP
        } else {
            set.advance_clock(self.clock.get())
        };
        self.log_entry(clock, kind, addr, size, site, payload);
    }

    /// [`Self::append_on`] for a plain access on one `stripe` the thread
    /// holds, its clock moved by `step`: [`PRIVATE_CLOCK_STEP`] only after
    /// [`Self::hold_access_fast`], whose stripe the thread has held since
    /// its last access to it (ARCHITECTURE.md, "Private steps").
    #[inline(always)]
    pub(crate) fn append_on_stripe(&self, stripe: u32, access: PlainAccess, step: u64) {
        let clock = StripeSet::advance_stripe_clock(stripe, self.clock.get(), step);
        self.log_plain_access(clock, access, step != PRIVATE_CLOCK_STEP);
    }

    /// [`Self::append_on_stripe`] for a plain access on one `stripe` the
    /// thread has just taken, at [`Self::clock_on`]'s clock (the stripe's
    /// clock loaded once).
    #[inline(always)]
    pub(crate) fn append_on_taken_stripe(&self, stripe: u32, access: PlainAccess) {
        let (clock, synced) = self.clock_on(stripe);
        StripeSet::store_stripe_clock(stripe, clock);
        self.log_plain_access(clock, access, synced);
    }

    /// Logs a plain access at `clock`, in its compact form if it has one
    /// (`may_step`: see `codec::encode_access`).
    #[inline(always)]
    fn log_plain_access(&self, clock: u64, a: PlainAccess, may_step: bool) {
        match rr_lite_trace::codec::compact_tag(a.kind, a.size) {
            Some(tag) => self.log_access(clock, tag, a.addr, a.site, may_step),
            None => self.log_entry(clock, a.kind, a.addr, a.size, a.site, 0),
        }
    }

    /// [`Self::log_entry`] for a plain access with a compact form (`tag`).
    #[inline(always)]
    fn log_access(&self, clock: u64, tag: u8, addr: u64, site: u64, may_step: bool) {
        if may_step {
            self.synced_clock.set(clock);
        }
        self.take_clock(clock);
        if !(self.borrow_log().writer()).append_access(tag, clock, addr, site, may_step) {
            self.log_write_failed();
        }
    }

    /// Logs an entry at `clock`, the thread's new clock.
    #[inline(always)]
    fn log_entry(
        &self,
        clock: u64,
        kind: EventKind,
        addr: u64,
        size: u64,
        site: u64,
        payload: u64,
    ) {
        let entry = Entry {
            clock,
            kind,
            addr,
            size,
            site,
            payload,
        };
        if clock != self.clock.get() + PRIVATE_CLOCK_STEP {
            self.synced_clock.set(clock);
        }
        self.take_clock(clock);
        if !self.borrow_log().writer().append(&entry) {
            self.log_write_failed();
        }
    }

    /// Takes `clock` as the thread's, and publishes it.
    #[inline(always)]
    fn take_clock(&self, clock: u64) {
        self.clock.set(clock);
        (self.published_clock.get()).store(clock, core::sync::atomic::Ordering::Relaxed);
    }

    /// The thread's log could not be created: its appends fail silently
    /// (the creation was reported, with its cause; not as a full disk).
    pub(crate) fn log_not_created(&self) {
        self.log_failed.set(true);
    }

    /// The log could not grow: said once per run.
    #[cold]
    fn log_write_failed(&self) {
        if !self.log_failed.replace(true)
            && !crate::problems::LOG_FAILED.swap(true, core::sync::atomic::Ordering::Relaxed)
        {
            crate::sys::warn(&[
                b"cannot write a thread log (disk full?): the program goes on, partly \
                  unrecorded, and the trace is incomplete",
            ]);
            crate::problems::note(&[
                b"a thread log could not grow (disk full?): the thread's later events are \
                  not in the trace",
            ]);
        }
    }

    /// Locks the stripes of an interposed call's event. Inside a call that
    /// keeps its own stripe (`nest_depth`), a single-stripe event nests on
    /// top of the held set instead of releasing it.
    pub(crate) fn acquire(&self, addr: u64, size: u64) -> Acquired {
        self.acquire_set(
            StripeSet::for_access(addr, size),
            crate::chaos::is_step(addr),
        )
    }

    /// [`Self::acquire`] of a set the caller built (an allocator call's
    /// ranges); `step`: PCT counts the event as a step.
    pub(crate) fn acquire_set(&self, want: StripeSet, step: bool) -> Acquired {
        if let Some(stripe) = want.single().filter(|_| self.nest_depth.get() > 0) {
            if self.owns(stripe) || self.nested_held.get().contains(stripe) {
                return Acquired::Nested(StripeSet::EMPTY);
            }
            want.lock(self.id.get());
            self.push_nested(stripe);
            return Acquired::Nested(want);
        }
        self.hold_next_counted(want, step);
        Acquired::Top
    }

    /// [`Self::acquire`] for a call whose own events (allocations) are
    /// logged inside it, before its event: they happen after everything
    /// logged on these stripes so far, so the thread's clock catches up
    /// with the stripes' now, and the merged order puts them after it too
    /// (fopen's allocation after another thread's earlier open).
    pub(crate) fn acquire_before_nested(&self, addr: u64, size: u64) -> Acquired {
        let acquired = self.acquire(addr, size);
        let set = StripeSet::for_access(addr, size);
        self.clock.set(self.clock.get().max(set.clock()));
        acquired
    }

    /// Gives back what [`Self::acquire`] locked.
    pub(crate) fn give_back(&self, acquired: Acquired) {
        match acquired {
            Acquired::Top => self.release_held(),
            Acquired::Nested(set) => {
                if let Some(stripe) = set.single() {
                    self.pop_nested(stripe);
                }
                set.raise_clock(self.clock.get());
                set.unlock(self.id.get());
            }
        }
    }

    fn holds_nested(&self, stripe: u32) -> bool {
        self.nested.get()[..self.nested_len.get()].contains(&stripe)
    }

    fn push_nested(&self, stripe: u32) {
        let len = self.nested_len.get();
        debug_assert!(
            len < MAX_NESTED,
            "nested acquisitions deeper than {MAX_NESTED}"
        );
        if len < MAX_NESTED {
            let mut nested = self.nested.get();
            nested[len] = stripe;
            self.nested.set(nested);
            self.fast_quantum.set(0);
            self.nested_len.set(len + 1);
        }
    }

    /// Forgets `stripe`, the innermost nested acquisition (they are given
    /// back in the reverse order).
    fn pop_nested(&self, stripe: u32) {
        let len = self.nested_len.get();
        if len > 0 && self.nested.get()[len - 1] == stripe {
            self.nested_len.set(len - 1);
            self.refresh_fast();
        }
    }

    /// Inside a real call that keeps an event's stripe (see [`Self::nested`]).
    pub(crate) fn is_nested(&self) -> bool {
        self.nest_depth.get() > 0
    }

    /// Runs a real call during which the thread keeps an event's stripe:
    /// events inside it (an allocation) nest instead of releasing it.
    /// The call's own stripes stay locked whatever the events inside it do
    /// (see `nested_held`).
    pub(crate) fn nested<R>(&self, op: impl FnOnce() -> R) -> R {
        self.enter_nested();
        let result = op();
        self.leave_nested();
        result
    }

    /// [`Self::nested`] opened: events from here to [`Self::leave_nested`]
    /// nest on the stripes the thread keeps (a library's own code between
    /// two of its callbacks into the program: `events::stretch_begin`).
    pub(crate) fn enter_nested(&self) {
        self.fast_quantum.set(0);
        self.nest_depth.set(self.nest_depth.get() + 1);
        crate::handover::enter_guard(self.id.get());
    }

    /// Closes [`Self::enter_nested`].
    pub(crate) fn leave_nested(&self) {
        crate::handover::leave_guard(self.id.get());
        self.release_nested_held();
        self.nest_depth.set(self.nest_depth.get() - 1);
        self.refresh_fast();
    }

    /// Whether the thread left a blocking call without returning from it:
    /// unwound by `pthread_cancel` (a cancellation point inside it), or by
    /// `pthread_exit` or `longjmp` from a signal handler. Its event was
    /// never logged (a cancelled `pthread_cond_wait` re-takes its mutex
    /// inside glibc, unseen), and replay would not leave the call there.
    pub(crate) fn left_a_blocking_call(&self) -> bool {
        self.in_blocking_call.get()
    }

    /// Runs `op`, a blocking call whose event is logged after it, with the
    /// events it logs itself ordered past every thread's (see `append`).
    pub(crate) fn blocking_call<R>(&self, op: impl FnOnce() -> R) -> R {
        let outer = self.in_blocking_call.replace(true);
        let result = op();
        self.in_blocking_call.set(outer);
        result
    }

    /// Takes a clock past every clock any thread has published: after a
    /// synchronisation the runtime cannot see that may involve every thread
    /// (libgomp's thread dock before a parallel region).
    pub(crate) fn clock_past_all_threads(&self) {
        self.clock
            .set(self.clock.get().max(crate::handover::clock_past_all()));
    }

    /// Takes a clock past the last event logged on `addr`'s stripe (an
    /// order the kernel imposes and the stripes do not see: see
    /// `events::after_exit_of`).
    pub(crate) fn clock_past(&self, addr: u64) {
        self.release_held();
        let set = StripeSet::for_access(addr, 0);
        set.lock(self.id.get());
        self.clock.set(set.clock().max(self.clock.get()));
        set.unlock(self.id.get());
    }
}

/// The thread's log writer, borrowed (`RecordThread::borrow_log`); the
/// borrow ends when this drops.
struct LogBorrow<'a> {
    thread: &'a RecordThread,
}

impl LogBorrow<'_> {
    #[inline(always)]
    fn writer(&mut self) -> &mut LogWriter {
        // SAFETY: only the owning thread reaches its RecordThread, and
        // `borrow_log` made this guard only after setting `log_in_use`
        // from false, which stays set until the guard drops: this is the
        // only reference to `log` (tied to the guard's borrow).
        unsafe { &mut *self.thread.log.get() }
    }
}

impl Drop for LogBorrow<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.thread.log_in_use.set(false);
    }
}

/// A plain access a compiler hook reports (`events::record_access`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainAccess {
    pub(crate) kind: EventKind,
    pub(crate) addr: u64,
    pub(crate) size: u64,
    pub(crate) site: u64,
}

/// Which stripes an interposed call locked, and how to give them back.
#[derive(Debug)]
pub(crate) enum Acquired {
    /// Became the thread's held set (everything else was released first).
    Top,
    /// Locked on top of the held set, inside a call that keeps its stripe.
    Nested(StripeSet),
}
