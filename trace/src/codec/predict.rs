//! The predictions that let a version-5 log entry leave fields out: which
//! call site comes next, and which address that site touches next.
//!
//! Most entries of a recording are a loop body's accesses, repeated: the
//! sites follow one another in the same order each iteration, and each site
//! either walks an array with a fixed stride or touches something at a fixed
//! offset from the access before it (`a[i] += x`: the write at the read's
//! address; a field of the struct just read). So the predictor keeps, per
//! call site (a direct-mapped table of [`SLOTS`] slots indexed by a hash of
//! the site), the site that followed it last time, the last address it
//! touched, the stride between its last two addresses, its last address's
//! offset from the entry before, and which of the two (stride or offset)
//! was right last time it mattered. An entry whose site and address are the
//! predicted ones stores neither (docs/FORMAT.md, "Entries").
//!
//! The encoder and every decoder run this same code on the same entries in
//! the same order, so their tables stay equal: the format is defined by
//! what [`Predictor::learn`] does, and changing it changes the format.
//! Invariant: a slot's fields describe the site in its `site` field only;
//! a site that maps to a slot holding another site has no prediction.

/// Slots of the table (a power of two). A loop body has tens of sites;
/// on the repo's workloads 64 slots predicted as well as 1024.
pub const SLOTS: usize = 256;
// A slot's index is a byte (`SiteSlot`).
const _: () = assert!(SLOTS == 256);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Slot {
    site: u64,
    last_addr: u64,
    /// `last_addr` minus the site's address before it (wrapping).
    stride: u64,
    /// `last_addr` minus the address of the thread's entry before it.
    offset: u64,
    /// Predict by `offset` rather than by `stride`: the last time the
    /// stride missed, the offset was right.
    by_offset: bool,
    /// The site of the entry that followed the last one at `site`.
    next_site: u64,
}

const EMPTY: Slot = Slot {
    site: 0,
    last_addr: 0,
    stride: 0,
    offset: 0,
    by_offset: false,
    next_site: 0,
};

/// Per-thread prediction state, shared in meaning by encoder and decoder.
///
/// Invariant: `slots[last]` is the slot of the site last learned (the
/// `prev_site` of the next entry): [`Predictor::learn`] always leaves its
/// `site` in its own slot, and a new predictor's `last` is the slot of site
/// 0, the site before a log's first entry, whose empty slot names site 0.
/// So the previous site is never hashed again, and an entry hashes its own
/// site once ([`SiteSlot`]) for both its prediction and its learning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predictor {
    slots: [Slot; SLOTS],
    /// (A byte: with 256 slots an index needs no bounds check.)
    last: u8,
}

/// The slot an entry's site maps to (computed once per entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteSlot(u8);

impl SiteSlot {
    #[inline(always)]
    pub fn of(site: u64) -> SiteSlot {
        SiteSlot(slot_of(site) as u8)
    }
}

impl Default for Predictor {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn slot_of(site: u64) -> usize {
    // Fibonacci hashing: sites of one loop differ in their low bits.
    (site.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOTS.trailing_zeros())) as usize
}

impl Predictor {
    pub const fn new() -> Predictor {
        Predictor {
            slots: [EMPTY; SLOTS],
            // The slot of site 0 (see the invariant).
            last: 0,
        }
    }

    /// The site predicted to follow the entry last learned: the one that
    /// followed that entry's site last time, 0 if none did yet. Always
    /// some site (no lookup that can miss), so that
    /// a decoder starting in the middle of a log (to count its entries)
    /// finds no error where the encoder had a prediction.
    #[inline(always)]
    pub fn next_site(&self) -> u64 {
        self.slots[usize::from(self.last)].next_site
    }

    /// The address predicted for an entry at `site` (in slot `at`) after
    /// one at `prev_addr`: the site's last address plus its stride, or
    /// `prev_addr` plus its offset, or `prev_addr` itself for a site without
    /// a slot.
    #[inline(always)]
    pub fn addr(&self, at: SiteSlot, site: u64, prev_addr: u64) -> u64 {
        debug_assert_eq!(at, SiteSlot::of(site));
        let slot = &self.slots[usize::from(at.0)];
        match (slot.site == site, slot.by_offset) {
            (true, false) => slot.last_addr.wrapping_add(slot.stride),
            (true, true) => prev_addr.wrapping_add(slot.offset),
            (false, _) => prev_addr,
        }
    }

