//! The ThreadSanitizer ABI: every `__tsan_*` function gcc and clang emit.
//! Each hook passes its call site to the event core (`crate::site`).

pub(crate) mod access;
pub(crate) mod atomic;
pub(crate) mod misc;
