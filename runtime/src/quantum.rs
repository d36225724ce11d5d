//! The recording quantum: a thread keeps the stripes of its plain accesses
//! for up to `QUANTUM` of its hooks instead of giving each back at its next
//! hook.
//!
//! Why: with every stripe handed back at the next hook, threads that share
//! a granule take turns on it every few accesses while recording, and the
//! replay must reproduce every one of those turns as a wait. A thread that
//! keeps a stripe for a quantum records a legal global order (it holds the
//! stripe for every access it logs on it, so the ordering rule of
//! `crate::record` is unchanged) with one turn per quantum instead.
//!
//! Which stripes are kept: only one another thread held last (a private
//! stripe goes back at the next hook, as without a quantum), only if
//! keeping it paid the last time (used again at least once per
//! `HOOKS_PER_HIT` hooks kept: a verdict each stripe carries, `Kept::judge`),
//! or, for a stripe never judged, while the thread's kept stripes get used
//! again that often (`Kept::worth_keeping`), and each for a
//! random 1 to `QUANTUM` hooks (`Kept::jittered_start`), so that turns fall
//! anywhere in a thread's code as native preemption's do, and races such as
//! lost updates keep showing.
//!
//! Rules that keep this safe:
//! - only operations on one stripe that the runtime performs while it
//!   holds it keep stripes: the compiler's hooks (plain accesses, atomic
//!   operations) and the lock calls that act as atomics do (an exclusive
//!   lock taken by its trylock without blocking, a mutex's or spin lock's unlock:
//!   `events::attempt_keeping_stripe`, `events::log_keeping_stripe`);
//!   every other interposed call, a blocking call, thread end and a
//!   chaos-scheduled recording give back everything first, as before;
//! - a thread that keeps stripes never waits for another: it takes a new
//!   stripe only if it is free now (`try_lock`), else gives back all it
//!   keeps and then waits, so two threads never wait for each other's kept
//!   stripes;
//! - a kept stripe goes back after `QUANTUM` hooks of its holder, when
//!   more than [`MAX_KEPT`] are kept (oldest first), or once its holder
//!   has left it unused for [`IDLE_HOOKS`] while another thread waits for
//!   it, so a waiter waits for at most a quantum of the holder's hooks, and
//!   only while the holder keeps using the stripe; a holder that spins
//!   (reads one kept stripe again and again: a flag, a ring buffer's
//!   index) gives back at once those another thread waits for
//!   (`RecordThread::spins_on_kept`), since that thread is likely the one
//!   it waits for;
//! - before logging on a kept stripe the thread checks it still holds it
//!   (a waiter takes over the stripes of a holder asleep outside the
//!   runtime: `crate::handover`).
//!
//! Invariants (debug-asserted): at most [`MAX_KEPT`] stripes kept, none
//! twice; nothing kept inside a call that keeps its own stripes.

use core::cell::Cell;
use core::sync::atomic::{AtomicU8, AtomicU32, Ordering};

/// The environment variable the recorder sets: hooks per quantum, 0 for
/// none (every stripe back at the next hook).
pub(crate) const QUANTUM_ENV: &core::ffi::CStr = c"RR_LITE_QUANTUM";

/// Most stripes a thread keeps besides those of its last access.
pub(crate) const MAX_KEPT: usize = 8;

static QUANTUM: AtomicU32 = AtomicU32::new(0);

/// Hooks per quantum (0: off).
#[inline]
pub(crate) fn get() -> u32 {
    QUANTUM.load(Ordering::Relaxed)
}

/// Reads `RR_LITE_QUANTUM` (record mode, at start-up). Chaos keeps the
/// quantum (without it every access takes a lock: `lu 500 1` recorded in
/// 4.0 s instead of 1.7): PCT and random make every access a schedule
/// point instead (`RecordThread::chaos_point`), the serial schedule wants
/// coarse turns.
pub(crate) fn configure(value: Option<&[u8]>) {
    let parsed = value.filter(|v| !v.is_empty()).map(|v| {
        v.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit()
                .then_some(())
                .and(n.checked_mul(10)?.checked_add(u32::from(d - b'0')))
        })
    });
    match parsed {
        None => {}
        Some(Some(n)) => QUANTUM.store(n, Ordering::Relaxed),
        Some(None) => crate::sys::warn(&[
            b"RR_LITE_QUANTUM must be a number of hooks: recording without a quantum",
        ]),
    }
}