    /// Learns from an entry at `site` (in slot `at`) and `addr` whose
    /// thread's previous entry was at the site last learned and at
    /// `prev_addr`.
    #[inline(always)]
    pub fn learn(&mut self, prev_addr: u64, at: SiteSlot, site: u64, addr: u64) {
        debug_assert_eq!(at, SiteSlot::of(site));
        self.slots[usize::from(self.last)].next_site = site;
        self.last = at.0;
        self.slots[usize::from(at.0)].learn(site, addr, prev_addr);
    }

    /// The decoder's side of [`Self::learn_hit`]: an entry that stores
    /// neither site nor address (both predicted), when the predicted
    /// site's own slot predicts its address: learns it and returns its
    /// site and address, what [`Self::next_site`], [`Self::addr`] and
    /// [`Self::learn`] give and do. `None`, changing nothing, when the
    /// site has no slot (the general decoder then reads it).
    #[inline(always)]
    pub fn take_hit(&mut self, prev_addr: u64) -> Option<(u64, u64)> {
        let site = self.next_site();
        let at = SiteSlot::of(site);
        let slot = &mut self.slots[usize::from(at.0)];
        if slot.site != site {
            return None;
        }
        let by_stride = slot.last_addr.wrapping_add(slot.stride);
        let addr = if slot.by_offset {
            prev_addr.wrapping_add(slot.offset)
        } else {
            by_stride
        };
        slot.learn_hit(site, addr, prev_addr, by_stride == addr);
        self.last = at.0;
        Some((site, addr))
    }

    /// [`Self::learn`] of an entry the table predicted from the site's own
    /// slot (the site followed the entry last learned, and the slot of
    /// `site` predicted `addr`); returns false, changing nothing, for any
    /// other entry. The recorder's shortest path: a hit leaves the stride
    /// test's answer known, so the learning is a few stores.
    #[inline(always)]
    pub fn learn_hit(&mut self, prev_addr: u64, at: SiteSlot, site: u64, addr: u64) -> bool {
        debug_assert_eq!(at, SiteSlot::of(site));
        if self.next_site() != site {
            return false;
        }
        let slot = &mut self.slots[usize::from(at.0)];
        let by_stride = slot.last_addr.wrapping_add(slot.stride) == addr;
        let by_offset = prev_addr.wrapping_add(slot.offset) == addr;
        if slot.site != site || !(if slot.by_offset { by_offset } else { by_stride }) {
            return false;
        }
        slot.learn_hit(site, addr, prev_addr, by_stride);
        // (`slots[last].next_site` is `site` already.)
        self.last = at.0;
        true
    }
}

impl Slot {
    /// [`Self::learn`] of `addr` at `site`, this slot's site, which the
    /// slot predicted (`by_stride`: its stride was right): a hit by the
    /// stride keeps predicting by it; a hit by the offset alone means the
    /// offset was right where the stride missed.
    #[inline(always)]
    fn learn_hit(&mut self, site: u64, addr: u64, prev_addr: u64, by_stride: bool) {
        #[cfg(debug_assertions)]
        let learned = {
            let mut copy = *self;
            copy.learn(site, addr, prev_addr);
            copy
        };
        self.by_offset = !by_stride;
        self.stride = addr.wrapping_sub(self.last_addr);
        self.last_addr = addr;
        self.offset = addr.wrapping_sub(prev_addr);
        #[cfg(debug_assertions)]
        debug_assert_eq!(*self, learned, "a hit learned otherwise than learn");
        #[cfg(not(debug_assertions))]
        let _ = site;
    }

