//! Watching the supervised program's output (`record --failure-output`):
//! its standard output and error go through pipes to the supervisor's own,
//! unchanged, and each line is shown to a callback on the way.

use std::io::{Read, Write};
use std::sync::Arc;

/// What sees each line.
pub type LineCallback = dyn Fn(&[u8]) + Send + Sync;

/// Called with each line of output (without its newline; a line longer
/// than [`MAX_LINE`] is cut into pieces of that length).
#[derive(Clone)]
pub struct OutputWatch(pub Arc<LineCallback>);

impl std::fmt::Debug for OutputWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputWatch")
    }
}

/// Longest line handed to the callback in one piece.
pub const MAX_LINE: usize = 64 * 1024;

/// Which of the supervisor's streams a pipe is copied to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Copies `from` to `to` until end of file, showing `watch` every line.
pub(crate) fn copy_watching(mut from: impl Read, to: Stream, watch: OutputWatch) {
    let mut buf = vec![0u8; 1 << 16];
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // A closed terminal or pipe on our side must not stop the program:
        // keep reading (and watching) whatever happens to the copy.
        let _ = match to {
            Stream::Stdout => write_flushed(std::io::stdout().lock(), &buf[..n]),
            Stream::Stderr => write_flushed(std::io::stderr().lock(), &buf[..n]),
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                (watch.0)(&line);
                line.clear();
            } else {
                line.push(b);
                if line.len() == MAX_LINE {
                    (watch.0)(&line);
                    line.clear();
                }
            }
        }
    }
    if !line.is_empty() {
        (watch.0)(&line);
    }
}

fn write_flushed(mut to: impl Write, bytes: &[u8]) -> std::io::Result<()> {
    to.write_all(bytes)?;
    to.flush()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn every_line_is_seen_the_last_one_too() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        let watch = OutputWatch(Arc::new(move |l: &[u8]| {
            sink.lock().unwrap().push(String::from_utf8_lossy(l).into())
        }));
        copy_watching(&b"one\ntwo\n\nthree"[..], Stream::Stderr, watch);
        assert_eq!(*seen.lock().unwrap(), ["one", "two", "", "three"]);
    }

    #[test]
    fn long_lines_come_in_bounded_pieces() {
        let seen = Arc::new(Mutex::new(Vec::<usize>::new()));
        let sink = seen.clone();
        let watch = OutputWatch(Arc::new(move |l: &[u8]| sink.lock().unwrap().push(l.len())));
        let text = vec![b'x'; MAX_LINE * 2 + 5];
        copy_watching(&text[..], Stream::Stderr, watch);
        assert_eq!(*seen.lock().unwrap(), [MAX_LINE, MAX_LINE, 5]);
    }
}
