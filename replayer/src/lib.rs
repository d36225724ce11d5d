//! Replays a recorded run. `plans` turns the split's sync points and the
//! recorded results its pass gathers into per-thread replay plans the runtime maps in
//! place (sequential replay's total order from `runs`); `session` runs the
//! program as recorded (same path, argv, cwd, environment, ASLR off; a moved
//! or packed trace through paths of the recorded lengths, `places`) with
//! the runtime in replay mode, watches the shared state for a deadlock, and
//! reads back how it ended: the program's status, a divergence, or a
//! deadlock, with the details for a report; `governor` moves the
//! program's threads to one CPU while they hand over to each other at fine
//! grain (`replay --one-cpu`). `debug` runs the same session
//! under gdb (`replay --debug`). `inputs` tells which files the program
//! read live have changed since the recording.

#![forbid(unsafe_code)]

pub mod debug;
mod error;
pub mod governor;
pub mod inputs;
mod leftovers;
mod places;
pub mod plans;
mod runs;
pub mod session;

pub use error::ReplayError;
pub use inputs::{changed_inputs, created_files_present};
pub use plans::{WhyBuilt, ensure_plans};
pub use session::{
    DeadlockReport, DivergenceReport, ReplayOptions, ReplayOutcome, Replayed, WaitEdge, replay,
};
