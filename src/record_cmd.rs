//! `rr-lite record` and the compiler wrappers.

use crate::output::out;
use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use rr_lite_recorder::toolchain::{self, Language};
use rr_lite_recorder::{RecordOptions, record};

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// Trace directory to create (must not exist or be empty). Default: a new
    /// `<program>-<n>` under $RR_LITE_TRACE_DIR or ~/.local/share/rr-lite.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Print nothing but the program's own output.
    #[arg(short, long)]
    quiet: bool,
    /// Copy every regular file the program opens for reading into the trace, so that
    /// replay reads the copies (the files may change or go away). Without it, replay
    /// reads files live.
    #[arg(long)]
    snapshot_files: bool,
    /// Store the whole environment as it is in the trace. By default the values of
    /// variables whose names look secret (KEY, TOKEN, SECRET, PASSWORD, PASSWD,
    /// CREDENTIAL; or the comma-separated fragments in RR_LITE_SECRET_PATTERNS) are
    /// stored as `*`s of the same length: the program still sees the real values, replay
    /// gets the placeholders.
    #[arg(long)]
    keep_env: bool,
    /// A thread keeps the locks that order its accesses to shared data for up to N of
    /// its hooks (a random number from 1 to N each time) instead of giving each back at
    /// the next one, while it keeps using what it keeps: threads that share data take
    /// turns on it every few dozen accesses instead of every one, so the recorded
    /// interleaving has far fewer switches for replay to reproduce (a shared index four
    /// threads bump: 20-30x fewer waits; a ring buffer or spin lock on atomics: 30x
    /// and more). A thread that spins on what it keeps (polls a flag) gives it back
    /// to the thread waiting for it. Turns still fall anywhere in a thread's code,
    /// so races such as lost updates still show (--chaos keeps N and makes every
    /// access a point where it may switch threads). 0: turns as fine as the locks
    /// allow; use 0 for programs that synchronise in inline
    /// assembly, whose order is not recorded and which a kept lock makes replay miss
    /// more often (SPLASH-2's barrier: barnes 0 of 12 replays exact at 64, 12 of 12 at 0).
    #[arg(long, value_name = "N", default_value_t = rr_lite_recorder::session::DEFAULT_QUANTUM)]
    quantum: u32,
    #[command(flatten)]
    hunt: crate::until_failure::HuntArgs,
    /// The program (built with `rr-lite cc`) and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM [ARGS]..."
    )]
    command: Vec<OsString>,
}

pub fn run(args: RecordArgs) -> anyhow::Result<i32> {
    let (program, rest) = args.command.split_first().context("no program given")?;
    let mut options = RecordOptions::new(program.clone(), rest.to_vec());
    options.output = args.output;
    options.snapshot_files = args.snapshot_files;
    options.keep_env = args.keep_env;
    options.quantum = args.quantum;
    // Programs load the runtime from the cache: put it back if it was
    // deleted (or replace a copy that is not this build's, or not safe).
    rr_lite_recorder::runtime::install()?;
    let path = rr_lite_recorder::session::resolve_program(program)?;
    if !args.quiet {
        for warning in rr_lite_recorder::unmodelled_libraries(&path) {
            eprintln!("rr-lite: warning: {warning}");
        }
        crate::output::warn_if_other_builds_runtime(
            &path,
            "it records and replays with that build's formats; rebuild it with this rr-lite's \
             `cc` (or record and replay with the rr-lite that built it)",
        );
    }
    let hunt = crate::until_failure::Hunt::from_args(args.hunt, &path, options.output.is_some())?;
    if hunt.runs().is_some() {
        return crate::until_failure::run(hunt, options, args.quiet);
    }
    options.chaos = hunt.schedule_for_run(1);
    options.timeout = hunt.timeout();
    if let (Some(chaos), false) = (&options.chaos, args.quiet) {
        eprintln!("rr-lite: schedule: {}", chaos.describe());
    }
    let recording = match record(&options) {
        Ok(recording) => recording,
        // The program's status still is record's, as it would have been.
        Err(e @ rr_lite_recorder::RecordError::Unfinished { ending, .. }) => {
            eprintln!("rr-lite: error: {:#}", anyhow::Error::from(e));
            return Ok(ending.shell_status());
        }
        Err(e) => return Err(e.into()),
    };
    if !args.quiet {
        report(&recording);
    }
    Ok(recording.header.ending.shell_status())
}

