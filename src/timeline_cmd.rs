//! `rr-lite timeline [TRACE] -o FILE.html`: one self-contained HTML page
//! (no network) with a lane per thread over the global order, the kept
//! dependency pairs and the races drawn (see
//! `rr_lite_splitter::timeline` for what is kept of big traces).
//!
//! The page is `timeline.html` with the data spliced in as JSON. The data
//! is columnar (one array per field) to keep 400 000 marks to a few MB.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use rr_lite_splitter::races::{RaceFinder, RaceReport};
use rr_lite_splitter::timeline::{Lane, Mark, Placed, Timeline, TimelineBuilder, TimelineOptions};
use rr_lite_splitter::{Analysis, Analyzer, DependencyKind, FinerCheck};
use rr_lite_symbols::Symbolizer;
use rr_lite_trace::{EventKind, TraceDir, pseudo};
use serde_json::{Value, json};

use crate::output::{open_trace, symbolizer, variable_at};
use crate::progress::SplitProgressBar;
use crate::split_cmd::AnalysisArgs;

const PAGE: &str = include_str!("timeline.html");
/// Where the page takes its data.
const DATA_SLOT: &str = "/*RR_LITE_TIMELINE_DATA*/";

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Open the file in a browser: it needs no network. Each thread is a \
lane; the horizontal axis is the recorded global order (event 0 to N). Bars show how many \
reads (blue), writes (orange) and other events (green) each thread made in each column; \
ticks are single events, coloured by kind; thin lines are the dependency pairs the split \
keeps (RAW, WAR, WAW); red lines are races (see `rr-lite races`). Wheel or +/- to zoom, \
drag or arrow keys to pan, 0 to see everything; hover for the event and its call site; \
click a race in the list to go to it.

Big traces are summarised: the bars always count every event, but only an evenly spaced \
sample of single events (--max-marks) and of dependency pairs (--max-edges) is drawn; the \
page says when."
)]
pub struct TimelineArgs {
    /// Trace directory or name (default: the latest trace).
    trace: Option<PathBuf>,
    /// The HTML file to write.
    #[arg(long, short, value_name = "FILE.html")]
    output: PathBuf,
    /// Most single events drawn, over all threads.
    #[arg(long, default_value_t = TimelineOptions::default().max_marks, value_name = "N")]
    max_marks: usize,
    /// Most dependency pairs drawn.
    #[arg(long, default_value_t = TimelineOptions::default().max_edges, value_name = "N")]
    max_edges: usize,
    #[command(flatten)]
    analysis: AnalysisArgs,
}

pub fn run(args: TimelineArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    let options = TimelineOptions {
        max_marks: args.max_marks,
        max_edges: args.max_edges,
        ..TimelineOptions::default()
    };
    let (timeline, report) = build(&trace, &args.analysis, options)?;
    let mut symbols = symbolizer(&trace)?;
    let data = page_data(&trace, &timeline, &report, &mut symbols);
    let page = PAGE.replace(DATA_SLOT, &script_safe(&data.to_string()));
    std::fs::write(&args.output, page)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    let drawn: usize = timeline
        .lanes
        .iter()
        .map(|l| l.sync.len() + l.accesses.len())
        .sum();
    eprintln!(
        "rr-lite: wrote {} ({} threads, {} events, {drawn} drawn singly, {} of {} dependencies, {} races)",
        args.output.display(),
        timeline.lanes.len(),
        timeline.events,
        timeline.edges.len(),
        timeline.edges_total,
        report.races.len()
    );
    Ok(0)
}

/// The two passes over the global order (the first one again if its
/// analysis goes to a finer granule, as the split's does: the page draws
/// the dependencies replay keeps).
fn build(
    trace: &TraceDir,
    analysis: &AnalysisArgs,
    options: TimelineOptions,
) -> anyhow::Result<(Timeline, RaceReport)> {
    let mut analyzer = Analyzer::new(&analysis.options())?;
    let (analysis, report, builder) = loop {
        match first_pass(trace, analyzer, &options)? {
            FirstPass::Finer(finer) => analyzer = *finer,
            FirstPass::Done(found) => break *found,
        }
    };
    let mut links = builder.links(&analysis.pairs, &report.races);
    for item in trace.global_order()? {
        if !links.wants_more() {
            break;
        }
        let item = item?;
        links.push(item.seq, &item.event);
    }
    Ok((links.finish(), report))
}

/// How the first pass ended: with the pairs, races and marks, or early
/// with an analyzer at a finer granule to read the trace again with.
enum FirstPass {
    Done(Box<(Analysis, RaceReport, TimelineBuilder)>),
    Finer(Box<Analyzer>),
}

/// The pairs, the races and the marks, in one pass over the global order.
fn first_pass(
    trace: &TraceDir,
    mut analyzer: Analyzer,
    options: &TimelineOptions,
) -> anyhow::Result<FirstPass> {
    let bar = SplitProgressBar::new();
    use rr_lite_splitter::Progress;
    let total = trace.header().map(|h| h.entries.iter().sum());
    bar.start(total);
    let mut finer = FinerCheck::new(&analyzer, total);
    let mut races = RaceFinder::new();
    let mut builder = TimelineBuilder::new(*options, trace.threads());
    for item in trace.global_order()? {
        let item = item?;
        analyzer.push(&item.event)?;
        races.push(&item.event);
        builder.push(item.seq, &item.event);
        if item.seq % rr_lite_splitter::progress::PROGRESS_STEP == 0 {
            bar.entries_read(item.seq);
        }
        if let Some(finer) = finer.after_events(&mut analyzer)? {
            return Ok(FirstPass::Finer(Box::new(finer)));
        }
    }
    if let Some(finer) = finer.at_end(&mut analyzer)? {
        return Ok(FirstPass::Finer(Box::new(finer)));
    }
    let found = (analyzer.finish(), races.finish(), builder);
    Ok(FirstPass::Done(Box::new(found)))
}

