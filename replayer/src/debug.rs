//! `rr-lite replay --debug`: the replay runs under gdb.
//!
//! gdb starts the program through an exec wrapper, `rr-lite __replay-exec
//! TRACE SESSION`, which replaces itself with the program exactly as
//! [`crate::replay`] starts it (recorded path, argv, working directory and
//! environment byte for byte, recorded standard input through a pipe):
//! gdb's own additions to the inferior's environment (`LINES`, `COLUMNS`)
//! and its shell never reach the program, so its stack, and every address
//! the trace holds, is the recorded one. gdb keeps address-space
//! randomisation off, as replay needs.
//!
//! A stop at an event (`--at T:N`) is written into the state file's header
//! (see the runtime's `replay::debug_stop`): thread T calls
//! `rr_lite_debug_stop` when about to perform its event N, and the gdb
//! script this module writes has a breakpoint there that selects the first
//! frame outside the runtime. In gdb's all-stop mode the other threads stop
//! with it, each where the recorded interleaving lets it be. Breakpoints,
//! stepping and `continue` are gdb's own; the replay's waits keep the run on
//! the recorded path whatever the user does in between.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use rr_lite_trace::TraceDir;
use rr_lite_trace::state::DebugStop;

use crate::ReplayError;
use crate::places::Places;
use crate::session::{
    DivergenceReport, Prepared, ReplayOptions, divergence_in, prepare, program_command,
};

/// Name of the gdb script in the session directory.
const SCRIPT_FILE: &str = "gdb-script.py";

/// What `replay --debug` needs besides the replay options.
#[derive(Debug, Clone)]
pub struct DebugOptions {
    /// Where thread T stops (`--at T:N`, or the recorded end); `None` runs
    /// to wherever gdb stops by itself (a crash, a breakpoint).
    pub stop: Option<DebugStop>,
    /// What the stop is, printed when gdb gets there (the event as `dump`
    /// shows it).
    pub stop_description: String,
    /// The rr-lite executable, which gdb runs as its exec wrapper and the
    /// `rr-lite-event` command calls.
    pub rr_lite: PathBuf,
    /// The debugger (`gdb`, or a path).
    pub gdb: PathBuf,
    /// More arguments for gdb, after rr-lite's own (`-batch`, `-ex CMD`...).
    pub gdb_args: Vec<OsString>,
    /// Run gdbserver for a debugger that connects itself, instead of gdb.
    pub server: Option<GdbServer>,
}

/// `--gdbserver PORT`: where gdbserver listens (127.0.0.1 only: whoever
/// connects controls a process with the user's rights) and which one runs.
#[derive(Debug, Clone)]
pub struct GdbServer {
    pub port: u16,
    pub program: PathBuf,
}

/// How a debugging session ended.
#[derive(Debug, Clone)]
pub enum DebugOutcome {
    /// gdb exited with this status (the program's own is gdb's to show).
    Ended(ExitStatus),
    /// The program left the recorded path while under gdb (the user changed
    /// memory or registers, or called functions).
    Diverged(DivergenceReport),
}

/// Replays `trace` under gdb.
pub fn debug(
    trace: &TraceDir,
    options: &ReplayOptions,
    debug: &DebugOptions,
) -> Result<DebugOutcome, ReplayError> {
    let prepared = prepare(trace, options, debug.stop)?;
    let script = prepared.dir.0.join(SCRIPT_FILE);
    let text = gdb_script(trace.path(), &prepared.session, debug);
    rr_lite_trace::private::write(&script, text.as_bytes())
        .map_err(ReplayError::io("write", &script))?;
    let header = prepared.header;
    let status = match &debug.server {
        None => {
            let mut gdb = Command::new(&debug.gdb);
            gdb.arg("-q")
                .arg("-x")
                .arg(&script)
                .args(&debug.gdb_args)
                .arg("--args")
                .arg(&prepared.places.program)
                .args(header.argv.iter().skip(1));
            prepared.places.pass_to(&mut gdb);
            rr_lite_supervise::run_in_foreground(&mut gdb, &debug.gdb)?
        }
        Some(server) => serve(server, debug, &script, trace.path(), &prepared)?,
    };
    Ok(match divergence_in(trace, &prepared.state_path) {
        Some(report) => DebugOutcome::Diverged(report),
        None => DebugOutcome::Ended(status),
    })
}

