//! `rr-lite-cc ARGS...` = `rr-lite cc ARGS...` (see `src/one_word_wrapper.rs`).

#![forbid(unsafe_code)]

#[path = "../one_word_wrapper.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::run("cc")
}
