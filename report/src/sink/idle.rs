//! `-I`: how many idle connections are up, redrawn on one line, then what they cost the server.

use std::io::Write;

use super::{Event, Output};
use crate::error::Error;

/// `-I`'s lines on stdout. A closed stdout (a reader gone) must not end the connections, nor
/// panic: a failed write is let go.
pub struct Idle<W: Write> {
    out: W,
}

impl<W: Write> Idle<W> {
    /// The lines to `out`.
    pub fn new(out: W) -> Self {
        Idle { out }
    }
}

impl<W: Write> Output for Idle<W> {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        let _ = match ev {
            Event::IdleClients(live) => write!(self.out, "clients: {live}\r").and_then(|_| self.out.flush()),
            Event::IdleFootprint(text) => writeln!(self.out, "\n{text}"),
            _ => Ok(()),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count redrawn on one line, then the footprint after it.
    #[test]
    fn the_count_then_the_footprint() {
        let mut out = Vec::new();
        let events =
            [Event::IdleClients(3), Event::IdleClients(5), Event::IdleFootprint("used_memory: 1.2 MB")];
        crate::sink::fixture::feed(&mut Idle::new(&mut out), &["mio"], &events).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "clients: 3\rclients: 5\r\nused_memory: 1.2 MB\n");
    }
}