/// What `record` says once the program has ended.
pub fn report(recording: &rr_lite_recorder::Recording) {
    let h = &recording.header;
    let events: u64 = h.entries.iter().sum();
    eprintln!(
        "rr-lite: recorded {events} events from {} threads in {:.3}s into {} ({})",
        h.threads,
        h.wall_time_ns as f64 / 1e9,
        recording.dir.display(),
        crate::output::describe_ending(h.ending),
    );
    for problem in &h.problems {
        eprintln!("rr-lite: warning: {problem}");
    }
    if let Some(chaos) = &h.chaos {
        eprintln!(
            "rr-lite: the run's schedule came from the runtime ({}); to try it again: rr-lite record {}",
            chaos.describe(),
            crate::until_failure::chaos_flags(chaos),
        );
    }
    if let Some(yields) = h.spin_yields.filter(|&n| n >= SPIN_YIELDS_WORTH_A_NOTE)
        && h.chaos.is_none()
    {
        eprintln!(
            "rr-lite: note: threads spun on a flag, an index or a busy lock {yields} times long \
             enough to give way while recording; every poll is an event, recorded and replayed. \
             `rr-lite record --serialize` runs the threads in turns, which often records and \
             replays such programs faster (at the cost of showing fewer fine-grained races: \
             `rr-lite record --help`)."
        );
    }
    if h.ok {
        eprintln!(
            "rr-lite: to replay it: rr-lite replay {}",
            replay_name(&recording.dir)
        );
    }
}

/// Spins (polls of a flag 1024 times in a row, or a busy lock tried 4
/// times in a row: the runtime's `give_way`) after which `record` suggests
/// the serial schedule.
const SPIN_YIELDS_WORTH_A_NOTE: u64 = 1000;

/// How to name a trace on the command line: its bare name when it is in the
/// base directory (`rr-lite replay prog-3`), else its path.
pub fn replay_name(dir: &std::path::Path) -> String {
    let base = rr_lite_trace::dir::default_base_dir();
    let in_base = dir
        .parent()
        .is_some_and(|p| std::fs::canonicalize(p).ok() == std::fs::canonicalize(&base).ok());
    match dir.file_name() {
        Some(name) if in_base => name.to_string_lossy().into_owned(),
        _ => dir.display().to_string(),
    }
}

/// `rr-lite cc|c++ ARGS...`: replaces this process with the real compiler.
pub fn compiler(lang: Language, args: &[OsString]) -> anyhow::Result<i32> {
    use std::os::unix::process::CommandExt;
    if args.len() == 1 && args[0] == "--rr-help" {
        out!("{}", wrapper_help(lang));
        return Ok(0);
    }
    let mut cmd = toolchain::compiler_command(lang, args)?;
    let err = cmd.exec();
    Err(err).with_context(|| format!("cannot run {}", toolchain::real_compiler(lang)))
}

/// `rr-lite cc --rr-help`: what the wrapper does (every other argument,
/// `--help` included, is the real compiler's).
fn wrapper_help(lang: Language) -> String {
    let (word, one_word, make_var, var) = match lang {
        Language::C => ("cc", "rr-lite-cc", "CC", "RR_LITE_CC"),
        Language::Cxx => ("c++", "rr-lite-cxx", "CXX", "RR_LITE_CXX"),
    };
    format!(
        "rr-lite {word} ARGS... (or {one_word} ARGS...): runs the real compiler with ARGS, \
         every argument its own (--help included), adding -fsanitize=thread when it \
         compiles (without the function entry and exit hooks, which the runtime does not \
         need; with clang also the read-before-write hooks) and, when it links, the rr-lite runtime in place of libtsan (with an rpath \
         to the runtime's cache directory){cxx}. In a build: {make_var}=\"rr-lite {word}\" make, \
         or {make_var}={one_word} where one word is needed.\n\n\
         Environment:\n  \
         {var:<20} the real compiler (now: {real})\n  \
         {dir:<20} where the runtime is installed and linked from \
         (default: ~/.cache/rr-lite/runtime-<hash>)\n",
        real = toolchain::real_compiler(lang),
        dir = "RR_LITE_RUNTIME_DIR",
        cxx = match lang {
            Language::C => "",
            Language::Cxx => {
                " and a constructor that builds libstdc++'s lazily built locale state before \
                 main (compiled once into the same directory), so that threads printing their \
                 first numbers at once replay"
            }
        },
    )
}