/// Stripe numbers [`keeping_paid`] covers: every stripe (`crate::stripes`
/// asserts its count fits).
pub(crate) const JUDGED_STRIPES: usize = 1 << 16;

/// Whether keeping each stripe for the quantum paid the last time a thread
/// kept it (`KEEPING_*`, by stripe number): the next thread to claim it
/// decides by it ([`Kept::worth_keeping`]). Written by the holder as it
/// gives the stripe back; a hint only, so relaxed.
static KEEPING: [AtomicU8; JUDGED_STRIPES] =
    [const { AtomicU8::new(KEEPING_UNJUDGED) }; JUDGED_STRIPES];
/// [`KEEPING`]: never judged, paid, did not pay.
const KEEPING_UNJUDGED: u8 = 0;
const KEEPING_PAID: u8 = 1;
const KEEPING_UNPAID: u8 = 2;

/// Whether keeping `stripe` paid the last time it was kept (`None`: never
/// judged).
#[inline]
pub(crate) fn keeping_paid(stripe: u32) -> Option<bool> {
    match KEEPING.get(stripe as usize)?.load(Ordering::Relaxed) {
        KEEPING_PAID => Some(true),
        KEEPING_UNPAID => Some(false),
        _ => None,
    }
}

/// Notes whether keeping `stripe` `paid`.
fn judge_keeping(stripe: u32, paid: bool) {
    if let Some(verdict) = KEEPING.get(stripe as usize) {
        let paid = if paid { KEEPING_PAID } else { KEEPING_UNPAID };
        verdict.store(paid, Ordering::Relaxed);
    }
}

/// A free slot of [`Kept`].
const NO_STRIPE: u32 = u32::MAX;

/// Stripes held in fixed slots, each with the hook count it is held
/// since: what [`Kept`] and [`Recent`] share. No operation moves the others
/// (the runtime's own `copy_within` would call the interposed `memmove` on
/// every hook). Only the owning thread touches it.
#[derive(Debug)]
struct Slots<const N: usize> {
    stripes: [Cell<u32>; N],
    since: [Cell<u32>; N],
    len: Cell<usize>,
}

impl<const N: usize> Slots<N> {
    const fn new() -> Self {
        Slots {
            stripes: [const { Cell::new(NO_STRIPE) }; N],
            since: [const { Cell::new(0) }; N],
            len: Cell::new(0),
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// The slot holding `stripe` (a free slot for [`NO_STRIPE`]).
    #[inline]
    fn slot_of(&self, stripe: u32) -> Option<usize> {
        self.stripes.iter().position(|s| s.get() == stripe)
    }

    /// Empties slot `at` (held); returns its stripe.
    fn free(&self, at: usize) -> u32 {
        self.len.set(self.len.get() - 1);
        self.stripes[at].replace(NO_STRIPE)
    }

    /// Puts `stripe`, held since hook `since`, in slot `at`; returns the
    /// stripe it held before, if any.
    fn put(&self, at: usize, stripe: u32, since: u32) -> Option<u32> {
        debug_assert!(
            stripe != NO_STRIPE && self.slot_of(stripe).is_none(),
            "a stripe held twice"
        );
        self.since[at].set(since);
        let before = self.stripes[at].replace(stripe);
        if before == NO_STRIPE {
            self.len.set(self.len.get() + 1);
            debug_assert!(self.len.get() <= N);
            None
        } else {
            Some(before)
        }
    }

    /// Removes and returns a stripe held for `limit` hooks or more at hook
    /// `now`.
    fn pop_expired(&self, now: u32, limit: u32) -> Option<u32> {
        Some(self.free(self.expired(now, limit)?))
    }

    /// The slot of a stripe held for `limit` hooks or more at hook `now`.
    fn expired(&self, now: u32, limit: u32) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        (0..N).find(|&i| {
            self.stripes[i].get() != NO_STRIPE && now.wrapping_sub(self.since[i].get()) >= limit
        })
    }

    /// Removes and returns any stripe held here.
    fn pop(&self) -> Option<u32> {
        Some(self.free(self.occupied()?))
    }

    /// The slot of any stripe held here.
    fn occupied(&self) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        (0..N).find(|&i| self.stripes[i].get() != NO_STRIPE)
    }
}

