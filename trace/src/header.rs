//! `header.json`: what was recorded, how it ended, and the counts. Written by
//! `rr-lite record` once the program has ended; its absence (or `ok: false`)
//! marks a recording that did not finish cleanly.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::codec::FORMAT_VERSION;
use crate::error::{Result, TraceError};

/// Value of [`TraceHeader::magic`].
pub const HEADER_MAGIC: &str = "rr-lite-trace";

/// How the recorded program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum ProgramEnding {
    /// Normal exit with this status.
    Exited { code: i32 },
    /// Killed by this signal (SIGSEGV, SIGABRT, SIGINT for a Ctrl-C ...).
    Signaled { signal: i32 },
}

impl ProgramEnding {
    /// The status a shell would report: the code, or 128 + signal.
    pub fn shell_status(self) -> i32 {
        match self {
            ProgramEnding::Exited { code } => code,
            ProgramEnding::Signaled { signal } => 128 + signal,
        }
    }
}

impl From<std::process::ExitStatus> for ProgramEnding {
    fn from(status: std::process::ExitStatus) -> ProgramEnding {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => ProgramEnding::Exited { code },
            (None, Some(signal)) => ProgramEnding::Signaled { signal },
            // Neither: a stopped or continued status, which waiting for the
            // end of a process does not return.
            (None, None) => ProgramEnding::Exited { code: -1 },
        }
    }
}

/// The chaos schedule a recording ran under (`record --chaos`), with what
/// it takes to run it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "strategy")]
pub enum ChaosSchedule {
    /// Probabilistic Concurrency Testing: `depth - 1` priority change
    /// points drawn in `1..=events` (the estimated events of a run).
    Pct { seed: u64, depth: u32, events: u64 },
    /// Random delays and yields.
    Random { seed: u64 },
    /// `record --serialize`: one thread at a time, round robin, turns of 1
    /// to `slice` events drawn from the seed.
    Serial { seed: u64, slice: u64 },
}

impl ChaosSchedule {
    pub fn seed(&self) -> u64 {
        match *self {
            ChaosSchedule::Pct { seed, .. }
            | ChaosSchedule::Random { seed }
            | ChaosSchedule::Serial { seed, .. } => seed,
        }
    }

    /// The same schedule with another seed.
    pub fn with_seed(self, seed: u64) -> ChaosSchedule {
        match self {
            ChaosSchedule::Pct { depth, events, .. } => ChaosSchedule::Pct {
                seed,
                depth,
                events,
            },
            ChaosSchedule::Random { .. } => ChaosSchedule::Random { seed },
            ChaosSchedule::Serial { slice, .. } => ChaosSchedule::Serial { seed, slice },
        }
    }

    /// The value of `RR_LITE_CHAOS` that makes the runtime follow it.
    pub fn env_value(&self) -> String {
        match *self {
            ChaosSchedule::Pct {
                seed,
                depth,
                events,
            } => format!("pct:{seed}:{depth}:{events}"),
            ChaosSchedule::Random { seed } => format!("random:{seed}"),
            ChaosSchedule::Serial { seed, slice } => format!("serial:{seed}:{slice}"),
        }
    }

    /// What `record` prints and `info` shows.
    pub fn describe(&self) -> String {
        match *self {
            ChaosSchedule::Pct {
                seed,
                depth,
                events,
            } => format!("pct, seed {seed}, depth {depth}, ~{events} events"),
            ChaosSchedule::Random { seed } => format!("random, seed {seed}"),
            ChaosSchedule::Serial { seed, slice } => {
                format!("serial, turns of up to {slice} events, seed {seed}")
            }
        }
    }
}

