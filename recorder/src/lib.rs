//! Produces traces. `toolchain` builds programs with the rr-lite runtime
//! (the `rr-lite cc` / `rr-lite c++` wrappers, the embedded runtime they link
//! and `cxx_warm_up`, the C++ programs' warm-up object); `session` records
//! one run of such a program into a trace directory, finalising it however
//! the program ends (exit, crash, Ctrl-C).

#![forbid(unsafe_code)]

pub mod chaos;
mod cxx_warm_up;
mod error;
mod instrumented;
pub mod runtime;
pub mod session;
pub mod toolchain;

pub use error::RecordError;
pub use instrumented::{
    Instrumentation, check_instrumentation, other_builds_runtime, unmodelled_libraries,
};
pub use rr_lite_supervise::OutputWatch;
pub use session::{RecordOptions, RecordStdin, Recording, record};
