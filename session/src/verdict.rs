//! Who limited a test: the server, the client, or neither.
//!
//! The client's side is its own CPU time over the test ([`ClientCpu`]); on loopback that
//! includes the kernel's network work done on its behalf, so a busy client alone does not say
//! the client was the limit. The server's side comes from its own counters: `INFO cpu`, read
//! ([`crate::probe::Probe`]) before and after the test over the startup's connection (kept open when the server answered
//! its `CONFIG GET`: no connection is added, and a server that does not answer admin commands
//! is not asked). Redis 6.2 and later report the main
//! thread's CPU apart (`used_cpu_sys_main_thread`), the thread every command runs on, so the
//! figure holds with `io-threads` too. A server without them that says it runs several threads
//! (Dragonfly, KeyDB) gets no claim about its saturation, only its CPU in cores.

use std::time::Instant;

use hdrhistogram::Histogram;
use respbench_core::stats::value_at_percentile;
use respbench_core::Stats;

use crate::cpu::{ClientCpu, SATURATED};
use crate::timing::{ClientPauses, WITHIN_PAUSES};

/// One reading of the server's CPU counters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuReading {
    /// When the reply came.
    pub at: Instant,
    /// `used_cpu_sys` + `used_cpu_user`: every thread of the server, in seconds.
    pub total_s: f64,
    /// `used_cpu_sys_main_thread` + `used_cpu_user_main_thread`, when the server reports them.
    pub main_s: Option<f64>,
    /// The time spent executing commands (`usec` of every `INFO commandstats` line), in
    /// seconds: what a command that blocks the server without using CPU (`DEBUG SLEEP`, a slow
    /// disk) shows in.
    pub commands_s: Option<f64>,
    /// A server on this machine: its main thread's time waiting for a CPU, in seconds
    /// (`/proc/PID/schedstat`, PID from `INFO server`).
    pub wait_s: Option<f64>,
}

/// What the server's CPU did during a test.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCpu {
    /// CPU seconds of every thread over wall seconds: 1.0 is one core.
    pub cores: f64,
    /// The main thread's CPU over wall time, when known: the share of the thread that runs
    /// every command.
    pub main_share: Option<f64>,
    /// The time spent executing commands over wall time, when known.
    pub command_share: Option<f64>,
    /// A server on this machine: its main thread's time waiting for a CPU over wall time.
    pub wait_share: Option<f64>,
    /// Why the server counts as multi-threaded when its main thread is not reported apart
    /// (`None`: single-threaded, as `redis-server` without `io-threads`).
    pub threaded: Option<String>,
}

impl ServerCpu {
    /// The change between two readings.
    pub fn between(a: &CpuReading, b: &CpuReading, threaded: Option<&str>) -> Option<ServerCpu> {
        let wall = b.at.checked_duration_since(a.at)?.as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let share = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| ((y - x) / wall).max(0.0));
        let main_share = share(a.main_s, b.main_s);
        Some(ServerCpu {
            cores: ((b.total_s - a.total_s) / wall).max(0.0),
            main_share,
            command_share: share(a.commands_s, b.commands_s),
            wait_share: share(a.wait_s, b.wait_s),
            threaded: if main_share.is_some() { None } else { threaded.map(str::to_string) },
        })
    }

    /// The main thread's CPU share: the main thread's, or the whole server's for a
    /// single-threaded one; `None` when that cannot be told.
    pub fn thread_share(&self) -> Option<f64> {
        match (self.main_share, &self.threaded) {
            (Some(s), _) => Some(s),
            (None, None) => Some(self.cores),
            (None, Some(_)) => None,
        }
    }

    /// How busy the thread that runs the commands was: its CPU share, or the share of the time
    /// it spent executing commands when that is larger (a command that waits without using
    /// CPU); `None` when that cannot be told (several threads run commands).
    pub fn serving_share(&self) -> Option<f64> {
        let cpu = self.thread_share()?;
        Some(self.command_share.map_or(cpu, |c| cpu.max(c)))
    }
}

/// The least send lateness (p99) that counts as a schedule not kept: 1 ms, or a tenth of the
/// corrected p99 when that is more (a client 5 ms late does not change what a 100 ms p99 says).
pub const LATENESS_KEPT_MICROS: u64 = 1_000;

