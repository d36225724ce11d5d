//! The ThreadSanitizer ABI: every `__tsan_*` function gcc and clang emit,
//! and the libatomic calls they make beside them.
//! Each hook passes its call site to the event core (`crate::site`).

pub(crate) mod access;
pub(crate) mod atomic;
pub(crate) mod fast_count;
pub(crate) mod libatomic;
pub(crate) mod misc;
