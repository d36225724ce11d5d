//! Striped locks with Lamport clocks: the record-mode mechanism that
//! makes the log a true global order.
//!
//! Every 64-byte block maps to one data stripe (`block % DATA_STRIPES`, so a
//! contiguous range maps to at most two contiguous runs of stripes; a block,
//! not an 8-byte granule, so that a loop walking an array stays on one stripe
//! for eight elements and finds it among its recent ones, `crate::quantum::
//! Recent`; the trace and the split still see every 8-byte granule);
//! pseudo-addresses map to a separate set of stripes, so library state (a
//! blocking write on an fd) never shares a lock with program data. A hook
//! locks the stripes of its access, takes a clock `max(thread clock, stripe
//! clocks) + 1`, stores it in the stripes, logs, and keeps the stripes until
//! the thread's next hook (by then the access has executed) or until an
//! interposed call that may block. Invariants:
//! - stripes are always locked in ascending index order (no deadlock);
//! - a stripe's clock only grows, and only while its lock is held, so two
//!   entries on one granule get clocks in the order memory saw them;
//! - unlocking first raises the stripe's clock to the holder's, so the next
//!   holder orders after everything the holder logged while holding it;
//! - a waiter spins, then parks; for a stripe kept for the quantum it spins
//!   on while the holder's published clock moves (`handover::clock_of`);
//! - a free lock goes to whoever takes it first (a running thread), not
//!   in turn: with more threads than cores, a lock handed to the next
//!   waiter in line (a ticket lock, until 2026-11-29) often went to one
//!   parked or waiting for a core while the others waited behind it (a
//!   mutex counter, 4 threads on 2 cores: 1.5 s recorded, now 1.0; a spin
//!   lock's 2.8-4.5 s, now 1.0-1.8; 155 k kept waits, now 14 k). No waiter
//!   starves: one that has stayed parked [`PROMISE_AFTER_NS`] has the lock
//!   promised to it (one waiter at a time), and the next release hands
//!   it the lock instead of freeing it; a thread spinning on a flag still
//!   gives its stripe back when the writer waits (`reusable`, the
//!   quantum's wanted stripes) and gives way (`crate::record`);
//! - a thread holding stripes from earlier accesses (the quantum) takes
//!   more only with `try_lock`, never waiting while it holds any;
//! - each stripe knows its holder, so that a waiter can release it on the
//!   behalf of a holder asleep outside the runtime (`crate::handover`); the
//!   holder's own release then finds it gone and skips it. The holder and
//!   the waiter it is promised to share one word (`LockWord`): taking the
//!   lock is one compare-exchange from free, and a release, the holder's
//!   or a waiter's on its behalf, is one that clears the holder (or puts
//!   the promised waiter in its place), so exactly one of the two can
//!   succeed.
//!
//! Read-shared stripes: data several threads read in turn and none writes
//! (an LU's pivot row, an FFT's roots) would make every reader take the
//! lock in turn, and a reader preempted while holding it stalls the
//! others. A thread that locked a stripe for a read, after another thread
//! that only read it, makes it *shared* when it unlocks (`share`). A plain
//! read of a shared stripe then takes no lock: the reader publishes which
//! stripe it reads (`handover::start_reading`, a store and a full fence in
//! its own cache line), checks again that the stripe is still shared,
//! takes `max(thread clock, stripe clock) + 1` (past the last write) and
//! logs; the mark stays until a hook that finds the stripe no longer
//! shared, or that may wait (the read is done by the next hook).
//! Whoever locks a shared stripe next (a writer, or a reader that found it
//! not shared) ends the sharing (`end_sharing`): it clears the flag, fences,
//! waits until no thread's mark names the stripe (the fences pair: each
//! reader either saw the flag cleared and locks, or is waited for), and
//! raises the stripe's clock past every clock any thread has published,
//! every lock-free read's among them. Invariants: `shared` is set only by
//! the lock's holder just before it unlocks, and cleared by the next
//! holder before it logs; a thread's mark is cleared before it waits for
//! any stripe (so a holder waiting for readers never waits for a thread
//! that waits for it); reads of one stripe may get equal clocks, which is
//! harmless: reads commute.
//!
//! Regions: a plain access under the quantum locks the stripe of its
//! 1 KiB region (16 blocks, [`plain_stripe`]) while the region is whole,
//! so that a loop walking its own array takes a new stripe every 1 KiB
//! instead of every 64 bytes (each new stripe costs unlocking the oldest
//! recent one, locking this one: some 600 instructions and three locked
//! ones). Threads that share a region take turns on its stripe until they
//! have found it busy [`SPLIT_AFTER`] times, or taken it in turn with a
//! write [`WRITTEN_SPLIT_AFTER`] times; then the region is *split*
//! for good (`split_region`): its plain accesses take their blocks' own
//! stripes, so threads whose data only neighbour are not serialised. Every
//! other event (interposed calls, ranges, recording without the quantum)
//! locks block stripes only, after splitting their regions
//! ([`StripeSet::lock`]). Invariants: a region is split only by a holder
//! of its stripe, once, and one that logs nothing on that stripe after
//! (a thread that finds it due while holding it leaves the split to the
//! next taker: `StripeSet::note_written_in_turn`); the split raises its block stripes' clocks to the
//! region stripe's, so every entry on a block stripe orders after every
//! entry on the region's; block stripes of a whole region are never held
//! (everything that locks them splits the region first, holding nothing
//! else a region's holder could wait for); a thread that locked a
//! region's stripe after reading the region whole looks again and takes
//! the block's stripe instead if it was split meanwhile (holding the
//! region's stripe throughout, a thread cannot see it split). So two
//! conflicting accesses still share a stripe, or one follows the split and
//! the other precedes it.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::Backoff;
use rr_lite_trace::{SYNCED_CLOCK_STEP, pseudo};

use crate::handover;
use crate::sys::{futex_wait, futex_wake, futex_wake_all};

