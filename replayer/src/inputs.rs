//! Files the recorded program read live (without `record --snapshot-files`)
//! and that have changed or gone since: replay reads them again, so its
//! output may differ, and the user is told before it starts. And files the
//! recording created that exist when a replay starts: a program that looks
//! for its output first (zstd `-o`) then takes another path, which a
//! diverging replay names as the likely cause.
//!
//! The runtime lists them in `<trace>/files-read`: `<size> <mtime ns>
//! <path in hex>` per file when first opened for reading, `w <path in hex>`
//! when the program later opened it for writing (its end state is then the
//! program's own, not input), `c <path in hex>` when an open created it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rr_lite_trace::TraceDir;

use crate::ReplayError;

/// The list's name in the trace directory.
pub const FILES_READ: &str = "files-read";
/// Largest list read (a program that opened a million files): beyond it the
/// checks are skipped.
const MAX_LIST_BYTES: u64 = 64 << 20;

/// One line of the list.
#[derive(Debug, PartialEq, Eq)]
enum Listed {
    /// First opened for reading, with its size and mtime then.
    Read { size: u64, mtime: u64 },
    /// Opened for writing later.
    Written,
    /// Created by an open.
    Created,
}

/// One line per input file that differs from the recording's, in path
/// order; empty when all are as recorded (or the trace has no list).
pub fn changed_inputs(trace: &TraceDir, cwd: &Path) -> Result<Vec<String>, ReplayError> {
    let mut files: BTreeMap<PathBuf, Option<(u64, u64)>> = BTreeMap::new();
    for (path, listed) in listed(trace)? {
        match listed {
            Listed::Read { size, mtime } => {
                files.entry(path).or_insert(Some((size, mtime)));
            }
            Listed::Written => {
                files.insert(path, None);
            }
            Listed::Created => {}
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

/// The files the recording created (an open made them) that exist now, in
/// path order, as paths from `cwd` (the recorded working directory): left
/// from the recording or from an earlier replay. Empty if none (or the
/// trace has no list).
pub fn created_files_present(trace: &TraceDir, cwd: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    let created: BTreeSet<PathBuf> = listed(trace)?
        .into_iter()
        .filter(|(_, listed)| *listed == Listed::Created)
        .map(|(path, _)| cwd.join(path))
        .collect();
    Ok(created
        .into_iter()
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .collect())
}

/// The list's lines that parse, in order (none if the trace has no list,
/// or one too long to read).
fn listed(trace: &TraceDir) -> Result<Vec<(PathBuf, Listed)>, ReplayError> {
    let list = trace.path().join(FILES_READ);
    let Ok(meta) = std::fs::symlink_metadata(&list) else {
        return Ok(Vec::new());
    };
    if !meta.is_file() || meta.len() > MAX_LIST_BYTES {
        return Ok(Vec::new());
    }
    let text = std::fs::read(&list).map_err(ReplayError::io("read", &list))?;
    Ok(text.split(|&b| b == b'\n').filter_map(parse).collect())
}

fn modified_ns(m: &std::fs::Metadata) -> u64 {
    (m.mtime() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(m.mtime_nsec() as u64)
}

/// `<size> <mtime> <hex>`, `w <hex>` or `c <hex>` → the path and what
/// the line says of it; anything else is skipped.
fn parse(line: &[u8]) -> Option<(PathBuf, Listed)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut fields = text.split(' ');
    let first = fields.next()?;
    let mark = match first {
        "w" => Some(Listed::Written),
        "c" => Some(Listed::Created),
        _ => None,
    };
    if let Some(listed) = mark {
        return Some((from_hex(fields.next()?)?, listed));
    }
    let size = first.parse().ok()?;
    let mtime = fields.next()?.parse().ok()?;
    Some((from_hex(fields.next()?)?, Listed::Read { size, mtime }))
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
            Some((
                PathBuf::from("a.txt"),
                Listed::Read {
                    size: 12,
                    mtime: 345
                }
            ))
        );
        assert_eq!(
            parse(b"w 612e747874"),
            Some((PathBuf::from("a.txt"), Listed::Written))
        );
        assert_eq!(
            parse(b"c 612e747874"),
            Some((PathBuf::from("a.txt"), Listed::Created))
        );
        for bad in [
            &b""[..],
            b"12",
            b"12 x 61",
            b"1 2 6",
            b"1 2 zz",
            b"w",
            b"c",
            b"c 6",
            b"\xff",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    proptest::proptest! {
        /// Any line parses or is skipped, never a panic; the three forms
        /// the runtime writes give back their path and what they say.
        #[test]
        fn lines_parse_back_and_nothing_panics(
            junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            path in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64),
            size: u64,
            mtime: u64,
        ) {
            let _ = parse(&junk);
            let name = PathBuf::from(OsStr::from_bytes(&path));
            let read = format!("{size} {mtime} {}", hex(&path));
            proptest::prop_assert_eq!(
                parse(read.as_bytes()),
                Some((name.clone(), Listed::Read { size, mtime }))
            );
            let written = format!("w {}", hex(&path));
            proptest::prop_assert_eq!(parse(written.as_bytes()), Some((name.clone(), Listed::Written)));
            let created = format!("c {}", hex(&path));
            proptest::prop_assert_eq!(parse(created.as_bytes()), Some((name, Listed::Created)));
        }
    }
}
