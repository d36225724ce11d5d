//! `rr-lite why T:N [TRACE]`: where the value a read saw came from, or who
//! saw a write (see `rr_lite_splitter::why`).

use crate::output::outln;
use std::path::PathBuf;

use anyhow::Context;
use rr_lite_splitter::pairs::EventRef;
use rr_lite_splitter::why::{Touch, Why, WhyFinder};
use rr_lite_symbols::Symbolizer;
use rr_lite_trace::state::DebugStop;
use serde::Serialize;

use crate::output::{describe_addr, open_trace, symbolizer};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "For a read: the write whose value it saw (the last write of those \
bytes before it in the recorded order), then where that value came from: the read the \
writing thread made of the same bytes before writing (x = x + 1), the write that read saw, \
and so on, --depth writes back. For a write: the reads that saw it, up to the next write. \
Only the accessed bytes are followed, not data flow through other variables."
)]
pub struct WhyArgs {
    /// The event, as `dump` and `races` print it (e.g. t1:42).
    #[arg(value_parser = crate::debug_cmd::parse_event_id)]
    event: DebugStop,
    /// Trace directory or name (default: the latest trace).
    trace: Option<PathBuf>,
    /// How many writes back a read's chain goes.
    #[arg(long, default_value_t = 4)]
    depth: usize,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Step {
    event: String,
    kind: &'static str,
    addr: String,
    site: String,
}

fn step(t: &Touch, symbols: &mut Symbolizer) -> Step {
    Step {
        event: format!("t{}:{}", t.event.thread, t.event.index),
        kind: t.kind.name(),
        addr: describe_addr(t.addr),
        site: symbols.site(t.site).to_string(),
    }
}

pub fn run(args: WhyArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    let stop = args.event;
    let target = crate::debug_cmd::event_at(&trace, stop)?;
    anyhow::ensure!(
        target.kind.is_plain_access() || target.kind.is_atomic(),
        "t{}:{} is not a memory access but a {} event: `why` follows reads and writes",
        stop.thread,
        stop.index,
        target.kind.name()
    );
    let mut finder = WhyFinder::new(
        EventRef {
            thread: stop.thread,
            index: stop.index,
        },
        target.addr,
        target.size,
        args.depth,
    );
    for ordered in trace.global_order()? {
        let ordered = ordered?;
        finder.push(ordered.seq, &ordered.event);
        if !finder.wants_more() {
            break;
        }
    }
    let why = finder
        .finish()
        .context("the event is not in the trace's global order")?;
    let mut symbols = symbolizer(&trace)?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&to_json(&why, &mut symbols))?
        );
    } else {
        print_text(&why, &mut symbols);
    }
    Ok(0)
}

fn to_json(why: &Why, symbols: &mut Symbolizer) -> serde_json::Value {
    match why {
        Why::Read {
            target,
            chain,
            initial,
        } => serde_json::json!({
            "event": step(target, symbols),
            "saw": chain.iter().map(|(write, read)| serde_json::json!({
                "write": step(write, symbols),
                "after_read": read.as_ref().map(|r| step(r, symbols)),
            })).collect::<Vec<_>>(),
            "initial_value": initial,
        }),
        Why::Write { target, seen_by } => serde_json::json!({
            "event": step(target, symbols),
            "seen_by": seen_by.iter().map(|r| step(r, symbols)).collect::<Vec<_>>(),
        }),
    }
}

fn line(s: &Step) -> String {
    format!("{} {} {} at {}", s.event, s.kind, s.addr, s.site)
}

fn print_text(why: &Why, symbols: &mut Symbolizer) {
    match why {
        Why::Read {
            target,
            chain,
            initial,
        } => {
            outln!("{}", line(&step(target, symbols)));
            let mut indent = String::from("  ");
            for (write, read) in chain {
                outln!("{indent}saw {}", line(&step(write, symbols)));
                match read {
                    Some(r) if r.seq == write.seq => {
                        outln!("{indent}  an atomic read-modify-write of what it");
                    }
                    Some(r) => {
                        outln!(
                            "{indent}  which its thread wrote after {}",
                            line(&step(r, symbols))
                        );
                    }
                    None => outln!(
                        "{indent}  whose thread did not read those bytes before: its value \
                         came from elsewhere"
                    ),
                }
                indent.push_str("    ");
            }
            if *initial {
                outln!(
                    "{indent}saw the initial value: nothing wrote those bytes before in this run"
                );
            }
        }
        Why::Write { target, seen_by } => {
            outln!("{}", line(&step(target, symbols)));
            if seen_by.is_empty() {
                outln!("  no read saw it (overwritten or never read)");
            }
            for r in seen_by {
                outln!("  seen by {}", line(&step(r, symbols)));
            }
        }
    }
}