/// log2 of the bytes one data stripe covers.
pub(crate) const GRANULE_SHIFT: u32 = 6;
pub(crate) const DATA_STRIPES: u32 = 1 << 15;
pub(crate) const PSEUDO_STRIPES: u32 = 1 << 10;
/// log2 of the bytes one region covers (see "Regions" above).
const REGION_SHIFT: u32 = 10;
/// Data stripes (blocks) per region.
const REGION_BLOCKS: u32 = 1 << (REGION_SHIFT - GRANULE_SHIFT);
/// Region stripes: the same period as the data stripes (2 MiB), so that
/// every data stripe belongs to exactly one region stripe.
const REGIONS: u32 = DATA_STRIPES / REGION_BLOCKS;
/// Index of the first region stripe (after the data and pseudo stripes).
const REGION_BASE: u32 = DATA_STRIPES + PSEUDO_STRIPES;
const STRIPES: usize = (DATA_STRIPES + PSEUDO_STRIPES + REGIONS) as usize;
const _: () = assert!(
    core::mem::offset_of!(Stripe, clock) >= 64,
    "the holder's own line"
);
// The quantum's verdicts cover every stripe.
const _: () = assert!(STRIPES <= crate::quantum::JUDGED_STRIPES);
/// Longest a parked waiter sleeps before re-checking: wake-ups are not
/// lost, but a holder asleep outside the runtime never sends one.
const HANDOVER_CHECK_NS: u64 = handover::HANDOVER_AFTER_NS / 2;
/// Backoff rounds (exponential, up to 64 pauses each) before parking.
pub(crate) const SPIN_ROUNDS: u32 = 10;
/// Further rounds (64 pauses each, some 50 us in all) a waiter spins for a
/// stripe kept for the quantum while its holder keeps logging events.
const PROGRESS_SPIN_ROUNDS: u32 = 100;
/// How long a waiter stays parked, finding the lock taken by others each
/// time it wakes, before it has the lock promised to it: the lock goes to
/// whoever takes it first (a running thread, not one parked or waiting
/// for a core), and the promise keeps a waiter from starving.
const PROMISE_AFTER_NS: u64 = 200_000;
// Yielding the core instead (8 or 32 times) before parking was tried: it
// recorded 8 threads faster but with 4 threads it let more of them take
// turns, and the recordings kept 1.7x the waits and replayed 2-3x slower.

/// `Stripe::last_holder`'s flag: that holder wrote the stripe.
const HOLDER_WROTE: u32 = 1 << 31;

/// A stripe's lock word: the waiter the lock is promised to (high half,
/// its logical id plus one; 0: none) and the holder's logical id plus one
/// (low half; 0 when free). One word, so that giving the lock back (to
/// nobody, or to the waiter it is promised to) and taking it over from a
/// sleeping holder are one compare-exchange each, and the two can never
/// both succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LockWord(u64);

impl LockWord {
    const FREE: LockWord = LockWord(0);

    const fn new(promised: u32, holder: u32) -> LockWord {
        LockWord(((promised as u64) << 32) | holder as u64)
    }

    const fn promised(self) -> u32 {
        (self.0 >> 32) as u32
    }

    const fn holder(self) -> u32 {
        self.0 as u32
    }

    /// The word once the holder gives the lock back: free, or held by the
    /// waiter it was promised to.
    const fn handed_on(self) -> LockWord {
        LockWord::new(0, self.promised())
    }
}

/// One stripe's lock and clocks, on two cache lines: the first holds what
/// waiters touch (the lock word they poll, their counts), the second what
/// the holder writes at every access (the clock, the last holder). On one
/// line, a waiter's every poll took the line from the holder, whose next
/// access then missed on it: threads taking turns on a shared index spent a
/// quarter of the holder's time there (`shared_index 3000000 4` recorded in
/// 1.70 s, 1.26-1.35 s apart; private walks within 1-3 %).
#[repr(C, align(128))]
struct Stripe {
    /// Threads waiting for the lock (in [`Stripe::wait_for`]).
    waiting: AtomicU32,
    /// A [`LockWord`]: the waiter promised the lock and the holder.
    /// Whoever clears the holder (the holder, or a waiter taking it over)
    /// hands the lock to the promised waiter in the same exchange.
    lock: AtomicU64,
    /// Waiters parked (or about to park) on `wakeups`.
    sleepers: AtomicU32,
    /// Bumped whenever the lock is handed on while a waiter sleeps: the
    /// word parked waiters wait on (a futex is 32 bits; `lock` is 64).
    wakeups: AtomicU32,
    /// Up to the second line, where the holder's fields start.
    _rest_of_waiters_line: [u8; 44],
    /// Lamport clock of the last entry on this stripe; written under the lock.
    clock: AtomicU64,
    /// Logical id + 1 of the thread that took the lock last (0: none yet),
    /// with `HOLDER_WROTE` if it wrote while holding it; written under the
    /// lock. Tells the quantum which stripes are shared and written.
    last_holder: AtomicU32,
    /// 1 while the stripe is read-shared: a plain read may be logged
    /// without the lock (see "Read-shared stripes" above). Set by a holder
    /// just before it unlocks; cleared by whoever takes the lock next,
    /// which then waits for the readers (`end_sharing`).
    shared: AtomicU32,
}

impl Stripe {
    const fn new() -> Stripe {
        Stripe {
            waiting: AtomicU32::new(0),
            lock: AtomicU64::new(0),
            sleepers: AtomicU32::new(0),
            wakeups: AtomicU32::new(0),
            _rest_of_waiters_line: [0; 44],
            clock: AtomicU64::new(0),
            last_holder: AtomicU32::new(0),
            shared: AtomicU32::new(0),
        }
    }

    #[inline]
    fn word(&self, order: Ordering) -> LockWord {
        LockWord(self.lock.load(order))
    }

    /// Logical id + 1 of the holder, 0 if none.
    #[inline]
    fn holder(&self, order: Ordering) -> u32 {
        self.word(order).holder()
    }

