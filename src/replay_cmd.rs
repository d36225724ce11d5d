//! `rr-lite replay`: re-run the recorded program on the recorded path.

use std::path::PathBuf;
use std::time::Duration;

use rr_lite_replayer::governor::{OneCpu, why_not_one_cpu};
use rr_lite_replayer::{DeadlockReport, DivergenceReport, ReplayOptions, ReplayOutcome, replay};
use rr_lite_symbols::Symbolizer;
use rr_lite_trace::plan::{DEADLOCK_STATUS, DIVERGENCE_STATUS, PlanVariant};
use rr_lite_trace::state::Divergence;
use rr_lite_trace::{EventKind, RecordedEvent};

use crate::output::{describe_addr, describe_ending, open_trace, symbolizer};

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// Trace directory (default: the latest trace).
    trace: Option<PathBuf>,
    /// Threads run in parallel and wait only at their sync points (default).
    #[arg(long, conflicts_with = "sequential")]
    parallel: bool,
    /// Baseline: every event waits for its turn in the recorded global order.
    #[arg(long)]
    sequential: bool,
    /// Check every event against the recording (slower, exact).
    #[arg(long, conflicts_with = "sequential")]
    verify: bool,
    /// Report a deadlock when every thread has waited this long (ms) with no progress (a
    /// stall after ten times as long, or twice the recording, if some threads still run).
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    watchdog_ms: u64,
    /// Replay a trace that another user owns. Replay runs the program, arguments and
    /// environment the trace names: without this, such a trace is refused and the
    /// command it would run is shown.
    #[arg(long)]
    accept_foreign: bool,
    /// When the replayed threads share one CPU: `auto` tries one CPU while they park often
    /// (waking a thread on another CPU can cost more than running them in turn), keeps it
    /// while events replay faster there, and tries every CPU again now and then; `never`
    /// keeps every CPU; `always` uses one from the start. Only speed changes: the
    /// program sees its recorded CPU mask either way. Programs using LLVM's OpenMP runtime
    /// keep every CPU (it reads its mask with a raw system call replay cannot serve).
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = OneCpuArg::Auto)]
    one_cpu: OneCpuArg,
    /// Replay under gdb: breakpoints, stepping and `continue` work as usual, and the
    /// replay stays on the recorded path. Without --at or --at-end, gdb stops where it
    /// would by itself (a crash, a breakpoint you set). In gdb, `rr-lite-event` shows
    /// the selected thread's next event and sync point.
    #[arg(long)]
    pub(crate) debug: bool,
    /// Stop in gdb when thread T is about to perform its event N, with that thread
    /// selected (T:N as `dump` prints it, e.g. t1:42). Implies --debug.
    #[arg(long, value_name = "T:N", value_parser = crate::debug_cmd::parse_event_id, conflicts_with = "at_end")]
    pub(crate) at: Option<rr_lite_trace::state::DebugStop>,
    /// Stop in gdb at the recorded end: at the faulting instruction of a crash, else
    /// before the last recorded event (the exit). Implies --debug.
    #[arg(long)]
    pub(crate) at_end: bool,
    /// The debugger --debug runs.
    #[arg(long, value_name = "PATH", default_value = "gdb")]
    pub(crate) gdb: PathBuf,
    /// Serve the replay to a debugger that connects itself (an IDE, or gdb with
    /// `target remote`): runs gdbserver on 127.0.0.1:PORT (loopback only) instead of
    /// gdb, and prints the gdb command that connects with rr-lite's stop and
    /// `rr-lite-event` loaded. Implies --debug; --at and --at-end work as with gdb.
    #[arg(long, value_name = "PORT", conflicts_with = "gdb_args")]
    pub(crate) gdbserver: Option<u16>,
    /// The gdbserver --gdbserver runs.
    #[arg(long, value_name = "PATH", default_value = "gdbserver")]
    pub(crate) gdbserver_path: PathBuf,
    /// With --debug: arguments for gdb, after `--` (e.g. -- -batch -ex bt).
    #[arg(last = true, value_name = "GDB-ARGS")]
    pub(crate) gdb_args: Vec<std::ffi::OsString>,
}

