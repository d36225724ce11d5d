//! `rr-lite demo`: the whole pipeline on the bundled racy program, from a
//! scratch directory: build it with `rr-lite cc`, record it, show the trace.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, ensure};

static DEMO_SOURCE: &str = include_str!("../examples/racy_bank.c");

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

/// Runs `rr-lite ARGS...` as a child, echoing the command line first.
fn step(args: &[&str], dir: &std::path::Path) -> anyhow::Result<i32> {
    println!("\n$ rr-lite {}", args.join(" "));
    let status = Command::new(rr_lite()?)
        .args(args)
        .current_dir(dir)
        .status()
        .with_context(|| format!("running rr-lite {}", args.join(" ")))?;
    Ok(status.code().unwrap_or(128))
}

pub fn run(args: DemoArgs) -> anyhow::Result<i32> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("rr-lite-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let source = dir.join("racy_bank.c");
    std::fs::write(&source, DEMO_SOURCE)
        .with_context(|| format!("writing {}", source.display()))?;
    println!(
        "rr-lite demo in {} (a bank with racy counters; output depends on the interleaving)",
        dir.display()
    );

    let status = step(
        &[
            "cc",
            "-O2",
            "-g",
            "-pthread",
            "racy_bank.c",
            "-o",
            "racy_bank",
        ],
        &dir,
    )?;
    ensure!(status == 0, "building the demo failed (status {status})");
    let trace = dir.join("trace");
    let _ = std::fs::remove_dir_all(&trace);
    let trace_arg = trace.to_string_lossy().into_owned();
    let status = step(&["record", "-o", &trace_arg, "./racy_bank"], &dir)?;
    ensure!(status == 0, "recording the demo failed (status {status})");
    step(&["info", &trace_arg], &dir)?;
    println!(
        "\n$ rr-lite dump {trace_arg} | grep -v ' read ' | head -25   (synchronisation and writes)"
    );
    let dump = Command::new(rr_lite()?)
        .args(["dump", &trace_arg])
        .output()
        .context("running rr-lite dump")?;
    ensure!(
        dump.status.success(),
        "rr-lite dump failed: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let text = String::from_utf8_lossy(&dump.stdout);
    for line in text.lines().filter(|l| !l.contains(" read ")).take(25) {
        println!("{line}");
    }
    println!(
        "\nRe-run `./racy_bank` in {} a few times: the counts change from run to run.",
        dir.display()
    );
    Ok(0)
}