/// Call sites and addresses as short tables the marks point into.
#[derive(Default)]
struct Names {
    sites: Vec<String>,
    site_ids: HashMap<u64, usize>,
    /// Pseudo-addresses and variables, by name.
    places: Vec<String>,
    place_ids: HashMap<u64, i64>,
}

/// Addresses above this are not exact as JavaScript numbers.
const EXACT_IN_JS: u64 = 1 << 53;

impl Names {
    fn site(&mut self, site: u64, symbols: &mut Symbolizer) -> usize {
        *self.site_ids.entry(site).or_insert_with(|| {
            self.sites.push(symbols.site(site).to_string());
            self.sites.len() - 1
        })
    }

    /// An address as the page takes it: the address itself when it names
    /// nothing and is exact in JavaScript, else `-(1 + i)` for
    /// `places[i]` (a variable or a pseudo-address by name).
    fn place(&mut self, addr: u64, symbols: &mut Symbolizer) -> i64 {
        if let Some(&id) = self.place_ids.get(&addr) {
            return id;
        }
        let name = pseudo::describe(addr).or_else(|| variable_at(symbols, addr));
        let id = match name {
            Some(name) => {
                self.places.push(name);
                -(self.places.len() as i64)
            }
            None if addr < EXACT_IN_JS => addr as i64,
            None => {
                self.places.push(format!("{addr:#x}"));
                -(self.places.len() as i64)
            }
        };
        self.place_ids.insert(addr, id);
        id
    }
}

fn marks_json(marks: &[Mark], names: &mut Names, symbols: &mut Symbolizer) -> Value {
    let mut columns: [Vec<Value>; 6] = Default::default();
    for m in marks {
        let e = &m.event;
        columns[0].push(m.seq.into());
        columns[1].push(e.index.into());
        columns[2].push((e.kind as u8).into());
        columns[3].push(names.site(e.site, symbols).into());
        columns[4].push(names.place(e.addr, symbols).into());
        columns[5].push(e.size.into());
    }
    let [seq, index, kind, site, addr, size] = columns;
    json!({ "seq": seq, "index": index, "kind": kind, "site": site, "addr": addr, "size": size })
}

fn lane_json(lane: &Lane, names: &mut Names, symbols: &mut Symbolizer) -> Value {
    let bins: Vec<u32> = lane
        .bins
        .iter()
        .flat_map(|b| [b.reads, b.writes, b.other])
        .collect();
    json!({
        "thread": lane.thread,
        "events": lane.events,
        "first": lane.first_seq,
        "last": lane.last_seq,
        "bins": bins,
        "sync": marks_json(&lane.sync, names, symbols),
        "allSync": lane.all_sync,
        "accesses": marks_json(&lane.accesses, names, symbols),
        "allAccesses": lane.all_accesses,
    })
}

fn placed(p: Placed) -> [u64; 3] {
    [u64::from(p.event.thread), p.event.index, p.seq]
}

fn page_data(
    trace: &TraceDir,
    timeline: &Timeline,
    report: &RaceReport,
    symbols: &mut Symbolizer,
) -> Value {
    let mut names = Names::default();
    let lanes: Vec<Value> = timeline
        .lanes
        .iter()
        .map(|l| lane_json(l, &mut names, symbols))
        .collect();
    let edges: Vec<Value> = timeline
        .edges
        .iter()
        .map(|e| json!([placed(e.from), placed(e.to), kind_index(e.kind)]))
        .collect();
    let races: Vec<Value> = timeline
        .races
        .iter()
        .map(|r| {
            let mut described =
                serde_json::to_value(crate::races_cmd::describe(&r.race, report, symbols))
                    .unwrap_or(Value::Null);
            let occurrences: Vec<Value> = r
                .occurrences
                .iter()
                .map(|(a, b)| json!([placed(*a), placed(*b)]))
                .collect();
            described["occurrences"] = occurrences.into();
            described
        })
        .collect();
    let kinds: serde_json::Map<String, Value> = EventKind::ALL
        .iter()
        .map(|k| ((*k as u8).to_string(), k.name().into()))
        .collect();
    json!({
        "title": title(trace),
        "events": timeline.events,
        "binWidth": timeline.bin_width,
        "lanes": lanes,
        "edges": edges,
        "edgesTotal": timeline.edges_total,
        "edgeKinds": DependencyKind::ALL.map(DependencyKind::name),
        "races": races,
        "kinds": kinds,
        "sites": names.sites,
        "places": names.places,
    })
}

fn kind_index(kind: DependencyKind) -> usize {
    DependencyKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(0)
}

/// `program args... (trace name)`.
fn title(trace: &TraceDir) -> String {
    let name = trace
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match trace.header() {
        Some(h) => {
            let argv: Vec<String> = h
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            format!("{} ({name})", argv.join(" "))
        }
        None => name,
    }
}

/// JSON that can sit inside a `<script>` element: no `</script>`, no
/// `<!--`, whatever the strings hold (C++ names have `<` and `>`). The
/// characters replaced only occur inside JSON strings, where `\uXXXX`
/// means the same.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_safe_json_cannot_close_the_script_and_parses_the_same() {
        let value = json!({"site": "f<int>() </script><!-- & \u{2028}"});
        let safe = script_safe(&value.to_string());
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'));
        let back: Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn the_page_has_one_data_slot() {
        assert_eq!(PAGE.matches(DATA_SLOT).count(), 1);
        assert!(!PAGE.contains("http://") && !PAGE.contains("https://"));
    }
}
