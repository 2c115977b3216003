//! A one-line progress bar with throughput on stderr: drawn only when stderr is a terminal,
//! not silenced with `-q`, and the work has already taken a second (short jobs stay quiet).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    label: &'static str,
    total: Option<u64>,
    done: u64,
    start: Instant,
    last: Option<Instant>,
    enabled: bool,
}

const DELAY: Duration = Duration::from_secs(1);
const EVERY: Duration = Duration::from_millis(100);

impl Progress {
    pub fn new(label: &'static str, total: Option<u64>, quiet: bool) -> Progress {
        let enabled = !quiet && std::io::stderr().is_terminal();
        Progress { label, total, done: 0, start: Instant::now(), last: None, enabled }
    }

    pub fn add(&mut self, n: u64) {
        self.done += n;
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.start) < DELAY || self.last.is_some_and(|l| now.duration_since(l) < EVERY) {
            return;
        }
        self.last = Some(now);
        let secs = now.duration_since(self.start).as_secs_f64();
        let rate = self.done as f64 / secs;
        let mut line = format!("\r{} {}", self.label, human(self.done as f64));
        if let Some(t) = self.total.filter(|&t| t > 0) {
            let frac = (self.done as f64 / t as f64).min(1.0);
            let width = 24;
            let fill = (frac * width as f64) as usize;
            let eta = if rate > 0.0 { (t.saturating_sub(self.done)) as f64 / rate } else { 0.0 };
            line = format!(
                "\r{} [{}{}] {:3.0}% {} / {}  {}/s  ETA {:.0}s",
                self.label,
                "#".repeat(fill),
                "-".repeat(width - fill),
                frac * 100.0,
                human(self.done as f64),
                human(t as f64),
                human(rate),
                eta
            );
        } else {
            line.push_str(&format!("  {}/s", human(rate)));
        }
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "{line}\x1b[K");
        let _ = e.flush();
    }

    /// Clear the bar (if one was drawn).
    pub fn finish(&mut self) {
        if self.last.is_some() {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
        }
    }
}

/// Bytes in binary units, e.g. `3.2 GiB`.
pub fn human(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