    /// Takes the lock for `me` if it is free (held by nobody, promised to
    /// nobody), whoever waits for it: the first taker, a running thread,
    /// gets it (see the module doc).
    #[inline]
    fn take(&self, me: u32) -> bool {
        self.lock
            .compare_exchange(
                LockWord::FREE.0,
                LockWord::new(0, me + 1).0,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    fn lock(&self, me: u32) {
        if !self.take(me) {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            handover::guarded(me, || self.wait_for(me));
            self.waiting.fetch_sub(1, Ordering::Release);
        }
        self.end_sharing(me);
    }

    /// Just locked by `me`: if the stripe was read-shared, it is no longer,
    /// and `me` waits until every read logged without the lock is done
    /// (each reader at its next hook), then raises the stripe's clock past
    /// every clock published (every such read's among them), so that what
    /// `me` logs next orders after those reads.
    #[inline]
    fn end_sharing(&self, me: u32) {
        if self.shared.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.shared.store(0, Ordering::Relaxed);
        // Pairs with the fence in `handover::start_reading`: either the
        // reader sees the stripe no longer shared, or this sees its mark.
        core::sync::atomic::fence(Ordering::SeqCst);
        handover::wait_for_readers(self.index(), me);
        self.clock
            .fetch_max(handover::clock_past_all(), Ordering::Relaxed);
    }

    /// This stripe's index in the table.
    fn index(&self) -> u32 {
        let offset = core::ptr::from_ref(self).addr() - TABLE.as_ptr().addr();
        (offset / core::mem::size_of::<Stripe>()) as u32
    }

    /// Takes the lock only if it is free now (never waits: a thread that
    /// keeps stripes from earlier events must not wait while holding them).
    fn try_lock(&self, me: u32) -> bool {
        let taken = self.take(me);
        if taken {
            self.end_sharing(me);
        }
        taken
    }

    /// Waits until `me` holds the lock: takes it when it finds it free, or
    /// is handed it once promised it.
    #[cold]
    fn wait_for(&self, me: u32) {
        let backoff = Backoff::new();
        let mut spins = 0;
        let mut parked_since = None;
        let quantum = crate::quantum::get() > 0;
        let mut holder_progress = None;
        loop {
            let word = self.word(Ordering::SeqCst);
            if word.holder() == me + 1 || (word == LockWord::FREE && self.take(me)) {
                return;
            }
            // Spin briefly (the holder is usually one access away from its
            // next hook), then park: with more threads than cores a spinning
            // waiter would take the core from the holder it waits for.
            // (`Backoff::spin` alone never reports completion.)
            if spins < SPIN_ROUNDS {
                spins += 1;
                backoff.spin();
                continue;
            }
            // A stripe kept for the quantum comes back after tens of the
            // holder's hooks, past the spin above: keep spinning while the
            // holder runs (its published clock moves), since parking costs a
            // futex wake per turn; park once it stops (descheduled, or
            // blocked), when spinning would only take its core.
            if quantum
                && spins < SPIN_ROUNDS + PROGRESS_SPIN_ROUNDS
                && self.holder_moves(&mut holder_progress)
            {
                spins += 1;
                backoff.spin();
                continue;
            }
            let since = *parked_since.get_or_insert_with(crate::sys::monotonic_ns);
            let parked_for = crate::sys::monotonic_ns().saturating_sub(since);
            if parked_for > handover::HANDOVER_AFTER_NS {
                self.take_over_from_sleeping_holder();
            }
            if parked_for > PROMISE_AFTER_NS && self.promise_to(me) {
                continue;
            }
            // Park. The SeqCst increment, then the loads of `wakeups` and
            // the word, pair with the SeqCst exchange, then load of
            // `sleepers` and bump of `wakeups`, in `hand_on`: either it
            // sees us and bumps `wakeups` after we read it (the futex
            // returns), or we see the word changed.
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            let wakeups = self.wakeups.load(Ordering::SeqCst);
            if self.word(Ordering::SeqCst) == word {
                crate::descriptors::lent_while(|| {
                    futex_wait(&self.wakeups, wakeups, HANDOVER_CHECK_NS)
                });
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether the stripe's holder has logged an event since the last call
    /// (`last`: what it had then).
    fn holder_moves(&self, last: &mut Option<(u32, u64)>) -> bool {
        let holder = self.holder(Ordering::Acquire);
        // 0: free for a moment.
        let clock = holder.checked_sub(1).map_or(0, handover::clock_of);
        let now = (holder, clock);
        let moved = last.is_none_or(|seen| seen != now);
        *last = Some(now);
        moved
    }

    /// Has the lock promised to `me` if it is held and promised to nobody
    /// yet; true if the word changed (promised, or released meanwhile).
    fn promise_to(&self, me: u32) -> bool {
        let word = self.word(Ordering::SeqCst);
        if word.promised() != 0 || word.holder() == 0 || word.holder() == me + 1 {
            return word.holder() == 0;
        }
        let promised = LockWord::new(me + 1, word.holder());
        // (A failed exchange: the holder released or changed; look again.)
        let _ = self
            .lock
            .compare_exchange(word.0, promised.0, Ordering::SeqCst, Ordering::Relaxed);
        true
    }

    /// Releases the stripe on behalf of a holder that sleeps outside the
    /// runtime (see `crate::handover`).
    fn take_over_from_sleeping_holder(&self) {
        let word = self.word(Ordering::Acquire);
        if word.holder() != 0 && handover::asleep_outside_runtime(word.holder() - 1) {
            self.hand_on(word);
        }
    }

    /// Unlocks; false if a waiter had taken the stripe over while the
    /// holder slept. (Tried again if a waiter had the lock promised to it
    /// meanwhile.)
    fn unlock(&self, me: u32) -> bool {
        loop {
            let word = self.word(Ordering::Relaxed);
            if word.holder() != me + 1 {
                return false;
            }
            if self.hand_on(word) {
                return true;
            }
        }
    }

    /// Clears the holder of `word`, handing the lock to the waiter it is
    /// promised to if any, if the lock is still `word`; wakes the parked
    /// waiters. One locked instruction when nobody sleeps: giving back a
    /// stripe is most of what a plain access off the fast path costs.
    fn hand_on(&self, word: LockWord) -> bool {
        let handed = self
            .lock
            .compare_exchange(
                word.0,
                word.handed_on().0,
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .is_ok();
        if handed && self.sleepers.load(Ordering::SeqCst) != 0 {
            self.wakeups.fetch_add(1, Ordering::SeqCst);
            // One waiter, which takes the lock if nobody running took it
            // first (each release wakes one more); every one when it goes
            // to the promised waiter, which must be among them.
            if word.promised() == 0 {
                futex_wake(&self.wakeups, 1);
            } else {
                futex_wake_all(&self.wakeups);
            }
        }
        handed
    }
}

static TABLE: [Stripe; STRIPES] = [const { Stripe::new() }; STRIPES];

/// Per region: 0 while its plain accesses take the region's stripe, 1 once
/// they take their blocks' own (see "Regions" above). Only ever goes from
/// 0 to 1, and only while the region's stripe is locked.
static REGION_SPLIT: [AtomicU32; REGIONS as usize] =
    [const { AtomicU32::new(0) }; REGIONS as usize];

/// Per region: how many times a thread found its stripe busy (held or
/// waited for by another thread) while the region was whole.
static REGION_CONTENTION: [AtomicU32; REGIONS as usize] =
    [const { AtomicU32::new(0) }; REGIONS as usize];
/// Times a region's stripe is found busy before the region is split.
/// Threads whose data merely neighbour (an FFT's slices, exchanged between
/// stages) meet a few times per region and gain from keeping it whole
/// (`fft 19 4 2` recorded in 1.2 s with 64, 1.4 s with 1); threads that
/// really share a region (bank accounts, a shared index) split it within
/// the first moments of the run either way.
const SPLIT_AFTER: u32 = 64;
/// Times a region's stripe is taken, written, after another thread held
/// it, or taken after another thread wrote it, before the region is split
/// (counted with [`SPLIT_AFTER`]'s). Two threads whose rows meet inside a
/// region (LU) write it in turn at every step: kept whole, its stripe
/// would be kept for the quantum (`StripeSet::claim`), and every access of
/// the thread keeping it would take the general path (`lu 500 4` recorded
/// in 1.14 s with only `SPLIT_AFTER`, 1.00 s with 16, as without regions).
const WRITTEN_SPLIT_AFTER: u32 = 16;

/// Region stripe `stripe`'s count in [`REGION_CONTENTION`].
fn region_contention(stripe: u32) -> &'static AtomicU32 {
    &REGION_CONTENTION[(stripe - REGION_BASE) as usize]
}

/// The stripe a plain access whose one block is data stripe `block` locks
/// now: its region's, or, once the region is split, the block's own. A
/// thread that then locks a region stripe looks again
/// ([`StripeSet::region_is_split`]): the region may have been split before
/// it got the lock.
#[inline(always)]
pub(crate) fn plain_stripe(block: u32) -> u32 {
    let region = block / REGION_BLOCKS;
    if REGION_SPLIT[region as usize].load(Ordering::Acquire) == 0 {
        REGION_BASE + region
    } else {
        block
    }
}

/// Splits the region of data stripe `block`, unless it is already: its
/// plain accesses take their blocks' stripes from now on. Locks the
/// region's stripe (waiting for its holder: the caller holds nothing a
/// holder of a region stripe could wait for, nor the stripe itself), raises
/// the block stripes' clocks to the region's, so that every access on a
/// block stripe orders after every entry logged on the region's, then
/// marks the region split. No thread used the block stripes meanwhile:
/// plain accesses took the region's, and every other event locks its
/// blocks' stripes only after splitting their regions (`StripeSet::lock`).
fn split_region(block: u32, me: u32) {
    let region = block / REGION_BLOCKS;
    let split = &REGION_SPLIT[region as usize];
    if split.load(Ordering::Acquire) != 0 {
        return;
    }
    let stripe = &TABLE[(REGION_BASE + region) as usize];
    // (A holder splitting its own region's stripe would log its access on
    // it after the split, unordered against the blocks' stripes.)
    debug_assert!(
        stripe.holder(Ordering::Acquire) != me + 1,
        "a region split by its holder"
    );
    stripe.lock(me);
    if split.load(Ordering::Acquire) == 0 {
        let clock = stripe.clock.load(Ordering::Relaxed);
        let first = region * REGION_BLOCKS;
        for block in &TABLE[first as usize..(first + REGION_BLOCKS) as usize] {
            block.clock.fetch_max(clock, Ordering::Relaxed);
        }
        split.store(1, Ordering::Release);
    }
    stripe.unlock(me);
}

/// A set of stripe indices as at most four ascending, disjoint runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StripeSet {
    runs: [(u32, u32); 4],
    /// A whole word, not a byte: the set is built and then copied at every
    /// hook, and a copy loading a word over a byte just stored stalls (the
    /// store cannot be forwarded), which was a tenth of a recording.
    len: u32,
}

fn pseudo_stripe(addr: u64) -> u32 {
    let slot = (addr - pseudo::BASE) / pseudo::STRIDE;
    DATA_STRIPES + (slot.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as u32 % PSEUDO_STRIPES
}

impl StripeSet {
    pub(crate) const EMPTY: StripeSet = StripeSet {
        runs: [(0, 0); 4],
        len: 0,
    };

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn runs(&self) -> &[(u32, u32)] {
        &self.runs[..self.len as usize]
    }

    /// The runs of consecutive stripes the set holds (at most four).
    pub(crate) fn runs_len(&self) -> usize {
        self.len as usize
    }

    /// The set of one stripe.
    pub(crate) fn of_stripe(stripe: u32) -> StripeSet {
        StripeSet::one_run((stripe, 1))
    }

    /// The stripes covering `size` bytes at `addr` (at least one byte).
    #[inline]
    pub(crate) fn for_access(addr: u64, size: u64) -> StripeSet {
        // One run (all but accesses wrapping around the table) is built
        // whole, as one value: built field by field and then copied whole,
        // the copy's wide loads could not take the narrow stores' bytes from
        // the store buffer and waited for them (a tenth of a recording's
        // profile).
        match Self::runs_of(addr, size) {
            (run, None) => StripeSet::one_run(run),
            (low, Some(high)) => {
                let mut set = StripeSet::one_run(low);
                set.add_run(high);
                set
            }
        }
    }

    #[inline(always)]
    fn one_run(run: (u32, u32)) -> StripeSet {
        StripeSet {
            runs: [run, (0, 0), (0, 0), (0, 0)],
            len: 1,
        }
    }

    /// The one data stripe of an access of `size` bytes (1 to 16) at
    /// `addr` inside one block, or `None` (what [`Self::for_access`] and
    /// [`Self::single`] give, in fewer instructions, for the fast path).
    #[inline(always)]
    pub(crate) fn single_data_stripe(addr: u64, size: u64) -> Option<u32> {
        let first = addr >> GRANULE_SHIFT;
        let last = addr.wrapping_add(size.wrapping_sub(1)) >> GRANULE_SHIFT;
        (addr < pseudo::BASE && size != 0 && first == last)
            .then_some((first % u64::from(DATA_STRIPES)) as u32)
    }

    /// Adds the stripes of another access (for memcpy: source and target).
    pub(crate) fn add_access(&mut self, addr: u64, size: u64) {
        let (run, more) = Self::runs_of(addr, size);
        self.add_run(run);
        if let Some(run) = more {
            self.add_run(run);
        }
    }

    /// The runs `(start, count)` of stripes covering `size` bytes at `addr`:
    /// one, or two (ascending) for a range that wraps around the data
    /// stripes.
    #[inline(always)]
    fn runs_of(addr: u64, size: u64) -> ((u32, u32), Option<(u32, u32)>) {
        if addr >= pseudo::BASE {
            return ((pseudo_stripe(addr), 1), None);
        }
        let first = addr >> GRANULE_SHIFT;
        let last = addr.saturating_add(size.max(1) - 1) >> GRANULE_SHIFT;
        let count = last - first + 1;
        if count >= u64::from(DATA_STRIPES) {
            return ((0, DATA_STRIPES), None);
        }
        let start = (first % u64::from(DATA_STRIPES)) as u32;
        let count = count as u32;
        if start + count <= DATA_STRIPES {
            ((start, count), None)
        } else {
            (
                (0, start + count - DATA_STRIPES),
                Some((start, DATA_STRIPES - start)),
            )
        }
    }

    /// Inserts a run, keeping runs sorted and merging overlaps.
    fn add_run(&mut self, (start, count): (u32, u32)) {
        let mut runs = [(0u32, 0u32); 5];
        let n = self.len as usize;
        runs[..n].copy_from_slice(self.runs());
        runs[n] = (start, count);
        runs[..=n].sort_unstable();
        let mut merged = StripeSet::EMPTY;
        for &(s, c) in &runs[..=n] {
            let m = merged.len as usize;
            if m > 0 && s <= merged.runs[m - 1].0 + merged.runs[m - 1].1 {
                let last = &mut merged.runs[m - 1];
                last.1 = last.1.max(s + c - last.0);
            } else {
                merged.runs[m] = (s, c);
                merged.len += 1;
            }
        }
        debug_assert!(merged.len <= 4, "at most two accesses of two runs each");
        *self = merged;
    }

    fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.runs()
            .iter()
            .flat_map(|&(s, c)| (s as usize)..(s as usize + c as usize))
    }

    pub(crate) fn contains(&self, stripe: u32) -> bool {
        self.runs()
            .iter()
            .any(|&(s, c)| stripe >= s && stripe < s + c)
    }

    /// The single stripe of a one-stripe set.
    pub(crate) fn single(&self) -> Option<u32> {
        (self.len == 1 && self.runs[0].1 == 1).then_some(self.runs[0].0)
    }

    /// Locks the one stripe of a single-stripe set if it is free now.
    pub(crate) fn try_lock_single(&self, me: u32) -> bool {
        self.single()
            .is_some_and(|i| TABLE[i as usize].try_lock(me))
    }

    /// Records thread `me`, which holds stripe `i` for an access that
    /// writes or not, as its last holder; returns whether the stripe is
    /// worth keeping for the quantum: another thread held it before, and
    /// this access or that thread wrote it (data every thread only reads
    /// orders nothing, and keeping it only makes readers wait).
    #[inline(always)]
    pub(crate) fn claim(i: u32, me: u32, writes: bool) -> bool {
        let stripe = &TABLE[i as usize];
        // Plain load and store: only the lock's holder writes the field.
        let last = stripe.last_holder.load(Ordering::Relaxed);
        let mine = (me + 1) | if writes { HOLDER_WROTE } else { 0 };
        if last != mine {
            stripe.last_holder.store(mine, Ordering::Relaxed);
        }
        let holder = last & !HOLDER_WROTE;
        holder != 0 && holder != me + 1 && (writes || last & HOLDER_WROTE != 0)
    }

    /// Whether no thread but `me` took stripe `i` before (read before
    /// [`Self::claim`] makes `me` its last holder): then it is worth
    /// holding among the thread's recent stripes (`crate::quantum::Recent`);
    /// a stripe other threads take too (a table every thread reads) would
    /// only make them wait, all the longer when its holder is preempted.
    #[inline]
    pub(crate) fn private_to(i: u32, me: u32) -> bool {
        let holder = TABLE[i as usize].last_holder.load(Ordering::Relaxed) & !HOLDER_WROTE;
        holder == 0 || holder == me + 1
    }

    /// Whether thread `me`, about to read stripe `i` it has locked, would
    /// make it read-shared at its release: the thread that held it last
    /// was another, and only read it (data several threads read in turn;
    /// read before [`Self::claim`] makes `me` its last holder).
    #[inline]
    pub(crate) fn read_in_turn(i: u32, me: u32) -> bool {
        let last = TABLE[i as usize].last_holder.load(Ordering::Relaxed);
        let holder = last & !HOLDER_WROTE;
        holder != 0 && holder != me + 1 && last & HOLDER_WROTE == 0
    }

    /// Makes stripe `i`, which the caller holds and is about to unlock,
    /// read-shared.
    pub(crate) fn share(i: u32) {
        TABLE[i as usize].shared.store(1, Ordering::Release);
    }

    /// Whether stripe `i` is read-shared now.
    #[inline(always)]
    pub(crate) fn is_shared(i: u32) -> bool {
        TABLE[i as usize].shared.load(Ordering::Acquire) != 0
    }

    /// The clock of stripe `i`: at or past every entry logged on it (each
    /// holder stores its entry's clock), for a locked stripe or a
    /// read-shared one (past its last write's). The reads of a read-shared
    /// stripe without its lock store no clock: reads order nothing among
    /// themselves, and whoever ends the sharing raises it past every read's
    /// (`Stripe::end_sharing`).
    #[inline(always)]
    pub(crate) fn stripe_clock(i: u32) -> u64 {
        TABLE[i as usize].clock.load(Ordering::Relaxed)
    }

    /// The thread holding stripe `i` (kept for the quantum) writes it (see
    /// `claim`).
    #[inline]
    pub(crate) fn note_write(i: u32) {
        let stripe = &TABLE[i as usize];
        let last = stripe.last_holder.load(Ordering::Relaxed);
        if last & HOLDER_WROTE == 0 {
            stripe
                .last_holder
                .store(last | HOLDER_WROTE, Ordering::Relaxed);
        }
    }

    /// Whether thread `me`, which held stripe `i` for its last access, may
    /// keep holding it for the next instead of unlocking and locking it
    /// again: it still holds it (see [`Self::still_held`]), promised to
    /// nobody, and no other thread waits for it (one that starts waiting
    /// now waits one more hook of `me`, as if it had come just after `me`
    /// re-took it; a thread spinning on a flag still hands its stripe to
    /// the writer at the hook after the writer waits).
    #[inline]
    pub(crate) fn reusable(i: u32, me: u32) -> bool {
        let stripe = &TABLE[i as usize];
        stripe.word(Ordering::Relaxed) == LockWord::new(0, me + 1)
            && stripe.waiting.load(Ordering::Relaxed) == 0
    }

    /// Whether thread `me` still holds stripe `i` (a waiter may have taken
    /// it over while `me` slept outside the runtime: `crate::handover`).
    pub(crate) fn still_held(i: u32, me: u32) -> bool {
        TABLE[i as usize].holder(Ordering::Acquire) == me + 1
    }

    /// Locks every stripe, in ascending order, for thread `me`; the
    /// regions of its block stripes are split first.
    pub(crate) fn lock(&self, me: u32) {
        self.split_regions(me);
        self.indices().for_each(|i| TABLE[i].lock(me));
    }

    /// Locks, in ascending order, the stripes for which `wanted` holds
    /// (regions split first, as by [`Self::lock`]).
    pub(crate) fn lock_where(&self, me: u32, wanted: impl Fn(u32) -> bool) {
        self.split_regions(me);
        self.indices()
            .filter(|&i| wanted(i as u32))
            .for_each(|i| TABLE[i].lock(me));
    }

    /// Splits the region of every block stripe in the set: what locks a
    /// block's own stripe must find no plain access on the region's.
    fn split_regions(&self, me: u32) {
        for &(start, count) in self.runs() {
            // (A run may go on past the data stripes into the pseudo ones:
            // a range ending at the last data stripe merged with the heap's
            // or a descriptor's stripe, as `free` of such a range locks.)
            let end = (start + count).min(DATA_STRIPES);
            if start < end {
                let regions = start / REGION_BLOCKS..=(end - 1) / REGION_BLOCKS;
                regions.for_each(|region| split_region(region * REGION_BLOCKS, me));
            }
        }
    }

    /// Whether `stripe` is a region's stripe that is split now (its thread
    /// took it after reading the region whole: it must take the block's
    /// own instead).
    #[inline]
    pub(crate) fn region_is_split(stripe: u32) -> bool {
        Self::is_region(stripe)
            && REGION_SPLIT[(stripe - REGION_BASE) as usize].load(Ordering::Acquire) != 0
    }

    /// The set of plain access's one `block` stripe, as it is locked now:
    /// its region's or its own ([`plain_stripe`]); other sets unchanged.
    #[inline]
    pub(crate) fn for_plain_lock(&self) -> StripeSet {
        match self.single() {
            Some(block) if block < DATA_STRIPES => StripeSet::of_stripe(plain_stripe(block)),
            _ => *self,
        }
    }

    /// Whether `stripe` is a region's.
    #[inline]
    pub(crate) fn is_region(stripe: u32) -> bool {
        stripe >= REGION_BASE
    }

    /// Whether region stripe `stripe` is to be split now: it is due
    /// ([`Self::note_written_in_turn`]), or another thread holds or waits
    /// for it, for the [`SPLIT_AFTER`]th time. The caller, which holds no
    /// stripe, then splits it ([`Self::split_region_of`]).
    pub(crate) fn region_contended(stripe: u32, me: u32) -> bool {
        let count = region_contention(stripe);
        if count.load(Ordering::Relaxed) >= SPLIT_AFTER {
            return true;
        }
        let table = &TABLE[stripe as usize];
        let word = table.word(Ordering::Relaxed);
        let busy = word.holder() != me + 1
            && (word.holder() != 0 || table.waiting.load(Ordering::Relaxed) != 0);
        busy && count.fetch_add(1, Ordering::Relaxed) >= SPLIT_AFTER - 1
    }

    /// Region stripe `stripe`, which the caller holds, was written by
    /// another thread before or is written now after another held it
    /// ([`Self::claim`]): counted towards its split, [`WRITTEN_SPLIT_AFTER`]
    /// such takes making it due. Returns whether it is due: then it is not
    /// worth keeping for the quantum, and the next thread to take it on
    /// the general path splits it. Not its holder now: an access logged on
    /// the region's stripe after the split would not be ordered against
    /// one on its block's stripe.
    pub(crate) fn note_written_in_turn(stripe: u32) -> bool {
        if !Self::is_region(stripe) {
            return false;
        }
        let count = region_contention(stripe);
        count.fetch_add(SPLIT_AFTER / WRITTEN_SPLIT_AFTER, Ordering::Relaxed)
            >= SPLIT_AFTER - SPLIT_AFTER / WRITTEN_SPLIT_AFTER
    }

    /// Splits the region of region stripe `stripe` ([`split_region`]). The
    /// caller holds no other stripe.
    pub(crate) fn split_region_of(stripe: u32, me: u32) {
        split_region((stripe - REGION_BASE) * REGION_BLOCKS, me);
    }

    /// Unlocks what [`Self::lock_where`] locked with the same `wanted`.
    pub(crate) fn unlock_where(&self, me: u32, wanted: impl Fn(u32) -> bool) {
        self.indices().filter(|&i| wanted(i as u32)).for_each(|i| {
            TABLE[i].unlock(me);
        });
    }

    /// Unlocks the stripes thread `me` still holds; false if any was taken
    /// over while it slept (see `crate::handover`).
    pub(crate) fn unlock(&self, me: u32) -> bool {
        // Every stripe must be unlocked: count the failures, no short cut.
        self.indices().filter(|&i| !TABLE[i].unlock(me)).count() == 0
    }

    /// Before unlocking: the stripes' clocks rise to the holder's clock, so
    /// whoever takes them next comes after every event the holder logged
    /// while holding them (events nested in an output, say, whose FILE lock
    /// orders them before the next writer's output).
    pub(crate) fn raise_clock(&self, clock: u64) {
        // `fetch_max`: a stripe taken over while its holder slept may be
        // raised by the late holder while the new one advances it. Only when
        // it would raise: usually the holder's last entry was on the stripe,
        // whose clock is the holder's already, and the atomic read-modify-
        // write was a tenth of a recording's profile.
        for i in self.indices() {
            let stripe_clock = &TABLE[i].clock;
            if stripe_clock.load(Ordering::Relaxed) < clock {
                stripe_clock.fetch_max(clock, Ordering::Relaxed);
            }
        }
    }

    /// The newest clock of these (locked) stripes.
    pub(crate) fn clock(&self) -> u64 {
        self.indices()
            .map(|i| TABLE[i].clock.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    /// [`Self::advance_clock`] for the set of one (locked) `stripe`, by
    /// `step` (`PRIVATE_CLOCK_STEP` on the fast path, whose stripe's clock
    /// is the thread's own from its last access to it).
    #[inline(always)]
    pub(crate) fn advance_stripe_clock(stripe: u32, thread_clock: u64, step: u64) -> u64 {
        let stripe_clock = &TABLE[stripe as usize].clock;
        let clock = thread_clock.max(stripe_clock.load(Ordering::Relaxed)) + step;
        // A plain store: see `advance_clock`.
        stripe_clock.store(clock, Ordering::Relaxed);
        clock
    }

    /// Stores `clock`, the clock of an entry just taken on locked `stripe`
    /// (above the stripe's: a plain store, see [`Self::advance_clock`]).
    #[inline(always)]
    pub(crate) fn store_stripe_clock(stripe: u32, clock: u64) {
        TABLE[stripe as usize].clock.store(clock, Ordering::Relaxed);
    }

    /// Takes the next Lamport clock for an entry on these (locked) stripes.
    pub(crate) fn advance_clock(&self, thread_clock: u64) -> u64 {
        if let Some(stripe) = self.single() {
            // (Most entries off the plain accesses' path: an atomic, a
            // lock. The walk over the runs was 60 instructions.)
            return Self::advance_stripe_clock(stripe, thread_clock, SYNCED_CLOCK_STEP);
        }
        let newest = self
            .indices()
            .map(|i| TABLE[i].clock.load(Ordering::Relaxed))
            .fold(thread_clock, u64::max);
        let clock = newest + SYNCED_CLOCK_STEP;
        // A plain store, not `fetch_max` (a locked instruction on every
        // access): only the holder advances a stripe's clock, and `clock`
        // is above the stripe's. The one other writer is a late holder
        // whose stripe was taken over while it slept (`raise_clock` at its
        // release): a raise this store undoes ordered nothing on this
        // stripe (that holder logged nothing on it since), so the entries
        // on the stripe still get growing clocks.
        self.indices().for_each(|i| {
            TABLE[i].clock.store(clock, Ordering::Relaxed);
        });
        clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: u64 = 1 << GRANULE_SHIFT;

    #[test]
    fn one_block_is_one_stripe() {
        let s = StripeSet::for_access(0x1000, 8);
        assert_eq!(
            s.single(),
            Some((0x1000 >> GRANULE_SHIFT) as u32 % DATA_STRIPES)
        );
        let inside = StripeSet::for_access(0x1000 + BLOCK - 8, 8);
        assert_eq!(inside, s);
        let spanning = StripeSet::for_access(0x1000 + BLOCK - 4, 8);
        assert_eq!(spanning.indices().count(), 2);
    }

    #[test]
    fn the_fast_single_stripe_agrees_with_the_general_set() {
        let end = u64::from(DATA_STRIPES) * BLOCK;
        for base in [0x1000, end - BLOCK, pseudo::BASE - BLOCK, pseudo::fd(3)] {
            for offset in 0..2 * BLOCK {
                for size in [1, 2, 4, 8, 16, 48, 64] {
                    let addr = base + offset;
                    assert_eq!(
                        StripeSet::single_data_stripe(addr, size),
                        StripeSet::for_access(addr, size)
                            .single()
                            .filter(|&s| s < DATA_STRIPES),
                        "{addr:#x} + {size}"
                    );
                }
            }
        }
    }

    /// The block stripe of `addr` (a plain access of 8 bytes).
    fn block_of(addr: u64) -> u32 {
        StripeSet::single_data_stripe(addr, 8).unwrap()
    }

    #[test]
    fn a_region_is_one_stripe_until_a_lock_of_its_blocks_splits_it() {
        let addr = 0x5555_0000;
        let (first, last) = (block_of(addr), block_of(addr + (1 << REGION_SHIFT) - 8));
        let region = plain_stripe(first);
        assert!(StripeSet::is_region(region));
        assert_eq!(plain_stripe(last), region, "one region covers 1 KiB");
        assert_ne!(plain_stripe(block_of(addr + (1 << REGION_SHIFT))), region);
        // Entries logged on the region's stripe.
        let whole = StripeSet::of_stripe(region);
        whole.lock(0);
        let logged = whole.advance_clock(100);
        whole.unlock(0);
        // An interposed call's event locks the block's own stripe: the
        // region is split first, and every block stripe's clock is past
        // what was logged on the region's.
        let call = StripeSet::for_access(addr + 64, 8);
        call.lock(0);
        call.unlock(0);
        assert!(StripeSet::region_is_split(region));
        assert_eq!(plain_stripe(first), first);
        assert_eq!(plain_stripe(last), last);
        for block in first..=last {
            assert!(TABLE[block as usize].clock.load(Ordering::Relaxed) >= logged);
        }
    }

    #[test]
    fn a_region_splits_when_found_busy_often_enough() {
        let addr = 0x6666_0000;
        let region = plain_stripe(block_of(addr));
        let whole = StripeSet::of_stripe(region);
        assert!(!StripeSet::region_contended(region, 0), "free");
        whole.lock(1);
        assert!(!StripeSet::region_contended(region, 1), "its own holder");
        for _ in 1..SPLIT_AFTER {
            assert!(!StripeSet::region_contended(region, 0));
        }
        assert!(StripeSet::region_contended(region, 0));
        // Thread 0 splits it once thread 1 gives it back.
        whole.unlock(1);
        StripeSet::split_region_of(region, 0);
        assert!(StripeSet::region_is_split(region));
        assert_eq!(plain_stripe(block_of(addr)), block_of(addr));
    }

    #[test]
    fn a_region_written_in_turn_is_due_for_the_next_taker_to_split() {
        let addr = 0x7777_4000;
        let region = plain_stripe(block_of(addr));
        let whole = StripeSet::of_stripe(region);
        whole.lock(2);
        for _ in 1..WRITTEN_SPLIT_AFTER {
            assert!(!StripeSet::note_written_in_turn(region));
        }
        assert!(StripeSet::note_written_in_turn(region));
        assert!(!StripeSet::region_is_split(region), "not by its holder");
        whole.unlock(2);
        // Due: the next thread taking it splits it, busy or not.
        assert!(StripeSet::region_contended(region, 0));
        StripeSet::split_region_of(region, 0);
        assert!(StripeSet::region_is_split(region));
        assert!(!StripeSet::note_written_in_turn(block_of(addr)));
    }

    /// Threads updating the granules of one region, as plain accesses do
    /// under the quantum (the region's stripe while it is whole, looked at
    /// again once locked), while the region is split under them: no update
    /// is lost, and each granule's accesses get growing clocks across the
    /// split (the order the log needs).
    #[test]
    fn a_region_split_under_its_users_keeps_them_exclusive_and_ordered() {
        const THREADS: u32 = 4;
        const UPDATES: u64 = 20_000;
        const GRANULES: usize = 1 << (REGION_SHIFT - 3);
        let base = 0x4444_0000u64;
        let counts: Vec<AtomicU64> = (0..GRANULES).map(|_| AtomicU64::new(0)).collect();
        let clocks: Vec<AtomicU64> = (0..GRANULES).map(|_| AtomicU64::new(0)).collect();
        std::thread::scope(|scope| {
            for me in 0..THREADS {
                let (counts, clocks) = (&counts, &clocks);
                scope.spawn(move || {
                    let mut thread_clock = 0;
                    for i in 0..UPDATES {
                        let granule = ((i * 7 + u64::from(me) * 13) as usize) % GRANULES;
                        let block = block_of(base + 8 * granule as u64);
                        let mut stripe = plain_stripe(block);
                        if me == 1 && i == UPDATES / 4 {
                            StripeSet::split_region_of(stripe, me);
                        }
                        let mut set = StripeSet::of_stripe(stripe);
                        set.lock(me);
                        if StripeSet::region_is_split(stripe) {
                            set.raise_clock(thread_clock);
                            set.unlock(me);
                            stripe = block;
                            set = StripeSet::of_stripe(stripe);
                            set.lock(me);
                        }
                        thread_clock = StripeSet::advance_stripe_clock(
                            stripe,
                            thread_clock,
                            SYNCED_CLOCK_STEP,
                        );
                        let last = clocks[granule].swap(thread_clock, Ordering::Relaxed);
                        assert!(
                            thread_clock > last,
                            "granule {granule}: {last} then {thread_clock}"
                        );
                        // A plain read-modify-write: lost if two threads overlap.
                        let n = counts[granule].load(Ordering::Relaxed);
                        counts[granule].store(n + 1, Ordering::Relaxed);
                        set.raise_clock(thread_clock);
                        set.unlock(me);
                    }
                });
            }
        });
        let total: u64 = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, u64::from(THREADS) * UPDATES);
        assert_eq!(plain_stripe(block_of(base)), block_of(base), "split");
    }

    #[test]
    fn wrapping_range_becomes_two_ascending_runs() {
        let end = u64::from(DATA_STRIPES) * BLOCK;
        let s = StripeSet::for_access(end - 2 * BLOCK, 4 * BLOCK);
        assert_eq!(s.runs(), &[(0, 2), (DATA_STRIPES - 2, 2)]);
    }

    #[test]
    fn overlapping_accesses_merge() {
        let mut s = StripeSet::for_access(0x1000, 8 * BLOCK);
        s.add_access(0x1000 + 4 * BLOCK, 8 * BLOCK);
        assert_eq!(s.runs().len(), 1);
        assert_eq!(s.indices().count(), 12);
        let huge = StripeSet::for_access(0, 1 << 30);
        assert_eq!(huge.indices().count(), DATA_STRIPES as usize);
    }

    #[test]
    fn a_range_at_the_end_of_the_data_stripes_with_a_pseudo_stripe_locks() {
        // The last data stripe and the first pseudo one are neighbours: the
        // set merges them into one run, which splitting the regions must
        // not read past the data stripes (DataRaceBench's miniAMR freed
        // such a range and the runtime panicked on the region table).
        let end = u64::from(DATA_STRIPES) << GRANULE_SHIFT;
        let first_pseudo = (0..)
            .map(|slot| pseudo::BASE + slot * pseudo::STRIDE)
            .find(|&addr| pseudo_stripe(addr) == DATA_STRIPES)
            .expect("some pseudo-address maps to the first pseudo stripe");
        let mut set = StripeSet::for_access(end - 128, 128);
        set.add_access(first_pseudo, 0);
        assert_eq!(set.runs(), &[(DATA_STRIPES - 2, 3)]);
        set.lock(7);
        assert!(set.unlock(7));
    }

    #[test]
    fn pseudo_addresses_use_their_own_stripes() {
        let s = StripeSet::for_access(pseudo::fd(1), 0);
        assert!(s.single().unwrap() >= DATA_STRIPES);
    }

    #[test]
    fn clocks_grow_per_stripe_and_lock_is_exclusive() {
        let s = StripeSet::for_access(0x7777_0000, 4);
        s.lock(0);
        let a = s.advance_clock(0);
        s.unlock(0);
        s.lock(0);
        let b = s.advance_clock(0);
        s.unlock(0);
        assert!(b > a);
        let counter = std::sync::Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|me| {
                let counter = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        s.lock(me);
                        let v = counter.load(Ordering::Relaxed);
                        counter.store(v + 1, Ordering::Relaxed);
                        assert!(s.unlock(me), "held by another");
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(counter.load(Ordering::Relaxed), 8000);
    }

    #[test]
    fn a_hold_is_released_once_by_its_holder_or_by_a_waiter_not_both() {
        let stripe = Stripe::new();
        stripe.lock(3);
        let held = stripe.word(Ordering::Relaxed);
        assert_eq!(held, LockWord::new(0, 4));
        // A waiter takes it over (the holder slept outside the runtime)...
        assert!(stripe.hand_on(held));
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::FREE);
        // ...so the holder's own release, later, finds it gone and releases
        // nothing; nor does a second take-over of the same hold.
        assert!(!stripe.unlock(3));
        assert!(!stripe.hand_on(held));
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::FREE);
        // The next taker holds it and releases it as usual.
        assert!(stripe.try_lock(5));
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::new(0, 6));
        assert!(!stripe.unlock(3), "released by a thread not holding it");
        assert!(stripe.unlock(5));
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::FREE);
    }

    #[test]
    fn a_promised_lock_goes_to_its_waiter_and_to_nobody_else() {
        let stripe = Stripe::new();
        stripe.lock(1);
        assert!(stripe.promise_to(2));
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::new(3, 2));
        // Promised once: a second waiter is not.
        stripe.promise_to(4);
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::new(3, 2));
        assert!(!stripe.try_lock(4), "taken while held");
        // The holder's release hands it on: it is never free in between.
        assert!(stripe.unlock(1));
        assert_eq!(stripe.word(Ordering::Relaxed), LockWord::new(0, 3));
        assert!(!stripe.try_lock(4), "taken from the promised waiter");
        // The promised waiter finds it held for it.
        stripe.wait_for(2);
        assert!(stripe.unlock(2));
        assert!(stripe.try_lock(4));
    }

    #[test]
    fn a_parked_waiter_is_promised_the_lock_and_gets_it() {
        // Holder 0 takes the lock back at once after each release, as a
        // running thread would before a parked waiter wakes; the waiter
        // still gets it, by the promise.
        static STRIPE: Stripe = Stripe::new();
        static DONE: AtomicU32 = AtomicU32::new(0);
        STRIPE.lock(0);
        let waiter = std::thread::spawn(|| {
            STRIPE.lock(1);
            DONE.store(1, Ordering::SeqCst);
            assert!(STRIPE.unlock(1));
        });
        while DONE.load(Ordering::SeqCst) == 0 {
            assert!(STRIPE.unlock(0));
            STRIPE.lock(0);
        }
        assert!(STRIPE.unlock(0));
        waiter.join().unwrap();
    }
}
