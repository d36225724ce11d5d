//! `rr-lite dump`: every event in the global order, one per line.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use rr_lite_trace::{Access, EventKind, OrderedEvent, pseudo};
use serde_json::json;

use crate::output::{describe_addr, open_trace, symbolizer, write_line};

#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    /// Trace directory (default: the latest trace).
    trace: Option<PathBuf>,
    /// Only this thread's events (logical id: 0 = main, then creation order).
    #[arg(long, value_name = "N")]
    thread: Option<u32>,
    /// One JSON object per line, with the keys seq, thread, index, clock,
    /// kind, access, addr, size, site, module, offset (and payload, object
    /// when they apply).
    #[arg(long)]
    json: bool,
    /// Do not symbolise call sites (faster; sites as module+offset).
    #[arg(long)]
    no_symbols: bool,
}

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadModifyWrite => "rmw",
    }
}

pub fn run(args: DumpArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    if let Some(t) = args.thread {
        anyhow::ensure!(
            t < trace.threads(),
            "{}: no thread {t} (the trace has {} threads)",
            trace.path().display(),
            trace.threads()
        );
    }
    let mut symbols = symbolizer(&trace)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for ordered in trace.global_order()? {
        let OrderedEvent { seq, event: e } = ordered?;
        if args.thread.is_some_and(|t| t != e.thread) {
            continue;
        }
        let site = match (args.no_symbols, e.kind) {
            (true, _) => None,
            // A start routine and a faulting instruction are exact
            // addresses, not return addresses.
            (false, EventKind::ThreadStart | EventKind::FatalSignal) => {
                Some(symbols.code_at(e.site))
            }
            (false, _) => Some(symbols.site(e.site)),
        };
        let site_text = site
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("{:#x}", e.site));
        let line = if args.json {
            let mut obj = json!({
                "seq": seq, "thread": e.thread, "index": e.index, "clock": e.clock,
                "kind": e.kind.name(), "access": access_name(e.kind.access()),
                "addr": e.addr, "size": e.size, "site": site_text, "pc": e.site,
            });
            if let Some(loc) = site.as_ref().and_then(|s| s.location.as_ref()) {
                obj["module"] = json!(loc.module);
                obj["offset"] = json!(loc.offset);
            }
            if e.kind.has_payload() {
                obj["payload"] = json!(e.payload);
            }
            if let Some(name) = pseudo::describe(e.addr) {
                obj["object"] = json!(name);
            }
            obj.to_string()
        } else {
            let result = match e.kind {
                EventKind::Alloc | EventKind::Free => format!(" ptr={:#x}", e.payload),
                // pipe, socketpair: two descriptors in one payload.
                EventKind::DescriptorOpen if (e.payload as i64) > i64::from(u32::MAX) => {
                    format!(" fds={},{}", e.payload as u32, e.payload >> 32)
                }
                k if k.has_payload() => format!(" result={}", e.payload as i64),
                _ => String::new(),
            };
            format!(
                "{seq:>9} t{}:{:<7} {:<15} {:<24} {:>5}  {site_text}{result}",
                e.thread,
                e.index,
                e.kind.name(),
                describe_addr(e.addr),
                e.size
            )
        };
        if !write_line(&mut out, &line)? {
            return Ok(0);
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(0),
    }
}