/// How well an open-loop test kept its schedule: the achieved rate against the target, and how
/// late the requests were sent (actual send minus intended time, [`Stats::lateness`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// The target rate (`--rps`).
    pub target_rps: f64,
    /// What the test achieved.
    pub achieved_rps: f64,
    /// Send lateness percentiles and maximum, in microseconds.
    pub lateness_p50_us: u64,
    /// p99 of the send lateness.
    pub lateness_p99_us: u64,
    /// The latest send.
    pub lateness_max_us: u64,
    /// The p99 of the corrected latency (from the intended time) and of the service time
    /// (from the actual send), in microseconds.
    pub latency_p99_us: u64,
    /// p99 of the service time.
    pub service_p99_us: u64,
}

impl Schedule {
    /// The schedule of an open-loop test at `target_rps` whose stats are `s`; `None` for a test
    /// that kept no lateness (a closed loop, a mix's command: the total has the figures) or sent
    /// nothing. A result's is [`crate::result::TestResult`]'s `Schedule::of`.
    pub fn of_stats(target_rps: u64, s: &Stats) -> Option<Schedule> {
        let (target, late, service) = (target_rps, s.lateness.as_ref()?, s.service.as_ref()?);
        if late.is_empty() {
            return None;
        }
        Some(Schedule {
            target_rps: target as f64,
            achieved_rps: s.rps(),
            lateness_p50_us: value_at_percentile(late, 50.0),
            lateness_p99_us: value_at_percentile(late, 99.0),
            lateness_max_us: late.max(),
            latency_p99_us: value_at_percentile(&s.latency, 99.0),
            service_p99_us: value_at_percentile(service, 99.0),
        })
    }

    /// The lateness p99 above which the schedule was not kept: [`LATENESS_KEPT_MICROS`], or a
    /// tenth of the corrected p99 when that is more.
    pub fn threshold_us(&self) -> u64 {
        LATENESS_KEPT_MICROS.max(self.latency_p99_us / 10)
    }

    /// Whether the requests were sent late: lateness p99 above [`Schedule::threshold_us`].
    pub fn late(&self) -> bool {
        self.lateness_p99_us > self.threshold_us()
    }

    /// Whether the test kept its schedule: it achieved 99% of the target rate at least and its
    /// requests were not sent late.
    pub fn kept(&self) -> bool {
        self.achieved_rps >= 0.99 * self.target_rps && !self.late()
    }

    /// Whether the lateness, rather than the server, made the corrected latency: the requests
    /// were sent late, and later (p99) than the server took to answer them.
    pub fn client_made_latency(&self) -> bool {
        self.late() && self.lateness_p99_us >= self.service_p99_us
    }

    /// `send lateness p50 0.120, p99 0.245, max 1.020 msec`.
    pub fn describe(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        format!(
            "send lateness p50 {:.3}, p99 {:.3}, max {:.3} msec",
            ms(self.lateness_p50_us),
            ms(self.lateness_p99_us),
            ms(self.lateness_max_us)
        )
    }
}

/// The share of a test a process spent waiting for a CPU from which it counts as held back by
/// the others on the machine.
pub const WAITED: f64 = 0.2;

/// Which side limited a test (in the result document by its [`Side::name`], with the feature
/// `serde`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
pub enum Side {
    /// The server's command thread was busy nearly all the time.
    Server,
    /// respbench's event loops were, and the server's was not.
    Client,
    /// Neither was: round trips (too few connections or pipelining), the network, or `--rps`.
    Neither,
    /// Neither was, but respbench or the server (on this machine) waited for a CPU a good part
    /// of the time, or the client machine's CPUs were all busy: the processes competed for CPUs.
    Machine,
    /// Not enough is known to say.
    Unknown,
}

impl Side {
    /// The name JSON uses.
    pub fn name(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
            Side::Neither => "neither",
            Side::Machine => "machine",
            Side::Unknown => "unknown",
        }
    }
}

