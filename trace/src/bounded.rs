//! Reading a whole file of a trace that may come from someone else: only a
//! regular file (a link to `/dev/zero` or a FIFO would never end), and at
//! most a limit that the format sets for that file, so no read grows memory
//! without bound.

use std::io::Read;
use std::path::Path;

use crate::TraceError;

/// Largest `header.json` (argv and environment included).
pub const HEADER_LIMIT: u64 = 64 << 20;
/// Largest `version` file.
pub const VERSION_LIMIT: u64 = 64;
/// Largest module map.
pub const MAPS_LIMIT: u64 = 64 << 20;
/// Largest split log of one thread.
pub const SPLIT_LOG_LIMIT: u64 = 1 << 32;

/// Path prefixes of the kernel's pseudo file systems: what their files hold,
/// and even which file a path names (`/proc/self/exe`), depends on the
/// process and the moment, so they are read live, never copied or checked.
pub const PER_PROCESS_PREFIXES: [&str; 3] = ["/proc/", "/sys/", "/dev/"];

/// Whether `path` lies in a pseudo file system ([`PER_PROCESS_PREFIXES`]).
pub fn is_per_process(path: &[u8]) -> bool {
    PER_PROCESS_PREFIXES
        .iter()
        .any(|prefix| path.starts_with(prefix.as_bytes()))
}

/// The bytes of `path`, a regular file of at most `limit` bytes.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, TraceError> {
    let bad = |what: String| TraceError::BadFile {
        path: path.to_path_buf(),
        what,
    };
    let meta = std::fs::metadata(path).map_err(TraceError::io("read", path))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    if meta.len() > limit {
        return Err(bad(format!(
            "{} bytes, more than the {limit} this file may have",
            meta.len()
        )));
    }
    let file = std::fs::File::open(path).map_err(TraceError::io("open", path))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(TraceError::io("read", path))?;
    if bytes.len() as u64 > limit {
        return Err(bad(format!(
            "grew past the {limit} bytes this file may have"
        )));
    }
    Ok(bytes)
}

/// [`read`] as text.
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, TraceError> {
    String::from_utf8(read(path, limit)?).map_err(|_| TraceError::BadFile {
        path: path.to_path_buf(),
        what: "not UTF-8 text".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_links_to_them_and_large_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("header.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let e = read(&link, HEADER_LIMIT).unwrap_err().to_string();
        assert!(
            e.contains("not a regular file") && e.contains("header.json"),
            "{e}"
        );
        let big = tmp.path().join("version");
        std::fs::write(&big, vec![b'9'; 65]).unwrap();
        let e = read(&big, VERSION_LIMIT).unwrap_err().to_string();
        assert!(e.contains("more than the 64"), "{e}");
        std::fs::write(&big, "2\n").unwrap();
        assert_eq!(read_to_string(&big, VERSION_LIMIT).unwrap(), "2\n");
    }
}
