//! Files the recorded program read live (without `record --snapshot-files`)
//! and that have changed or gone since: replay reads them again, so its
//! output may differ, and the user is told before it starts.
//!
//! The runtime lists them in `<trace>/files-read`: `<size> <mtime ns>
//! <path in hex>` per file when first opened for reading, `w <path in hex>`
//! when the program later opened it for writing (its end state is then the
//! program's own, not input).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rr_lite_trace::TraceDir;

use crate::ReplayError;

/// The list's name in the trace directory.
pub const FILES_READ: &str = "files-read";
/// Largest list read (a program that opened a million files): beyond it the
/// check is skipped.
const MAX_LIST_BYTES: u64 = 64 << 20;

/// One line per input file that differs from the recording's, in path
/// order; empty when all are as recorded (or the trace has no list).
pub fn changed_inputs(trace: &TraceDir, cwd: &Path) -> Result<Vec<String>, ReplayError> {
    let list = trace.path().join(FILES_READ);
    let Ok(meta) = std::fs::symlink_metadata(&list) else {
        return Ok(Vec::new());
    };
    if !meta.is_file() || meta.len() > MAX_LIST_BYTES {
        return Ok(Vec::new());
    }
    let text = std::fs::read(&list).map_err(ReplayError::io("read", &list))?;
    let mut files: BTreeMap<PathBuf, Option<(u64, u64)>> = BTreeMap::new();
    for line in text.split(|&b| b == b'\n') {
        match parse(line) {
            Some((path, Some(recorded))) => {
                files.entry(path).or_insert(Some(recorded));
            }
            Some((path, None)) => {
                files.insert(path, None);
            }
            None => {}
        }
    }
    Ok(files
        .into_iter()
        .filter_map(|(path, recorded)| {
            let (size, mtime) = recorded?;
            // Pseudo files name something else in this process (the
            // runtime does not list them; older lists might).
            if rr_lite_trace::bounded::is_per_process(path.as_os_str().as_bytes()) {
                return None;
            }
            let full = cwd.join(&path);
            let why = match std::fs::metadata(&full) {
                Err(_) => "gone".to_string(),
                Ok(m) if m.len() != size => format!("{size} bytes then, {} now", m.len()),
                Ok(m) if modified_ns(&m) != mtime => "modified since".to_string(),
                Ok(_) => return None,
            };
            Some(format!("{}: {why}", path.display()))
        })
        .collect())
}

fn modified_ns(m: &std::fs::Metadata) -> u64 {
    (m.mtime() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(m.mtime_nsec() as u64)
}

/// `<size> <mtime> <hex>` → (path, Some((size, mtime))); `w <hex>` →
/// (path, None); anything else is skipped.
fn parse(line: &[u8]) -> Option<(PathBuf, Option<(u64, u64)>)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut fields = text.split(' ');
    let first = fields.next()?;
    if first == "w" {
        return Some((from_hex(fields.next()?)?, None));
    }
    let size = first.parse().ok()?;
    let mtime = fields.next()?.parse().ok()?;
    Some((from_hex(fields.next()?)?, Some((size, mtime))))
}

fn from_hex(hex: &str) -> Option<PathBuf> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    Some(PathBuf::from(OsStr::from_bytes(&bytes?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_bad_ones_are_skipped() {
        assert_eq!(
            parse(b"12 345 612e747874"),
            Some((PathBuf::from("a.txt"), Some((12, 345))))
        );
        assert_eq!(parse(b"w 612e747874"), Some((PathBuf::from("a.txt"), None)));
        for bad in [
            &b""[..],
            b"12",
            b"12 x 61",
            b"1 2 6",
            b"1 2 zz",
            b"w",
            b"\xff",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
