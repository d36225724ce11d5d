//! Interposed C library functions. The program is linked against the
//! runtime before libc, so its calls land here; each wrapper records the
//! event and calls the real function (see [`crate::real`]).

pub mod alloc;
pub mod io;
pub mod mem;
pub mod misc;
pub mod pthread;
