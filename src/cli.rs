//! The raw command line (clap). Each subcommand's arguments are validated by
//! its own module.

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "rr-lite",
    version,
    about = "Record a multithreaded C/C++ program once, replay the same interleaving in parallel",
    long_about = "Record a multithreaded C/C++ program once, replay the same interleaving in parallel.\n\n\
Pipeline:\n  rr-lite cc -O2 -pthread prog.c -o prog    build with instrumentation\n  \
rr-lite record ./prog ARGS...              run once, write a trace directory\n  \
rr-lite dump | info                        look at what was recorded\n  \
rr-lite replay [--sequential]              re-run it with the recorded interleaving\n  \
rr-lite demo                               all of the above on a bundled racy program\n\n\
`rr-lite cc` and `rr-lite c++` take exactly the arguments of cc/c++ (set RR_LITE_CC / \
RR_LITE_CXX to choose the real compiler); they add -fsanitize=thread when compiling and \
link the rr-lite runtime instead of libtsan, so CC=\"rr-lite cc\" make and CMake work.\n\n\
Traces go to $RR_LITE_TRACE_DIR (default ~/.local/share/rr-lite), one directory per run, \
with a `latest-trace` link that commands use when no TRACE is given."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a program built with `rr-lite cc` and record its run into a trace directory.
    /// Exits with the program's status (128+N if a signal N killed it).
    Record(crate::record_cmd::RecordArgs),
    /// Print every recorded event in the global order, one per line.
    Dump(crate::dump_cmd::DumpArgs),
    /// Summarise a trace: program, threads, events, bytes, time.
    Info(crate::info_cmd::InfoArgs),
    /// Re-run the recorded program, reproducing the recorded interleaving.
    #[command(after_help = crate::replay_cmd::STATUS_HELP)]
    Replay(crate::replay_cmd::ReplayArgs),
    /// List the traces in $RR_LITE_TRACE_DIR (the latest marked *): name,
    /// program, how it ended, threads, events, size, date.
    Ls(crate::traces_cmd::LsArgs),
    /// Delete traces (by the names `ls` shows, or paths).
    Rm(crate::traces_cmd::RmArgs),
    /// Copy the program and the libraries it loaded into the trace, so it replays
    /// after the trace moves or the program is rebuilt or deleted.
    Pack(crate::traces_cmd::PackArgs),
    /// Find the cross-thread dependencies and build the per-thread replay plans
    /// (TRACE/plans/, statistics in TRACE/split/), in one pass over the trace.
    Split(crate::split_cmd::SplitArgs),
    /// Export the dependency graph of a trace (DOT or JSON).
    Graph(crate::graph_cmd::GraphArgs),
    /// The data races of the recorded run: unordered conflicting accesses, by pair of
    /// call sites, with the event ids to replay to.
    Races(crate::races_cmd::RacesArgs),
    /// For a read: the write it saw and where that value came from; for a write: the
    /// reads that saw it.
    Why(crate::why_cmd::WhyArgs),
    /// Draw the run as one self-contained HTML page: a lane per thread over the global
    /// order, synchronisation, dependencies and races; zoom, pan and hover in a browser.
    Timeline(crate::timeline_cmd::TimelineArgs),
    /// Build the bundled racy example, record it until two runs differ, replay each exactly.
    Demo(crate::demo_cmd::DemoArgs),
    /// gdb's exec wrapper for `replay --debug`: becomes the recorded program.
    #[command(name = "__replay-exec", hide = true)]
    ReplayExec {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Feeds the recorded standard input to a program replayed under gdb.
    #[command(name = "__feed-stdin", hide = true)]
    FeedStdin {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// gdb's `rr-lite-event`: where a thread is in the replay.
    #[command(name = "__debug-event", hide = true)]
    DebugEvent {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Compiler wrapper: `rr-lite cc ARGS...` runs cc ARGS... with instrumentation.
    #[command(name = "cc", disable_help_flag = true)]
    Cc {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Compiler wrapper for C++: `rr-lite c++ ARGS...`.
    #[command(name = "c++", disable_help_flag = true)]
    Cxx {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

impl Cli {
    /// Runs the command; returns the process exit status.
    pub fn run(self) -> anyhow::Result<i32> {
        use rr_lite_recorder::toolchain::Language;
        match self.command {
            Command::Record(a) => crate::record_cmd::run(a),
            Command::Dump(a) => crate::dump_cmd::run(a),
            Command::Info(a) => crate::info_cmd::run(a),
            Command::Replay(a) => crate::replay_cmd::run(a),
            Command::Split(a) => crate::split_cmd::run(a),
            Command::Ls(a) => crate::traces_cmd::ls(a),
            Command::Rm(a) => crate::traces_cmd::rm(a),
            Command::Pack(a) => crate::traces_cmd::pack(a),
            Command::Graph(a) => crate::graph_cmd::run(a),
            Command::Races(a) => crate::races_cmd::run(a),
            Command::Why(a) => crate::why_cmd::run(a),
            Command::Timeline(a) => crate::timeline_cmd::run(a),
            Command::Demo(a) => crate::demo_cmd::run(a),
            Command::ReplayExec { args } => crate::debug_cmd::replay_exec(&args),
            Command::FeedStdin { args } => crate::debug_cmd::feed_stdin(&args),
            Command::DebugEvent { args } => crate::debug_cmd::debug_event(&args),
            // Reached only when main's raw dispatch did not see them first.
            Command::Cc { args } => crate::record_cmd::compiler(Language::C, &args),
            Command::Cxx { args } => crate::record_cmd::compiler(Language::Cxx, &args),
        }
    }
}
