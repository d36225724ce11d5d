//! The reference algorithm, literal to the method: a linear scan of the
//! global log with a work queue of open dependency pairs, one per address
//! (granule) seen so far. Each access looks its granule's open pair up by
//! scanning the queue, closes it (emitting the pairs) or extends it, and puts
//! the updated open pair back at the end of the queue.
//!
//! It is kept simple on purpose, as the executable statement of the rules
//! (table in [`crate::pairs`]) that the indexed version is tested against.
//! Lookups cost O(open pairs), so it is slow on traces touching many
//! granules; scanning from the back (most recently used first) keeps it
//! usable on traces with a hot working set.

use std::mem::size_of;

use super::{DependencyKind, EventRef, PairSink};

/// The first accessor(s) of an open dependency pair.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OpenPair {
    /// Reads with no write before them (in a parallel relation).
    Reads(Vec<EventRef>),
    /// A write not yet followed by anything.
    Write(EventRef),
    /// A write and the reads that followed it (each read is in a RAW pair
    /// with the write, and in a parallel relation with the other reads).
    RawGroup {
        writer: EventRef,
        readers: Vec<EventRef>,
    },
}

#[derive(Debug)]
struct QueueItem {
    granule: u64,
    open: OpenPair,
}

/// The work-queue pair finder (`--algorithm worklist`).
#[derive(Debug, Default)]
pub struct WorklistFinder {
    queue: Vec<QueueItem>,
}

impl WorklistFinder {
    pub fn new() -> WorklistFinder {
        WorklistFinder::default()
    }

    /// Calls `f` with every event of the open pairs.
    pub(crate) fn for_each_event(&self, f: &mut impl FnMut(EventRef)) {
        for item in &self.queue {
            match &item.open {
                OpenPair::Reads(readers) => readers.iter().copied().for_each(&mut *f),
                OpenPair::Write(writer) => f(*writer),
                OpenPair::RawGroup { writer, readers } => {
                    f(*writer);
                    readers.iter().copied().for_each(&mut *f);
                }
            }
        }
    }

    pub(crate) fn access(
        &mut self,
        granule: u64,
        event: EventRef,
        writes: bool,
        sink: &mut PairSink,
    ) {
        let position = self.queue.iter().rposition(|item| item.granule == granule);
        let open = match position {
            None => None,
            Some(i) => Some(self.queue.remove(i).open),
        };
        let open = match (open, writes) {
            (None, false) => OpenPair::Reads(vec![event]),
            (None, true) => OpenPair::Write(event),
            // read/read: parallel relation, no pair.
            (Some(OpenPair::Reads(mut reads)), false) => {
                reads.push(event);
                OpenPair::Reads(reads)
            }
            // read(s) then write: WAR from every read; the write replaces them.
            (Some(OpenPair::Reads(reads)), true) => {
                for r in reads {
                    sink.pair(r, event, DependencyKind::War);
                }
                OpenPair::Write(event)
            }
            // write then read: RAW, and the read opens a RAW group.
            (Some(OpenPair::Write(writer)), false) => {
                sink.pair(writer, event, DependencyKind::Raw);
                OpenPair::RawGroup {
                    writer,
                    readers: vec![event],
                }
            }
            // write then write with no reader between: WAW.
            (Some(OpenPair::Write(writer)), true) => {
                sink.pair(writer, event, DependencyKind::Waw);
                OpenPair::Write(event)
            }
            // a read joining an existing RAW group only joins the group.
            (
                Some(OpenPair::RawGroup {
                    writer,
                    mut readers,
                }),
                false,
            ) => {
                sink.pair(writer, event, DependencyKind::Raw);
                readers.push(event);
                OpenPair::RawGroup { writer, readers }
            }
            // write after a RAW group: its readers get WAR to the new write
            // (the old write reaches it through them).
            (Some(OpenPair::RawGroup { readers, .. }), true) => {
                for r in readers {
                    sink.pair(r, event, DependencyKind::War);
                }
                OpenPair::Write(event)
            }
        };
        self.queue.push(QueueItem { granule, open });
    }

    pub(crate) fn granules(&self) -> u64 {
        self.queue.len() as u64
    }

    pub(crate) fn state_bytes(&self) -> u64 {
        let readers: usize = self
            .queue
            .iter()
            .map(|item| match &item.open {
                OpenPair::Reads(r) | OpenPair::RawGroup { readers: r, .. } => r.capacity(),
                OpenPair::Write(_) => 0,
            })
            .sum();
        (self.queue.capacity() * size_of::<QueueItem>() + readers * size_of::<EventRef>()) as u64
    }
}
