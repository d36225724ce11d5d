//! Running a recorded or replayed program under supervision: ASLR off (the
//! personality is inherited through exec), Ctrl-C left to the program (same
//! process group; the supervisor ignores it and reports how the program
//! ended), SIGTERM and SIGHUP forwarded, and a periodic tick for watchdogs.

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use rr_lite_trace::ProgramEnding;

use crate::RecordError;

/// Turns address-space randomisation off for the children this process
/// starts from now on (the supervisor itself is already running).
pub fn disable_aslr_for_children() {
    use nix::sys::personality::{self, Persona};
    let current = personality::get().unwrap_or(Persona::empty());
    let _ = personality::set(current | Persona::ADDR_NO_RANDOMIZE);
}

/// What a watchdog tick asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    Continue,
    /// Kill the program (SIGKILL) and return how it ended.
    Kill,
    /// Send the program this signal (and go on waiting).
    Signal(i32),
}

/// Starts `cmd` and waits for it to end, calling `on_tick` every `every`.
pub fn supervise(
    cmd: &mut Command,
    program: &Path,
    every: Duration,
    mut on_tick: impl FnMut() -> Tick,
) -> Result<ProgramEnding, RecordError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use std::os::unix::process::ExitStatusExt;

    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(RecordError::io("signal handlers"))?;
    let mut child = cmd.spawn().map_err(|source| RecordError::Spawn {
        path: program.to_path_buf(),
        source,
    })?;
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
    let status = status.map_err(RecordError::io(program))?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => ProgramEnding::Exited { code },
        (None, Some(signal)) => ProgramEnding::Signaled { signal },
        (None, None) => ProgramEnding::Exited { code: -1 },
    })
}
