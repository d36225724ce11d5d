//! `rr-lite-cxx ARGS...` = `rr-lite c++ ARGS...` (see `src/one_word_wrapper.rs`). Cargo
//! cannot name a binary `rr-lite-c++`; `rr-lite` answers to that name too,
//! through a link (README).

#![forbid(unsafe_code)]

#[path = "../one_word_wrapper.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::run("c++")
}
