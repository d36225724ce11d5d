//! `rr-lite graph [TRACE]`: the topology graph of the kept dependency pairs,
//! as DOT or JSON. Analyses the trace like `split` but writes nothing into it.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::output::{open_trace, symbolizer};
use crate::progress::SplitProgressBar;
use crate::split_cmd::AnalysisArgs;

#[derive(clap::Args, Debug)]
pub struct GraphArgs {
    /// Trace directory (default: the latest trace).
    pub trace: Option<PathBuf>,
    /// Graphviz DOT output (the default).
    #[arg(long, conflicts_with = "json")]
    pub dot: bool,
    /// JSON output: {"nodes": [...], "edges": [{"from", "to", "kind"}]}.
    #[arg(long)]
    pub json: bool,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

pub fn run(args: GraphArgs) -> anyhow::Result<i32> {
    let trace = open_trace(args.trace.as_deref())?;
    let topology = {
        let bar = SplitProgressBar::new();
        // The pairs the plans keep: sections float as in `split`.
        let mut analyzer = rr_lite_splitter::Analyzer::new(&args.analysis.options())?;
        if let Some(code) = rr_lite_replayer::plans::section_code(&trace) {
            analyzer = analyzer.floating_sections(code);
        }
        rr_lite_splitter::analyze_trace_with(&trace, analyzer, &bar)?.topology()
    };
    let symbols = std::cell::RefCell::new(symbolizer(&trace)?);
    let label = |site: u64| symbols.borrow_mut().site(site).to_string();
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&topology.to_json(Some(&label)))?;
        s.push('\n');
        s
    } else {
        topology.to_dot(Some(&label))
    };
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                // `rr-lite graph | head` is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("cannot write the graph to stdout")?,
            }
        }
    }
    Ok(0)
}