/// The stripes a thread keeps for the quantum, each with the hook count at
/// which it took it.
#[derive(Debug)]
pub(crate) struct Kept {
    slots: Slots<MAX_KEPT>,
    /// The hook at which each slot's stripe was last used (put back).
    used: [Cell<u32>; MAX_KEPT],
    /// The hook at which each slot's stripe began to be kept, and its uses
    /// since: whether keeping it paid, judged when it goes back
    /// ([`Kept::judge`]).
    first: [Cell<u32>; MAX_KEPT],
    uses: [Cell<u32>; MAX_KEPT],
    /// The same for the stripe last taken out of its slot for an access
    /// ([`Kept::take`]), which the next hook puts back ([`Kept::insert`]).
    taken: Cell<Taken>,
    /// The thread's hooks so far (wrapping).
    hooks: Cell<u32>,
    /// Generator state for [`Kept::jittered_start`] (`crate::chaos::mix`;
    /// 0: not seeded yet).
    rng: Cell<u64>,
    /// Kept stripes used again while kept, and kept stripes given back
    /// (expired or pushed out), decayed: whether keeping pays here.
    hits: Cell<u32>,
    given_back: Cell<u32>,
    /// Shared stripes taken while keeping did not pay (one in
    /// [`SAMPLE_EVERY`] is kept anyway, so the counts follow the program).
    skipped: Cell<u32>,
}

/// Keeping pays when a kept stripe is used again at least once per this
/// many hooks it is kept, on average (a stripe is kept for half a quantum
/// on average, so with a quantum `q` that is `q / (2 * HOOKS_PER_HIT)`
/// uses per stripe given back, and at least 2): a thread bumping one shared
/// index reuses it every few hooks; threads updating random slots of a
/// shared array rarely reuse the slot they keep, and keeping it only makes
/// the others wait, the longer the quantum the longer (a rule of hits per
/// stripe given back alone let a long quantum keep them: kept for hundreds
/// of hooks, even a random slot is used again a few times).
const HOOKS_PER_HIT: u32 = 16;
/// Uses per stripe given back below which keeping does not pay, however
/// short the quantum.
const MIN_HITS_PER_GIVEN_BACK: u32 = 2;
/// While keeping does not pay, one shared stripe in this many is kept.
const SAMPLE_EVERY: u32 = 32;
/// The counts halve when their sum passes this (recent behaviour counts).
const DECAY_AT: u32 = 512;
/// A kept stripe another thread waits for goes back once its holder has
/// not used it for this many hooks, before its quantum is over: a loop
/// that bumps a shared index every few hooks keeps it for the quantum,
/// while a stripe touched once and left (a random slot of a shared array)
/// goes to its waiter within a few hooks, however long the quantum.
pub(crate) const IDLE_HOOKS: u32 = 16;
/// A stripe kept for fewer hooks than this tells nothing about whether
/// keeping it pays (its random quantum may have been a few hooks).
const JUDGED_AFTER: u32 = 2 * HOOKS_PER_HIT;

/// A kept stripe out of its slot for an access: which, when its keeping
/// began and its uses since (this one counted).
#[derive(Debug, Clone, Copy)]
struct Taken {
    stripe: u32,
    first: u32,
    uses: u32,
}

impl Taken {
    const NONE: Taken = Taken {
        stripe: NO_STRIPE,
        first: 0,
        uses: 0,
    };
}

impl Kept {
    pub(crate) const fn new() -> Kept {
        Kept {
            slots: Slots::new(),
            used: [const { Cell::new(0) }; MAX_KEPT],
            first: [const { Cell::new(0) }; MAX_KEPT],
            uses: [const { Cell::new(0) }; MAX_KEPT],
            taken: Cell::new(Taken::NONE),
            hooks: Cell::new(0),
            rng: Cell::new(0),
            hits: Cell::new(0),
            given_back: Cell::new(0),
            skipped: Cell::new(0),
        }
    }

