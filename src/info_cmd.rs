//! `rr-lite info`: what a trace holds, in a few lines (or JSON).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rr_lite_trace::{EventKind, TraceDir};
use serde::Serialize;

use crate::output::{describe_ending, open_trace};

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// Trace directory (default: the latest trace).
    trace: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Counts gathered by reading every thread log once.
#[derive(Debug, Serialize)]
struct Summary {
    trace: PathBuf,
    complete: bool,
    program: Option<PathBuf>,
    argv: Vec<String>,
    /// Environment variables stored as placeholders (secret-looking names).
    masked_env: Vec<String>,
    /// The chaos schedule the run was recorded under (`record --chaos`).
    chaos: Option<rr_lite_trace::ChaosSchedule>,
    ending: Option<String>,
    exit_status: Option<i32>,
    threads: u32,
    events: u64,
    events_per_thread: Vec<u64>,
    events_per_kind: BTreeMap<&'static str, u64>,
    log_bytes: u64,
    bytes_per_event: f64,
    wall_time_s: Option<f64>,
}

fn summarise(trace: &TraceDir) -> anyhow::Result<Summary> {
    let mut per_thread = Vec::new();
    let mut per_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut log_bytes = 0;
    for t in 0..trace.threads() {
        let mut reader = trace.thread_events(t)?;
        let mut n = 0;
        for e in reader.by_ref() {
            *per_kind.entry(e?.kind.name()).or_default() += 1;
            n += 1;
        }
        log_bytes += reader
            .offset()
            .saturating_sub(rr_lite_trace::codec::HEADER_LEN as u64);
        per_thread.push(n);
    }
    let events: u64 = per_thread.iter().sum();
    let header = trace.header();
    Ok(Summary {
        trace: trace.path().to_path_buf(),
        complete: trace.is_complete(),
        program: header.map(|h| h.program.clone()),
        argv: header
            .map(|h| {
                h.argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default(),
        masked_env: header.map(|h| h.masked_env.clone()).unwrap_or_default(),
        chaos: header.and_then(|h| h.chaos),
        ending: header.map(|h| describe_ending(h.ending)),
        exit_status: header.map(|h| h.ending.shell_status()),
        threads: trace.threads(),
        events,
        events_per_thread: per_thread,
        events_per_kind: per_kind,
        log_bytes,
        bytes_per_event: if events == 0 {
            0.0
        } else {
            log_bytes as f64 / events as f64
        },
        wall_time_s: header.map(|h| h.wall_time_ns as f64 / 1e9),
    })
}

pub fn run(args: InfoArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    let s = summarise(&trace)?;
    if args.json {
        let text = serde_json::to_string_pretty(&s)?;
        crate::output::write_line(&mut std::io::stdout().lock(), &text)?;
        return Ok(0);
    }
    let mut lines = Vec::new();
    let or_unknown =
        |v: Option<String>| v.unwrap_or_else(|| "unknown (recording not finalised)".into());
    lines.push(format!(
        "trace:        {}{}",
        s.trace.display(),
        if s.complete { "" } else { " (incomplete)" }
    ));
    lines.push(format!(
        "program:      {}",
        or_unknown(s.program.map(|p| p.display().to_string()))
    ));
    lines.push(format!("argv:         {}", s.argv.join(" ")));
    if !s.masked_env.is_empty() {
        lines.push(format!(
            "masked env:   {} (values stored as *; record --keep-env keeps them)",
            s.masked_env.join(", ")
        ));
    }
    if let Some(chaos) = &s.chaos {
        lines.push(format!("chaos:        {}", chaos.describe()));
    }
    lines.push(format!("ended:        {}", or_unknown(s.ending)));
    if let Some(w) = s.wall_time_s {
        lines.push(format!("wall time:    {w:.3} s"));
    }
    lines.push(format!("threads:      {}", s.threads));
    let per_thread: Vec<String> = s
        .events_per_thread
        .iter()
        .enumerate()
        .map(|(t, n)| format!("t{t} {n}"))
        .collect();
    lines.push(format!(
        "events:       {} ({})",
        s.events,
        per_thread.join(", ")
    ));
    let kinds: Vec<String> = EventKind::ALL
        .iter()
        .filter_map(|k| {
            s.events_per_kind
                .get(k.name())
                .map(|n| format!("{} {n}", k.name()))
        })
        .collect();
    lines.push(format!("by kind:      {}", kinds.join(", ")));
    lines.push(format!(
        "log bytes:    {} ({:.2} bytes/event)",
        s.log_bytes, s.bytes_per_event
    ));
    let mut out = std::io::stdout().lock();
    for line in &lines {
        if !crate::output::write_line(&mut out, line)? {
            break;
        }
    }
    Ok(0)
}
