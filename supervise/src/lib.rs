//! The one job of this crate: run a recorded or replayed program under
//! supervision and report how it ended. ASLR is off (the personality is
//! inherited through exec), Ctrl-C is left to the program (same process
//! group; the supervisor ignores it and reports how the program ended),
//! SIGTERM and SIGHUP are forwarded, a periodic tick lets the caller
//! run a watchdog, and [`affinity`] moves the program's threads between
//! CPUs.
//!
//! Both the recorder and the replayer run programs this way; it is a crate
//! of its own so that the replayer does not depend on the recorder (the
//! compiler wrappers and the embedded runtime build).

#![forbid(unsafe_code)]

pub mod affinity;
mod error;
mod stdin;
mod watch;

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

pub use error::SuperviseError;
pub use stdin::StdinSource;
pub use watch::{MAX_LINE, OutputWatch};

/// Turns address-space randomisation off for the children this process
/// starts from now on (the supervisor itself is already running).
pub fn disable_aslr_for_children() {
    use nix::sys::personality::{self, Persona};
    let current = personality::get().unwrap_or(Persona::empty());
    let _ = personality::set(current | Persona::ADDR_NO_RANDOMIZE);
}

/// Runs an interactive child (a debugger) to its end: Ctrl-C and Ctrl-\
/// are its own (they reach it through the terminal's process group; here
/// they are caught and dropped, so this process outlives them and cleans up
/// after the child).
pub fn run_in_foreground(cmd: &mut Command, program: &Path) -> Result<ExitStatus, SuperviseError> {
    use signal_hook::consts::{SIGINT, SIGQUIT};
    let caught = Arc::new(AtomicBool::new(false));
    let mut ids = Vec::new();
    for signal in [SIGINT, SIGQUIT] {
        let id = signal_hook::flag::register(signal, Arc::clone(&caught))
            .map_err(|source| SuperviseError::SignalHandlers { source })?;
        ids.push(id);
    }
    let status = cmd
        .spawn()
        .map_err(|source| spawn_error(cmd, program, source))
        .and_then(|mut child| {
            child.wait().map_err(|source| SuperviseError::Wait {
                path: program.to_path_buf(),
                source,
            })
        });
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    status
}

/// The interrupt signal (what Ctrl-C sends), for [`Tick::Signal`].
pub const SIGINT: i32 = signal_hook::consts::SIGINT;

/// What a watchdog tick asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    Continue,
    /// Kill the program (SIGKILL) and return how it ended.
    Kill,
    /// Send the program this signal (and go on waiting).
    Signal(i32),
}

/// Starts `cmd` (the program at `program`, named in errors) with its
/// standard input from `stdin`, and waits for it to end, calling `on_tick`
/// every `every`.
pub fn supervise(
    cmd: &mut Command,
    program: &Path,
    stdin: StdinSource,
    every: Duration,
    on_tick: impl FnMut() -> Tick,
) -> Result<ExitStatus, SuperviseError> {
    supervise_watching(cmd, program, stdin, every, on_tick, None)
}

/// [`supervise`], with the program's standard output and error passed
/// through pipes to this process's own and each line shown to `watch`.
pub fn supervise_watching(
    cmd: &mut Command,
    program: &Path,
    stdin: StdinSource,
    every: Duration,
    mut on_tick: impl FnMut() -> Tick,
    watch: Option<OutputWatch>,
) -> Result<ExitStatus, SuperviseError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|source| SuperviseError::SignalHandlers { source })?;
    if !matches!(stdin, StdinSource::Inherit) {
        cmd.stdin(Stdio::piped());
    }
    if watch.is_some() {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = cmd
        .spawn()
        .map_err(|source| spawn_error(cmd, program, source))?;
    let copiers = watch.map(|watch| watched_outputs(&mut child, watch));
    let ended = Arc::new(AtomicBool::new(false));
    let feeder = child.stdin.take().map(|pipe| {
        let ended = ended.clone();
        std::thread::spawn(move || stdin::feed(stdin, pipe, ended))
    });
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let handle = signals.handle();
    let forwarder = std::thread::spawn(move || {
        for signal in signals.forever() {
            if signal == SIGINT {
                continue;
            }
            if let Ok(sig) = nix::sys::signal::Signal::try_from(signal) {
                let _ = nix::sys::signal::kill(pid, sig);
            }
        }
    });
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let status = loop {
        match done_rx.recv_timeout(every) {
            Ok(status) => break status,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let signal = match on_tick() {
                    Tick::Continue => None,
                    Tick::Kill => Some(nix::sys::signal::Signal::SIGKILL),
                    Tick::Signal(n) => nix::sys::signal::Signal::try_from(n).ok(),
                };
                if let Some(signal) = signal {
                    let _ = nix::sys::signal::kill(pid, signal);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(std::io::Error::other("the waiting thread stopped"));
            }
        }
    };
    handle.close();
    let _ = forwarder.join();
    let _ = waiter.join();
    ended.store(true, Ordering::Release);
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    for copier in copiers.into_iter().flatten() {
        let _ = copier.join();
    }
    status.map_err(|source| SuperviseError::Wait {
        path: program.to_path_buf(),
        source,
    })
}