/// Contents of `header.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Always [`HEADER_MAGIC`].
    pub magic: String,
    pub format_version: u16,
    /// Version of the rr-lite that recorded the trace.
    pub tool_version: String,
    /// True when the recording ended cleanly: the program ended (however it
    /// ended, a crash included) and every thread log was readable.
    pub ok: bool,
    /// Absolute path of the executable (bytes: see [`crate::os_text`]).
    #[serde(with = "crate::os_text::path")]
    pub program: PathBuf,
    /// GNU build-id of the executable, or a content hash when it has none.
    pub program_id: String,
    #[serde(with = "crate::os_text::list")]
    pub argv: Vec<OsString>,
    #[serde(with = "crate::os_text::path")]
    pub cwd: PathBuf,
    /// The full environment the program ran with (replay reuses it).
    #[serde(with = "crate::os_text::pairs")]
    pub env: Vec<(OsString, OsString)>,
    pub threads: u32,
    /// Entries per thread, by logical id.
    pub entries: Vec<u64>,
    /// Total bytes of thread logs (entries only, without padding).
    pub log_bytes: u64,
    pub ending: ProgramEnding,
    pub wall_time_ns: u64,
    /// When recording started, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Granule the recorder's striped locks work at (bytes).
    pub record_granule: u32,
    /// What went wrong, when `ok` is false.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Environment variables whose values `env` holds as `*` placeholders
    /// of the same length (names that look secret; `record --keep-env`
    /// keeps them).
    #[serde(default)]
    pub masked_env: Vec<String>,
    /// Per thread log, by logical id: how many bytes from its start hold
    /// its header and entries (the rest is zero padding of the last mapped
    /// chunk), and their checksum (`log_checksum`) as the recorder
    /// finalised them (absent in older traces: then not checked).
    #[serde(default)]
    pub log_checksums: Vec<(u64, u64)>,
    /// The algorithm of `log_checksums`
    /// ([`crate::codec::checksum::LogChecksum::name`]); absent in
    /// the traces from before it, whose logs have FNV-1a.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_checksum: Option<String>,
    /// FNV-1a of each file of recorded data that replay serves to the
    /// program (`stdin`, `input-NNNN.bin`, `files/...`), by path relative to
    /// the trace (absent in older traces: then not checked).
    #[serde(default)]
    pub data_checksums: std::collections::BTreeMap<String, u64>,
    /// The chaos schedule of the recording, if any (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chaos: Option<ChaosSchedule>,
    /// PCT: the steps the run made (events while two threads or more were
    /// live), when the process got to its exit; the next run's estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chaos_steps: Option<u64>,
    /// Times a thread spinning on a flag or a busy lock gave the processor
    /// away while recording (`spins`), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_yields: Option<u64>,
}

impl TraceHeader {
    pub fn read(path: &Path) -> Result<TraceHeader> {
        let text = crate::bounded::read_to_string(path, crate::bounded::HEADER_LIMIT)?;
        check_sum(path, text.as_bytes())?;
        let bad = |what: String| TraceError::BadHeader {
            path: path.to_path_buf(),
            what,
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if value.get("magic").and_then(|m| m.as_str()) != Some(HEADER_MAGIC) {
            return Err(bad(format!("no \"magic\": \"{HEADER_MAGIC}\" field")));
        }
        let version = value.get("format_version").and_then(|v| v.as_u64());
        match version {
            Some(v) if v > u64::from(FORMAT_VERSION) => {
                return Err(TraceError::NewerVersion {
                    path: path.to_path_buf(),
                    found: v,
                    supported: FORMAT_VERSION,
                });
            }
            Some(_) => {}
            None => return Err(bad("no format_version".into())),
        }
        let header: TraceHeader = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if header.entries.len() != header.threads as usize {
            return Err(bad(format!(
                "{} threads but {} entry counts",
                header.threads,
                header.entries.len()
            )));
        }
        Ok(header)
    }

    /// Writes the header atomically (temporary file, then rename).
    pub fn write(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| TraceError::BadHeader {
            path: path.to_path_buf(),
            what: e.to_string(),
        })?;
        let text = text + "\n";
        // The sum first: a header never stands next to another one's sum.
        let sum = sum_path(path);
        crate::private::write(&sum, sum_line(text.as_bytes()))
            .map_err(TraceError::io("write", &sum))?;
        crate::private::write(&tmp, text).map_err(TraceError::io("write", &tmp))?;
        std::fs::rename(&tmp, path).map_err(TraceError::io("move into place", path))
    }
}

/// `header.sum`, next to `header.json`: `fnv1a:<16 hex digits>` of its
/// bytes and a newline. A header is readable JSON meant to be looked at,
/// but one changed byte (an argument, a variable) would replay another run:
/// the sum catches damage. It does not stop an edit (whoever edits can
/// drop the sum; replay's identity and environment checks still hold).
pub const SUM_FILE: &str = "header.sum";

fn sum_path(header: &Path) -> std::path::PathBuf {
    header.with_file_name(SUM_FILE)
}

fn sum_line(bytes: &[u8]) -> String {
    format!("fnv1a:{:016x}\n", crate::codec::checksum::fnv1a(bytes))
}

/// The header's bytes match `header.sum`, when there is one (older traces
/// have none).
fn check_sum(header: &Path, bytes: &[u8]) -> Result<()> {
    let sum = sum_path(header);
    if !sum.exists() {
        return Ok(());
    }
    let recorded = crate::bounded::read_to_string(&sum, 64)?;
    if recorded != sum_line(bytes) {
        return Err(TraceError::BadHeader {
            path: header.to_path_buf(),
            what: format!(
                "its bytes do not match {SUM_FILE} ({}): damaged or edited since the recording",
                recorded.trim()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::ProgramEnding;

    #[test]
    fn exit_status_to_program_ending() {
        // Raw wait statuses: exit code in the second byte, signal in the first.
        assert_eq!(
            ProgramEnding::from(ExitStatus::from_raw(3 << 8)),
            ProgramEnding::Exited { code: 3 }
        );
        assert_eq!(
            ProgramEnding::from(ExitStatus::from_raw(11)),
            ProgramEnding::Signaled { signal: 11 }
        );
        assert_eq!(ProgramEnding::Signaled { signal: 11 }.shell_status(), 139);
    }
}
