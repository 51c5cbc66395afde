//! The verdict for servers with many threads (#51 item 3): with I/O threads the main thread is not
//! the whole server, so its share alone can blame the wrong side. From the server's series
//! ([`crate::sampler`]): a server on this machine has each thread's CPU (`/proc/PID/task`), a
//! remote one `INFO`'s `used_cpu_*_main_thread` beside `used_cpu_*`. [`ThreadVerdict::of`] names
//! the busiest thread and whether the main thread or the I/O threads limit the server, or says
//! why that is unknown; [`ThreadVerdict::apply`] adds it to the test's verdict.

use crate::cpu::SATURATED;
use crate::sampler::ServerSeries;
use crate::verdict::{Side, Verdict};

/// Which of the server's threads limited it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Its main thread (every command runs there) was busy [`SATURATED`] or more.
    MainThread,
    /// An I/O thread was, and the main thread was not.
    IoThreads,
    /// No thread was.
    Neither,
    /// Not known: see [`ThreadVerdict::text`].
    Unknown,
}

impl Limit {
    /// The name the JSON uses.
    pub fn name(self) -> &'static str {
        match self {
            Limit::MainThread => "main_thread",
            Limit::IoThreads => "io_threads",
            Limit::Neither => "neither",
            Limit::Unknown => "unknown",
        }
    }
}

/// The server's threads over a test, and which limited it.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadVerdict {
    /// Which limited it.
    pub limit: Limit,
    /// The node (over several, the one with the busiest thread).
    pub node: Option<String>,
    /// The busiest thread and its cores (remote: the main thread, or the others together).
    pub busiest: Option<(String, f64)>,
    /// The main thread's cores.
    pub main_cores: Option<f64>,
    /// Every thread but the main one, together (I/O and background threads).
    pub other_cores: Option<f64>,
    /// Where the figures come from: `/proc` or `INFO`.
    pub source: Option<&'static str>,
    /// The sentence.
    pub text: String,
}

/// Whether a thread name is a server's main thread.
fn is_main(name: &str) -> bool {
    matches!(name, "redis-server" | "valkey-server")
}

/// Whether a thread name is an I/O thread (`io_thd_1`: Redis; Valkey's likewise).
fn is_io(name: &str) -> bool {
    name.starts_with("io_thd")
}

impl ThreadVerdict {
    /// The verdict on the threads of the series' nodes; `why_not` says why there is no series.
    pub fn of(series: Option<&ServerSeries>, why_not: Option<&str>) -> ThreadVerdict {
        let unknown = |why: String| ThreadVerdict {
            limit: Limit::Unknown,
            node: None,
            busiest: None,
            main_cores: None,
            other_cores: None,
            source: None,
            text: format!("which of the server's threads limited it is unknown: {why}"),
        };
        let Some(s) = series else {
            return unknown(why_not.unwrap_or("the server was not sampled").to_string());
        };
        let mut best: Option<ThreadVerdict> = None;
        for node in s.nodes() {
            let v = match (s.threads(node), s.main_thread(node)) {
                (threads, _) if !threads.is_empty() => of_threads(&threads),
                (_, Some((total, main))) => of_info(total, main),
                _ => continue,
            };
            let v = ThreadVerdict { node: Some(node.to_string()), ..v };
            let cores = |v: &ThreadVerdict| v.busiest.as_ref().map_or(0.0, |b| b.1);
            if best.as_ref().is_none_or(|b| cores(&v) > cores(b)) {
                best = Some(v);
            }
        }
        let several = s.nodes().len() > 1;
        match best {
            Some(mut v) if several => {
                v.text = format!("at {}: {}", v.node.as_deref().unwrap_or(""), v.text);
                v
            }
            Some(v) => v,
            None => unknown(
                "the server is not on this machine (no /proc of its threads) and its INFO has no \
                 used_cpu_*_main_thread"
                    .into(),
            ),
        }
    }

    /// Adds the sentence to `v`; a thread of the server that was saturated makes the server the
    /// side where the verdict had none (`neither`, `unknown`): its main thread's share alone did
    /// not show it.
    pub fn apply(&self, v: &mut Verdict) {
        let limited = matches!(self.limit, Limit::MainThread | Limit::IoThreads);
        if limited && matches!(v.side, Side::Neither | Side::Unknown) {
            v.side = Side::Server;
            v.text = format!("the server limited the run: {}; {}", self.text, v.text);
        } else {
            v.text = format!("{}; {}", v.text, self.text);
        }
    }
}

/// From a local server's threads (busiest first).
fn of_threads(threads: &[(String, f64)]) -> ThreadVerdict {
    let main = threads.iter().find(|(n, _)| is_main(n)).map(|t| t.1);
    let io: Vec<&(String, f64)> = threads.iter().filter(|(n, _)| is_io(n)).collect();
    let other: f64 = threads.iter().filter(|(n, _)| !is_main(n)).map(|t| t.1).sum();
    let (name, cores) = threads[0].clone();
    let limit = match main {
        Some(m) if m >= SATURATED => Limit::MainThread,
        _ if io.iter().any(|t| t.1 >= SATURATED) => Limit::IoThreads,
        _ => Limit::Neither,
    };
    let list: Vec<String> = threads.iter().take(4).map(|(n, c)| format!("{n} {c:.2}")).collect();
    let io_words = match io.len() {
        0 => "no I/O threads".to_string(),
        n => format!("{n} I/O thread{}", if n == 1 { "" } else { "s" }),
    };
    let text = match limit {
        Limit::MainThread => {
            format!("its main thread limited the server ({name} {cores:.2} of a core; {io_words})")
        }
        Limit::IoThreads => {
            format!("its I/O threads limited the server ({name} {cores:.2} of a core, the main thread less)")
        }
        _ => format!(
            "no thread of the server was saturated (busiest {name} at {cores:.2} of a core; {io_words})"
        ),
    };
    ThreadVerdict {
        limit,
        node: None,
        busiest: Some((name, cores)),
        main_cores: main,
        other_cores: Some(other),
        source: Some("/proc"),
        text: format!("{text}; threads by cores: {} (/proc)", list.join(", ")),
    }
}

