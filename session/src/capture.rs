//! `respbench capture`: the server's traffic recorded through `MONITOR` into a capture file
//! that `--replay` plays back. The session connects and records into the writer it is given;
//! the binary makes the file (written safely, renamed into place once whole) and prints.

use std::io::Write;
use std::time::Instant;

use crate::config::Config;
use crate::error::Error;
use crate::replay::Captured;
use crate::replayed::CaptureSettings;
use crate::server::{Conn, Server};
use crate::stop::StopHandle;

/// What MONITOR costs the server, as the guide's measurement found it (docs/replay.md): said before every
/// capture.
pub const COST_WARNING: &str = "WARNING: MONITOR costs the server throughput while it runs (the guide's \
                                docs/replay.md has the figure measured): capture a \
                                representative window, not a whole day";

/// What a capture recorded, and in how long.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The commands, clients and unreadable lines.
    pub captured: Captured,
    /// Seconds from the connection to the last command written.
    pub seconds: f64,
}

impl Recorded {
    /// The line that says what was recorded into `shown` (the capture file as the user named
    /// it): `captured 1000 commands of 4 clients in 2.001 s into traffic.cap`.
    pub fn line(&self, shown: &str) -> String {
        let c = &self.captured;
        let malformed = if c.malformed > 0 {
            format!(" ({} lines MONITOR sent could not be read)", c.malformed)
        } else {
            String::new()
        };
        format!(
            "captured {} commands of {} clients in {:.3} s into {shown}{malformed}",
            c.commands, c.clients, self.seconds
        )
    }
}

/// The capture's connection to `server`, made as the run's are (before the capture file, so that
/// a server that cannot be reached is said without waiting for a FIFO's reader).
pub fn connect(server: &Server) -> Result<Conn, Error> {
    Conn::authenticated(server).map_err(Error::Startup)
}

/// Records until `--duration`, `--max-commands` (in `c`) or Ctrl-C (`stop`) into `file`, over
/// `conn` ([`connect`]).
pub fn run(
    cfg: &Config,
    c: &CaptureSettings,
    conn: Conn,
    stop: &StopHandle,
    file: &mut dyn Write,
) -> Result<Recorded, Error> {
    let started = Instant::now();
    let until = cfg.open.duration.map(|d| started + d);
    let captured = crate::replay::capture(conn, file, until, c.max_commands, &|| stop.requested())?;
    Ok(Recorded { captured, seconds: started.elapsed().as_secs_f64() })
}