    /// Whether to keep a shared stripe just taken, under a `quantum`, whose
    /// last keeping `paid` (its verdict, [`keeping_paid`]; `None`:
    /// never judged): a stripe that paid is kept, one that did not only in
    /// [`SAMPLE_EVERY`] (judged again then); one never judged while the
    /// thread's kept stripes are used again often enough (see
    /// [`HOOKS_PER_HIT`]), and in [`SAMPLE_EVERY`] otherwise. The thread's
    /// counts alone mix every stripe it keeps: a thread bumping a shared
    /// index between writes to the buffer it appends to kept neither, since
    /// the buffer's blocks, used a few times each and left, outnumber the
    /// index (`shared_index 3000000 4`: a turn every ~100 appends whatever
    /// the quantum).
    #[inline]
    pub(crate) fn worth_keeping(&self, quantum: u32, paid: Option<bool>) -> bool {
        if paid == Some(true) {
            return true;
        }
        if paid == Some(false) {
            return self.sampled();
        }
        let per_given_back = (quantum / (2 * HOOKS_PER_HIT)).max(MIN_HITS_PER_GIVEN_BACK);
        if u64::from(self.hits.get())
            >= u64::from(per_given_back) * u64::from(self.given_back.get())
        {
            return true;
        }
        self.sampled()
    }

    /// True once in [`SAMPLE_EVERY`] calls.
    fn sampled(&self) -> bool {
        let skipped = self.skipped.get().wrapping_add(1);
        self.skipped.set(skipped);
        skipped.is_multiple_of(SAMPLE_EVERY)
    }

    fn count(&self, counter: &Cell<u32>) {
        counter.set(counter.get() + 1);
        if self.hits.get() + self.given_back.get() > DECAY_AT {
            self.hits.set(self.hits.get() / 2);
            self.given_back.set(self.given_back.get() / 2);
        }
    }

    /// The hook count to record as the start of a stripe taken at hook
    /// `now`: up to `quantum - 1` hooks earlier, drawn at random, so the
    /// stripe goes back after 1 to `quantum` hooks. Why: with a fixed
    /// quantum the turns fall at the same point of a loop's body every
    /// time (in `counter++` always before the read, never between the read
    /// and the write), which hides every lost update; native threads
    /// interleave at any instruction, and so do the turns now.
    #[inline]
    pub(crate) fn jittered_start(&self, now: u32, quantum: u32, thread: u32) -> u32 {
        let mut state = self.rng.get();
        if state == 0 {
            // Distinct per thread and per run: the turns are a recording's
            // own, replay never draws.
            state = (u64::from(thread) << 32) ^ crate::sys::monotonic_ns();
        }
        let x = crate::chaos::mix(state);
        self.rng.set(x);
        now.wrapping_sub((x % u64::from(quantum.max(1))) as u32)
    }

    /// The thread's hooks so far.
    #[inline]
    pub(crate) fn hooks(&self) -> u32 {
        self.hooks.get()
    }

    /// Sets the hook count to `now` (a hook counted by the fast path,
    /// which decides before it counts).
    #[inline]
    pub(crate) fn set_hooks(&self, now: u32) {
        self.hooks.set(now);
    }

    /// Counts a hook; returns the new count.
    #[inline]
    pub(crate) fn tick(&self) -> u32 {
        let now = self.hooks.get().wrapping_add(1);
        self.hooks.set(now);
        now
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Removes `stripe` if kept; returns when it was taken.
    #[inline]
    pub(crate) fn take(&self, stripe: u32) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let at = self.slots.slot_of(stripe)?;
        self.note_taken(at);
        self.slots.free(at);
        Some(self.slots.since[at].get())
    }

    /// Notes the stripe in slot `at` taken out for an access, with its
    /// start and its uses (this one counted).
    #[inline]
    fn note_taken(&self, at: usize) {
        self.taken.set(Taken {
            stripe: self.slots.stripes[at].get(),
            first: self.first[at].get(),
            uses: self.uses[at].get() + 1,
        });
        self.count(&self.hits);
    }

    /// Puts `stripe`, used at hook `now`, in slot `at` with its start and
    /// uses: those of `taken` (what [`Self::note_taken`] noted last), if
    /// it names `stripe`; else it starts being kept now.
    #[inline]
    fn note_put(&self, at: usize, stripe: u32, now: u32, taken: Taken) {
        let (first, uses) = if taken.stripe == stripe {
            (taken.first, taken.uses)
        } else {
            (now, 0)
        };
        self.used[at].set(now);
        self.first[at].set(first);
        self.uses[at].set(uses);
    }

    /// The slot of kept `stripe`, if it is kept.
    #[inline]
    pub(crate) fn slot_of(&self, stripe: u32) -> Option<usize> {
        self.slots.slot_of(stripe)
    }