/// From `INFO`'s whole-server and main-thread CPU (a remote server).
fn of_info(total: f64, main: f64) -> ThreadVerdict {
    let other = (total - main).max(0.0);
    let limit = if main >= SATURATED {
        Limit::MainThread
    } else if other >= SATURATED {
        // The others together used a core or more; which of them is not in INFO.
        Limit::Unknown
    } else {
        Limit::Neither
    };
    let busiest = if main >= other { ("main thread", main) } else { ("other threads together", other) };
    let text = match limit {
        Limit::MainThread => format!("its main thread limited the server ({main:.2} of a core of its {total:.2} cores)"),
        Limit::Unknown => format!(
            "the server's threads besides the main one used {other:.2} cores and its main thread {main:.2}: whether \
             its I/O threads limited it is unknown (INFO does not split them; /proc does, for a server on this machine)"
        ),
        _ => format!("no thread of the server was saturated (main thread {main:.2} of a core, others {other:.2})"),
    };
    ThreadVerdict {
        limit,
        node: None,
        busiest: Some((busiest.0.to_string(), busiest.1)),
        main_cores: Some(main),
        other_cores: Some(other),
        source: Some("INFO"),
        text: format!("{text} (INFO used_cpu_*_main_thread)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{ServerSample, ThreadShare};

    fn sample(span: f64, threads: &[(&str, f64)], cpu: Option<(f64, f64)>) -> ServerSample {
        ServerSample {
            node: "n:1".into(),
            span_s: span,
            cpu_cores: cpu.map(|c| c.0),
            main_thread_cores: cpu.map(|c| c.1),
            threads: threads
                .iter()
                .enumerate()
                .map(|(i, (n, c))| ThreadShare { name: n.to_string(), tid: i as u32, cores: *c })
                .collect(),
            ..ServerSample::default()
        }
    }

    fn series(samples: Vec<ServerSample>) -> ServerSeries {
        ServerSeries { samples, ..ServerSeries::default() }
    }

    #[test]
    fn the_busiest_thread_is_named_and_the_io_threads_can_limit() {
        // Two seconds: the I/O thread at 0.95 then 0.93, the main thread at 0.5.
        let s = series(vec![
            sample(1.0, &[("redis-server", 0.5), ("io_thd_1", 0.95)], None),
            sample(1.0, &[("redis-server", 0.5), ("io_thd_1", 0.93)], None),
        ]);
        let v = ThreadVerdict::of(Some(&s), None);
        assert_eq!(v.limit, Limit::IoThreads);
        let (name, cores) = v.busiest.clone().unwrap();
        assert_eq!(name, "io_thd_1");
        assert!((cores - 0.94).abs() < 1e-9);
        assert!(v.text.starts_with("its I/O threads limited the server (io_thd_1 0.94"), "{}", v.text);
        // The test's verdict had no side: the server is named.
        let mut verdict =
            Verdict { side: Side::Neither, text: "neither side".into(), machine: None, client_wait: None };
        v.apply(&mut verdict);
        assert_eq!(verdict.side, Side::Server);
        assert!(verdict.text.starts_with("the server limited the run: its I/O threads"), "{}", verdict.text);
        // A main thread at 0.97 is the main thread's limit.
        let m = series(vec![sample(1.0, &[("redis-server", 0.97), ("io_thd_1", 0.4)], None)]);
        assert_eq!(ThreadVerdict::of(Some(&m), None).limit, Limit::MainThread);
        let q =
            series(vec![sample(1.0, &[("redis-server", 0.3), ("io_thd_1", 0.2), ("bio_aof", 0.0)], None)]);
        let v = ThreadVerdict::of(Some(&q), None);
        assert_eq!(v.limit, Limit::Neither);
        assert!(v.text.contains("busiest redis-server at 0.30"), "{}", v.text);
    }

    #[test]
    fn a_remote_server_is_judged_by_info_or_unknown() {
        let r = series(vec![sample(2.0, &[], Some((1.5, 0.95)))]);
        let v = ThreadVerdict::of(Some(&r), None);
        assert_eq!((v.limit, v.source), (Limit::MainThread, Some("INFO")));
        let others = series(vec![sample(2.0, &[], Some((1.6, 0.5)))]);
        assert_eq!(ThreadVerdict::of(Some(&others), None).limit, Limit::Unknown);
        let none = series(vec![sample(2.0, &[], Some((0.5, 0.4)))]);
        assert_eq!(ThreadVerdict::of(Some(&none), None).limit, Limit::Neither);
        let blind = series(vec![sample(2.0, &[], None)]);
        let v = ThreadVerdict::of(Some(&blind), None);
        assert_eq!(v.limit, Limit::Unknown);
        assert!(v.text.contains("not on this machine"), "{}", v.text);
        let off = ThreadVerdict::of(None, Some("--no-server-probe"));
        assert_eq!(off.text, "which of the server's threads limited it is unknown: --no-server-probe");
    }
}
