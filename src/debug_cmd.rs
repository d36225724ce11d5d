//! `rr-lite replay --debug [--at T:N | --at-end]`: the replay under gdb, and
//! the hidden helpers gdb runs (`__replay-exec`, the exec wrapper that
//! becomes the recorded program; `__feed-stdin`, which pipes the recorded
//! standard input to it; `__debug-event`, behind gdb's `rr-lite-event`).

use crate::output::outln;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use rr_lite_replayer::ReplayOptions;
use rr_lite_replayer::debug::{DebugOptions, DebugOutcome};
use rr_lite_trace::plan::DIVERGENCE_STATUS;
use rr_lite_trace::state::DebugStop;
use rr_lite_trace::{EventKind, OrderedEvent, TraceDir};

use crate::replay_cmd::{CreatedFiles, ReplayArgs, describe_event, print_divergence};

/// Parses an event id as `dump` prints it: `t3:17` (or `3:17`).
pub fn parse_event_id(text: &str) -> Result<DebugStop, String> {
    let bad = || {
        format!("'{text}' is not an event id: write T:N as `rr-lite dump` prints it, e.g. t1:42")
    };
    let digits = text.strip_prefix('t').unwrap_or(text);
    let (thread, index) = digits.split_once(':').ok_or_else(bad)?;
    Ok(DebugStop {
        thread: thread.parse().map_err(|_| bad())?,
        index: index.parse().map_err(|_| bad())?,
    })
}

/// Runs the replay of `trace` under gdb; returns rr-lite's exit status.
pub fn run(
    trace: &TraceDir,
    options: &ReplayOptions,
    args: &ReplayArgs,
    created: &CreatedFiles,
) -> anyhow::Result<i32> {
    let mut symbols = crate::output::symbolizer(trace)?;
    let stop = match (args.at, args.at_end) {
        (Some(stop), _) => Some(checked_stop(trace, stop)?),
        (None, true) => end_stop(trace)?,
        (None, false) => None,
    };
    let stop_description = match stop {
        Some(stop) => describe_event(&event_at(trace, stop)?, &mut symbols),
        None => String::new(),
    };
    if args.at_end && stop.is_none() {
        eprintln!("rr-lite: the recording ended in a crash: gdb stops at the faulting instruction");
    }
    let debug = DebugOptions {
        stop,
        stop_description,
        rr_lite: std::env::current_exe().context("cannot find the rr-lite executable")?,
        gdb: args.gdb.clone(),
        gdb_args: args.gdb_args.clone(),
        server: args
            .gdbserver
            .map(|port| rr_lite_replayer::debug::GdbServer {
                port,
                program: args.gdbserver_path.clone(),
            }),
    };
    match rr_lite_replayer::debug::debug(trace, options, &debug)? {
        DebugOutcome::Ended(status) => Ok(status.code().unwrap_or(1)),
        DebugOutcome::Diverged(report) => {
            print_divergence(&report, &mut symbols);
            created.hint();
            Ok(DIVERGENCE_STATUS)
        }
    }
}

/// `stop` if the trace has that event, else an error saying what it has.
fn checked_stop(trace: &TraceDir, stop: DebugStop) -> anyhow::Result<DebugStop> {
    let threads = trace.threads();
    anyhow::ensure!(
        stop.thread < threads,
        "{}: no thread {} (the trace has threads 0 to {})",
        trace.path().display(),
        stop.thread,
        threads.saturating_sub(1)
    );
    let events = trace
        .header()
        .and_then(|h| h.entries.get(stop.thread as usize).copied())
        .unwrap_or(0);
    anyhow::ensure!(
        stop.index < events,
        "{}: thread {} has {events} events (t{}:0 to t{}:{}), not t{}:{}",
        trace.path().display(),
        stop.thread,
        stop.thread,
        stop.thread,
        events.saturating_sub(1),
        stop.thread,
        stop.index
    );
    Ok(stop)
}

/// `--at-end`: the last event of the recorded order, unless it is a crash,
/// where gdb stops by itself, at the faulting instruction.
fn end_stop(trace: &TraceDir) -> anyhow::Result<Option<DebugStop>> {
    let mut last = None;
    for ordered in trace.global_order()? {
        let OrderedEvent { event, .. } = ordered?;
        last = Some(event);
    }
    let last =
        last.with_context(|| format!("{}: the trace has no events", trace.path().display()))?;
    Ok((last.kind != EventKind::FatalSignal).then_some(DebugStop {
        thread: last.thread,
        index: last.index,
    }))
}

