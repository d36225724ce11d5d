//! Causal queries on the recorded order (`rr-lite why T:N`): for a read,
//! the write whose value it saw and, a few levels back, where that value
//! came from; for a write, the reads that saw it.
//!
//! "Saw" is the recorded order's answer: the last write before the read in
//! the global order that touched one of the bytes it read. The chain back
//! follows the common read-modify-write shape (`x = x + 1`): the value a
//! write stored came from its thread's last read of those bytes before it,
//! which in turn saw some write. There is no data flow through registers
//! or other variables: a write whose thread did not read the location
//! first ends the chain (its value came from elsewhere, shown as such).

use rr_lite_trace::{Access, EventKind, RecordedEvent};

use crate::pairs::EventRef;

/// One access to the queried bytes, in the global order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// Position in the global order.
    pub seq: u64,
    pub event: EventRef,
    pub kind: EventKind,
    pub addr: u64,
    pub size: u64,
    pub site: u64,
}

impl Touch {
    fn reads(&self) -> bool {
        matches!(self.kind.access(), Access::Read | Access::ReadModifyWrite)
    }

    fn writes(&self) -> bool {
        matches!(self.kind.access(), Access::Write | Access::ReadModifyWrite)
    }

    fn overlaps(&self, addr: u64, size: u64) -> bool {
        self.addr < addr.saturating_add(size.max(1))
            && addr < self.addr.saturating_add(self.size.max(1))
    }
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// A read: the writes back along the chain, each with the read of its
    /// thread it followed (`None`: the chain ends at that write).
    Read {
        target: Touch,
        chain: Vec<(Touch, Option<Touch>)>,
        /// Nothing wrote the bytes before: an initial value (a global's
        /// image, fresh memory).
        initial: bool,
    },
    /// A write: the reads that saw it, until the next write.
    Write { target: Touch, seen_by: Vec<Touch> },
}

/// Most accesses to the queried bytes kept (a hot variable of a long run
/// may have many): the earliest are dropped beyond this.
const MAX_HISTORY: usize = 1 << 22;

/// Collects the accesses to the target's bytes; feed it the global order.
#[derive(Debug)]
pub struct WhyFinder {
    target: EventRef,
    addr: u64,
    size: u64,
    depth: usize,
    history: std::collections::VecDeque<Touch>,
    /// Position of the target in `history`, once seen.
    target_at: Option<usize>,
    /// A write after the target (the end of who saw a target write).
    next_write_seen: bool,
}

impl WhyFinder {
    /// Queries event `target`, an access of `size` bytes at `addr`,
    /// following a read's chain `depth` writes back.
    pub fn new(target: EventRef, addr: u64, size: u64, depth: usize) -> WhyFinder {
        WhyFinder {
            target,
            addr,
            size,
            depth: depth.max(1),
            history: std::collections::VecDeque::new(),
            target_at: None,
            next_write_seen: false,
        }
    }

    /// Whether more events can change the answer.
    pub fn wants_more(&self) -> bool {
        !self.next_write_seen
    }

    pub fn push(&mut self, seq: u64, e: &RecordedEvent) {
        if self.next_write_seen {
            return;
        }
        let event = EventRef {
            thread: e.thread,
            index: e.index,
        };
        let touch = Touch {
            seq,
            event,
            kind: e.kind,
            addr: e.addr,
            size: e.size,
            site: e.site,
        };
        let is_target = event == self.target;
        if !is_target
            && !(touch.overlaps(self.addr, self.size) && (touch.reads() || touch.writes()))
        {
            return;
        }
        if self.target_at.is_some() {
            if touch.writes() {
                self.next_write_seen = true;
                return;
            }
        } else if self.history.len() == MAX_HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(touch);
        if is_target {
            self.target_at = Some(self.history.len() - 1);
        }
    }

