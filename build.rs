//! Probes for the tools some end-to-end tests need beyond gcc and binutils
//! (clang-14, make, gdb, gdbserver, chromium). When one is missing, the tests that need it are built
//! with `#[ignore]` (cfg `rr_lite_no_<tool>`), so `cargo test` lists them as
//! ignored with the reason and counts them in its summary, instead of
//! failing on a fresh machine or passing without having run.
//!
//! `RR_LITE_REQUIRE_<TOOL>=1` (CI sets it once the tool is installed) keeps
//! the tests enabled, so a missing tool fails them instead.
//!
//! The probe runs again when PATH or one of those variables changes, or
//! when this file does: after installing a tool in a directory already on
//! PATH, `touch build.rs` (or set the variable) to enable its tests.

use std::process::{Command, Stdio};

/// A tool that only some tests need.
struct OptionalTool {
    /// The command the tests run.
    command: &'static str,
    /// Set when the tool is missing and not required.
    missing_cfg: &'static str,
    /// `=1` makes the tool required.
    require_env: &'static str,
}

const OPTIONAL_TOOLS: [OptionalTool; 5] = [
    OptionalTool {
        command: "clang-14",
        missing_cfg: "rr_lite_no_clang",
        require_env: "RR_LITE_REQUIRE_CLANG",
    },
    OptionalTool {
        command: "make",
        missing_cfg: "rr_lite_no_make",
        require_env: "RR_LITE_REQUIRE_MAKE",
    },
    OptionalTool {
        command: "gdb",
        missing_cfg: "rr_lite_no_gdb",
        require_env: "RR_LITE_REQUIRE_GDB",
    },
    OptionalTool {
        command: "gdbserver",
        missing_cfg: "rr_lite_no_gdbserver",
        require_env: "RR_LITE_REQUIRE_GDBSERVER",
    },
    OptionalTool {
        command: "chromium",
        missing_cfg: "rr_lite_no_chromium",
        require_env: "RR_LITE_REQUIRE_CHROMIUM",
    },
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    for tool in &OPTIONAL_TOOLS {
        println!("cargo::rustc-check-cfg=cfg({})", tool.missing_cfg);
        println!("cargo::rerun-if-env-changed={}", tool.require_env);
        let required = std::env::var(tool.require_env).as_deref() == Ok("1");
        if !required && !runs(tool.command) {
            println!("cargo::rustc-cfg={}", tool.missing_cfg);
        }
    }
}

/// Whether `command --version` runs and succeeds.
fn runs(command: &str) -> bool {
    Command::new(command)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
