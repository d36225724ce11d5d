//! The rr-lite trace format: what an event is, how a thread's log is encoded
//! byte by byte (see docs/FORMAT.md), and how a trace directory is laid out
//! and read back in the global order. Every reader returns a [`TraceError`]
//! naming the file and offset on bad input; nothing here panics on bad bytes.
//!
//! The encoder ([`codec::encode_entry`]) never allocates: the injected
//! runtime calls it from its hooks.

#![forbid(unsafe_code)]

pub mod bounded;
pub mod codec;
pub mod dir;
pub mod error;
pub mod event;
pub mod header;
pub mod identity;
pub mod os_text;
pub mod pack;
pub mod plan;
pub mod private;
pub mod reader;
pub mod state;
pub mod workers;

pub use dir::{GlobalOrder, OrderedEvent, TraceDir, resolve_trace};
pub use error::{Result, TraceError};
pub use event::{
    ACCESS_HASH_MULTIPLIER, ACCESS_HASH_SEED, Access, EventKind, HEAP_BLOCK_HEADER,
    PRIVATE_CLOCK_STEP, RecordedEvent, SYNCED_CLOCK_STEP, access_term, fold_access_hash,
    heap_block_range, is_private_step, pseudo,
};
pub use header::{ChaosSchedule, ProgramEnding, TraceHeader};
pub use reader::ThreadLogReader;
