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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predictor {
    slots: [Slot; SLOTS],
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
        }
    }

    /// The site predicted to follow an entry at `prev_site`: the one that
    /// followed it last time, or `prev_site` itself if its slot holds
    /// another site. Always some site, so that a decoder starting in the
    /// middle of a log (to count its entries) finds no error where the
    /// encoder had a prediction.
    #[inline(always)]
    pub fn next_site(&self, prev_site: u64) -> u64 {
        let slot = &self.slots[slot_of(prev_site)];
        if slot.site == prev_site {
            slot.next_site
        } else {
            prev_site
        }
    }

    /// The address predicted for an entry at `site` after one at
    /// `prev_addr`: the site's last address plus its stride, or `prev_addr`
    /// plus its offset, or `prev_addr` itself for a site without a slot.
    #[inline(always)]
    pub fn addr(&self, site: u64, prev_addr: u64) -> u64 {
        let slot = &self.slots[slot_of(site)];
        match (slot.site == site, slot.by_offset) {
            (true, false) => slot.last_addr.wrapping_add(slot.stride),
            (true, true) => prev_addr.wrapping_add(slot.offset),
            (false, _) => prev_addr,
        }
    }

    /// Learns from an entry at `site` and `addr` whose thread's previous
    /// entry was at `prev_site` and `prev_addr`.
    #[inline(always)]
    pub fn learn(&mut self, prev_site: u64, prev_addr: u64, site: u64, addr: u64) {
        let prev = &mut self.slots[slot_of(prev_site)];
        if prev.site == prev_site {
            prev.next_site = site;
        }
        let slot = &mut self.slots[slot_of(site)];
        let offset = addr.wrapping_sub(prev_addr);
        if slot.site == site {
            if slot.last_addr.wrapping_add(slot.stride) == addr {
                slot.by_offset = false;
            } else if slot.offset == offset {
                slot.by_offset = true;
            }
            slot.stride = addr.wrapping_sub(slot.last_addr);
            slot.last_addr = addr;
            slot.offset = offset;
        } else {
            *slot = Slot {
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

    #[test]
    fn a_loop_is_predicted_after_two_iterations() {
        let mut p = Predictor::new();
        let (mut prev_site, mut prev_addr) = (0, 0);
        let mut hits = 0;
        for i in 0..10u64 {
            for (site, base) in [(0x1789, 0x1000), (0x17df, 0x9000)] {
                let addr = base + 8 * i;
                if i >= 2 {
                    assert_eq!(p.next_site(prev_site), site);
                    assert_eq!(p.addr(site, prev_addr), addr);
                    hits += 1;
                }
                p.learn(prev_site, prev_addr, site, addr);
                (prev_site, prev_addr) = (site, addr);
            }
        }
        assert_eq!(hits, 16);
    }

    #[test]
    fn a_write_to_what_was_just_read_is_predicted() {
        let mut p = Predictor::new();
        let (mut prev_site, mut prev_addr) = (0, 0);
        let mut hits = 0;
        // Random slots, each read then written: `a[r] += 1`.
        for (i, r) in [17u64, 3, 99, 42, 7, 64, 5, 23].into_iter().enumerate() {
            for site in [0x40, 0x48] {
                let addr = 0x1000 + 8 * r;
                if site == 0x48 && i >= 2 {
                    assert_eq!(p.addr(site, prev_addr), addr);
                    hits += 1;
                }
                p.learn(prev_site, prev_addr, site, addr);
                (prev_site, prev_addr) = (site, addr);
            }
        }
        assert_eq!(hits, 6);
    }

    #[test]
    fn an_unknown_site_predicts_the_previous_address() {
        let p = Predictor::new();
        assert_eq!(p.addr(0x4242, 0x77), 0x77);
        assert_eq!(p.next_site(0x4242), 0x4242);
    }
}
