//! `rr-lite races [TRACE]`: the data races of the recorded run (see
//! `rr_lite_splitter::races`), grouped by pair of call sites, each with its
//! first occurrence as `T:N` ids that `replay --at` and `dump` take.

use crate::output::outln;
use std::path::PathBuf;

use rr_lite_splitter::races::{
    HeapBlock, MAX_RANGE_GRANULES, Race, RaceAccess, RaceFinder, RaceReport,
};
use rr_lite_symbols::Symbolizer;
use serde::Serialize;

use crate::output::{open_trace, symbolizer};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "A race: two plain accesses to one 8-byte granule by two threads, at \
least one a write, that the run's synchronisation (locks, condition variables, barriers, \
semaphores, thread create/join, atomics, OpenMP constructs) did not order. Atomics count as \
acquire-release whatever their memory order. Only what this run did is checked: a race in \
code it did not run, or hidden by this run's timing, is not reported.

Exit status: 0 (races or not), or STATUS with --fail-on-race when there is one; 1 for \
rr-lite's own errors."
)]
pub struct RacesArgs {
    /// Trace directory or name (default: the latest trace).
    trace: Option<PathBuf>,
    /// One JSON object: {"races": [...], "accesses": N}.
    #[arg(long)]
    json: bool,
    /// Exit with STATUS when the run has a race, for CI (`--fail-on-race` alone: 3;
    /// `--fail-on-race=STATUS`).
    #[arg(long, value_name = "STATUS", num_args = 0..=1, require_equals = true, default_missing_value = "3")]
    fail_on_race: Option<u8>,
}

/// One side of a race, for people and for JSON.
#[derive(Debug, Serialize)]
struct Side {
    event: String,
    access: &'static str,
    site: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct RaceOut {
    first: Side,
    second: Side,
    addr: String,
    /// The variable or heap block the address is in, when known.
    location: Option<String>,
    count: u64,
    both_orders: bool,
}

pub fn run(args: RacesArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    let mut finder = RaceFinder::new();
    for ordered in trace.global_order()? {
        finder.push(&ordered?.event);
    }
    let report = finder.finish();
    let mut symbols = symbolizer(&trace)?;
    let races: Vec<RaceOut> = report
        .races
        .iter()
        .map(|r| describe(r, &report, &mut symbols))
        .collect();
    if args.json {
        let json = serde_json::json!({
            "races": races,
            "accesses": report.accesses,
            "ranges_checked_in_part": report.ranges_cut,
        });
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print_text(&races, &report, trace.path());
    }
    Ok(match args.fail_on_race {
        Some(status) if !races.is_empty() => i32::from(status),
        _ => 0,
    })
}

fn side(a: &RaceAccess, symbols: &mut Symbolizer) -> Side {
    Side {
        event: format!("t{}:{}", a.event.thread, a.event.index),
        access: if a.write { "write" } else { "read" },
        site: symbols.site(a.site).to_string(),
    }
}

pub(crate) fn describe(r: &Race, report: &RaceReport, symbols: &mut Symbolizer) -> RaceOut {
    RaceOut {
        first: side(&r.earlier, symbols),
        second: side(&r.later, symbols),
        addr: format!("{:#x}", r.addr),
        location: location(r.addr, &report.blocks, symbols),
        count: r.count,
        both_orders: r.both_orders,
    }
}

/// Says how many ranges were checked in part, if any: a race further into
/// one is not in the report.
fn note_ranges_cut(report: &RaceReport) {
    if report.ranges_cut > 0 {
        let kib = (MAX_RANGE_GRANULES << 3) >> 10;
        outln!(
            "note: {} range{} (memcpy, memset, read...) over {kib} KiB checked on {} first {kib} \
             KiB only: a race further into one is not reported",
            report.ranges_cut,
            if report.ranges_cut == 1 { "" } else { "s" },
            if report.ranges_cut == 1 {
                "its"
            } else {
                "their"
            },
        );
    }
}

/// `counter` or `counter+8`; a heap block by its size and allocation site.
fn location(addr: u64, blocks: &[HeapBlock], symbols: &mut Symbolizer) -> Option<String> {
    if let Some(name) = crate::output::variable_at(symbols, addr) {
        return Some(format!("variable {name}"));
    }
    let block = blocks
        .iter()
        .find(|b| addr >= b.start && addr < b.start + b.size.max(1))?;
    Some(format!(
        "offset {} of a {}-byte heap block allocated at {} (t{}:{})",
        addr - block.start,
        block.size,
        symbols.site(block.site),
        block.event.thread,
        block.event.index
    ))
}

fn print_text(races: &[RaceOut], report: &RaceReport, trace: &std::path::Path) {
    let occurrences: u64 = races.iter().map(|r| r.count).sum();
    if races.is_empty() {
        outln!(
            "no data races in {} ({} plain accesses checked)",
            trace.display(),
            report.accesses
        );
        note_ranges_cut(report);
        return;
    }
    outln!(
        "{} data race{} in {} ({occurrences} occurrences, {} plain accesses checked)",
        races.len(),
        if races.len() == 1 { "" } else { "s" },
        trace.display(),
        report.accesses
    );
    for (n, r) in races.iter().enumerate() {
        outln!();
        outln!(
            "race {}: {} at {} ({})",
            n + 1,
            r.first.access,
            r.first.site,
            r.first.event
        );
        outln!(
            "     and {} at {} ({}), unordered",
            r.second.access,
            r.second.site,
            r.second.event
        );
        let place = r.location.as_deref().unwrap_or("an address");
        let orders = if r.both_orders {
            ", in both orders"
        } else {
            ""
        };
        outln!(
            "  on {place} ({}); {} time{}{orders}",
            r.addr,
            r.count,
            if r.count == 1 { "" } else { "s" }
        );
        outln!(
            "  look: rr-lite replay --at {} (then `continue` to {})",
            r.first.event,
            r.second.event
        );
    }
    note_ranges_cut(report);
}