/// `--gdbserver PORT`: listens on 127.0.0.1:PORT itself, since gdbserver
/// listens on every interface whatever host it is given, and runs
/// gdbserver for the one debugger that connects, speaking over the
/// connection as its standard input and output. gdbserver then points the
/// program's standard output at its standard error; the exec wrapper
/// points it back at rr-lite's (`STDOUT_ENV`).
fn serve(
    server: &GdbServer,
    debug: &DebugOptions,
    script: &Path,
    trace: &Path,
    prepared: &Prepared,
) -> Result<ExitStatus, ReplayError> {
    let program = &prepared.places.program;
    let address = format!("127.0.0.1:{}", server.port);
    let listener =
        std::net::TcpListener::bind(&address).map_err(ReplayError::io("listen on", &address))?;
    eprintln!(
        "rr-lite: waiting for a debugger on {address}; connect with\n  \
         {gdb} -x {script} -ex 'target remote {address}' {program}\n\
         (the script sets rr-lite's stop and adds `rr-lite-event`; an IDE sources it)",
        gdb = debug.gdb.display(),
        script = shell_word(&script.to_string_lossy()),
        program = shell_word(&program.to_string_lossy()),
    );
    let (connection, _) = listener
        .accept()
        .map_err(ReplayError::io("accept a debugger on", &address))?;
    let input = connection
        .try_clone()
        .map_err(ReplayError::io("use the connection on", &address))?;
    let mut gdbserver = Command::new(&server.program);
    gdbserver
        .arg("--disable-randomization")
        .arg("--wrapper")
        .args(exec_wrapper(&debug.rr_lite, trace, &prepared.session))
        .arg("--")
        .arg("-")
        .arg(program)
        .args(prepared.header.argv.iter().skip(1))
        .env(STDOUT_ENV, format!("/proc/{}/fd/1", std::process::id()))
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(input)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(connection)));
    prepared.places.pass_to(&mut gdbserver);
    Ok(rr_lite_supervise::run_in_foreground(
        &mut gdbserver,
        &server.program,
    )?)
}

/// Set by [`serve`] for the exec wrapper: the path of the standard output
/// the program should have (rr-lite's, through `/proc`).
const STDOUT_ENV: &str = "RR_LITE_DEBUG_STDOUT";

/// The exec wrapper's work (`rr-lite __replay-exec TRACE SESSION`): becomes
/// the recorded program, as replay starts it, in session `session`.
/// Returns only on failure.
pub fn exec_program(trace: &Path, session: &str) -> ReplayError {
    use std::os::unix::process::CommandExt;
    let trace = match TraceDir::open(trace) {
        Ok(t) => t,
        Err(e) => return e.into(),
    };
    let Some(header) = trace.header() else {
        return ReplayError::NotReplayable {
            path: trace.path().to_path_buf(),
        };
    };
    let mut cmd = program_command(header, session, &Places::from_wrapper_env(header));
    match recorded_stdin_pipe(&trace) {
        Ok(stdin) => cmd.stdin(stdin),
        Err(e) => return e,
    };
    if let Some(path) = std::env::var_os(STDOUT_ENV) {
        // Appending: the same place whether rr-lite's output is a terminal,
        // a pipe, or a file (a fresh description would start at offset 0).
        match std::fs::OpenOptions::new().append(true).open(&path) {
            Ok(stdout) => cmd.stdout(stdout),
            Err(e) => return ReplayError::io("open the standard output", &path)(e),
        };
    }
    let err = cmd.exec();
    ReplayError::io("run", &header.program)(err)
}

