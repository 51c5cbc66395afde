//! `--dataset-shape`'s build, before the first test: each shape's requests over its own range of
//! keys, run as `--preload`'s are (the test's connections, sequential keys, pipelined; over a
//! cluster each key to its owner), in [`POINTS`] segments with the server's memory read after
//! each; then `DBSIZE`'s growth and `OBJECT ENCODING` of a sample of keys, never during a test.

use std::time::{Duration, Instant};

use respbench_core::resp::Value;
use respbench_core::template::Values;

use super::{Ended, Session};
use crate::case::{Case, PRELOAD_PIPELINE};
use crate::config::{Config, OpenLoopConfig, Split, Worker};
use crate::dataset::{Built, MemoryPoint, Shape, ShapeBuilt};
use crate::error::Error;
use crate::groups::Part;
use crate::observer::{retitled, Observer};
use crate::routing::Multi;
use crate::run::{run_test, Against, Ran, Test};
use crate::server::{self, Conn, Server};

/// The memory readings of each shape, the last after its last key.
const POINTS: u64 = 10;
/// The keys of each shape whose encoding is read, spread over its range.
const SAMPLE: u64 = 100;
/// The most bytes in flight per connection while building.
const IN_FLIGHT_BYTES: usize = 4 << 20;
/// How long the build's connections may take to be gone from the server before the memory is
/// read anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The requests of each shape, pass by pass (made before connecting: over several nodes their
/// routes are found with the tests').
pub(super) fn cases(cfg: &Config) -> Vec<Vec<Case>> {
    let case = |spec| Case { spec, mix: None, replay: None, subscribers: None, label: "dataset".into() };
    cfg.dataset_shapes
        .iter()
        .map(|s| {
            let values = Values::new(&s.size);
            s.passes().into_iter().map(|r| case(s.request(&cfg.key_prefix, r, &values))).collect()
        })
        .collect()
}

impl Session {
    /// Builds every shape, then tells `obs` what was built. `Some` when a stop came meanwhile.
    pub(super) fn build_datasets(&mut self, obs: &mut dyn Observer) -> Result<Option<Ended>, Error> {
        let multi = self.multi.as_deref().filter(|_| self.base.cluster);
        let mut reader = Reader::new(&self.server, multi, self.base.db);
        let mut built = Built::default();
        let mut first = 0;
        let shapes = std::mem::take(&mut self.dataset);
        for (shape, passes) in self.base.dataset_shapes.clone().iter().zip(&shapes) {
            built.shapes.push(self.build_shape(shape, passes, first, &mut reader, obs)?);
            first += shape.keys;
            if self.stop.requested() {
                break;
            }
        }
        obs.dataset(&built)?;
        Ok(self.stop.requested().then_some(Ended::Interrupted))
    }

