//! An evenly spaced sample of a stream of unknown length, in bounded memory.
//!
//! Keeps item number `n` (0, 1, 2, ... in arrival order) when `n` is a
//! multiple of the stride. The stride starts at 1 and doubles whenever more
//! than `cap` items are kept, dropping every other kept item: what is left
//! is always every `stride`-th item, spread over the whole stream, and never
//! more than `cap`.
//!
//! Invariants (debug-asserted): `kept.len() <= cap`; the stride is a power
//! of two; every kept item's number is a multiple of it.

/// See the module doc.
#[derive(Debug, Clone)]
pub struct Thinned<T> {
    kept: Vec<(u64, T)>,
    cap: usize,
    stride: u64,
    seen: u64,
}

impl<T> Thinned<T> {
    /// Keeps at most `cap` items (at least 1).
    pub fn new(cap: usize) -> Thinned<T> {
        Thinned {
            kept: Vec::new(),
            cap: cap.max(1),
            stride: 1,
            seen: 0,
        }
    }

    /// Whether the next item pushed will be kept: lets the caller skip
    /// building it.
    pub fn wants_next(&self) -> bool {
        self.seen.is_multiple_of(self.stride)
    }

    /// The next item of the stream.
    pub fn push(&mut self, item: T) {
        let n = self.seen;
        self.seen += 1;
        if !n.is_multiple_of(self.stride) {
            return;
        }
        self.kept.push((n, item));
        if self.kept.len() > self.cap {
            self.stride *= 2;
            let stride = self.stride;
            self.kept.retain(|(n, _)| n.is_multiple_of(stride));
        }
        debug_assert!(self.kept.len() <= self.cap);
        debug_assert!(self.kept.iter().all(|(n, _)| n % self.stride == 0));
    }

    /// Items pushed so far, kept or not.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Whether every item pushed was kept.
    pub fn is_complete(&self) -> bool {
        self.stride == 1
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.kept.iter().map(|(_, item)| item)
    }

    /// The kept items, in arrival order.
    pub fn into_vec(self) -> Vec<T> {
        self.kept.into_iter().map(|(_, item)| item).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_everything_below_the_cap() {
        let mut t = Thinned::new(10);
        (0..10).for_each(|i| t.push(i));
        assert!(t.is_complete());
        assert_eq!(t.into_vec(), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn thins_to_every_other_then_every_fourth() {
        let mut t = Thinned::new(4);
        (0..9).for_each(|i| t.push(i));
        assert_eq!(t.seen(), 9);
        assert!(!t.is_complete());
        assert_eq!(t.into_vec(), vec![0, 4, 8]);
    }

    proptest! {
        #[test]
        fn bounded_evenly_spaced_and_in_order(cap in 1usize..50, n in 0u64..2000) {
            let mut t = Thinned::new(cap);
            for i in 0..n {
                let wanted = t.wants_next();
                t.push(i);
                if !wanted {
                    prop_assert_ne!(t.iter().last(), Some(&i));
                }
            }
            let kept = t.into_vec();
            prop_assert!(kept.len() <= cap);
            // Evenly spaced: one stride between neighbours, starting at 0.
            if kept.len() >= 2 {
                let stride = kept[1] - kept[0];
                prop_assert!(stride.is_power_of_two());
                for (k, v) in kept.iter().enumerate() {
                    prop_assert_eq!(*v, k as u64 * stride);
                }
                // Nothing past the last kept item would have fitted.
                prop_assert!(kept.last().unwrap() + stride >= n);
            } else if n > 0 {
                prop_assert_eq!(kept, vec![0]);
            }
        }
    }
}
