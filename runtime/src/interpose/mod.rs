//! Interposed C library functions. The program is linked against the
//! runtime before libc, so its calls land here; each wrapper records the
//! event and calls the real function (see [`crate::real`]).

pub(crate) mod alloc;
pub(crate) mod c11;
pub(crate) mod fd;
pub(crate) mod file_status;
pub(crate) mod gomp;
pub(crate) mod guard;
pub(crate) mod input;
pub(crate) mod io;
pub(crate) mod kmp;
pub(crate) mod libc_files;
pub(crate) mod mapping;
pub(crate) mod mem;
pub(crate) mod misc;
pub(crate) mod openmp;
pub(crate) mod process;
pub(crate) mod pthread;
pub(crate) mod signals;
pub(crate) mod streams;
pub(crate) mod strings;
pub(crate) mod syscall;
pub(crate) mod walk;