    /// [`Self::take`] of the stripe in slot `at` and [`Self::insert`] of
    /// `held`, the last access's stripe (taken at hook `since`, used at hook
    /// `now`), in one: `held` takes the slot. Returns the hook the stripe
    /// taken out was taken at. (The fast path for threads that go back and
    /// forth between kept stripes: `RecordThread::hold_kept_fast`.)
    #[inline]
    pub(crate) fn trade(&self, at: usize, held: u32, since: u32, now: u32) -> u32 {
        debug_assert!(self.slots.slot_of(held).is_none(), "a stripe kept twice");
        // `held`'s record first: noting the stripe taken out replaces it.
        let held_record = self.taken.get();
        self.note_taken(at);
        self.note_put(at, held, now, held_record);
        self.slots.stripes[at].set(held);
        self.slots.since[at].replace(since)
    }

    /// The last access's kept `stripe` used again by this access: what
    /// [`Self::insert`] then [`Self::take`] of it would count, without
    /// either.
    #[inline]
    pub(crate) fn use_taken_again(&self, stripe: u32) {
        let taken = self.taken.get();
        if taken.stripe == stripe {
            self.taken.set(Taken {
                uses: taken.uses + 1,
                ..taken
            });
        }
        self.count(&self.hits);
    }

    /// Keeps `stripe`, taken at hook `since` and used at hook `now`;
    /// returns the stripe it pushed out when full: the one used least
    /// recently (not the one taken first: that was a shared index used
    /// every few hooks as often as a block of the buffer left behind).
    pub(crate) fn insert(&self, stripe: u32, since: u32, now: u32) -> Option<u32> {
        let at = self.slots.slot_of(NO_STRIPE).unwrap_or_else(|| {
            self.count(&self.given_back);
            let lru = (0..MAX_KEPT)
                .max_by_key(|&i| now.wrapping_sub(self.used[i].get()))
                .unwrap_or(0);
            self.judge(lru, now);
            lru
        });
        self.note_put(at, stripe, now, self.taken.replace(Taken::NONE));
        self.slots.put(at, stripe, since)
    }

    /// Notes for slot `at`'s stripe, going back at hook `now`, whether
    /// keeping it paid: used again at least once per [`HOOKS_PER_HIT`]
    /// hooks kept ([`keeping_paid`]: what the next thread to claim it
    /// decides by, [`Self::worth_keeping`]). A stripe kept too briefly to
    /// tell keeps its verdict.
    fn judge(&self, at: usize, now: u32) {
        let kept_for = now.wrapping_sub(self.first[at].get());
        if kept_for >= JUDGED_AFTER {
            let paid = self.uses[at].get().saturating_mul(HOOKS_PER_HIT) >= kept_for;
            judge_keeping(self.slots.stripes[at].get(), paid);
        }
    }

    /// Removes and returns a kept stripe not used for [`IDLE_HOOKS`] or
    /// more at hook `now` that another thread wants (`wanted`): keeping it
    /// longer would only make that thread wait, its holder having moved on.
    #[inline]
    pub(crate) fn pop_idle_wanted(&self, now: u32, wanted: impl Fn(u32) -> bool) -> Option<u32> {
        self.pop_wanted_idle_for(now, IDLE_HOOKS, wanted)
    }

    /// Removes and returns any kept stripe another thread wants (`wanted`),
    /// however recently used: its holder spins, waiting for another thread
    /// (`RecordThread::spins_on_kept`).
    pub(crate) fn pop_wanted(&self, wanted: impl Fn(u32) -> bool) -> Option<u32> {
        self.pop_wanted_idle_for(0, 0, wanted)
    }

    /// A kept stripe `wanted` by another thread, not used for `idle` hooks
    /// or more at hook `now`, removed.
    fn pop_wanted_idle_for(
        &self,
        now: u32,
        idle: u32,
        wanted: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let at = (0..MAX_KEPT).find(|&i| {
            let stripe = self.slots.stripes[i].get();
            stripe != NO_STRIPE && now.wrapping_sub(self.used[i].get()) >= idle && wanted(stripe)
        })?;
        self.count(&self.given_back);
        // (`now` is 0 for `pop_wanted`.)
        self.judge(at, self.hooks.get());
        Some(self.slots.free(at))
    }

    /// Removes and returns a stripe kept for `quantum` hooks or more at
    /// hook `now`.
    #[inline]
    pub(crate) fn pop_expired(&self, now: u32, quantum: u32) -> Option<u32> {
        let at = self.slots.expired(now, quantum)?;
        self.count(&self.given_back);
        self.judge(at, now);
        Some(self.slots.free(at))
    }

