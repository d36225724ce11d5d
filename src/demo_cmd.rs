//! `rr-lite demo`: the whole pipeline on the bundled racy program, in a
//! scratch directory: build it with `rr-lite cc`, record it until two runs
//! print different results, split a trace, and replay it in parallel and
//! sequentially, checking that replay prints exactly what the recording did.

use crate::output::{out, outln};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::{Context, ensure};

static DEMO_SOURCE: &str = include_str!("../examples/racy_bank.c");
/// Recordings tried at most before showing whatever was seen.
const MAX_RECORDINGS: usize = 8;

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Work in this directory (default: a new temporary directory, kept so
    /// the commands shown can be re-run).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn rr_lite() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("finding the rr-lite executable")
}

/// Runs `rr-lite ARGS...` in `dir`, echoing the command line.
fn step(args: &[&str], dir: &Path, echo: bool) -> anyhow::Result<(Output, f64)> {
    if echo {
        outln!("\n$ rr-lite {}", args.join(" "));
    }
    let start = Instant::now();
    let out = Command::new(rr_lite()?)
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("running rr-lite {}", args.join(" ")))?;
    Ok((out, start.elapsed().as_secs_f64()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

/// One recording of the demo: its trace directory (relative to the demo
/// directory) and what the program printed.
#[derive(Debug, Clone)]
struct Recording {
    trace: String,
    stdout: String,
}

pub fn run(args: DemoArgs) -> anyhow::Result<i32> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("rr-lite-demo-{}", std::process::id())),
    };
    write_source(&dir)?;
    build_program(&dir)?;
    let recordings = record_until_outputs_differ(&dir)?;
    let last = recordings.last().context("no recording")?;
    split(&dir, &last.trace)?;
    let all_same = replay_and_compare(&dir, &recordings)?;
    show_info(&dir, &last.trace)?;
    Ok(if all_same { 0 } else { 1 })
}

/// Creates the demo directory with the program's source in it, and says
/// what the program does.
fn write_source(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let source = dir.join("racy_bank.c");
    std::fs::write(&source, DEMO_SOURCE)
        .with_context(|| format!("writing {}", source.display()))?;
    outln!(
        "rr-lite demo in {}: four tellers and an auditor share a bank; the operation counter is racy,",
        dir.display()
    );
    outln!("so what the program prints depends on the interleaving of each run.");
    Ok(())
}

/// `rr-lite cc` the program.
fn build_program(dir: &Path) -> anyhow::Result<()> {
    let (out, _) = step(
        &[
            "cc",
            "-O2",
            "-g",
            "-pthread",
            "racy_bank.c",
            "-o",
            "racy_bank",
        ],
        dir,
        true,
    )?;
    ensure!(
        out.status.success(),
        "building the demo failed:\n{}",
        text(&out.stderr)
    );
    Ok(())
}

/// Records the program until a run prints a result different from an
/// earlier one, [`MAX_RECORDINGS`] at most; returns the recordings in order
/// (at least one).
fn record_until_outputs_differ(dir: &Path) -> anyhow::Result<Vec<Recording>> {
    outln!("\n$ rr-lite record -o trace-N ./racy_bank    (until two runs print different results)");
    let mut recordings: Vec<Recording> = Vec::new();
    for n in 1..=MAX_RECORDINGS {
        let trace = format!("trace-{n}");
        let _ = std::fs::remove_dir_all(dir.join(&trace));
        let (out, secs) = step(&["record", "-q", "-o", &trace, "./racy_bank"], dir, false)?;
        ensure!(
            out.status.success(),
            "recording failed:\n{}",
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        outln!("  {trace}: {}   ({secs:.2}s)", last_line(&stdout));
        let differs = recordings
            .iter()
            .any(|r| last_line(&r.stdout) != last_line(&stdout));
        recordings.push(Recording { trace, stdout });
        if differs {
            break;
        }
    }
    let first = recordings.first().context("no recording")?;
    if recordings
        .iter()
        .all(|r| last_line(&r.stdout) == last_line(&first.stdout))
    {
        outln!("  (every run printed the same here; replay is still checked below)");
    }
    Ok(recordings)
}

/// `rr-lite split` a trace, showing its summary.
fn split(dir: &Path, trace: &str) -> anyhow::Result<()> {
    let (out, _) = step(&["split", trace], dir, true)?;
    ensure!(out.status.success(), "split failed:\n{}", text(&out.stderr));
    out!("{}", text(&out.stdout));
    Ok(())
}

/// Replays the first and the last recording in parallel, and the last one
/// sequentially too (the baseline): each distinct recording replays to its
/// own output. Returns whether every replay printed what its recording did.
fn replay_and_compare(dir: &Path, recordings: &[Recording]) -> anyhow::Result<bool> {
    let first = recordings.first().context("no recording")?;
    let last = recordings.last().context("no recording")?;
    let mut replays = vec![(first, "--parallel")];
    if last.trace != first.trace {
        replays.push((last, "--parallel"));
    }
    replays.push((last, "--sequential"));
    let mut all_same = true;
    for (recording, mode) in replays {
        let trace = &recording.trace;
        let (out, secs) = step(&["replay", mode, trace], dir, true)?;
        let replayed = text(&out.stdout);
        let same = out.status.success() && replayed == recording.stdout;
        all_same &= same;
        outln!("  {}   ({secs:.2}s)", last_line(&replayed));
        outln!(
            "  {} the recording of {trace}",
            if same {
                "identical to"
            } else {
                "DIFFERENT from"
            }
        );
        if !same {
            eprint!("{}", text(&out.stderr));
        }
    }
    Ok(all_same)
}

/// `rr-lite info` a trace, then where to look next.
fn show_info(dir: &Path, trace: &str) -> anyhow::Result<()> {
    let (out, _) = step(&["info", trace], dir, true)?;
    out!("{}", text(&out.stdout));
    outln!(
        "\nThe traces stay in {}: `rr-lite dump {trace}` lists every event, `rr-lite graph {trace}` the dependencies.",
        dir.display()
    );
    Ok(())
}
