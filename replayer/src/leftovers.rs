//! Files a replayed program names after its process id, which replay gives
//! it as recorded: a replay that ends early (a divergence, a kill) leaves
//! them behind, and the next replay of the same trace would find them.
//!
//! One is known: LLVM's OpenMP runtime (libomp) registers itself at start-up
//! in `/dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>`, created exclusively and
//! removed at exit. Found already there, libomp checks whether its owner
//! still lives (reading `/proc/<pid>/maps`) and takes it over: another path
//! through its start-up than the recording's, with other events.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rr_lite_trace::TraceDir;

/// libomp's registration file for the recorded process, removed when the
/// replay is over if the replay made it.
pub(crate) struct OpenMpRegistration {
    made_by_replay: Option<PathBuf>,
}

impl OpenMpRegistration {
    /// Before the replay starts: a registration left by an earlier replay
    /// (its process id is no live process's) is removed, as libomp itself
    /// would, but without the detour.
    pub(crate) fn prepare(trace: &TraceDir) -> OpenMpRegistration {
        let Some((path, pid)) = registration_path(trace) else {
            return OpenMpRegistration {
                made_by_replay: None,
            };
        };
        if path.exists() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(&path);
        }
        OpenMpRegistration {
            made_by_replay: (!path.exists()).then_some(path),
        }
    }
}

impl Drop for OpenMpRegistration {
    fn drop(&mut self) {
        if let Some(path) = &self.made_by_replay {
            // Gone already when the program ended normally.
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The registration file's path for the recorded process, and its id.
fn registration_path(trace: &TraceDir) -> Option<(PathBuf, u32)> {
    let pid = trace.thread_events(0).ok()?.header().pid;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    Some((shm_path(pid, uid), pid))
}

fn shm_path(pid: u32, uid: u32) -> PathBuf {
    PathBuf::from(format!("/dev/shm/__KMP_REGISTERED_LIB_{pid}_{uid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_file_as_libomp_does() {
        assert_eq!(
            shm_path(1679, 0),
            PathBuf::from("/dev/shm/__KMP_REGISTERED_LIB_1679_0")
        );
    }
}