    /// Removes and returns any kept stripe.
    pub(crate) fn pop(&self) -> Option<u32> {
        let at = self.slots.occupied()?;
        self.judge(at, self.hooks.get());
        Some(self.slots.free(at))
    }
}

/// Private stripes a thread keeps after their access: at most this many.
pub(crate) const MAX_RECENT: usize = 8;
/// Hooks after which a recently used private stripe goes back (checked
/// every [`RECENT_SCAN_EVERY`] hooks, so it goes back 64 to 96 hooks after
/// its last use): the longest another thread waits for one, if the holder
/// neither uses it again nor takes new stripes.
pub(crate) const RECENT_HOOKS: u32 = 64;
/// A scan is made on the fast path too (`RecordThread::hold_access_fast`
/// gives back what is due itself); scanning every 8th hook on the general
/// path cost a fifth of a loop's accesses (`lu 120 1` under callgrind: 651 M
/// instructions recorded, 601 M with 32).
const RECENT_SCAN_EVERY: u32 = 32;

/// Whether hook `now` looks for expired recent stripes.
#[inline]
pub(crate) fn recent_scan_at(now: u32) -> bool {
    now.is_multiple_of(RECENT_SCAN_EVERY)
}

/// Kept stripes are looked at for expiry and for waiters every this many
/// hooks on the fast path (`RecordThread::hold_kept_fast`), at every hook
/// on the general one: a stripe goes back at most this many hooks late.
const KEPT_SCAN_EVERY: u32 = 8;
// A recent scan's hook is a kept scan's too: the kept fast path need not
// look for either.
const _: () = assert!(RECENT_SCAN_EVERY.is_multiple_of(KEPT_SCAN_EVERY));

/// Whether hook `now` leaves kept stripes to the general path's scan.
#[inline]
pub(crate) fn kept_scan_at(now: u32) -> bool {
    now.is_multiple_of(KEPT_SCAN_EVERY)
}

/// The private stripes a thread used last and still holds, so that the
/// next access to one of them (the next element of an array in the same
/// 64-byte stripe, a field of the struct just read) takes no lock: most
/// accesses of a loop fall in the few stripes it walks. A slot is taken
/// round-robin, so the stripe pushed out is about the least recently used
/// (a stripe used again leaves its slot and comes back in a new one).
/// Fixed slots, only the owning thread touches it.
///
/// Safe as keeping for the quantum is: a thread holding recent stripes
/// takes a new stripe only if it is free, else gives back everything
/// first; before using a recent stripe it checks it still holds it and
/// that no other thread waits for it (else it gives it back and waits its
/// turn); one goes back after [`RECENT_HOOKS`] hooks, when pushed out, and
/// at every interposed or blocking call.
#[derive(Debug)]
pub(crate) struct Recent {
    slots: Slots<MAX_RECENT>,
    /// The slot the next stripe goes in.
    next: Cell<usize>,
}