    fn build_shape(
        &mut self,
        shape: &Shape,
        passes: &[Case],
        first: u64,
        reader: &mut Reader,
        obs: &mut dyn Observer,
    ) -> Result<ShapeBuilt, Error> {
        let began = Instant::now();
        let dbsize = reader.dbsize();
        let clients = reader.clients();
        let before = reader.memory(0, clients);
        let mut out = ShapeBuilt {
            shape: shape.clone(),
            first,
            seconds: 0.0,
            dbsize_growth: None,
            errors: None,
            encodings: Vec::new(),
            before,
            growth: Vec::new(),
            fragmentation: None,
        };
        let points = POINTS.min(shape.keys);
        let mut done = 0;
        for p in 1..=points {
            // keys <= 10^12 and p <= 10: no overflow.
            let upto = shape.keys * p / points;
            for case in passes {
                self.fill(shape, case, first + done, upto - done, &mut out.errors, obs)?;
                if self.stop.requested() {
                    return Ok(out);
                }
            }
            done = upto;
            if out.before.is_some() {
                out.growth.extend(reader.memory(done, clients));
            }
        }
        out.seconds = began.elapsed().as_secs_f64();
        out.dbsize_growth = dbsize.zip(reader.dbsize()).map(|(a, b)| b.saturating_sub(a));
        out.fragmentation = reader.fragmentation();
        let step = (shape.keys / SAMPLE.min(shape.keys)).max(1);
        let mut counts: Vec<(String, u64)> = Vec::new();
        for k in (0..shape.keys).step_by(step as usize).take(SAMPLE as usize) {
            let key = format!("{}key:{:012}", self.base.key_prefix, first + k);
            let Some(e) = reader.encoding(key.as_bytes()) else { continue };
            match counts.iter_mut().find(|(name, _)| *name == e) {
                Some((_, n)) => *n += 1,
                None => counts.push((e, 1)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.encodings = counts;
        if let Some(grew) = out.dbsize_growth.filter(|&g| g != shape.keys) {
            obs.message(&format!(
                "WARNING: --dataset-shape '{shape}': DBSIZE grew by {grew}, not {}: some of its keys \
                 existed before (FLUSHALL first for exact figures)",
                shape.keys
            ));
        }
        Ok(out)
    }

    /// Writes `case` (one pass of `shape`) to keys `first..first + n`, as `--preload` writes.
    fn fill(
        &mut self,
        shape: &Shape,
        case: &Case,
        first: u64,
        n: u64,
        errors: &mut Option<(u64, String)>,
        obs: &mut dyn Observer,
    ) -> Result<(), Error> {
        let cfg = std::sync::Arc::clone(&self.cfg);
        let mut c = (*cfg).clone();
        c.requests = n * shape.requests_per_key();
        c.keyspace = Some(n);
        c.key_dist = respbench_core::dist::KeyDist::Sequential;
        c.split = Some(Split {
            worker: Worker { index: 0, count: 1 },
            requests: c.requests,
            clients: vec![c.clients],
            rates: Vec::new(),
            seed: c.seed,
            keys: Some((first, n)),
        });
        let most = (IN_FLIGHT_BYTES / case.spec.template.len().max(1)).clamp(1, PRELOAD_PIPELINE as usize);
        c.pipeline = cfg.pipeline.max(most as u32);
        c.pipeline_mode = respbench_core::PipelineMode::Window;
        c.open = OpenLoopConfig::default();
        c.events = Default::default();
        c.verify = Default::default();
        let outcome = self.unmeasured(&c, case, u64::MAX, &case.spec.title, obs)?;
        if let Some((e, failed)) = outcome.failures.first() {
            return Err(Error::Dataset(format!(
                "--dataset-shape '{shape}': {failed} connection(s) failed: {e}"
            )));
        }
        let s = &outcome.stats;
        if s.errors.total() > 0 {
            let e = errors.get_or_insert_with(|| (0, s.errors.kinds()[0].first_message.clone()));
            e.0 += s.errors.total();
        }
        Ok(())
    }
}

impl Session {
    /// Runs `case` with `cfg` on the first backend, unmeasured (`--preload`, the build), its
    /// progress line titled `shown`.
    pub(super) fn unmeasured(
        &mut self,
        cfg: &Config,
        case: &Case,
        test_no: u64,
        shown: &str,
        obs: &mut dyn Observer,
    ) -> Result<respbench_core::Outcome, Error> {
        let against =
            Against { tls: self.server.tls.as_ref(), multi: self.multi.as_deref(), targets: &self.targets };
        let mut titled = retitled(&mut *obs, shown, &case.spec.title);
        let parts = [Part { name: None, cfg, case, rate: None, slo: &[] }];
        let test = Test { cfg, parts: &parts, backend: cfg.backends[0], test_no, hlog: None };
        let Ran { outcome, .. } = run_test(&test, against, self.epoch, &mut titled, &self.stop, None, None)?;
        Ok(outcome)
    }
}

/// The build's own connections to the server or each primary, for `DBSIZE`, `INFO` and
/// `OBJECT ENCODING`; a connection that failed is dropped and its figures go unread.
struct Reader {
    /// Each primary (the server against one), its slots and its connection.
    nodes: Vec<ReadNode>,
    db: u32,
}

/// A node the [`Reader`] asks: where it is, its slots, its connection once opened.
type ReadNode = (Server, Vec<(u16, u16)>, Option<Conn>);

impl Reader {
    fn new(server: &Server, multi: Option<&Multi>, db: u32) -> Reader {
        let nodes = match multi {
            Some(m) => m
                .topology
                .nodes
                .iter()
                .filter(|n| n.primary && n.usable())
                .map(|n| (server.node(&n.endpoint), n.slots.clone(), None))
                .collect(),
            None => vec![(server.clone(), vec![(0, u16::MAX)], None)],
        };
        Reader { nodes, db }
    }

    /// `args` on node `k`; `None` when it cannot be asked or refuses.
    fn ask(&mut self, k: usize, args: &[&[u8]]) -> Option<Value> {
        let db = self.db;
        let (server, _, conn) = self.nodes.get_mut(k)?;
        if conn.is_none() {
            let mut c = Conn::authenticated(server).ok()?;
            if db != 0
                && !matches!(c.command(&[b"SELECT", db.to_string().as_bytes()]).ok()?, Value::Simple(_))
            {
                return None;
            }
            *conn = Some(c);
        }
        match conn.as_mut()?.command(args) {
            Ok(Value::Error(_) | Value::BulkError(_)) => None,
            Ok(v) => Some(v),
            Err(_) => {
                *conn = None;
                None
            }
        }
    }

    /// `INFO section` of every node, each a text.
    fn info(&mut self, section: &[u8]) -> Option<Vec<String>> {
        (0..self.nodes.len())
            .map(|k| match self.ask(k, &[b"INFO", section])? {
                Value::Bulk(b) | Value::Verbatim { text: b, .. } => Some(server::text(&b)),
                _ => None,
            })
            .collect()
    }

    /// A field of `INFO section` summed over the nodes.
    fn sum(&mut self, section: &[u8], field: &str) -> Option<u64> {
        self.info(section)?.iter().map(|b| server::info_value::<u64>(b, field)).sum()
    }

    /// `DBSIZE` summed over the nodes.
    fn dbsize(&mut self) -> Option<u64> {
        (0..self.nodes.len())
            .map(|k| match self.ask(k, &[b"DBSIZE"])? {
                Value::Integer(n) => u64::try_from(n).ok(),
                _ => None,
            })
            .sum()
    }

    /// The connections the nodes have.
    fn clients(&mut self) -> Option<u64> {
        self.sum(b"clients", "connected_clients")
    }

    /// The memory after `keys` keys, once the build's connections are gone (at most
    /// [`CLOSE_WAIT`]: their buffers are not the data's): the nodes' connections back to
    /// `clients`.
    fn memory(&mut self, keys: u64, clients: Option<u64>) -> Option<MemoryPoint> {
        let began = Instant::now();
        while let (Some(want), Some(now)) = (clients, self.clients()) {
            if now <= want || began.elapsed() > CLOSE_WAIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let bodies = self.info(b"memory")?;
        let field = |f: &str| bodies.iter().map(|b| server::info_value::<u64>(b, f)).sum::<Option<u64>>();
        Some(MemoryPoint {
            keys,
            used_memory: field("used_memory")?,
            used_memory_dataset: field("used_memory_dataset")?,
            rss: field("used_memory_rss")?,
        })
    }

    /// `mem_fragmentation_ratio` of one server (none over several).
    fn fragmentation(&mut self) -> Option<f64> {
        let bodies = self.info(b"memory")?;
        match bodies.as_slice() {
            [one] => server::info_value(one, "mem_fragmentation_ratio"),
            _ => None,
        }
    }

    /// `OBJECT ENCODING key`, asked of the key's owner.
    fn encoding(&mut self, key: &[u8]) -> Option<String> {
        let slot = respbench_core::cluster::key_slot(key);
        let k =
            self.nodes.iter().position(|(_, slots, _)| slots.iter().any(|&(a, b)| a <= slot && slot <= b))?;
        match self.ask(k, &[b"OBJECT", b"ENCODING", key])? {
            Value::Bulk(b) | Value::Simple(b) => Some(server::text(&b)),
            _ => None,
        }
    }
}