/// The recorded event `stop` names.
pub(crate) fn event_at(
    trace: &TraceDir,
    stop: DebugStop,
) -> anyhow::Result<rr_lite_trace::RecordedEvent> {
    let mut events = trace.thread_events(stop.thread)?;
    events
        .nth(stop.index as usize)
        .transpose()?
        .with_context(|| {
            format!(
                "{}: no event t{}:{}",
                trace.path().display(),
                stop.thread,
                stop.index
            )
        })
}

/// `rr-lite __replay-exec TRACE SESSION [PROGRAM ARGS...]`: gdb's exec
/// wrapper. The program and arguments gdb appends are ignored: the
/// recorded ones run.
pub fn replay_exec(args: &[OsString]) -> anyhow::Result<i32> {
    let [trace, session, ..] = args else {
        anyhow::bail!(
            "usage: rr-lite __replay-exec TRACE SESSION (run by `rr-lite replay --debug`)"
        );
    };
    let session = session.to_str().context("the session id is not UTF-8")?;
    Err(rr_lite_replayer::debug::exec_program(Path::new(trace), session).into())
}

/// `rr-lite __feed-stdin FILE`: copies FILE to standard output (the pipe
/// that is the replayed program's standard input).
pub fn feed_stdin(args: &[OsString]) -> anyhow::Result<i32> {
    let [file] = args else {
        anyhow::bail!("usage: rr-lite __feed-stdin FILE");
    };
    let mut input = std::fs::File::open(file)
        .with_context(|| format!("cannot open {}", Path::new(file).display()))?;
    let mut out = std::io::stdout().lock();
    // The program may stop reading: a closed pipe ends the copy quietly.
    let _ = std::io::copy(&mut input, &mut out).and_then(|_| out.flush());
    Ok(0)
}

/// `rr-lite __debug-event TRACE T N`: what thread T's next event N is, and
/// its next sync point (gdb's `rr-lite-event`, which reads T and N in the
/// program).
pub fn debug_event(args: &[OsString]) -> anyhow::Result<i32> {
    let [trace, thread, index] = args else {
        anyhow::bail!(
            "usage: rr-lite __debug-event TRACE THREAD INDEX (run by gdb's rr-lite-event)"
        );
    };
    let number = |s: &OsString| s.to_str().and_then(|s| s.parse::<u64>().ok());
    let (Some(thread), Some(index)) = (number(thread), number(index)) else {
        anyhow::bail!("rr-lite __debug-event: THREAD and INDEX are numbers");
    };
    let thread = u32::try_from(thread)?;
    let trace = TraceDir::open(Path::new(trace))?;
    let recorded = trace
        .header()
        .and_then(|h| h.entries.get(thread as usize).copied())
        .unwrap_or(0);
    let mut symbols = crate::output::symbolizer(&trace)?;
    match event_at(&trace, DebugStop { thread, index }) {
        Ok(event) => outln!(
            "rr-lite: thread {thread}: next event t{thread}:{index} ({}); {index} of its {recorded} events done",
            describe_event(&event, &mut symbols),
        ),
        Err(_) => outln!("rr-lite: thread {thread}: all its {recorded} recorded events done"),
    }
    match next_sync_point(&trace, thread, index)? {
        Some((at, what)) => outln!("  its next sync point is t{thread}:{at}: {what}"),
        None => outln!("  it waits for no other thread from here on"),
    }
    Ok(0)
}

/// The next event of `thread` from `index` on that waits for another
/// thread, and what it waits for (from the kept plans, which the replay
/// that came before this has built).
fn next_sync_point(
    trace: &TraceDir,
    thread: u32,
    index: u64,
) -> anyhow::Result<Option<(u64, String)>> {
    use rr_lite_trace::plan::{KEPT_PLANS_DIR, MAX_PLAN_BYTES, decode_plan, plan_name};
    let path = trace.path().join(KEPT_PLANS_DIR).join(plan_name(thread));
    let bytes = rr_lite_trace::bounded::read(&path, MAX_PLAN_BYTES)?;
    let (_, points) =
        decode_plan(&bytes).map_err(|what| anyhow::anyhow!("{}: {what}", path.display()))?;
    let next = points
        .into_iter()
        .find(|p| p.index >= index && !p.waits.is_empty());
    Ok(next.map(|p| {
        let list: Vec<String> = p.waits.iter().map(|(t, i)| format!("t{t}:{i}")).collect();
        (
            p.index,
            format!("it waits there for {} to be done", list.join(", ")),
        )
    }))
}