impl Recent {
    pub(crate) const fn new() -> Recent {
        Recent {
            slots: Slots::new(),
            next: Cell::new(0),
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slot holding `stripe`, if held here.
    #[inline]
    pub(crate) fn slot_of(&self, stripe: u32) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        self.slots.slot_of(stripe)
    }

    /// Empties slot `at` (found by [`Self::slot_of`]).
    #[inline]
    pub(crate) fn free(&self, at: usize) {
        self.slots.free(at);
    }

    /// Removes `stripe` if held here; returns whether it was.
    #[inline]
    pub(crate) fn take(&self, stripe: u32) -> bool {
        if self.is_empty() {
            return false;
        }
        self.slots
            .slot_of(stripe)
            .map(|at| self.slots.free(at))
            .is_some()
    }

    /// Puts `stripe`, held from hook `now`, in slot `at` in place of the
    /// stripe just taken from it (found by [`Self::slot_of`]): a loop
    /// moving between a few stripes trades one for the other in a slot,
    /// pushing nothing out.
    #[inline]
    pub(crate) fn trade(&self, at: usize, stripe: u32, now: u32) {
        let before = self.slots.put(at, stripe, now);
        debug_assert!(before.is_some(), "traded into an empty slot");
    }

    /// Holds `stripe` from hook `now`; returns the stripe it pushed out.
    #[inline]
    pub(crate) fn insert(&self, stripe: u32, now: u32) -> Option<u32> {
        let at = self.next.get();
        self.next.set((at + 1) % MAX_RECENT);
        self.slots.put(at, stripe, now)
    }

    /// Removes and returns a stripe held since [`RECENT_HOOKS`] hooks or
    /// more at hook `now` (looked for every [`RECENT_SCAN_EVERY`] hooks).
    #[inline]
    pub(crate) fn pop_expired(&self, now: u32) -> Option<u32> {
        if !recent_scan_at(now) {
            return None;
        }
        self.slots.pop_expired(now, RECENT_HOOKS)
    }

    /// Removes and returns any stripe held here.
    pub(crate) fn pop(&self) -> Option<u32> {
        self.slots.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_stripes_expire_after_the_quantum_and_the_oldest_goes_first() {
        let kept = Kept::new();
        for s in 0..MAX_KEPT as u32 {
            assert_eq!(kept.insert(s, s, s), None);
        }
        assert_eq!(kept.insert(100, 9, 9), Some(0));
        assert_eq!(kept.take(3), Some(3));
        assert_eq!(kept.take(3), None);
        assert_eq!(kept.pop_expired(10, 9), Some(1));
        assert_eq!(kept.pop_expired(10, 9), None);
        let mut rest = Vec::new();
        while let Some(s) = kept.pop() {
            rest.push(s);
        }
        rest.sort_unstable();
        assert_eq!(rest, vec![2, 4, 5, 6, 7, 100]);
        assert!(kept.is_empty());
    }

    #[test]
    fn jittered_stripes_expire_within_the_quantum_at_varied_points() {
        let kept = Kept::new();
        let mut seen = [false; 16];
        for now in 1000..3000u32 {
            let since = kept.jittered_start(now, 16, 3);
            let lasts = 16 - now.wrapping_sub(since);
            assert!((1..=16).contains(&lasts), "{lasts}");
            seen[lasts as usize - 1] = true;
        }
        assert!(seen.iter().all(|&s| s), "{seen:?}");
        assert_eq!(kept.jittered_start(5, 1, 3), 5);
    }

    #[test]
    fn keeping_stops_while_kept_stripes_are_not_used_again_and_resumes_when_they_are() {
        let kept = Kept::new();
        assert!(kept.worth_keeping(64, None), "keeps from the start");
        // Stripes kept and given back unused (random shared slots).
        for now in 0..64u32 {
            kept.insert(now, now, now);
            assert_eq!(kept.pop_expired(now + 4, 4), Some(now));
        }
        let kept_now = (0..SAMPLE_EVERY * 4)
            .filter(|_| kept.worth_keeping(64, None))
            .count();
        assert_eq!(kept_now, 4, "one in SAMPLE_EVERY");
        // A stripe used again and again (a shared index).
        for now in 0..1000u32 {
            kept.insert(7, now, now);
            assert_eq!(kept.take(7), Some(now));
        }
        assert!(kept.worth_keeping(64, None));
    }

    #[test]
    fn a_long_quantum_needs_proportionally_more_uses_to_keep() {
        let kept = Kept::new();
        // Each stripe used 5 times before it goes back: enough for a
        // quantum of 64 (2 per stripe given back), not for 1024 (32).
        for now in 0..64u32 {
            for _ in 0..5 {
                kept.insert(now, now, now);
                kept.take(now);
            }
            kept.insert(now, now, now);
            assert_eq!(kept.pop_expired(now + 4, 4), Some(now));
        }
        assert!(kept.worth_keeping(64, None));
        let kept_now = (0..SAMPLE_EVERY * 4)
            .filter(|_| kept.worth_keeping(1024, None))
            .count();
        assert_eq!(kept_now, 4, "one in SAMPLE_EVERY");
    }

    /// A shared index bumped every few hooks, kept beside a buffer's
    /// blocks used a few times each and left: the index's keeping paid, a
    /// block's did not, whatever the thread's counts say; a stripe kept
    /// too briefly keeps its verdict. (Stripes no other test uses: the
    /// verdicts live in the process's stripe table.)
    #[test]
    fn each_kept_stripe_is_judged_on_its_own_uses() {
        let (index, block, brief) = (30_001, 30_002, 30_003);
        let kept = Kept::new();
        kept.insert(index, 0, 0);
        kept.insert(block, 0, 0);
        for now in (3..300).step_by(3) {
            assert_eq!(kept.take(index), Some(0));
            kept.insert(index, 0, now);
        }
        assert_eq!(kept.pop_expired(300, 300), Some(index));
        assert_eq!(keeping_paid(index), Some(true));
        assert_eq!(kept.pop_expired(300, 300), Some(block));
        assert_eq!(keeping_paid(block), Some(false));
        let unpaid_kept = (0..SAMPLE_EVERY * 2)
            .filter(|_| kept.worth_keeping(4096, Some(false)))
            .count();
        assert_eq!(unpaid_kept, 2, "one in SAMPLE_EVERY, to judge it again");
        assert!(kept.worth_keeping(4096, Some(true)));
        kept.insert(brief, 0, 0);
        assert_eq!(kept.pop_expired(JUDGED_AFTER - 1, 1), Some(brief));
        assert_eq!(keeping_paid(brief), None, "too brief to tell");
    }

    /// The fast path's trade: the held stripe takes the slot of the kept
    /// one it trades for, each keeping its start and its uses.
    #[test]
    fn a_trade_swaps_the_held_stripe_into_the_kept_ones_slot() {
        let (index, block) = (30_011, 30_012);
        let kept = Kept::new();
        kept.insert(index, 5, 0);
        let at = kept.slot_of(index).unwrap();
        assert_eq!(kept.trade(at, block, 7, 10), 5, "the index's start");
        assert_eq!((kept.slot_of(index), kept.slot_of(block)), (None, Some(at)));
        kept.use_taken_again(index);
        assert_eq!(kept.trade(at, index, 5, 12), 7, "the block's start");
        assert_eq!((kept.slot_of(index), kept.slot_of(block)), (Some(at), None));
        assert_eq!(kept.take(index), Some(5));
        kept.insert(index, 5, 20);
        // Kept from hook 0, used 3 times (the two trades' takes and once
        // again): at hook 48, once per 16 hooks.
        assert_eq!(kept.pop_expired(48, 40), Some(index));
        assert_eq!(keeping_paid(index), Some(true));
    }

    #[test]
    fn an_idle_kept_stripe_goes_back_only_when_wanted() {
        let kept = Kept::new();
        kept.insert(5, 0, 10);
        kept.insert(6, 0, 20);
        let wanted = |s: u32| s == 5 || s == 6;
        assert_eq!(
            kept.pop_idle_wanted(10 + IDLE_HOOKS - 1, wanted),
            None,
            "not idle yet"
        );
        assert_eq!(
            kept.pop_idle_wanted(10 + IDLE_HOOKS, |_| false),
            None,
            "nobody waits"
        );
        assert_eq!(kept.pop_idle_wanted(10 + IDLE_HOOKS, wanted), Some(5));
        assert_eq!(
            kept.pop_idle_wanted(10 + IDLE_HOOKS, wanted),
            None,
            "6 used since"
        );
        // Used again: idle counts from the last use, not from the take.
        assert_eq!(kept.take(6), Some(0));
        kept.insert(6, 0, 40);
        assert_eq!(kept.pop_idle_wanted(40 + IDLE_HOOKS - 1, wanted), None);
        assert_eq!(kept.pop_idle_wanted(40 + IDLE_HOOKS, wanted), Some(6));
        assert!(kept.is_empty());
    }

    #[test]
    fn wrapping_hook_counts_still_expire() {
        let kept = Kept::new();
        kept.insert(7, u32::MAX - 1, u32::MAX);
        assert_eq!(kept.pop_expired(2, 4), Some(7));
    }

    #[test]
    fn recent_stripes_push_out_round_robin_and_expire() {
        let recent = Recent::new();
        for s in 0..MAX_RECENT as u32 {
            assert_eq!(recent.insert(s, 1), None);
        }
        assert_eq!(recent.insert(100, 2), Some(0));
        assert!(recent.take(3));
        assert!(!recent.take(3));
        assert_eq!(
            recent.insert(3, 5),
            Some(1),
            "the slot after the last one taken"
        );
        assert_eq!(
            recent.pop_expired(RECENT_HOOKS + 1),
            None,
            "not a scan hook"
        );
        let scan = RECENT_HOOKS.next_multiple_of(RECENT_SCAN_EVERY) + RECENT_SCAN_EVERY;
        let mut expired = Vec::new();
        while let Some(s) = recent.pop_expired(scan) {
            expired.push(s);
        }
        expired.sort_unstable();
        assert_eq!(expired, vec![2, 3, 4, 5, 6, 7, 100]);
        assert!(recent.is_empty());
    }
}