/// The program's standard input: a pipe holding what it read while
/// recording (fed by `rr-lite __feed-stdin`), or an empty one.
fn recorded_stdin_pipe(trace: &TraceDir) -> Result<Stdio, ReplayError> {
    let path = trace.path().join(rr_lite_trace::dir::STDIN_FILE);
    let (reader, writer) = std::io::pipe().map_err(ReplayError::io("create a pipe for", &path))?;
    let recorded = std::fs::metadata(&path).is_ok_and(|m| m.len() > 0);
    if recorded {
        let me = std::env::current_exe().map_err(ReplayError::io("find", "rr-lite"))?;
        Command::new(&me)
            .arg("__feed-stdin")
            .arg(&path)
            .stdout(writer)
            .spawn()
            .map_err(ReplayError::io("run", me))?;
    }
    Ok(Stdio::from(reader))
}

/// A Python string literal for `s` (paths may hold quotes or backslashes).
fn python_str(s: &str) -> String {
    let escaped: String = s
        .chars()
        .flat_map(|c| match c {
            '\\' | '\'' => vec!['\\', c],
            '\n' => vec!['\\', 'n'],
            c => vec![c],
        })
        .collect();
    format!("'{escaped}'")
}

/// `s` quoted for the POSIX shell gdb runs the exec wrapper with.
fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The gdb script: the exec wrapper, the stop breakpoint and its handler,
/// the `rr-lite-event` command, then `run`.
fn gdb_script(trace: &Path, session: &str, debug: &DebugOptions) -> String {
    let rr = debug.rr_lite.to_string_lossy();
    let wrapper = exec_wrapper(&debug.rr_lite, trace, session)
        .iter()
        .map(|word| shell_word(&word.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    let trace = trace.to_string_lossy();
    let stop_line = match debug.stop {
        Some(stop) => format!(
            "rr-lite: thread {} is about to perform its event t{}:{}: {}",
            stop.thread, stop.thread, stop.index, debug.stop_description
        ),
        None => String::new(),
    };
    SCRIPT_TEMPLATE
        .replace("@RR_LITE@", &python_str(&rr))
        .replace("@TRACE@", &python_str(&trace))
        .replace("@WRAPPER@", &python_str(&wrapper))
        .replace("@STOP_LINE@", &python_str(&stop_line))
        .replace(
            "@STARTS_PROGRAM@",
            if debug.server.is_none() {
                "True"
            } else {
                "False"
            },
        )
}

/// The exec wrapper gdb or gdbserver starts the program through: it becomes
/// the recorded program (see [`exec_program`]).
fn exec_wrapper(rr_lite: &Path, trace: &Path, session: &str) -> [OsString; 4] {
    [
        rr_lite.into(),
        "__replay-exec".into(),
        trace.into(),
        session.into(),
    ]
}

const SCRIPT_TEMPLATE: &str = include_str!("gdb_script.py");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_odd_paths() {
        assert_eq!(shell_word("a'b c"), r"'a'\''b c'");
        assert_eq!(python_str(r"it's a\b"), r"'it\'s a\\b'");
    }

    #[test]
    fn the_script_names_the_wrapper_and_the_stop() {
        let options = DebugOptions {
            stop: Some(DebugStop {
                thread: 2,
                index: 7,
            }),
            stop_description: "write 0x10 at f (a.c:3)".into(),
            rr_lite: "/bin/rr-lite".into(),
            gdb: "gdb".into(),
            gdb_args: Vec::new(),
            server: None,
        };
        let text = gdb_script(Path::new("/t/r-0"), "00ff", &options);
        assert!(text.contains(r"'\'/bin/rr-lite\' \'__replay-exec\' \'/t/r-0\' \'00ff\''"));
        assert!(text.contains("event t2:7: write 0x10 at f (a.c:3)"));
        assert!(!text.contains('@'), "every placeholder filled:\n{text}");
    }
}