/// `replay --one-cpu`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum OneCpuArg {
    Auto,
    Never,
    Always,
}

/// Exit statuses of the replay, besides the program's own.
pub const STATUS_HELP: &str = "Exit status: the program's (128+N if signal N ended it); \
86 if the replay diverged from the recording; 87 if the watchdog stopped it (a deadlock, or a stall: \
no event for ten watchdog periods while threads wait); \
1 for rr-lite's own errors. With --debug: gdb's status (gdbserver's with --gdbserver), or \
86 if the program left the recorded path under the debugger.";

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    let variant = match (args.sequential, args.verify) {
        (true, _) => PlanVariant::Sequential,
        (false, true) => PlanVariant::Verify,
        (false, false) => PlanVariant::Parallel,
    };
    let options = ReplayOptions {
        variant,
        watchdog: Duration::from_millis(args.watchdog_ms),
        accept_foreign: args.accept_foreign,
        one_cpu: match args.one_cpu {
            OneCpuArg::Auto => OneCpu::Auto,
            OneCpuArg::Never => OneCpu::Never,
            OneCpuArg::Always => OneCpu::Always,
        },
    };
    // The program loads the runtime from the cache: restore it if deleted.
    rr_lite_recorder::runtime::install()?;
    // That runtime may not read the plans and state file this one writes:
    // the replay would end with "the runtime did not attach", which does
    // not say why.
    if let Some(header) = trace.header() {
        crate::output::warn_if_other_builds_runtime(
            &header.program,
            "if this replay fails, replay with the rr-lite that built it, or rebuild it with \
             this rr-lite's `cc` and record again",
        );
    }
    warn_about_changed_inputs(&trace)?;
    // (Before the replay: it makes them again.)
    let created = CreatedFiles::present(&trace)?;
    if args.debug || args.at.is_some() || args.at_end || args.gdbserver.is_some() {
        return crate::debug_cmd::run(&trace, &options, &args, &created);
    }
    anyhow::ensure!(
        args.gdb_args.is_empty(),
        "arguments after `--` are for gdb: add --debug to replay under gdb"
    );
    if let (OneCpu::Always, Some(why)) = (options.one_cpu, why_not_one_cpu(&trace)) {
        eprintln!("rr-lite: warning: --one-cpu always ignored: {why}");
    }
    let replayed = replay(&trace, &options).map_err(explain_other_runtime)?;
    if let Some(why) = replayed.plans_built {
        note_plans_built(&trace, &why);
    }
    let mut symbols = symbolizer(&trace)?;
    match replayed.outcome {
        ReplayOutcome::Finished(ending) => {
            if let Some(recorded) = trace.header().map(|h| h.ending).filter(|&r| r != ending) {
                eprintln!(
                    "rr-lite: warning: the program {} but the recording {}",
                    ended(ending),
                    ended(recorded)
                );
            }
            Ok(ending.shell_status())
        }
        ReplayOutcome::Diverged(report) => {
            print_divergence(&report, &mut symbols);
            created.hint();
            Ok(DIVERGENCE_STATUS)
        }
        ReplayOutcome::Deadlocked(report) => {
            print_deadlock(&report, &mut symbols);
            created.hint();
            Ok(DEADLOCK_STATUS)
        }
    }
}

/// A replay whose runtime did not attach, of a program that loads another
/// rr-lite build's runtime: that is the likely cause (a runtime reads the
/// plans and state file of its own build's version only), said in the
/// error itself rather than only in the warning before the replay.
fn explain_other_runtime(e: rr_lite_replayer::ReplayError) -> anyhow::Error {
    let other = match &e {
        rr_lite_replayer::ReplayError::NotAttached { program, .. } => {
            rr_lite_recorder::other_builds_runtime(program)
        }
        _ => None,
    };
    match other {
        Some(dir) => anyhow::anyhow!(
            "{e}: it loads another rr-lite build's runtime ({dir}), which reads the replay \
             plans of its own build only; replay with the rr-lite that built it, or rebuild it \
             with this rr-lite's `cc` and record again"
        ),
        None => e.into(),
    }
}

