//! Builds the injected runtime (`librr_lite_rt.so`, crate `rr-lite-runtime`)
//! and embeds it, so that `rr-lite cc` works from any directory after
//! `cargo build` or `cargo install` with no other file to ship.
//!
//! Cargo cannot depend on a cdylib's artifact on stable, so this runs a
//! nested `cargo build` of the runtime, in release mode with panic=abort,
//! into its own target directory (no lock shared with the outer build).

use std::env;
use std::hash::Hasher;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest
        .parent()
        .expect("recorder/ is inside the workspace")
        .to_path_buf();
    for dir in [
        "runtime/src",
        "runtime/Cargo.toml",
        "trace/src",
        "trace/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    println!("cargo:rerun-if-env-changed=RR_LITE_PREBUILT_RUNTIME");
    let so = match env::var_os("RR_LITE_PREBUILT_RUNTIME") {
        Some(path) => PathBuf::from(path),
        None => build_runtime(&workspace),
    };
    let bytes = std::fs::read(&so).unwrap_or_else(|e| panic!("reading {}: {e}", so.display()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(&bytes);
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("librr_lite_rt.so"), &bytes).expect("writing OUT_DIR/librr_lite_rt.so");
    println!(
        "cargo:rustc-env=RR_LITE_RUNTIME_HASH={:016x}",
        hasher.finish()
    );
}

fn build_runtime(workspace: &std::path::Path) -> PathBuf {
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join("embedded-runtime");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args([
            "build",
            "--release",
            "-p",
            "rr-lite-runtime",
            "--config",
            "profile.release.panic=\"abort\"",
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's wrappers and flags (clippy, coverage, cross) are not
    // for the runtime.
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("running cargo to build the runtime");
    assert!(status.success(), "building rr-lite-runtime failed");
    target_dir.join("release/librr_lite_rt.so")
}
