//! Ctrl-C / SIGTERM: remove the temporary outputs in flight before exiting.
//!
//! `Staged` and `Scratch` outputs clean up when dropped, but a signal ends the process without
//! running destructors, which used to leave a hidden `.NAME.oxtmp-PID` (possibly gigabytes)
//! behind. Each temporary path is registered here while it exists; the signal handler removes
//! them all and exits with 130, as shells expect after an interrupt.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Install the handler once, at start-up (an error only means cleanup is not guaranteed).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        let paths = IN_FLIGHT.lock().map(|v| v.clone()).unwrap_or_default();
        for p in paths {
            crate::output::remove_any(&p);
        }
        eprintln!("oxblosc: interrupted; temporary output removed");
        std::process::exit(130);
    });
}

/// A temporary output now exists at `p`.
pub fn register(p: &Path) {
    if let Ok(mut v) = IN_FLIGHT.lock() {
        v.push(p.to_path_buf());
    }
}

/// `p` was committed or removed.
pub fn unregister(p: &Path) {
    if let Ok(mut v) = IN_FLIGHT.lock() {
        v.retain(|q| q != p);
    }
}