/// After a replay that split the trace and built its plans: why, when the
/// plans it had could not be used (a first replay building them is
/// expected), and the split's hints about false sharing and about many
/// waits, if it has them (`rr-lite split` prints them too).
fn note_plans_built(trace: &rr_lite_trace::TraceDir, why: &rr_lite_replayer::WhyBuilt) {
    if why.plans_were_unusable() {
        eprintln!("rr-lite: note: this replay built the trace's plans again: {why}");
    }
    let Some(stats) = rr_lite_splitter::SplitStats::json_of_split(trace.path()) else {
        return;
    };
    let count = |key: &str| stats.get(key).and_then(serde_json::Value::as_u64);
    let hints = [
        crate::split_cmd::FalseSharing::from_json(&stats).and_then(|f| f.hint(trace.path())),
        count("entries")
            .zip(count("waits"))
            .and_then(|(entries, waits)| crate::split_cmd::many_waits_hint(entries, waits)),
    ];
    for hint in hints.into_iter().flatten() {
        eprintln!("rr-lite: note: this replay built the trace's plans. {hint}");
    }
}

/// The files the recording created that were there when this replay
/// started (left from the recording, or made by an earlier replay): a
/// program that looks for its output before it writes it (zstd `-o`) then
/// takes another path, so a replay that goes wrong names them.
pub(crate) struct CreatedFiles(Vec<std::path::PathBuf>);

impl CreatedFiles {
    pub(crate) fn present(trace: &rr_lite_trace::TraceDir) -> anyhow::Result<CreatedFiles> {
        let Some(header) = trace.header() else {
            return Ok(CreatedFiles(Vec::new()));
        };
        Ok(CreatedFiles(rr_lite_replayer::created_files_present(
            trace,
            &header.cwd,
        )?))
    }

    /// After a replay that diverged or deadlocked: the likely cause, if
    /// there were such files.
    pub(crate) fn hint(&self) {
        if self.0.is_empty() {
            return;
        }
        eprintln!(
            "rr-lite: note: {} file(s) the recording created existed when this replay started \
             (left from the recording or an earlier replay); if the program looks for its \
             output before writing it, it took another path here: remove them and replay again:",
            self.0.len(),
        );
        print_first_ten(self.0.iter().map(|path| path.display()));
    }
}

/// Prints the first ten of `lines`, indented, and how many more there are.
fn print_first_ten<T: std::fmt::Display>(lines: impl ExactSizeIterator<Item = T>) {
    let more = lines.len().saturating_sub(10);
    for line in lines.take(10) {
        eprintln!("  {line}");
    }
    if more > 0 {
        eprintln!("  ... and {more} more");
    }
}

/// Files the program read live that differ from the recording: replay
/// runs anyway, but says its output may differ and why.
fn warn_about_changed_inputs(trace: &rr_lite_trace::TraceDir) -> anyhow::Result<()> {
    let Some(header) = trace.header() else {
        return Ok(());
    };
    let changed = rr_lite_replayer::changed_inputs(trace, &header.cwd)?;
    if changed.is_empty() {
        return Ok(());
    }
    eprintln!(
        "rr-lite: warning: {} file(s) the program read have changed since the recording; \
         replay reads them live and may not reproduce it (record with --snapshot-files to \
         keep copies in the trace):",
        changed.len()
    );
    print_first_ten(changed.iter());
    Ok(())
}

pub(crate) fn describe_event(e: &RecordedEvent, symbols: &mut Symbolizer) -> String {
    let site = if e.kind == EventKind::ThreadStart {
        symbols.code_at(e.site)
    } else {
        symbols.site(e.site)
    };
    format!("{} {} at {site}", e.kind.name(), describe_addr(e.addr))
}