/// The verdict on a test: the side, and a sentence that says it with both figures. The result
/// document's verdict of a ramp's step and of a capacity search's client ceiling is `{"side",
/// "text"}` (with the feature `serde`); a test's `bottleneck` adds the two shares.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Verdict {
    /// Who limited it.
    pub side: Side,
    /// The sentence for the report.
    pub text: String,
    /// The share of all the client machine's CPUs that was busy, when read.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub machine: Option<f64>,
    /// The share of the test respbench's loops spent waiting for a CPU, when read.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub client_wait: Option<f64>,
}

/// Decides who limited a test from both sides' CPU; `missing` says why the server's is unknown.
/// `machine` is the share of all the client machine's CPUs that was busy; `in_flight` is
/// `-c` × `-P`, the most requests that can wait at once. In an open loop, `schedule` says how
/// late the requests were sent: when that lateness, not the server, made the corrected latency
/// ([`Schedule::client_made_latency`]), the client is named though its CPU was not saturated.
pub fn verdict(
    client: Option<&ClientCpu>,
    server: Option<&ServerCpu>,
    missing: Option<&str>,
    machine: Option<f64>,
    client_wait: Option<f64>,
    in_flight: u64,
    schedule: Option<&Schedule>,
) -> Verdict {
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    let client_share = client.map_or(0.0, ClientCpu::core_share);
    let client_text = client.map_or("respbench's CPU is unknown".into(), |c| {
        let loops = if c.threads == 1 {
            "event loop was".to_string()
        } else {
            format!("{} event loops were", c.threads)
        };
        format!("respbench's {loops} {} busy", pct(c.core_share()))
    });
    let serving = server.and_then(ServerCpu::serving_share);
    let server_wait = server.and_then(|s| s.wait_share);
    let server_text = match (server, serving) {
        (Some(s), Some(share)) if share > s.thread_share().unwrap_or(0.0) => format!(
            "the server's main thread spent {} of the time executing commands (INFO commandstats), with {} \
             of a CPU",
            pct(share),
            pct(s.thread_share().unwrap_or(0.0))
        ),
        (Some(s), Some(share)) if s.main_share.is_some() => format!("the server's main thread was {} busy", pct(share)),
        (Some(_), Some(share)) => format!("the server was {} busy", pct(share)),
        (Some(s), None) => format!(
            "the server used {:.2} cores; it runs several threads ({}), so whether it was saturated is not known",
            s.cores,
            s.threaded.as_deref().unwrap_or("")
        ),
        (None, _) => format!(
            "the server's CPU is not known ({})",
            missing.unwrap_or("no INFO cpu")
        ),
    };
    let (side, text) = match serving {
        Some(s) if s >= SATURATED => (
            Side::Server,
            format!("the server limited the run: {server_text}; {client_text}"),
        ),
        _ if client_share >= SATURATED => (
            Side::Client,
            format!(
                "the client limited the run: {client_text} (its CPU time, the kernel's network work on its behalf \
                 included) while {server_text}; more --threads, or another client machine, may raise the rate"
            ),
        ),
        _ if machine.is_some_and(|m| m >= SATURATED)
            || client_wait.is_some_and(|w| w >= WAITED)
            || server_wait.is_some_and(|w| w >= WAITED) =>
        {
            // What the machine's scheduler measured, each clause a whole one.
            let mut waits = Vec::new();
            if let Some(w) = client_wait {
                waits.push(format!("respbench's loops waited {} of the time for a CPU", pct(w)));
            }
            if let Some(w) = server_wait {
                waits.push(format!("the server's main thread waited {} of the time for a CPU", pct(w)));
            }
            let mut measured = if waits.is_empty() { String::new() } else { format!("{} (/proc schedstat)", waits.join(" and ")) };
            if let Some(m) = machine {
                let busy = format!("the machine's CPUs were {} busy", pct(m));
                measured = if measured.is_empty() { busy } else { format!("{measured}, and {busy}") };
            }
            // Late sends then came from the wait for a CPU: the corrected latency is the
            // machine's more than the server's.
            let late = schedule
                .filter(|s| s.client_made_latency())
                .map(|s| format!("; respbench sent its requests late ({}), which made the corrected latency", s.describe()))
                .unwrap_or_default();
            (
                Side::Machine,
                format!(
                    "the processes on this machine competed for its CPUs: {measured}; meanwhile {server_text}, and \
                     {client_text}{late}; the figures say as much about that as about the server"
                ),
            )
        }
        _ if schedule.is_some_and(Schedule::client_made_latency) => {
            let sch = schedule.expect("checked above");
            (
                Side::Client,
                format!(
                    "the client limited the run: it sent its requests late ({}) against a service p99 of \
                     {:.3} msec, so the corrected latency is mostly its own lateness, not the server's \
                     ({client_text} while {server_text}); its window of {in_flight} requests in flight or \
                     its event loop held the sends back",
                    sch.describe(),
                    sch.service_p99_us as f64 / 1000.0
                ),
            )
        }
        Some(_) => (
            Side::Neither,
            format!(
                "neither side was saturated: {server_text}, {client_text}; the rate was set by round trips \
                 (at most {in_flight} requests in flight), the network or --rps"
            ),
        ),
        None => (Side::Unknown, format!("who limited the run is not known: {server_text}; {client_text}")),
    };
    Verdict { side, text, machine, client_wait }
}