    /// Learns from an entry at `site`, which maps to this slot, and `addr`
    /// after an entry at `prev_addr`: the site's own part of
    /// [`Predictor::learn`].
    #[inline(always)]
    fn learn(&mut self, site: u64, addr: u64, prev_addr: u64) {
        let offset = addr.wrapping_sub(prev_addr);
        if self.site == site {
            if self.last_addr.wrapping_add(self.stride) == addr {
                self.by_offset = false;
            } else if self.offset == offset {
                self.by_offset = true;
            }
            self.stride = addr.wrapping_sub(self.last_addr);
            self.last_addr = addr;
            self.offset = offset;
        } else {
            *self = Slot {
                site,
                last_addr: addr,
                offset,
                ..EMPTY
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds `p` an entry at `site` and `addr` after one at `prev_addr`.
    fn learn(p: &mut Predictor, prev_addr: u64, site: u64, addr: u64) {
        p.learn(prev_addr, SiteSlot::of(site), site, addr);
    }

    fn addr(p: &Predictor, site: u64, prev_addr: u64) -> u64 {
        p.addr(SiteSlot::of(site), site, prev_addr)
    }

    #[test]
    fn a_loop_is_predicted_after_two_iterations() {
        let mut p = Predictor::new();
        let mut prev_addr = 0;
        let mut hits = 0;
        for i in 0..10u64 {
            for (site, base) in [(0x1789, 0x1000), (0x17df, 0x9000)] {
                let a = base + 8 * i;
                if i >= 2 {
                    assert_eq!(p.next_site(), site);
                    assert_eq!(addr(&p, site, prev_addr), a);
                    hits += 1;
                }
                learn(&mut p, prev_addr, site, a);
                prev_addr = a;
            }
        }
        assert_eq!(hits, 16);
    }

    #[test]
    fn a_loop_after_two_iterations_is_learned_by_its_hits() {
        let mut p = Predictor::new();
        let mut prev_addr = 0;
        for i in 0..10u64 {
            for (site, base) in [(0x1789, 0x1000), (0x17df, 0x9000)] {
                let a = base + 8 * i;
                let mut expected = p.clone();
                learn(&mut expected, prev_addr, site, a);
                assert_eq!(p.learn_hit(prev_addr, SiteSlot::of(site), site, a), i >= 2);
                if i < 2 {
                    learn(&mut p, prev_addr, site, a);
                }
                assert_eq!(p, expected);
                prev_addr = a;
            }
        }
    }

    #[test]
    fn a_write_to_what_was_just_read_is_predicted() {
        let mut p = Predictor::new();
        let mut prev_addr = 0;
        let mut hits = 0;
        // Random slots, each read then written: `a[r] += 1`.
        for (i, r) in [17u64, 3, 99, 42, 7, 64, 5, 23].into_iter().enumerate() {
            for site in [0x40, 0x48] {
                let a = 0x1000 + 8 * r;
                if site == 0x48 && i >= 2 {
                    assert_eq!(addr(&p, site, prev_addr), a);
                    hits += 1;
                }
                learn(&mut p, prev_addr, site, a);
                prev_addr = a;
            }
        }
        assert_eq!(hits, 6);
    }

    #[test]
    fn an_unknown_site_predicts_the_previous_address() {
        let p = Predictor::new();
        assert_eq!(addr(&p, 0x4242, 0x77), 0x77);
        assert_eq!(p.next_site(), 0);
    }

    /// The predictor as the format defines it, each lookup hashing its
    /// site (how version 5 first wrote it): the one above must predict
    /// exactly as this does, or logs written by either would not read.
    struct Reference {
        slots: [Slot; SLOTS],
    }

    impl Reference {
        fn next_site(&self, prev_site: u64) -> u64 {
            let slot = &self.slots[slot_of(prev_site)];
            if slot.site == prev_site {
                slot.next_site
            } else {
                prev_site
            }
        }

        fn addr(&self, site: u64, prev_addr: u64) -> u64 {
            let slot = &self.slots[slot_of(site)];
            match (slot.site == site, slot.by_offset) {
                (true, false) => slot.last_addr.wrapping_add(slot.stride),
                (true, true) => prev_addr.wrapping_add(slot.offset),
                (false, _) => prev_addr,
            }
        }

        /// (The site's own slot learns as the predictor's does: what
        /// differs is how the slots are found.)
        fn learn(&mut self, prev_site: u64, prev_addr: u64, site: u64, addr: u64) {
            let prev = &mut self.slots[slot_of(prev_site)];
            if prev.site == prev_site {
                prev.next_site = site;
            }
            self.slots[slot_of(site)].learn(site, addr, prev_addr);
        }
    }

    /// Sites from a few loops' worth (so they repeat and collide in the
    /// table: 300 distinct sites in 256 slots), 0 among them; addresses
    /// that stride, repeat or jump.
    fn any_entries() -> impl Strategy<Value = Vec<(u64, u64)>> {
        let site = prop_oneof![Just(0u64), (0u64..300).prop_map(|s| 0x40_0000 + 5 * s)];
        let addr = prop_oneof![0u64..64, any::<u64>()];
        proptest::collection::vec((site, addr), 0..400)
    }

    /// The address of an entry of [`any_entries`]: a step below 64 strides
    /// from the last address by that many words, anything else is itself.
    fn entry_addr(prev_addr: u64, step: u64) -> u64 {
        if step < 64 {
            prev_addr.wrapping_add(step * 8)
        } else {
            step
        }
    }

    proptest! {
        #[test]
        fn predicts_as_the_reference_does(entries in any_entries()) {
            let mut p = Predictor::new();
            let mut r = Reference { slots: [EMPTY; SLOTS] };
            let (mut prev_site, mut prev_addr) = (0u64, 0u64);
            for (site, step) in entries {
                let a = entry_addr(prev_addr, step);
                prop_assert_eq!(p.next_site(), r.next_site(prev_site));
                prop_assert_eq!(addr(&p, site, prev_addr), r.addr(site, prev_addr));
                learn(&mut p, prev_addr, site, a);
                r.learn(prev_site, prev_addr, site, a);
                prop_assert_eq!(&p.slots[..], &r.slots[..]);
                (prev_site, prev_addr) = (site, a);
            }
        }

        /// The decoder's one-byte path gives and learns what the general
        /// one does wherever the predicted site has its slot.
        #[test]
        fn take_hit_decodes_as_learn_does(entries in any_entries()) {
            let mut p = Predictor::new();
            let mut prev_addr = 0u64;
            for (site, step) in entries {
                let a = entry_addr(prev_addr, step);
                let next = p.next_site();
                let has_slot = p.slots[usize::from(SiteSlot::of(next).0)].site == next;
                let mut general = p.clone();
                let predicted = addr(&general, next, prev_addr);
                learn(&mut general, prev_addr, next, predicted);
                let mut by_hit = p.clone();
                let hit = by_hit.take_hit(prev_addr);
                prop_assert_eq!(hit, has_slot.then_some((next, predicted)));
                prop_assert_eq!(&by_hit, if has_slot { &general } else { &p });
                // Then the entry the strategy made, to move the table on.
                learn(&mut p, prev_addr, site, a);
                prev_addr = a;
            }
        }

        /// The recorder's shortest path learns what `learn` learns, on
        /// exactly the entries whose site and address were predicted from
        /// the site's own slot, and changes nothing on the others.
        #[test]
        fn learn_hit_learns_as_learn_on_the_hits(entries in any_entries()) {
            let mut p = Predictor::new();
            let mut prev_addr = 0u64;
            for (site, step) in entries {
                let a = entry_addr(prev_addr, step);
                let at = SiteSlot::of(site);
                let predicted = p.next_site() == site
                    && p.slots[usize::from(at.0)].site == site
                    && addr(&p, site, prev_addr) == a;
                let before = p.clone();
                let mut by_hit = p.clone();
                prop_assert_eq!(by_hit.learn_hit(prev_addr, at, site, a), predicted);
                learn(&mut p, prev_addr, site, a);
                prop_assert_eq!(&by_hit, if predicted { &p } else { &before });
                prev_addr = a;
            }
        }
    }
}