pub(crate) fn print_divergence(r: &DivergenceReport, symbols: &mut Symbolizer) {
    for line in divergence_lines(r, symbols) {
        eprintln!("{line}");
    }
}

/// The lines of [`print_divergence`]'s report.
fn divergence_lines(r: &DivergenceReport, symbols: &mut Symbolizer) -> Vec<String> {
    let mut lines = Vec::new();
    let expected = r
        .expected
        .as_ref()
        .map(|e| describe_event(e, symbols))
        .unwrap_or_else(|| "nothing (the recording has no such event)".into());
    lines.push(format!(
        "rr-lite: replay diverged from the recording in thread {} at event t{}:{} \
         (`rr-lite replay --at t{}:{}` stops there in gdb)",
        r.thread, r.thread, r.index, r.thread, r.index
    ));
    match r.what {
        Divergence::Event | Divergence::HeapAddress | Divergence::Result => {
            let actual = format!(
                "{} {} at {}",
                r.actual_kind.map_or("?", |k| k.name()),
                describe_addr(r.actual_addr),
                symbols.site(r.actual_site)
            );
            lines.push(format!("  expected: {expected}"));
            lines.push(format!("  actual:   {actual}"));
            match r.what {
                Divergence::HeapAddress => match &r.expected {
                    Some(e) if e.kind == EventKind::Alloc => lines.push(format!(
                        "  the allocator returned {:#x} where the recording has {:#x}",
                        r.actual_value, e.payload
                    )),
                    // (A payload of another kind is no address: say only
                    // that the recording allocated nothing here.)
                    Some(_) => lines.push(format!(
                        "  the allocator returned {:#x} where the recording allocated nothing",
                        r.actual_value
                    )),
                    None => lines.push(format!("  the allocator returned {:#x}", r.actual_value)),
                },
                Divergence::Result => lines.push(format!(
                    "  the call returned {} where the recording has {}",
                    result_text(r.actual_kind, r.actual_value),
                    result_text(r.actual_kind, r.expected_value)
                )),
                _ => {}
            }
        }
        Divergence::Summary => lines.push(format!(
            "  at the thread's end its events differ from the recording's in number or in the \
             addresses they touched (recorded {}, replayed {}: an event count, or a hash of the \
             accesses' addresses); `rr-lite replay --verify` compares every event and names \
             the first that differs",
            r.expected_value, r.actual_value
        )),
        Divergence::UnknownThread => {
            lines.push("  the program created a thread the recording does not have".into())
        }
        Divergence::Missing => lines.push(format!("  expected: {expected}")),
    }
    lines.push(
        "  (the program is the recorded one; the run depended on something replay does not \
         reproduce: other input, an edited trace, a limit in the README such as \
         inline-assembly synchronisation or files glibc opens by itself, or a fault of \
         rr-lite's: if none of those applies, please report it with the trace, packed \
         with `rr-lite pack`)"
            .into(),
    );
    lines
}

fn result_text(kind: Option<EventKind>, payload: u64) -> String {
    if kind == Some(EventKind::DescriptorOpen) && (payload as i64) > i64::from(u32::MAX) {
        return format!("descriptors {} and {}", payload as u32, payload >> 32);
    }
    let value = payload as i64;
    let descriptor = matches!(
        kind,
        Some(EventKind::DescriptorOpen | EventKind::DescriptorClose)
    );
    match value {
        // A failed descriptor call's payload is its error number, negated.
        -4095..=-1 if descriptor => format!(
            "{value} ({})",
            std::io::Error::from_raw_os_error(-value as i32)
        ),
        _ => value.to_string(),
    }
}

