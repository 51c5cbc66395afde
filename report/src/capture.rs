//! `respbench capture`: the server's traffic recorded through `MONITOR` into a capture file
//! that `--replay` plays back.

use std::io::Write;
use std::time::Instant;

use respbench_session::config::Config;
use respbench_session::replay::CaptureSettings;
use respbench_session::server::{Conn, Server};
use respbench_session::StopHandle;

use crate::files::Streamed;

/// What MONITOR costs the server, as the README's measurement found it: said before every
/// capture.
pub const COST_WARNING: &str = "WARNING: MONITOR costs the server throughput while it runs (the README's \
                                \"Replaying your own traffic\" has the figure measured): capture a \
                                representative window, not a whole day";

/// Records until `--duration`, `--max-commands` or Ctrl-C, into `c.output` (renamed into place
/// once whole); writes the cost warning and what it recorded to `out` (the binary's stdout).
pub fn run(
    cfg: &Config,
    c: &CaptureSettings,
    server: Server,
    stop: &StopHandle,
    out: &mut dyn Write,
) -> Result<(), Box<dyn std::error::Error>> {
    writeln!(out, "{COST_WARNING}")?;
    let conn = Conn::authenticated(&server).map_err(|e| e.message)?;
    let shown = c.output.display();
    let mut file = Streamed::create(&c.output).map_err(|e| format!("capture: cannot write {shown}: {e}"))?;
    let started = Instant::now();
    let until = cfg.open.duration.map(|d| started + d);
    let done =
        respbench_session::replay::capture(conn, &mut file, until, c.max_commands, &|| stop.requested())?;
    file.finish().map_err(|e| format!("capture: cannot write {shown}: {e}"))?;
    let malformed = if done.malformed > 0 {
        format!(" ({} lines MONITOR sent could not be read)", done.malformed)
    } else {
        String::new()
    };
    writeln!(
        out,
        "captured {} commands of {} clients in {:.3} s into {shown}{malformed}",
        done.commands,
        done.clients,
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}