/// Why `cmd` (running `program`) did not start: its working directory if
/// that is what is missing, else the kernel's error.
fn spawn_error(cmd: &Command, program: &Path, source: std::io::Error) -> SuperviseError {
    match cmd.get_current_dir() {
        Some(dir) if source.kind() == std::io::ErrorKind::NotFound && !dir.is_dir() => {
            SuperviseError::MissingDirectory {
                path: program.to_path_buf(),
                dir: dir.to_path_buf(),
            }
        }
        _ => SuperviseError::Spawn {
            path: program.to_path_buf(),
            source,
        },
    }
}

/// Starts the threads copying the child's piped outputs to ours.
fn watched_outputs(
    child: &mut std::process::Child,
    watch: OutputWatch,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut copiers = Vec::new();
    if let Some(out) = child.stdout.take() {
        let w = watch.clone();
        copiers.push(std::thread::spawn(move || {
            watch::copy_watching(out, watch::Stream::Stdout, w)
        }));
    }
    if let Some(err) = child.stderr.take() {
        copiers.push(std::thread::spawn(move || {
            watch::copy_watching(err, watch::Stream::Stderr, watch)
        }));
    }
    copiers
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::{Command, ExitStatus};
    use std::time::Duration;

    use nix::sys::signal::Signal::{SIGKILL, SIGSEGV, SIGTERM};

    use super::{StdinSource, SuperviseError, Tick, supervise};

    const SH: &str = "/bin/sh";
    const EVERY: Duration = Duration::from_millis(10);

    fn run_sh(script: &str, on_tick: impl FnMut() -> Tick) -> ExitStatus {
        let mut cmd = Command::new(SH);
        cmd.args(["-c", script]);
        supervise(
            &mut cmd,
            Path::new(SH),
            StdinSource::Inherit,
            EVERY,
            on_tick,
        )
        .expect("supervise /bin/sh")
    }

    #[test]
    fn reports_the_exit_code_and_the_killing_signal() {
        assert_eq!(run_sh("exit 3", || Tick::Continue).code(), Some(3));
        let crashed = run_sh("kill -SEGV $$", || Tick::Continue);
        assert_eq!(crashed.signal(), Some(SIGSEGV as i32));
    }

    #[test]
    fn a_tick_can_kill_or_signal_the_program() {
        assert_eq!(
            run_sh("sleep 30", || Tick::Kill).signal(),
            Some(SIGKILL as i32)
        );
        let signal = Tick::Signal(SIGTERM as i32);
        assert_eq!(run_sh("sleep 30", || signal).signal(), Some(SIGTERM as i32));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let missing = Path::new("/nonexistent/rr-lite-supervise-test");
        let err = supervise(
            &mut Command::new(missing),
            missing,
            StdinSource::Inherit,
            EVERY,
            || Tick::Continue,
        )
        .unwrap_err();
        assert!(matches!(err, SuperviseError::Spawn { .. }), "{err:?}");
        assert!(err.to_string().contains(&missing.display().to_string()));
    }

    /// A working directory that is gone is named as what is missing (the
    /// kernel's "no such file" named the program, which was there).
    #[test]
    fn a_missing_working_directory_is_named() {
        let gone = Path::new("/nonexistent/rr-lite-supervise-dir");
        let sh = Path::new("/bin/sh");
        let mut cmd = Command::new(sh);
        cmd.arg("-c").arg("exit 0").current_dir(gone);
        let err =
            supervise(&mut cmd, sh, StdinSource::Inherit, EVERY, || Tick::Continue).unwrap_err();
        assert!(
            matches!(&err, SuperviseError::MissingDirectory { dir, .. } if dir == gone),
            "{err:?}"
        );
        assert!(err.to_string().contains("working directory does not exist"));
    }
}
