//! `rr-lite pack`: copies into the trace the files replay needs from
//! outside it (the executable and every file the module map names: shared
//! libraries, the rr-lite runtime), so the trace replays after it moves or
//! the program is deleted. `packed/manifest.json` lists each copy with the
//! path it was recorded at and its identity ([`crate::identity`]); replay
//! uses a copy only where the file at the recorded path is missing or is
//! not that file.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{TraceDir, TraceError};

/// Directory of the copies, inside the trace.
pub const PACKED_DIR: &str = "packed";
/// The list of copies, inside [`PACKED_DIR`].
pub const MANIFEST_FILE: &str = "manifest.json";
/// Largest manifest read back.
const MANIFEST_LIMIT: u64 = 16 << 20;
/// Largest file copied (an executable or a library).
const FILE_LIMIT: u64 = 4 << 30;

/// One copied file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackedFile {
    /// Where the recording found it (absolute).
    pub recorded_path: PathBuf,
    /// The copy's name inside [`PACKED_DIR`].
    pub copy: String,
    /// [`crate::identity::program_id_of`] its bytes.
    pub id: String,
    pub bytes: u64,
}

/// `packed/manifest.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The executable first, then the module map's files in its order.
    pub files: Vec<PackedFile>,
}

impl Manifest {
    /// The manifest of a packed trace, `None` if it was never packed.
    pub fn read(trace: &Path) -> Result<Option<Manifest>, TraceError> {
        let path = trace.join(PACKED_DIR).join(MANIFEST_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let bytes = crate::bounded::read(&path, MANIFEST_LIMIT)?;
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| TraceError::BadFile {
                path: path.clone(),
                what: format!("not a pack manifest: {e}"),
            })?;
        for f in &manifest.files {
            let plain = !f.copy.is_empty()
                && !f.copy.starts_with('.')
                && !f.copy.contains('/')
                && f.recorded_path.is_absolute();
            if !plain {
                return Err(TraceError::BadFile {
                    path,
                    what: format!("bad entry for {}", f.recorded_path.display()),
                });
            }
        }
        Ok(Some(manifest))
    }

    /// Every copy: `(recorded path, the copy's path)`.
    pub fn copies<'a>(&'a self, trace: &'a Path) -> impl Iterator<Item = (&'a Path, PathBuf)> + 'a {
        self.files.iter().map(move |f| {
            (
                f.recorded_path.as_path(),
                trace.join(PACKED_DIR).join(&f.copy),
            )
        })
    }

    /// The copy of the file recorded at `recorded_path`, if packed.
    pub fn copy_of(&self, trace: &Path, recorded_path: &Path) -> Option<(PathBuf, &str)> {
        self.files
            .iter()
            .find(|f| f.recorded_path == recorded_path)
            .map(|f| (trace.join(PACKED_DIR).join(&f.copy), f.id.as_str()))
    }
}

/// What [`pack`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackSummary {
    pub files: usize,
    pub bytes: u64,
}

/// Copies the executable and `mapped` (the files the module map names:
/// the symbols crate reads it) into `packed/`, replacing an earlier pack.
/// The executable must still be the recorded one (its identity is
/// checked): a pack of another program would replay nothing useful.
/// Pseudo file systems and files gone since are left out.
pub fn pack(trace: &TraceDir, mapped: &[PathBuf]) -> Result<PackSummary, TraceError> {
    let header = trace.header().ok_or_else(|| TraceError::NotATrace {
        path: trace.path().to_path_buf(),
    })?;
    let mut paths = vec![header.program.clone()];
    for path in mapped {
        let pseudo = crate::bounded::is_per_process(path.as_os_str().as_bytes());
        if !pseudo && path.is_file() && !paths.contains(path) {
            paths.push(path.clone());
        }
    }
    let tmp = trace.path().join(format!("{PACKED_DIR}.tmp"));
    let _ = std::fs::remove_dir_all(&tmp);
    crate::private::create_dir(&tmp).map_err(TraceError::io("create", &tmp))?;
    let earlier = Manifest::read(trace.path())?;
    let mut manifest = Manifest::default();
    for (n, path) in paths.iter().enumerate() {
        // A file gone since an earlier pack keeps its copy.
        let bytes = crate::bounded::read(path, FILE_LIMIT).or_else(|e| {
            match earlier.as_ref().and_then(|m| m.copy_of(trace.path(), path)) {
                Some((copy, _)) => crate::bounded::read(&copy, FILE_LIMIT),
                None => Err(e),
            }
        })?;
        let id = crate::identity::program_id_of(&bytes);
        if n == 0 && id != header.program_id {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(TraceError::BadFile {
                path: path.clone(),
                what: format!(
                    "is not the recorded program any more (recorded {}, now {id}): \
                     nothing to pack it from",
                    header.program_id
                ),
            });
        }
        let name = path.file_name().map_or_else(
            || "file".to_string(),
            |n| n.to_string_lossy().replace('/', "_"),
        );
        let copy = format!("{n:04}-{name}");
        let target = tmp.join(&copy);
        crate::private::write(&target, &bytes).map_err(TraceError::io("write", &target))?;
        // Executable, still private: replay runs the program's copy.
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700))
            .map_err(TraceError::io("write", &target))?;
        manifest.files.push(PackedFile {
            recorded_path: path.clone(),
            copy,
            id,
            bytes: bytes.len() as u64,
        });
    }
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serialises");
    let manifest_path = tmp.join(MANIFEST_FILE);
    crate::private::write(&manifest_path, text).map_err(TraceError::io("write", &manifest_path))?;
    let packed = trace.path().join(PACKED_DIR);
    let _ = std::fs::remove_dir_all(&packed);
    std::fs::rename(&tmp, &packed).map_err(TraceError::io("rename", &tmp))?;
    Ok(PackSummary {
        files: manifest.files.len(),
        bytes: manifest.files.iter().map(|f| f.bytes).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_with_paths_out_of_the_pack_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = Manifest {
            files: vec![PackedFile {
                recorded_path: "/bin/true".into(),
                copy: "../../etc/passwd".into(),
                id: "x".into(),
                bytes: 1,
            }],
        };
        let packed = dir.path().join(PACKED_DIR);
        std::fs::create_dir(&packed).unwrap();
        std::fs::write(
            packed.join(MANIFEST_FILE),
            serde_json::to_string(&manifest).unwrap(),
        )
        .unwrap();
        let err = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("bad entry for /bin/true"), "{err}");
    }
}
