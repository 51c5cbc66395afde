//! [`StopHandle`]: how a running session is asked to stop, a leaf that the run's parts (the
//! engine, the cases' input reads, the observer's callers) share without importing each other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Asks a running session to stop (Ctrl-C): the test running drains and ends, and no other
/// begins. Cheap to clone; setting it is one atomic store, so a signal handler may.
#[derive(Clone, Debug, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// A handle nobody has pulled yet.
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Asks the run to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
