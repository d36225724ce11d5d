//! Where the recorded program and trace are now. A trace may have moved
//! since the recording (copied, renamed, sent to another machine) and its
//! program may be gone, with a copy packed into the trace (`rr-lite pack`).
//!
//! The program's stack holds both paths: the executable's (the kernel puts
//! the path given to execve at the top of the stack) and the trace's (in
//! the environment, where the runtime finds its plans). Their lengths, not
//! their text, decide where everything below them lands, so replay gives
//! each its recorded length: a private directory of symbolic links under
//! /tmp (`/tmp/rrlXXXXXX/p` to the program's copy, `.../t` to the trace),
//! reached through a path padded with `/` to the recorded length.
//! Libraries are found by the loader as when recording; in a packed trace
//! each must still be the recorded one (the runtime's is put back from the
//! pack if it is missing).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rr_lite_trace::identity::program_id;
use rr_lite_trace::pack::Manifest;
use rr_lite_trace::{TraceDir, TraceHeader};

use crate::ReplayError;

/// The environment variable naming the trace to the runtime.
pub(crate) const TRACE_ENV: &str = "RR_LITE_TRACE";
/// Set for the exec wrapper (`replay --debug`): the path to execute.
const PROGRAM_PATH_ENV: &str = "RR_LITE_REPLAY_PROGRAM";
/// Set for the exec wrapper: the value of [`TRACE_ENV`] for the program.
const TRACE_PATH_ENV: &str = "RR_LITE_REPLAY_TRACE";

/// Where replay finds what the recording named.
#[derive(Debug)]
pub(crate) struct Places {
    /// The path to execute: the recorded one, or a link of the same length
    /// to the packed copy.
    pub program: PathBuf,
    /// The value of [`TRACE_ENV`]: the recorded one, or a link of the same
    /// length to where the trace is now.
    pub trace_env: Option<OsString>,
    /// The links, removed with this value.
    _links: Vec<tempfile::TempPath>,
}

impl Places {
    /// The places of `trace`, checked: the program is the recorded one,
    /// and in a packed trace so is every library.
    pub(crate) fn resolve(trace: &TraceDir, header: &TraceHeader) -> Result<Places, ReplayError> {
        let manifest = Manifest::read(trace.path())?;
        let copy = program_copy(trace, header, manifest.as_ref())?;
        if let Some(manifest) = &manifest {
            check_libraries(trace, header, manifest)?;
        }
        let recorded_trace = header
            .env
            .iter()
            .find(|(k, _)| k == TRACE_ENV)
            .map(|(_, v)| PathBuf::from(v));
        let moved = recorded_trace.filter(|recorded| {
            std::fs::canonicalize(recorded).ok() != std::fs::canonicalize(trace.path()).ok()
        });
        let mut links = Vec::new();
        let program = match copy {
            Some(copy) => same_length_link(&copy, &header.program, &mut links)?,
            None => header.program.clone(),
        };
        let trace_env = match moved {
            Some(recorded) => {
                let now = std::fs::canonicalize(trace.path())
                    .map_err(ReplayError::io("find", trace.path()))?;
                Some(same_length_link(&now, &recorded, &mut links)?.into_os_string())
            }
            None => None,
        };
        Ok(Places {
            program,
            trace_env,
            _links: links,
        })
    }

    /// The places the exec wrapper was given ([`Places::pass_to`]), else
    /// the recorded ones.
    pub(crate) fn from_wrapper_env(header: &TraceHeader) -> Places {
        Places {
            program: std::env::var_os(PROGRAM_PATH_ENV)
                .map_or_else(|| header.program.clone(), PathBuf::from),
            trace_env: std::env::var_os(TRACE_PATH_ENV),
            _links: Vec::new(),
        }
    }

    /// Hands the places to the exec wrapper gdb or gdbserver runs.
    pub(crate) fn pass_to(&self, cmd: &mut std::process::Command) {
        cmd.env(PROGRAM_PATH_ENV, &self.program);
        if let Some(trace) = &self.trace_env {
            cmd.env(TRACE_PATH_ENV, trace);
        }
    }
}

/// The packed copy to run when the recorded program is missing or is not
/// the recorded one any more; `None` when the recorded path will do.
fn program_copy(
    trace: &TraceDir,
    header: &TraceHeader,
    manifest: Option<&Manifest>,
) -> Result<Option<PathBuf>, ReplayError> {
    let actual = program_id(&header.program);
    if actual.as_deref().ok() == Some(header.program_id.as_str()) {
        return Ok(None);
    }
    let packed = manifest
        .and_then(|m| m.copy_of(trace.path(), &header.program))
        .filter(|(_, id)| *id == header.program_id);
    match (packed, actual) {
        (Some((copy, _)), _) => {
            let id = program_id(&copy)?;
            if id != header.program_id {
                return Err(ReplayError::ProgramChanged {
                    program: copy,
                    recorded: header.program_id.clone(),
                    actual: id,
                });
            }
            Ok(Some(copy))
        }
        (None, Ok(actual)) => Err(ReplayError::ProgramChanged {
            program: header.program.clone(),
            recorded: header.program_id.clone(),
            actual,
        }),
        (None, Err(e)) => Err(ReplayError::ProgramMissing {
            program: header.program.clone(),
            source: Box::new(e),
        }),
    }
}