    /// The answer, if the target was seen.
    pub fn finish(self) -> Option<Why> {
        let at = self.target_at?;
        let history: Vec<Touch> = self.history.into();
        let target = history[at];
        if target.writes() && !target.reads() {
            let seen_by = history[at + 1..]
                .iter()
                .copied()
                .filter(|t| t.reads() && t.overlaps(target.addr, target.size))
                .collect();
            return Some(Why::Write { target, seen_by });
        }
        let mut chain = Vec::new();
        let mut reader = target;
        let mut before = at;
        let mut initial = false;
        for _ in 0..self.depth {
            // The last write before the read that touched its bytes.
            let Some(w) = history[..before]
                .iter()
                .rposition(|t| t.writes() && t.overlaps(reader.addr, reader.size))
            else {
                initial = true;
                break;
            };
            let write = history[w];
            // Its value's source: its thread's last read of those bytes
            // before it (an atomic read-modify-write is its own read).
            let read = if write.reads() {
                Some(write)
            } else {
                history[..w]
                    .iter()
                    .rposition(|t| {
                        t.event.thread == write.event.thread
                            && t.reads()
                            && t.overlaps(write.addr, write.size)
                    })
                    .map(|r| history[r])
            };
            chain.push((write, read));
            let Some(read) = read else { break };
            reader = read;
            before = history[..=w]
                .iter()
                .rposition(|t| t.seq == read.seq)
                .unwrap_or(0);
        }
        Some(Why::Read {
            target,
            chain,
            initial,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventKind::{Read, Write};

    fn at(thread: u32, index: u64) -> EventRef {
        EventRef { thread, index }
    }

    fn ev(thread: u32, index: u64, kind: EventKind, site: u64) -> RecordedEvent {
        RecordedEvent {
            thread,
            index,
            clock: 0,
            kind,
            addr: 0x100,
            size: 8,
            site,
            payload: 0,
        }
    }

    fn run(events: &[RecordedEvent], target: EventRef, depth: usize) -> Why {
        let mut finder = WhyFinder::new(target, 0x100, 8, depth);
        for (seq, e) in events.iter().enumerate() {
            finder.push(seq as u64, e);
        }
        finder.finish().expect("target seen")
    }

    #[test]
    fn a_read_sees_the_last_write_and_the_chain_follows_read_then_write() {
        // t0: x = 1; t1: v = x; x = v + 1; t2: reads x.
        let events = [
            ev(0, 0, Write, 1),
            ev(1, 0, Read, 2),
            ev(1, 1, Write, 3),
            ev(2, 0, Read, 4),
        ];
        let Why::Read { chain, initial, .. } = run(&events, at(2, 0), 5) else {
            panic!("a read")
        };
        assert_eq!(chain.len(), 2);
        assert_eq!(chain[0].0.event, at(1, 1));
        assert_eq!(chain[0].1.map(|r| r.event), Some(at(1, 0)));
        assert_eq!(chain[1].0.event, at(0, 0));
        assert_eq!(chain[1].1, None);
        assert!(!initial);
        // Depth 1 stops after the first write.
        let Why::Read { chain, .. } = run(&events, at(2, 0), 1) else {
            panic!("a read")
        };
        assert_eq!(chain.len(), 1);
    }

    #[test]
    fn a_write_is_seen_by_the_reads_until_the_next_write() {
        let events = [
            ev(0, 0, Write, 1),
            ev(1, 0, Read, 2),
            ev(2, 0, Read, 3),
            ev(1, 1, Write, 4),
            ev(2, 1, Read, 5),
        ];
        let Why::Write { seen_by, .. } = run(&events, at(0, 0), 3) else {
            panic!("a write")
        };
        let who: Vec<u32> = seen_by.iter().map(|t| t.event.thread).collect();
        assert_eq!(who, [1, 2]);
    }

    #[test]
    fn a_read_of_never_written_bytes_sees_the_initial_value() {
        let events = [ev(1, 0, Read, 2)];
        let Why::Read { chain, initial, .. } = run(&events, at(1, 0), 3) else {
            panic!("a read")
        };
        assert!(chain.is_empty() && initial);
    }
}
