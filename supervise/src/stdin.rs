//! The supervised program's standard input. What a program reads from
//! outside must be the same at replay, and a terminal, a pipe or a socket
//! cannot be read twice: so the recorder passes its own standard input to
//! the program through a pipe, saving every byte as it goes, and the
//! replayer feeds the saved bytes through a pipe again (a pipe both times,
//! so the program sees the same kind of file).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::ChildStdin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the supervised program's standard input comes from.
#[derive(Debug)]
pub enum StdinSource {
    /// The supervisor's own, shared as it is.
    Inherit,
    /// The supervisor's own, copied through a pipe and saved to this file.
    Record(File),
    /// The bytes of this file, then end of file.
    Replay(File),
}

/// How long the recording copier waits for input before it looks whether
/// the program has ended.
const POLL_MS: u16 = 100;

/// Copies into `pipe` until the source ends, the program stops reading, or
/// `done` is set (the program has ended).
pub(crate) fn feed(source: StdinSource, pipe: ChildStdin, done: Arc<AtomicBool>) {
    match source {
        StdinSource::Inherit => {}
        StdinSource::Record(save) => copy_and_save(pipe, save, &done),
        StdinSource::Replay(mut from) => {
            let mut pipe = pipe;
            // Ends with the file, or with an error once the program has
            // ended or closed its standard input: either way it had all it
            // read.
            let _ = std::io::copy(&mut from, &mut pipe);
        }
    }
}

fn copy_and_save(mut pipe: ChildStdin, mut save: File, done: &AtomicBool) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let stdin = std::io::stdin();
    let mut buf = vec![0u8; 1 << 16];
    let mut forwarding = true;
    while !done.load(Ordering::Acquire) {
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(POLL_MS)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
        let n = match stdin.lock().read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // What was saved is what the program could read; once it stops
        // reading (closed its end), nothing more reaches it.
        if !forwarding || save.write_all(&buf[..n]).is_err() {
            break;
        }
        forwarding = pipe.write_all(&buf[..n]).is_ok();
    }
    let _ = save.flush();
}