fn print_deadlock(r: &DeadlockReport, symbols: &mut Symbolizer) {
    match r.stalled_for {
        None => {
            eprintln!("rr-lite: replay deadlock: every thread is waiting and nothing progresses")
        }
        Some(stalled) => {
            let running: Vec<String> = r.running.iter().map(|t| format!("thread {t}")).collect();
            eprintln!(
                "rr-lite: replay stalled: no thread reached an event for {:.0} s while some wait; \
                 {} ran meanwhile without reaching its next event (spinning, in code rr-lite does \
                 not see, for a thread that waits?)",
                stalled.as_secs_f64(),
                if running.is_empty() {
                    "no thread".to_owned()
                } else {
                    running.join(", ")
                }
            );
        }
    }
    for w in &r.waits {
        let next = w
            .next_event
            .as_ref()
            .map(|e| describe_event(e, symbols))
            .unwrap_or_else(|| "?".into());
        if w.blocked_in_call {
            eprintln!(
                "  thread {} at event t{}:{} ({next}) is blocked in a real call (a lock held by a waiting thread?)",
                w.thread, w.thread, w.at_index
            );
            continue;
        }
        if w.at_end {
            eprintln!(
                "  thread {} has done all {} events the recording has for it",
                w.thread, w.at_index
            );
            continue;
        }
        match (w.waits_for, w.turn) {
            (Some((u, j)), _) => eprintln!(
                "  thread {} at event t{}:{} ({next}) waits for thread {u} to complete event t{u}:{j}",
                w.thread, w.thread, w.at_index
            ),
            (None, Some(turn)) => eprintln!(
                "  thread {} at event t{}:{} ({next}) waits for global turn {turn}",
                w.thread, w.thread, w.at_index
            ),
            _ => eprintln!(
                "  thread {} at event t{}:{} ({next}) waits",
                w.thread, w.thread, w.at_index
            ),
        }
    }
    if !r.cycle.is_empty() {
        let cycle: Vec<String> = r.cycle.iter().map(|t| format!("thread {t}")).collect();
        eprintln!("  cycle: {} -> {}", cycle.join(" -> "), cycle[0]);
    }
}

/// How a run ended, as a sentence's verb: "exited with status 1", "was
/// killed by SIGTERM".
fn ended(ending: rr_lite_trace::ProgramEnding) -> String {
    match ending {
        rr_lite_trace::ProgramEnding::Signaled { .. } => format!("was {}", describe_ending(ending)),
        rr_lite_trace::ProgramEnding::Exited { .. } => describe_ending(ending),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_descriptor_call_names_its_error() {
        let open = Some(EventKind::DescriptorOpen);
        let text = result_text(open, -17i64 as u64);
        assert!(text.starts_with("-17 (File exists"), "{text}");
        assert_eq!(result_text(open, 4), "4");
        assert_eq!(result_text(None, -1i64 as u64), "-1");
    }

    /// An allocation where the recording has another event: its payload is
    /// no address ("where the recording has 0x0" misled).
    #[test]
    fn an_allocation_where_the_recording_has_none_says_so() {
        let mut symbols = Symbolizer::new(rr_lite_symbols::ModuleMap::default());
        let event = |kind, payload| RecordedEvent {
            thread: 1,
            index: 7,
            clock: 9,
            kind,
            addr: 0x1000,
            size: 8,
            site: 0,
            payload,
        };
        let report = |expected| DivergenceReport {
            what: Divergence::HeapAddress,
            thread: 1,
            index: 7,
            expected: Some(expected),
            actual_kind: Some(EventKind::Alloc),
            actual_addr: 0x5000_0000_0040,
            actual_site: 0,
            expected_value: 0,
            actual_value: 0x5000_0000_0040,
        };
        let other = divergence_lines(&report(event(EventKind::WriteRange, 0)), &mut symbols);
        assert!(
            other.iter().any(
                |l| l.contains("returned 0x500000000040 where the recording allocated nothing")
            ),
            "{other:#?}"
        );
        assert!(
            !other
                .iter()
                .any(|l| l.contains("0x0\n") || l.ends_with("0x0")),
            "{other:#?}"
        );
        let alloc = divergence_lines(
            &report(event(EventKind::Alloc, 0x5000_0000_0010)),
            &mut symbols,
        );
        assert!(
            alloc
                .iter()
                .any(|l| l
                    .contains("returned 0x500000000040 where the recording has 0x500000000010")),
            "{alloc:#?}"
        );
    }
}