/// The latency percentiles of a test that lie within the client machine's own pauses: each of
/// p99 and p99.9 whose latency is at most [`WITHIN_PAUSES`] × the idle thread's pause at the
/// same percentile and at least [`REACHED_BY_PAUSES`] × it (a pause of at least
/// [`PAUSE_FLOOR_MICROS`]), with both figures (percentile, latency µs, pause µs). A latency far
/// below the pause is not within it: the pauses did not reach those requests.
pub fn within_pauses(latency: &Histogram<u64>, pauses: &ClientPauses) -> Vec<(f64, u64, u64)> {
    pause_figures(latency, pauses)
        .into_iter()
        .filter(|&(_, l, pause)| {
            let (l, pause) = (l as f64, pause as f64);
            l <= WITHIN_PAUSES * pause && l >= REACHED_BY_PAUSES * pause
        })
        .collect()
}

/// The latency percentiles of a test far below the client machine's pauses at the same
/// percentile (latency under [`REACHED_BY_PAUSES`] × a pause of at least
/// [`PAUSE_FLOOR_MICROS`]): the pauses did not set them, but a request in flight during one
/// would have measured it, so they leave the tail uncertain.
pub fn below_pauses(latency: &Histogram<u64>, pauses: &ClientPauses) -> Vec<(f64, u64, u64)> {
    pause_figures(latency, pauses)
        .into_iter()
        .filter(|&(_, l, pause)| (l as f64) < REACHED_BY_PAUSES * pause as f64)
        .collect()
}

/// p99 and p99.9 of the latency and of the idle thread's pauses, where the pause is at least
/// [`PAUSE_FLOOR_MICROS`]: (percentile, latency µs, pause µs).
fn pause_figures(latency: &Histogram<u64>, pauses: &ClientPauses) -> Vec<(f64, u64, u64)> {
    if latency.is_empty() || pauses.idle.is_empty() {
        return Vec::new();
    }
    [99.0, 99.9]
        .into_iter()
        .map(|p| (p, value_at_percentile(latency, p), pauses.at(p)))
        .filter(|&(_, _, pause)| pause >= PAUSE_FLOOR_MICROS)
        .collect()
}

/// The least pause that can set a percentile: below it a wake-up's lateness is the timer's,
/// not a pause.
pub const PAUSE_FLOOR_MICROS: u64 = 100;

/// The least share of a pause percentile a latency percentile must reach for the pauses to have
/// set it: a latency p99 of 0.47 ms against a pause p99 of 23 ms was not made by the pauses.
pub const REACHED_BY_PAUSES: f64 = 0.5;

