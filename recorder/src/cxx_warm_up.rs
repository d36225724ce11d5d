//! `rr-lite c++`'s warm-up object: a constructor linked into every C++
//! program the wrapper links, which builds the C++ library's lazily built
//! locale state (the standard streams' fill characters, the number caches)
//! before `main`, while the program has one thread. Built later, by
//! whichever thread first prints a number, it is built inside the library,
//! where no hook sees who looked first: a replay could take the other path
//! (`cxx/warm_up.cpp` says more).
//!
//! The object is compiled on first use with the link's own compiler and
//! the flags that choose its C++ library and target, into the runtime's
//! directory (private to the user, see `runtime::install`), under a name
//! that hashes all of these, so a changed compiler or flag builds anew.

use std::ffi::{OsStr, OsString};
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = include_str!("cxx/warm_up.cpp");

/// Options that choose the C++ library, its ABI or the target, passed on
/// to the warm-up's compilation (with their values when these are
/// separate arguments), so that its object links with the program's.
const LIBRARY_OPTIONS: &[&str] = &[
    "-stdlib=",
    "-D_GLIBCXX_USE_CXX11_ABI",
    "--sysroot",
    "-isysroot",
    "--target=",
    "--gcc-toolchain=",
    "-m32",
    "-m64",
    "-mx32",
    "-nostdinc++",
];
/// Of those, the ones whose value may be the next argument.
const SEPARATE_VALUE: &[&str] = &["--sysroot", "-isysroot", "-target"];

/// Links that get no warm-up: without the standard library there is
/// nothing to warm (and nothing to link it with), and a partial link
/// (`-r`) is linked again later, which would add it twice.
const NO_WARM_UP: &[&str] = &["-nostdlib", "-nostdlib++", "-nodefaultlibs", "-r", "-Wl,-r"];

/// Whether a link with `args` gets the warm-up.
pub(crate) fn wanted(args: &[OsString]) -> bool {
    !args
        .iter()
        .any(|a| NO_WARM_UP.iter().any(|n| a == OsStr::new(n)))
}

/// `args`' options that choose the library or target (see
/// [`LIBRARY_OPTIONS`]), in order.
fn library_flags(args: &[OsString]) -> Vec<OsString> {
    let mut flags = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        if SEPARATE_VALUE.iter().any(|o| text == *o) {
            flags.push(arg.clone());
            flags.extend(iter.next().cloned());
        } else if LIBRARY_OPTIONS.iter().any(|o| text.starts_with(o)) {
            flags.push(arg.clone());
        }
    }
    flags
}

/// The warm-up object for a link by `compiler` (whose `--version` printed
/// `version`) with `args`, compiled into `dir` if not there yet. `None`,
/// after a warning on stderr, if it cannot be built: the program then
/// links without it, as before.
pub(crate) fn object(
    compiler: &str,
    version: &str,
    args: &[OsString],
    dir: &Path,
) -> Option<PathBuf> {
    let flags = library_flags(args);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(SOURCE.as_bytes());
    hasher.write(compiler.as_bytes());
    hasher.write(version.as_bytes());
    for flag in &flags {
        hasher.write(flag.as_encoded_bytes());
        hasher.write_u8(0);
    }
    let object = dir.join(format!("cxx-warm-up-{:016x}.o", hasher.finish()));
    if object.is_file() {
        return Some(object);
    }
    match compile(compiler, &flags, &object) {
        Ok(()) => Some(object),
        Err(why) => {
            eprintln!(
                "rr-lite c++: warning: linking without the C++ warm-up ({why}); threads that \
                 first print numbers at the same time may not replay (README, \"Limits\")"
            );
            None
        }
    }
}

/// Compiles the warm-up into `object`, through a temporary directory and
/// file moved into place (builds run compilers side by side). The source
/// keeps one name, which debuggers show for its frames.
fn compile(compiler: &str, flags: &[OsString], object: &Path) -> Result<(), String> {
    let scratch = object.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let built = compile_in(&scratch, compiler, flags).and_then(|built| {
        std::fs::rename(&built, object).map_err(|e| format!("{}: {e}", object.display()))
    });
    let _ = std::fs::remove_dir_all(&scratch);
    built
}

/// Compiles the warm-up in `scratch`; returns the object's path there.
fn compile_in(scratch: &Path, compiler: &str, flags: &[OsString]) -> Result<PathBuf, String> {
    let source = scratch.join("rr_lite_cxx_warm_up.cpp");
    let built = scratch.join("rr_lite_cxx_warm_up.o");
    std::fs::write(&source, SOURCE).map_err(|e| format!("{}: {e}", source.display()))?;
    let out = Command::new(compiler)
        .args(flags)
        .args(["-x", "c++", "-O2", "-fPIC", "-w", "-c"])
        .arg(&source)
        .arg("-o")
        .arg(&built)
        .output()
        .map_err(|e| format!("{compiler}: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        let first = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!("{compiler} failed: {first}"));
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::args;

    #[test]
    fn library_flags_keep_what_chooses_the_library() {
        let a = args(&[
            "-O2",
            "-stdlib=libc++",
            "x.o",
            "--sysroot",
            "/sys",
            "-D_GLIBCXX_USE_CXX11_ABI=0",
            "-DNDEBUG",
            "-o",
            "x",
        ]);
        let want = args(&[
            "-stdlib=libc++",
            "--sysroot",
            "/sys",
            "-D_GLIBCXX_USE_CXX11_ABI=0",
        ]);
        assert_eq!(library_flags(&a), want);
    }

    #[test]
    fn links_without_the_standard_library_get_no_warm_up() {
        assert!(wanted(&args(&["x.o", "-o", "x"])));
        assert!(!wanted(&args(&["-nostdlib", "x.o"])));
        assert!(!wanted(&args(&["-r", "a.o", "b.o", "-o", "ab.o"])));
    }
}
