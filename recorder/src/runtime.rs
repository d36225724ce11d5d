//! The embedded runtime library, installed on first use into a cache
//! directory named after its content hash, next to a `libtsan.so` linker
//! script that points at it (see `toolchain` for why).

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
pub fn runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache")
        });
    cache.join("rr-lite").join(format!("runtime-{HASH}"))
}

/// Installs the runtime (if this exact build is not there yet) and returns
/// its directory.
pub fn install() -> Result<PathBuf, RecordError> {
    let dir = runtime_dir();
    let lib = dir.join(LIBRARY);
    let up_to_date = std::fs::metadata(&lib).is_ok_and(|m| m.len() == RUNTIME.len() as u64);
    if !up_to_date {
        std::fs::create_dir_all(&dir).map_err(RecordError::io("create", &dir))?;
        write_atomically(&lib, RUNTIME)?;
    }
    let script = dir.join("libtsan.so");
    let text = format!(
        "/* rr-lite: -ltsan means the rr-lite runtime */\nINPUT({})\n",
        lib.display()
    );
    if std::fs::read_to_string(&script).ok().as_deref() != Some(text.as_str()) {
        write_atomically(&script, text.as_bytes())?;
    }
    Ok(dir)
}

/// Writes via a temporary file and a rename, so that concurrent compiler
/// invocations (make -j) never see a half-written library.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(RecordError::io("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(RecordError::io("move into place", path))
}
