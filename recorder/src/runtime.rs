//! The embedded runtime library, installed on first use into a cache
//! directory named after its content hash, next to a `libtsan.so` linker
//! script that points at it (see `toolchain` for why).

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::RecordError;

/// The runtime built by build.rs.
static RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/librr_lite_rt.so"));
const HASH: &str = env!("RR_LITE_RUNTIME_HASH");
/// File name of the runtime library (also its soname).
pub const LIBRARY: &str = "librr_lite_rt.so";
/// Overrides the directory the runtime is installed into.
pub const RUNTIME_DIR_ENV: &str = "RR_LITE_RUNTIME_DIR";

/// Where this build's runtime lives: `$RR_LITE_RUNTIME_DIR`, else
/// `$XDG_CACHE_HOME/rr-lite/runtime-<hash>`, else `~/.cache/rr-lite/...`.
/// Always an absolute path: it goes into every instrumented binary as its
/// rpath, and a relative one is looked up from wherever the binary runs
/// (Phoenix's makefiles set `HOME=../..`: their programs did not start, the
/// runtime not found). A relative `$XDG_CACHE_HOME` is ignored, as the XDG
/// specification says; a relative `$HOME` or `$RR_LITE_RUNTIME_DIR` is
/// taken from the current directory.
pub fn runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR_ENV).filter(|d| !d.is_empty()) {
        return absolute(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .unwrap_or_else(|| {
            absolute(PathBuf::from(
                std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()),
            ))
            .join(".cache")
        });
    cache.join("rr-lite").join(format!("runtime-{HASH}"))
}

/// `path` made absolute from the current directory, without `..` if it
/// exists (as it is, if the current directory cannot be read).
fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::fs::canonicalize(&path)
        .or_else(|_| std::path::absolute(&path))
        .unwrap_or(path)
}

/// Installs the runtime (if this exact build is not there yet, or the
/// installed copy is not trustworthy) and returns its directory.
///
/// Every instrumented binary loads the library from there through its
/// rpath, so a copy someone else could write is code injection: the
/// directory must be the user's and writable by nobody else (else an
/// error), and the library the user's, not writable by group or others,
/// with exactly this build's bytes (else it is written again).
pub fn install() -> Result<PathBuf, RecordError> {
    let dir = runtime_dir();
    DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(&dir)
        .map_err(RecordError::io("create", &dir))?;
    check_private(&dir)?;
    let lib = dir.join(LIBRARY);
    let stamp = dir.join(VERIFIED_STAMP);
    if !stamp_matches(&lib, &stamp) {
        if !is_trusted_copy(&lib, RUNTIME) {
            write_atomically(&lib, RUNTIME)?;
        }
        // Best effort: without it the next run compares the bytes again.
        if let Some(text) = std::fs::symlink_metadata(&lib).ok().map(|m| stamp_text(&m)) {
            let _ = write_atomically(&stamp, text.as_bytes());
        }
    }
    let script = dir.join("libtsan.so");
    let text = format!(
        "/* rr-lite: -ltsan means the rr-lite runtime */\nINPUT({})\n",
        lib.display()
    );
    if !is_trusted_copy(&script, text.as_bytes()) {
        write_atomically(&script, text.as_bytes())?;
    }
    Ok(dir)
}

/// The directory belongs to this user and nobody else can write into it.
fn check_private(dir: &Path) -> Result<(), RecordError> {
    let meta = std::fs::metadata(dir).map_err(RecordError::io("read", dir))?;
    let me = std::fs::metadata("/proc/self").map_or(meta.uid(), |m| m.uid());
    if meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(RecordError::UnsafeRuntimeDir {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// Beside the library: its identity and times when its bytes were last
/// found to be this build's. Comparing 17 MB took 20 ms of every `record`,
/// `replay` and `cc`; any write to the file since (even one that puts the
/// modification time back) changes its change time, and then the bytes are
/// compared again.
const VERIFIED_STAMP: &str = "librr_lite_rt.so.verified";

fn stamp_text(m: &std::fs::Metadata) -> String {
    format!(
        "{HASH} dev {} ino {} size {} mtime {}.{:09} ctime {}.{:09}\n",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// The library is still the file whose bytes were verified, and still
/// only its owner's to write.
fn stamp_matches(lib: &Path, stamp: &Path) -> bool {
    let Ok(m) = std::fs::symlink_metadata(lib) else {
        return false;
    };
    is_private_file(&m)
        && std::fs::symlink_metadata(stamp).is_ok_and(|s| is_private_file(&s))
        && std::fs::read_to_string(stamp).is_ok_and(|text| text == stamp_text(&m))
}

/// A regular file of this user's that only they can write.
fn is_private_file(m: &std::fs::Metadata) -> bool {
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    m.is_file() && Some(m.uid()) == me && m.mode() & 0o022 == 0
}

/// `path` holds exactly `bytes`, belongs to this user and only they can
/// write it.
fn is_trusted_copy(path: &Path, bytes: &[u8]) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        is_private_file(&m)
            && m.len() == bytes.len() as u64
            && std::fs::read(path).is_ok_and(|b| b == bytes)
    })
}

/// Writes via a temporary file and a rename, so that concurrent compiler
/// invocations (make -j) never see a half-written library. The file is
/// 0644 whatever the umask (readable, so that programs can load it).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .map_err(RecordError::io("create", &tmp))?;
    file.write_all(bytes)
        .map_err(RecordError::io("write", &tmp))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(RecordError::io("move into place", path))
}
