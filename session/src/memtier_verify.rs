//! memtier_benchmark's `--data-verify` and `--verify-only` with `--data-import FILE` (its dialect:
//! session/src/memtier.rs): each item of the file read back with `GET` and compared with its
//! data, after the run (or instead of it), as memtier's `verify_client` does; the counts and
//! memtier's error lines for the report.

use respbench_core::resp::{encode_command, Value};
use respbench_driver::Tls;

use crate::config::Config;
use crate::error::Error;
use crate::memtier::Verify;
use crate::server::Server;

/// The GETs sent before their replies are read.
const BATCH: usize = 64;
/// The mismatches whose lines are kept; the rest are counted.
pub const SHOWN: usize = 20;
/// The bytes of a value shown in a line, at most.
const SHOWN_BYTES: usize = 200;

/// What the check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    /// The items whose key held their data.
    pub verified: u64,
    /// The items whose key did not (another value, none, or an error reply).
    pub failed: u64,
    /// memtier's line for each of the first [`SHOWN`] failures (`error: key [K]: expected [V],
    /// got [W]`, or `error: request for key [K] failed: MESSAGE`).
    pub lines: Vec<String>,
}

/// Bytes as text, cut after [`SHOWN_BYTES`].
fn shown(b: &[u8]) -> String {
    let cut = &b[..b.len().min(SHOWN_BYTES)];
    let more = if b.len() > SHOWN_BYTES { format!("... ({} bytes)", b.len()) } else { String::new() };
    format!("{}{more}", String::from_utf8_lossy(cut))
}

/// Reads each item of `v.file` back from the server of `cfg` (one connection, `--dbnum`
/// selected, GETs pipelined [`BATCH`] at a time) and compares its reply with the item's data.
pub fn verify(cfg: &Config, tls: Option<Tls>, v: &Verify) -> Result<Verified, Error> {
    let items = crate::memtier::import::read(&v.file).map_err(|e| Error::Tests(e.to_string()))?;
    let (key, data) = (items.column(b"key").unwrap_or(0), items.column(b"data").unwrap_or(1));
    let server = Server::new(cfg, tls);
    let mut conn = crate::expiry::selected(&server, cfg.db)?;
    let mut out = Verified::default();
    let rows: Vec<usize> = (0..items.rows()).collect();
    for batch in rows.chunks(BATCH) {
        let mut req = Vec::new();
        for &row in batch {
            encode_command(&[b"GET", items.cell(row, key)], &mut req);
        }
        conn.send_encoded(&req)?;
        for &row in batch {
            let (k, want) = (items.cell(row, key), items.cell(row, data));
            let line = match conn.reply()? {
                Value::Bulk(got) if got == want => None,
                Value::Bulk(got) => Some(format!(
                    "error: key [{}]: expected [{}], got [{}]",
                    shown(k),
                    shown(want),
                    shown(&got)
                )),
                Value::Null => Some(format!("error: key [{}]: expected [{}], got []", shown(k), shown(want))),
                Value::Error(e) | Value::BulkError(e) => {
                    Some(format!("error: request for key [{}] failed: {}", shown(k), shown(&e)))
                }
                other => {
                    Some(format!("error: key [{}]: expected [{}], got {other:?}", shown(k), shown(want)))
                }
            };
            match line {
                None => out.verified += 1,
                Some(l) => {
                    out.failed += 1;
                    if out.lines.len() < SHOWN {
                        out.lines.push(l);
                    }
                }
            }
        }
    }
    Ok(out)
}
