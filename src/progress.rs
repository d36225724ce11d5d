//! The progress bar of a split (`rr-lite split`, `rr-lite graph`), drawn on
//! stderr from the splitter's [`Progress`] calls. A pipe or a log file gets
//! no bar.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use rr_lite_splitter::{Progress, Stage};

/// A bar on stderr while it lives; cleared when dropped, so an error
/// message that follows starts on a clean line.
#[derive(Debug)]
pub struct SplitProgressBar {
    bar: ProgressBar,
}

impl SplitProgressBar {
    pub fn new() -> SplitProgressBar {
        let bar = if std::io::stderr().is_terminal() {
            ProgressBar::new_spinner()
        } else {
            ProgressBar::hidden()
        };
        SplitProgressBar { bar }
    }
}

impl Progress for SplitProgressBar {
    fn start(&self, total: Option<u64>) {
        if self.bar.is_hidden() {
            return;
        }
        let template = match total {
            Some(n) => {
                self.bar.set_length(n);
                "{spinner} split [{bar:40}] {human_pos}/{human_len} entries ({per_sec}, {eta} left) {msg}"
            }
            None => "{spinner} split {human_pos} entries ({per_sec}) {msg}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.bar.set_style(style.progress_chars("=> "));
        }
        self.bar.enable_steady_tick(Duration::from_millis(200));
    }

    fn entries_read(&self, done: u64) {
        self.bar.set_position(done);
    }

    fn stage(&self, stage: Stage) {
        self.bar.set_message(stage.to_string());
    }
}

impl Drop for SplitProgressBar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
