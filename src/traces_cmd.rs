//! `rr-lite ls`, `rr-lite rm` and `rr-lite pack`: the traces in the base
//! directory, as rr lists, removes and packs its own.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rr_lite_trace::dir::{
    HEADER_FILE, INCOMPLETE_FILE, LATEST_LINK, VERSION_FILE, default_base_dir,
};
use rr_lite_trace::{TraceHeader, resolve_trace};
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct LsArgs {
    /// One JSON object per trace, in an array.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct RmArgs {
    /// Traces to delete: names as `ls` shows them, or paths.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "The trace then replays from another directory (rr-lite replay \
PATH), with the program deleted or rebuilt, or on another machine of the same architecture \
that has the same system libraries at the same paths (replay checks each one) and a \
/tmp. Packing again replaces the copies."
)]
pub struct PackArgs {
    /// Trace directory or name (default: the latest trace).
    trace: Option<PathBuf>,
}

/// `rr-lite pack`.
pub fn pack(args: PackArgs) -> anyhow::Result<i32> {
    let trace = crate::output::open_trace(args.trace.as_deref())?;
    let mapped = rr_lite_symbols::ModuleMap::read(&trace.maps_path())?.files();
    let summary = rr_lite_trace::pack::pack(&trace, &mapped)?;
    eprintln!(
        "rr-lite: packed {} files ({:.1} MB) into {}",
        summary.files,
        summary.bytes as f64 / 1e6,
        trace.path().join(rr_lite_trace::pack::PACKED_DIR).display()
    );
    Ok(0)
}

/// One line of `ls`.
#[derive(Debug, Serialize)]
struct TraceSummary {
    name: String,
    path: PathBuf,
    latest: bool,
    /// False while recording, or if the recorder was killed.
    complete: bool,
    program: Option<PathBuf>,
    ending: Option<String>,
    threads: Option<u32>,
    events: Option<u64>,
    bytes: u64,
    started_unix_ms: Option<u64>,
}

/// Whether `dir` looks like a trace directory (so that `rm` never deletes
/// anything else).
fn is_trace_dir(dir: &Path) -> bool {
    dir.is_dir()
        && [VERSION_FILE, INCOMPLETE_FILE, HEADER_FILE]
            .iter()
            .any(|f| dir.join(f).is_file())
}

/// Total size of the files under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

fn summarise(dir: &Path, latest: Option<&Path>) -> TraceSummary {
    let header = TraceHeader::read(&dir.join(HEADER_FILE)).ok();
    TraceSummary {
        name: dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        path: dir.to_path_buf(),
        latest: latest.is_some_and(|l| l == dir),
        complete: header.is_some() && dir.join(VERSION_FILE).is_file(),
        program: header.as_ref().map(|h| h.program.clone()),
        ending: header
            .as_ref()
            .map(|h| crate::output::describe_ending(h.ending)),
        threads: header.as_ref().map(|h| h.threads),
        events: header.as_ref().map(|h| h.entries.iter().sum()),
        bytes: disk_bytes(dir),
        started_unix_ms: header.as_ref().map(|h| h.started_unix_ms),
    }
}

/// The traces of the base directory, oldest first.
fn traces(base: &Path) -> anyhow::Result<Vec<TraceSummary>> {
    let entries = match std::fs::read_dir(base) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", base.display())),
    };
    let latest = std::fs::canonicalize(base.join(LATEST_LINK)).ok();
    let mut found: Vec<TraceSummary> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.is_symlink() && is_trace_dir(p))
        .map(|p| {
            let dir = std::fs::canonicalize(&p).unwrap_or(p);
            summarise(&dir, latest.as_deref())
        })
        .collect();
    found.sort_by_key(|t| (t.started_unix_ms.unwrap_or(0), t.name.clone()));
    Ok(found)
}

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix time in milliseconds.
fn utc_minute(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

fn text_line(t: &TraceSummary) -> String {
    let dash = || "-".to_string();
    let program = t
        .program
        .as_ref()
        .and_then(|p| p.file_name())
        .map_or_else(dash, |n| n.to_string_lossy().into_owned());
    let ending = if t.complete {
        t.ending.clone().unwrap_or_else(dash)
    } else {
        "incomplete".to_string()
    };
    format!(
        "{}{:<24} {:<16} {:<28} {:>7} {:>12} {:>10}  {}",
        if t.latest { "*" } else { " " },
        t.name,
        program,
        ending,
        t.threads.map_or_else(dash, |n| n.to_string()),
        t.events.map_or_else(dash, |n| n.to_string()),
        human_bytes(t.bytes),
        t.started_unix_ms.map_or_else(dash, utc_minute),
    )
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

pub fn ls(args: LsArgs) -> anyhow::Result<i32> {
    let base = default_base_dir();
    let found = traces(&base)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let text = serde_json::to_string_pretty(&found)?;
        crate::output::write_line(&mut out, &text)?;
        return Ok(0);
    }
    if found.is_empty() {
        eprintln!("rr-lite: no traces in {}", base.display());
        return Ok(0);
    }
    let heading = format!(
        " {:<24} {:<16} {:<28} {:>7} {:>12} {:>10}  {}",
        "NAME", "PROGRAM", "ENDED", "THREADS", "EVENTS", "SIZE", "STARTED (UTC)"
    );
    for line in std::iter::once(heading).chain(found.iter().map(text_line)) {
        if !crate::output::write_line(&mut out, &line)? {
            break;
        }
    }
    Ok(0)
}

pub fn rm(args: RmArgs) -> anyhow::Result<i32> {
    let base = default_base_dir();
    let latest = std::fs::canonicalize(base.join(LATEST_LINK)).ok();
    for name in &args.traces {
        let dir = resolve_trace(Some(name))?;
        if !is_trace_dir(&dir) {
            bail!("{}: not a trace directory (nothing deleted)", dir.display());
        }
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot delete {}", dir.display()))?;
        if latest.as_deref() == Some(dir.as_path()) {
            let link = base.join(LATEST_LINK);
            std::fs::remove_file(&link)
                .with_context(|| format!("cannot remove {}", link.display()))?;
        }
        eprintln!("rr-lite: deleted {}", dir.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_795_437_296_000), "2026-11-23 12:34");
    }
}