/// Every library of a packed trace is the recorded one; the runtime's,
/// if missing, is put back from the pack (it lives in a cache).
fn check_libraries(
    trace: &TraceDir,
    header: &TraceHeader,
    manifest: &Manifest,
) -> Result<(), ReplayError> {
    for file in manifest
        .files
        .iter()
        .filter(|f| f.recorded_path != header.program)
    {
        let path = &file.recorded_path;
        let actual = program_id(path).ok();
        if actual.as_deref() == Some(file.id.as_str()) {
            continue;
        }
        let is_runtime = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("librr_lite_rt"));
        if is_runtime && !path.exists() {
            restore(
                &trace
                    .path()
                    .join(rr_lite_trace::pack::PACKED_DIR)
                    .join(&file.copy),
                path,
            )?;
            continue;
        }
        return Err(ReplayError::LibraryChanged {
            library: path.clone(),
            recorded: file.id.clone(),
            actual: actual.unwrap_or_else(|| "missing".into()),
        });
    }
    Ok(())
}

/// Copies the packed runtime back where the program's rpath looks for it.
fn restore(copy: &Path, to: &Path) -> Result<(), ReplayError> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(ReplayError::io("create", dir))?;
    }
    std::fs::copy(copy, to).map_err(ReplayError::io("restore the runtime at", to))?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))
        .map_err(ReplayError::io("restore the runtime at", to))
}

/// Where links go, and the start of their names.
const LINK_DIR: &str = "/tmp";
const LINK_PREFIX: &str = "rrl";
/// Fewest random characters in a link's name.
const MIN_RANDOM: usize = 4;

/// A new link to `target` (kept in `links`, removed with it), returned as
/// a path exactly as long as `recorded`.
fn same_length_link(
    target: &Path,
    recorded: &Path,
    links: &mut Vec<tempfile::TempPath>,
) -> Result<PathBuf, ReplayError> {
    let want = recorded.as_os_str().len();
    let fixed = LINK_DIR.len() + 1 + LINK_PREFIX.len();
    if want < fixed + MIN_RANDOM {
        return Err(ReplayError::PathTooShort {
            recorded: recorded.to_path_buf(),
            shortest: fixed + MIN_RANDOM,
        });
    }
    // The link lives in LINK_DIR: a relative target (a copy in a trace
    // named `./trace`) would be looked up from there, and the program
    // "could not be started".
    let target = &std::fs::canonicalize(target).map_err(ReplayError::io("find", target))?;
    let random = (want - fixed).min(12);
    let link = tempfile::Builder::new()
        .prefix(LINK_PREFIX)
        .rand_bytes(random)
        .make_in(LINK_DIR, |path| std::os::unix::fs::symlink(target, path))
        .map_err(ReplayError::io("create a link in", LINK_DIR))?
        .into_temp_path();
    let name = link.file_name().unwrap_or_default().to_os_string();
    let mut padded = OsString::from(LINK_DIR);
    padded.push("/".repeat(want - LINK_DIR.len() - name.len()));
    padded.push(&name);
    debug_assert_eq!(padded.len(), want);
    links.push(link);
    Ok(PathBuf::from(padded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_take_the_recorded_length_and_go_with_their_owner() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"x").unwrap();
        let mut links = Vec::new();
        for recorded in ["/home/someone/a/much/longer/path/to/prog", "/tmp/abcd/ef"] {
            let link = same_length_link(&target, Path::new(recorded), &mut links).unwrap();
            assert_eq!(link.as_os_str().len(), recorded.len(), "{link:?}");
            assert_eq!(std::fs::read(&link).unwrap(), b"x");
        }
        // A target named relative to the current directory (a packed copy
        // in a trace named `./trace`) still works from the link's
        // directory (it did not start).
        let here = std::env::current_dir().unwrap();
        let local = tempfile::tempdir_in(&here).unwrap();
        std::fs::write(local.path().join("target"), b"y").unwrap();
        let relative = local.path().strip_prefix(&here).unwrap().join("target");
        assert!(relative.is_relative());
        let link = same_length_link(&relative, Path::new("/tmp/abcd/ef"), &mut links).unwrap();
        assert_eq!(std::fs::read(&link).unwrap(), b"y", "{relative:?}");
        let made: Vec<PathBuf> = links.iter().map(|l| l.to_path_buf()).collect();
        drop(links);
        assert!(made.iter().all(|l| !l.exists()), "links left behind");
        let err = same_length_link(&target, Path::new("/a/b"), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("/a/b"), "{err}");
    }
}