/// Names the client machine's pauses in `v` where the latency tail lies within them
/// ([`within_pauses`]): the sentence says which percentiles, with both figures, and what the
/// CPUs said follows; the side becomes the client unless the server was saturated (it set the
/// rate; the tail is still said to be the client's) or the machine's CPUs were taken. Where the
/// pauses were far above the tail instead ([`below_pauses`]), the sentence says they leave the
/// tail uncertain, and the side stands.
pub fn name_pauses(v: &mut Verdict, latency: &Histogram<u64>, pauses: &ClientPauses) {
    let ms = |us: u64| us as f64 / 1000.0;
    let words = |figures: &[(f64, u64, u64)]| {
        let which: Vec<String> = figures.iter().map(|(p, _, _)| format!("p{p}")).collect();
        let each: Vec<String> = figures
            .iter()
            .map(|&(p, l, pause)| {
                format!("latency p{p} {:.3} ms against its own p{p} pause of {:.3} ms", ms(l), ms(pause))
            })
            .collect();
        (which.join(" and "), each.join(", "))
    };
    let within = within_pauses(latency, pauses);
    if within.is_empty() {
        let below = below_pauses(latency, pauses);
        if !below.is_empty() {
            let (which, figures) = words(&below);
            v.text = format!(
                "the client machine's own pauses did not set the latency's {which} but make its tail uncertain: \
                 {figures} (max {:.1} ms; a request in flight during such a pause would measure it); {}",
                ms(pauses.idle.max()),
                v.text
            );
        }
        return;
    }
    let (which, figures) = words(&within);
    v.text = format!(
        "the client machine's own pauses set the latency's {which}: {figures} (max {:.1} ms; an idle thread on this \
         machine woke that late), so the tail measures this client, not the server; {}",
        ms(pauses.idle.max()),
        v.text
    );
    // A saturated server still set the rate, and CPUs that others took still made the pauses:
    // those sides stand, with the tail said; otherwise the client is named.
    if !matches!(v.side, Side::Machine | Side::Server) {
        v.side = Side::Client;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(share: f64, threads: usize) -> ClientCpu {
        ClientCpu { user_s: share * threads as f64, sys_s: 0.0, wall_s: 1.0, threads, share_override: None }
    }

    fn server(main: Option<f64>, cores: f64, threaded: Option<&str>) -> ServerCpu {
        ServerCpu {
            cores,
            main_share: main,
            command_share: None,
            wait_share: None,
            threaded: threaded.map(str::to_string),
        }
    }

    #[test]
    fn the_machine_sentence_reads_as_one() {
        // Both processes waited for a CPU, and the machine was all busy: every clause whole.
        let mut srv = server(Some(0.3), 0.35, None);
        srv.wait_share = Some(0.4);
        let v = verdict(Some(&client(0.5, 1)), Some(&srv), None, Some(0.97), Some(0.6), 50, None);
        assert_eq!(v.side, Side::Machine);
        assert_eq!(
            v.text,
            "the processes on this machine competed for its CPUs: respbench's loops waited 60% of the time \
             for a CPU and the server's main thread waited 40% of the time for a CPU (/proc schedstat), and \
             the machine's CPUs were 97% busy; meanwhile the server's main thread was 30% busy, and \
             respbench's event loop was 50% busy; the figures say as much about that as about the server"
        );
        // Only the machine's share read.
        let v = verdict(
            Some(&client(0.5, 1)),
            Some(&server(Some(0.3), 0.35, None)),
            None,
            Some(0.97),
            None,
            50,
            None,
        );
        assert!(v.text.starts_with("the processes on this machine competed for its CPUs: the machine's CPUs were 97% busy; meanwhile "), "{}", v.text);
    }

    #[test]
    fn a_saturated_server_is_named_even_when_the_client_is_busy_too() {
        // The default run on 2 cores: the server at 98%, respbench's loop at 90%.
        let v =
            verdict(Some(&client(0.90, 1)), Some(&server(Some(0.98), 1.0, None)), None, None, None, 50, None);
        assert_eq!(v.side, Side::Server);
        assert!(
            v.text.contains("main thread was 98% busy") && v.text.contains("event loop was 90% busy"),
            "{}",
            v.text
        );
    }

    #[test]
    fn a_busy_client_with_an_idle_server_is_the_client() {
        let v = verdict(
            Some(&client(0.97, 2)),
            Some(&server(Some(0.40), 0.45, None)),
            None,
            None,
            None,
            50,
            None,
        );
        assert_eq!(v.side, Side::Client);
        assert!(v.text.contains("2 event loops were 97% busy") && v.text.contains("40%"), "{}", v.text);
    }

    #[test]
    fn neither_names_the_requests_in_flight() {
        let v = verdict(Some(&client(0.2, 1)), Some(&server(None, 0.3, None)), None, None, None, 4, None);
        assert_eq!(v.side, Side::Neither);
        assert!(
            v.text.contains("the server was 30% busy") && v.text.contains("at most 4 requests"),
            "{}",
            v.text
        );
    }

    #[test]
    fn no_claim_on_a_multi_threaded_server_or_without_info() {
        let v = verdict(
            Some(&client(0.5, 1)),
            Some(&server(None, 2.5, Some("Dragonfly"))),
            None,
            None,
            None,
            50,
            None,
        );
        assert_eq!(v.side, Side::Unknown);
        assert!(v.text.contains("2.50 cores") && v.text.contains("Dragonfly"), "{}", v.text);
        // The client can still be named: it was saturated whatever the server did.
        let v = verdict(
            Some(&client(0.95, 1)),
            None,
            Some("INFO refused: ERR unknown command"),
            None,
            None,
            50,
            None,
        );
        assert_eq!(v.side, Side::Client);
        assert!(v.text.contains("INFO refused"), "{}", v.text);
        let v = verdict(Some(&client(0.5, 1)), None, Some("INFO refused"), None, None, 50, None);
        assert_eq!(v.side, Side::Unknown);
    }

    #[test]
    fn a_machine_with_no_cpu_left_is_named_when_neither_process_is_busy() {
        // Both processes starved: each busy a quarter of the time, the two CPUs all busy.
        let v = verdict(
            Some(&client(0.23, 1)),
            Some(&server(Some(0.17), 0.2, None)),
            None,
            Some(0.97),
            None,
            50,
            None,
        );
        assert_eq!(v.side, Side::Machine);
        assert!(v.text.contains("CPUs were 97% busy"), "{}", v.text);
        // Or: the machine not all busy, but respbench's loop (pinned to a CPU others use)
        // waited for it.
        let v = verdict(
            Some(&client(0.18, 1)),
            Some(&server(Some(0.14), 0.2, None)),
            None,
            Some(0.85),
            Some(0.6),
            50,
            None,
        );
        assert_eq!(v.side, Side::Machine);
        assert!(v.text.contains("respbench's loops waited 60% of the time for a CPU"), "{}", v.text);
        let v = verdict(
            Some(&client(0.18, 1)),
            Some(&server(Some(0.14), 0.2, None)),
            None,
            Some(0.5),
            Some(0.05),
            50,
            None,
        );
        assert_eq!(v.side, Side::Neither);
        // A saturated server is still the server.
        let v = verdict(
            Some(&client(0.5, 1)),
            Some(&server(Some(0.95), 1.0, None)),
            None,
            Some(1.0),
            None,
            50,
            None,
        );
        assert_eq!(v.side, Side::Server);
    }

    fn schedule(lateness_p99_us: u64, latency_p99_us: u64, service_p99_us: u64) -> Schedule {
        Schedule {
            target_rps: 50_000.0,
            achieved_rps: 49_990.0,
            lateness_p50_us: lateness_p99_us / 4,
            lateness_p99_us,
            lateness_max_us: 2 * lateness_p99_us,
            latency_p99_us,
            service_p99_us,
        }
    }

    #[test]
    fn the_client_is_named_when_its_lateness_made_the_corrected_latency() {
        let (c, s) = (client(0.45, 1), server(Some(0.40), 0.45, None));
        // 8 ms late at p99 against a 0.3 ms service p99: the corrected p99 of 8.3 ms is the
        // client's.
        let late = schedule(8_000, 8_300, 300);
        assert!(late.late() && !late.kept() && late.client_made_latency());
        let v = verdict(Some(&c), Some(&s), None, None, None, 50, Some(&late));
        assert_eq!(v.side, Side::Client);
        assert!(v.text.contains("p99 8.000") && v.text.contains("service p99 of 0.300 msec"), "{}", v.text);
        // Late, but the server took longer still: not the client's.
        let slow = schedule(8_000, 60_000, 50_000);
        assert!(slow.late() && !slow.client_made_latency());
        let v = verdict(Some(&c), Some(&s), None, None, None, 50, Some(&slow));
        assert_eq!(v.side, Side::Neither);
        // On time (within the 1 ms threshold, or a tenth of a long corrected p99): not late.
        for kept in [schedule(900, 1_200, 300), schedule(4_000, 100_000, 1_000)] {
            assert!(kept.kept() && !kept.client_made_latency(), "{kept:?}");
            let v = verdict(Some(&c), Some(&s), None, None, None, 50, Some(&kept));
            assert_eq!(v.side, Side::Neither);
        }
        // Below 99% of the target: not kept, whatever the lateness.
        let short = Schedule { achieved_rps: 49_000.0, ..schedule(300, 1_000, 300) };
        assert!(!short.kept() && !short.late());
        // A saturated server is still the server.
        let v = verdict(Some(&c), Some(&server(Some(0.97), 1.0, None)), None, None, None, 50, Some(&late));
        assert_eq!(v.side, Side::Server);
        // Late because its loop waited for a CPU: the machine, and the lateness said.
        let v = verdict(Some(&c), Some(&s), None, Some(0.99), Some(0.3), 50, Some(&late));
        assert_eq!(v.side, Side::Machine);
        assert!(v.text.contains("sent its requests late (send lateness p50 2.000, p99 8.000"), "{}", v.text);
    }

    /// A histogram of 1,000 values: `tail` of them `high` µs, the rest `low`.
    fn spread(low: u64, high: u64, tail: u64) -> Histogram<u64> {
        let mut h = respbench_core::stats::new_histogram(3).unwrap();
        h.record_n(low, 1_000 - tail).unwrap();
        h.record_n(high, tail).unwrap();
        h
    }

    fn idle(low: u64, high: u64, tail: u64) -> ClientPauses {
        ClientPauses {
            interval_us: 1_000,
            idle: spread(low, high, tail),
            wake: None,
            seconds: Vec::new(),
            seconds_p99: Vec::new(),
            wakeups: 1_000,
        }
    }

    #[test]
    fn pauses_far_above_the_tail_are_not_said_to_set_it() {
        let neither = || {
            verdict(Some(&client(0.3, 1)), Some(&server(Some(0.3), 0.3, None)), None, None, None, 50, None)
        };
        // The busy machine's figures: latency p99 0.47 ms, the idle thread's p99 pause 23 ms
        // (p99.9 too). The pauses did not reach the requests: not the client's tail.
        let latency = spread(200, 470, 20);
        let pauses = idle(50, 23_000, 20);
        assert_eq!((value_at_percentile(&latency, 99.0), pauses.at(99.0)), (470, 23_007));
        assert!(within_pauses(&latency, &pauses).is_empty());
        let mut v = neither();
        name_pauses(&mut v, &latency, &pauses);
        assert_eq!(v.side, Side::Neither, "{}", v.text);
        assert!(!v.text.contains("pauses set"), "{}", v.text);
        assert!(
            v.text.starts_with(
                "the client machine's own pauses did not set the latency's p99 and p99.9 but make its tail \
                 uncertain: latency p99 0.470 ms against its own p99 pause of 23.007 ms"
            ),
            "{}",
            v.text
        );
        assert!(v.text.ends_with(&neither().text), "{}", v.text);
        // Consistent: latency p99 20 ms within the same pauses (at least half, at most 1.5x).
        let latency = spread(200, 20_000, 20);
        assert_eq!(within_pauses(&latency, &pauses).len(), 2);
        let mut v = neither();
        name_pauses(&mut v, &latency, &pauses);
        assert_eq!(v.side, Side::Client, "{}", v.text);
        assert!(
            v.text.starts_with(
                "the client machine's own pauses set the latency's p99 and p99.9: latency p99 20.015"
            ),
            "{}",
            v.text
        );
        // A tail beyond 1.5x the pauses is the server's: nothing said of the pauses.
        let latency = spread(200, 40_000, 20);
        let mut v = neither();
        name_pauses(&mut v, &latency, &pauses);
        assert_eq!(v, neither());
    }
}
