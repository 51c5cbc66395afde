//! The figures the endpoint serves, as Prometheus' text format (0.0.4) or OpenMetrics 1.0: the
//! fixed histogram buckets, the series of a run, and their exposition. Pure: no IO, no clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::notify::{self, Notify};

/// The histograms' bucket bounds in microseconds: four a decade (1, 1.8, 3.2, 5.6) from 10 µs
/// to 56 s, then 60 s; fixed, so that every worker's buckets add up and a dashboard's queries
/// hold across runs.
pub const BOUNDS_MICROS: [u64; 29] = [
    10, 18, 32, 56, 100, 180, 320, 560, 1_000, 1_800, 3_200, 5_600, 10_000, 18_000, 32_000, 56_000, 100_000,
    180_000, 320_000, 560_000, 1_000_000, 1_800_000, 3_200_000, 5_600_000, 10_000_000, 18_000_000,
    32_000_000, 56_000_000, 60_000_000,
];

/// A histogram in the fixed buckets: counts per bucket (not cumulative; the last one past 60 s),
/// how many values, and their sum in microseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    /// Values at most each bound and above the one before; the last, above 60 s.
    pub counts: [u64; BOUNDS_MICROS.len() + 1],
    /// Values in all.
    pub count: u64,
    /// Their sum in microseconds: HdrHistogram's mean times its count, so within its
    /// precision (0.1% at three significant figures).
    pub sum_micros: f64,
}

impl Buckets {
    /// `h`'s values in the fixed buckets: each of HdrHistogram's buckets goes whole into the
    /// first fixed bucket at or above its highest equivalent value.
    pub fn of(h: &Histogram<u64>) -> Buckets {
        let mut b = Buckets::default();
        for v in h.iter_recorded() {
            let value = v.value_iterated_to();
            let i = BOUNDS_MICROS.partition_point(|&bound| bound < value);
            b.counts[i] = b.counts[i].saturating_add(v.count_at_value());
        }
        b.count = h.len();
        b.sum_micros = h.mean() * h.len() as f64;
        b
    }

    /// Adds `other`'s values.
    pub fn add(&mut self, other: &Buckets) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a = a.saturating_add(b);
        }
        self.count = self.count.saturating_add(other.count);
        self.sum_micros += other.sum_micros;
    }
}

/// The figures of one series of a test: its command (a mix's), or its node (several nodes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Replies received.
    pub requests: u64,
    /// Error replies by prefix (the requests lost with a connection are not replies: apart).
    pub errors: BTreeMap<String, u64>,
    /// The corrected latency.
    pub latency: Buckets,
    /// The service time (open loop).
    pub service: Option<Buckets>,
}

impl Series {
    /// Adds `other`'s figures.
    pub fn add(&mut self, other: &Series) {
        self.requests = self.requests.saturating_add(other.requests);
        for (prefix, n) in &other.errors {
            let e = self.errors.entry(prefix.clone()).or_default();
            *e = e.saturating_add(*n);
        }
        self.latency.add(&other.latency);
        add_option(&mut self.service, other.service.as_ref());
    }
}

/// The figures of a whole test that no command or node has of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TestTotals {
    /// Requests lost with their connection.
    pub lost: u64,
    /// Requests abandoned after the stop's grace.
    pub abandoned: u64,
    /// Open-loop arrivals never sent.
    pub unsent: u64,
    /// How late requests were sent (open loop).
    pub lateness: Option<Buckets>,
    /// The client machine's own pauses: how late the idle thread woke.
    pub idle_pauses: Option<Buckets>,
    /// How late the event loops woke against the deadlines they asked for.
    pub wake_pauses: Option<Buckets>,
    /// `-t expiry`'s and `-t tracking`'s notifications.
    pub notify: Option<Notify>,
}

impl TestTotals {
    /// Adds `other`'s figures.
    pub fn add(&mut self, other: &TestTotals) {
        self.lost = self.lost.saturating_add(other.lost);
        self.abandoned = self.abandoned.saturating_add(other.abandoned);
        self.unsent = self.unsent.saturating_add(other.unsent);
        add_option(&mut self.lateness, other.lateness.as_ref());
        add_option(&mut self.idle_pauses, other.idle_pauses.as_ref());
        add_option(&mut self.wake_pauses, other.wake_pauses.as_ref());
        if let Some(n) = &other.notify {
            self.notify.get_or_insert_with(Notify::default).add(n);
        }
    }
}

fn add_option(to: &mut Option<Buckets>, from: Option<&Buckets>) {
    if let Some(f) = from {
        to.get_or_insert_with(Buckets::default).add(f);
    }
}

/// A series' labels within its test: the command, the node over several nodes (empty
/// against one server), and a scenario's group.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesKey {
    /// The test's title.
    pub test: String,
    /// The command (its name), `mix` for the nodes of a mix.
    pub command: String,
    /// The node's address, over several nodes.
    pub node: String,
    /// A scenario's group (empty: the test as a whole).
    pub group: String,
}

/// Everything one scrape shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// This worker's index (0 when the run is not split).
    pub worker: u64,
    /// How many workers share the run.
    pub workers: u64,
    /// The backend of the test running (or of the last one).
    pub backend: String,
    /// The test running (or the last one); empty before the first.
    pub test: String,
    /// Each series of each test so far.
    pub series: BTreeMap<SeriesKey, Series>,
    /// Each test's own figures.
    pub tests: BTreeMap<String, TestTotals>,
    /// A scenario's groups' own figures, by test and group.
    pub group_tests: BTreeMap<(String, String), TestTotals>,
    /// The running scenario's groups' open-loop targets, by group.
    pub group_targets: Vec<(String, u64)>,
    /// The running test's target rate, if it has one.
    pub target_rps: Option<u64>,
    /// The running test's `--ramp`: its kind (`clients` or `rps`), the step running (from 1)
    /// and that step's level.
    pub ramp: Option<(&'static str, u64, u64)>,
    /// Connections open now.
    pub connections: u64,
    /// The process's CPU so far, user and system, in seconds.
    pub cpu_seconds: f64,
    /// The server sampler's latest figures, by node (#51).
    pub server: Vec<respbench_session::ServerGauges>,
}

/// The exposition format a scrape asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus' text format 0.0.4.
    Text,
    /// OpenMetrics 1.0 text.
    OpenMetrics,
}

impl Format {
    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Every metric family respbench exports, by the name a query uses for its samples (a
/// histogram's `_bucket`, `_sum`, `_count` and a counter's `_total` included): what the
/// dashboard's queries are checked against.
pub fn sample_names() -> Vec<String> {
    let mut names = Vec::new();
    for (name, kind, _) in FAMILIES.into_iter().chain(notify_families()) {
        match kind {
            Kind::Counter => names.push(format!("{name}_total")),
            Kind::Histogram => {
                names.extend(["_bucket", "_sum", "_count"].iter().map(|s| format!("{name}{s}")))
            }
            Kind::Gauge => names.push(name.to_string()),
            Kind::Info => names.push(format!("{name}_info")),
        }
    }
    names
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    Info,
}

/// The notification tests' families ([`notify::FAMILIES`]) as the others are.
fn notify_families() -> impl Iterator<Item = (&'static str, Kind, &'static str)> {
    notify::FAMILIES
        .into_iter()
        .map(|(n, h, help)| (n, if h { Kind::Histogram } else { Kind::Counter }, help))
}

/// The families: name (without `_total` or `_info`), kind, help.
const FAMILIES: [(&str, Kind, &str); 28] = [
    (
        "respbench_run",
        Kind::Info,
        "The run: its test running (or last run), backend, worker index and worker count.",
    ),
    ("respbench_requests", Kind::Counter, "Replies received (error replies included)."),
    ("respbench_error_replies", Kind::Counter, "Error replies, by the first word of the message."),
    ("respbench_lost_requests", Kind::Counter, "Requests lost with their connection."),
    ("respbench_abandoned_requests", Kind::Counter, "Requests still unanswered after the stop's grace."),
    ("respbench_unsent_requests", Kind::Counter, "Open-loop arrivals due before the stop and never sent."),
    (
        "respbench_latency_seconds",
        Kind::Histogram,
        "Latency per request, from the intended send time in an open loop (corrected).",
    ),
    (
        "respbench_service_time_seconds",
        Kind::Histogram,
        "Open loop: latency per request from its actual send.",
    ),
    ("respbench_send_lateness_seconds", Kind::Histogram, "Open loop: how late each request was sent."),
    (
        "respbench_client_pause_seconds",
        Kind::Histogram,
        "The client machine's own pauses: how late an idle thread sleeping 1 ms woke (idle), and how late the event loops woke for their deadlines (loop).",
    ),
    ("respbench_target_rate", Kind::Gauge, "The running test's open-loop target, in requests per second."),
    ("respbench_ramp_step", Kind::Gauge, "The running test's --ramp step, from 1."),
    (
        "respbench_ramp_level",
        Kind::Gauge,
        "The running --ramp step's level: its clients (kind=\"clients\") or its target rate (kind=\"rps\").",
    ),
    ("respbench_connections_open", Kind::Gauge, "Connections of the running test that are up."),
    ("respbench_client_cpu_seconds", Kind::Counter, "respbench's own CPU time, user and system."),
    // The server's side (#51): its last sample, by node.
    ("respbench_server_sample_missing", Kind::Gauge, "1 when the server's last sample had no reply."),
    ("respbench_server_ops_per_second", Kind::Gauge, "Commands the server processed per second."),
    ("respbench_server_cpu_cores", Kind::Gauge, "Cores the server used (INFO used_cpu_*)."),
    ("respbench_server_main_thread_cores", Kind::Gauge, "Cores its main thread used."),
    ("respbench_server_used_memory_bytes", Kind::Gauge, "INFO used_memory."),
    ("respbench_server_rss_bytes", Kind::Gauge, "INFO used_memory_rss."),
    ("respbench_server_fragmentation_ratio", Kind::Gauge, "INFO mem_fragmentation_ratio."),
    ("respbench_server_connected_clients", Kind::Gauge, "INFO connected_clients."),
    ("respbench_server_blocked_clients", Kind::Gauge, "INFO blocked_clients."),
    ("respbench_server_evicted_keys", Kind::Gauge, "Keys evicted in the last sample's interval."),
    ("respbench_server_forks", Kind::Gauge, "Forks in the last sample's interval."),
    ("respbench_server_replica_lag_seconds", Kind::Gauge, "The most lagging replica's lag."),
    ("respbench_server_thread_cores", Kind::Gauge, "A server on this machine: each thread's cores (/proc)."),
];

/// A label value escaped as both formats want: `\`, `"` and a line feed.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// `{a="x",b="y"}` of the pairs whose value is not empty.
fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> =
        pairs.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    format!("{{{}}}", inner.join(","))
}

/// A float as both formats read it (`+Inf` aside).
fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "0".into()
    }
}

/// The snapshot in `format`.
pub fn render(s: &Snapshot, format: Format) -> String {
    let mut out = String::new();
    let worker = s.worker.to_string();
    let header = |out: &mut String, family: &str| {
        let (name, kind, help) = FAMILIES
            .into_iter()
            .chain(notify_families())
            .find(|f| f.0 == family)
            .unwrap_or((family, Kind::Gauge, ""));
        let (shown, kind) = match (format, kind) {
            (Format::Text, Kind::Counter) => (format!("{name}_total"), "counter"),
            (Format::Text, Kind::Info) => (format!("{name}_info"), "gauge"),
            (Format::OpenMetrics, Kind::Counter) => (name.to_string(), "counter"),
            (Format::OpenMetrics, Kind::Info) => (name.to_string(), "info"),
            (_, Kind::Gauge) => (name.to_string(), "gauge"),
            (_, Kind::Histogram) => (name.to_string(), "histogram"),
        };
        let _ = writeln!(out, "# HELP {shown} {help}");
        let _ = writeln!(out, "# TYPE {shown} {kind}");
    };
    header(&mut out, "respbench_run");
    let _ = writeln!(
        out,
        "respbench_run_info{} 1",
        labels(&[
            ("test", &s.test),
            ("backend", &s.backend),
            ("worker", &worker),
            ("workers", &s.workers.to_string()),
            ("version", env!("CARGO_PKG_VERSION")),
        ])
    );
    fn series_labels<'a>(k: &'a SeriesKey, worker: &'a str) -> Vec<(&'static str, &'a str)> {
        vec![
            ("test", &k.test),
            ("command", &k.command),
            ("node", &k.node),
            ("group", &k.group),
            ("worker", worker),
        ]
    }
    header(&mut out, "respbench_requests");
    for (k, v) in &s.series {
        let _ =
            writeln!(out, "respbench_requests_total{} {}", labels(&series_labels(k, &worker)), v.requests);
    }
    header(&mut out, "respbench_error_replies");
    for (k, v) in &s.series {
        for (prefix, n) in &v.errors {
            let mut l = series_labels(k, &worker);
            l.push(("prefix", prefix));
            let _ = writeln!(out, "respbench_error_replies_total{} {n}", labels(&l));
        }
    }
    type Count = fn(&TestTotals) -> u64;
    let test_counters: [(&str, Count); 3] = [
        ("respbench_lost_requests", |t| t.lost),
        ("respbench_abandoned_requests", |t| t.abandoned),
        ("respbench_unsent_requests", |t| t.unsent),
    ];
    for (family, get) in test_counters {
        header(&mut out, family);
        for (test, t) in &s.tests {
            let _ =
                writeln!(out, "{family}_total{} {}", labels(&[("test", test), ("worker", &worker)]), get(t));
        }
        for ((test, group), t) in &s.group_tests {
            let l = labels(&[("test", test), ("group", group), ("worker", &worker)]);
            let _ = writeln!(out, "{family}_total{l} {}", get(t));
        }
    }
    let histogram = |out: &mut String, family: &str, l: &[(&str, &str)], b: &Buckets| {
        let mut cumulative = 0u64;
        for (i, bound) in BOUNDS_MICROS.iter().enumerate() {
            cumulative = cumulative.saturating_add(b.counts[i]);
            let le = number(*bound as f64 / 1e6);
            let mut with = l.to_vec();
            with.push(("le", &le));
            let _ = writeln!(out, "{family}_bucket{} {cumulative}", labels(&with));
        }
        let mut with = l.to_vec();
        with.push(("le", "+Inf"));
        // +Inf holds every value: the count, which the buckets add up to.
        let _ = writeln!(out, "{family}_bucket{} {}", labels(&with), b.count);
        let _ = writeln!(out, "{family}_sum{} {}", labels(l), number(b.sum_micros / 1e6));
        let _ = writeln!(out, "{family}_count{} {}", labels(l), b.count);
    };
    header(&mut out, "respbench_latency_seconds");
    for (k, v) in &s.series {
        histogram(&mut out, "respbench_latency_seconds", &series_labels(k, &worker), &v.latency);
    }
    header(&mut out, "respbench_service_time_seconds");
    for (k, v) in &s.series {
        if let Some(b) = &v.service {
            histogram(&mut out, "respbench_service_time_seconds", &series_labels(k, &worker), b);
        }
    }
    header(&mut out, "respbench_send_lateness_seconds");
    for (test, t) in &s.tests {
        if let Some(b) = &t.lateness {
            histogram(&mut out, "respbench_send_lateness_seconds", &[("test", test), ("worker", &worker)], b);
        }
    }
    for ((test, group), t) in &s.group_tests {
        if let Some(b) = &t.lateness {
            let l = [("test", test.as_str()), ("group", group), ("worker", &worker)];
            histogram(&mut out, "respbench_send_lateness_seconds", &l, b);
        }
    }
    header(&mut out, "respbench_client_pause_seconds");
    for (test, t) in &s.tests {
        for (of, b) in [("idle", &t.idle_pauses), ("loop", &t.wake_pauses)] {
            if let Some(b) = b {
                let l = [("test", test.as_str()), ("of", of), ("worker", &worker)];
                histogram(&mut out, "respbench_client_pause_seconds", &l, b);
            }
        }
    }
    let notified = s.tests.iter().filter_map(|(t, v)| Some((t, v.notify.as_ref()?)));
    let histograms = |out: &mut String, family: &str, l: &[(&str, &str)], hs: &[Histogram<u64>]| {
        let mut b = Buckets::default();
        hs.iter().for_each(|h| b.add(&Buckets::of(h)));
        histogram(out, family, l, &b);
    };
    notify::render(&mut out, notified, &worker, (&header, &histograms, &labels));
    header(&mut out, "respbench_target_rate");
    if let Some(r) = s.target_rps.filter(|_| !s.test.is_empty()) {
        let _ =
            writeln!(out, "respbench_target_rate{} {r}", labels(&[("test", &s.test), ("worker", &worker)]));
    }
    for (group, r) in s.group_targets.iter().filter(|_| !s.test.is_empty()) {
        let l = labels(&[("test", &s.test), ("group", group), ("worker", &worker)]);
        let _ = writeln!(out, "respbench_target_rate{l} {r}");
    }
    let ramp = s.ramp.filter(|_| !s.test.is_empty());
    header(&mut out, "respbench_ramp_step");
    if let Some((_, step, _)) = ramp {
        let _ =
            writeln!(out, "respbench_ramp_step{} {step}", labels(&[("test", &s.test), ("worker", &worker)]));
    }
    header(&mut out, "respbench_ramp_level");
    if let Some((kind, _, level)) = ramp {
        let l = [("test", s.test.as_str()), ("kind", kind), ("worker", &worker)];
        let _ = writeln!(out, "respbench_ramp_level{} {level}", labels(&l));
    }
    header(&mut out, "respbench_connections_open");
    let _ = writeln!(out, "respbench_connections_open{} {}", labels(&[("worker", &worker)]), s.connections);
    header(&mut out, "respbench_client_cpu_seconds");
    let _ = writeln!(
        out,
        "respbench_client_cpu_seconds_total{} {}",
        labels(&[("worker", &worker)]),
        number(s.cpu_seconds)
    );
    for (family, _, _) in FAMILIES.iter().filter(|f| f.0.starts_with("respbench_server_")) {
        header(&mut out, family);
        for g in &s.server {
            let l = labels(&[("node", &g.node), ("worker", &worker)]);
            if *family == "respbench_server_thread_cores" {
                for (thread, cores) in &g.threads {
                    let l = labels(&[("node", &g.node), ("thread", thread), ("worker", &worker)]);
                    let _ = writeln!(out, "{family}{l} {}", number(*cores));
                }
            }
            for (_, v) in g.values.iter().filter(|(k, _)| k == family) {
                let _ = writeln!(out, "{family}{l} {}", number(*v));
            }
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = respbench_core::shared::new_histogram(3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn buckets_take_each_value_at_or_below_its_bound() {
        let b = Buckets::of(&histogram(&[
            (1, 2),
            (10, 1),
            (11, 1),
            (1_000, 5),
            (59_000_000, 1),
            (3_000_000_000, 1),
        ]));
        assert_eq!(b.counts[0], 3, "1 µs and 10 µs are at most 10 µs");
        assert_eq!(b.counts[1], 1, "11 µs is in (10, 18]");
        assert_eq!(b.counts[BOUNDS_MICROS.iter().position(|&x| x == 1_000).unwrap()], 5);
        assert_eq!(b.counts[BOUNDS_MICROS.len() - 1], 1, "59 s is in (56 s, 60 s]");
        assert_eq!(b.counts[BOUNDS_MICROS.len()], 1, "50 minutes is past 60 s");
        assert_eq!(b.count, 11);
        assert_eq!(b.counts.iter().sum::<u64>(), 11);
        let mut twice = b.clone();
        twice.add(&b);
        assert_eq!(twice.count, 22);
        assert_eq!(twice.counts[0], 6);
    }

    #[test]
    fn bounds_are_log_spaced_and_increasing() {
        assert_eq!(BOUNDS_MICROS[0], 10);
        assert_eq!(*BOUNDS_MICROS.last().unwrap(), 60_000_000);
        for w in BOUNDS_MICROS.windows(2) {
            assert!(w[1] > w[0]);
            let ratio = w[1] as f64 / w[0] as f64;
            assert!((1.07..=1.85).contains(&ratio), "{w:?}");
        }
    }

    fn snapshot() -> Snapshot {
        let mut s = Snapshot {
            worker: 1,
            workers: 2,
            backend: "mio".into(),
            test: "SET".into(),
            ..Default::default()
        };
        let mut set =
            Series { requests: 7, latency: Buckets::of(&histogram(&[(100, 7)])), ..Default::default() };
        set.errors.insert("ERR".into(), 2);
        s.series.insert(SeriesKey { test: "SET".into(), command: "SET".into(), ..Default::default() }, set);
        s.tests.insert(
            "SET".into(),
            TestTotals { lost: 1, lateness: Some(Buckets::default()), ..Default::default() },
        );
        s.target_rps = Some(1000);
        s
    }

    #[test]
    fn text_format_names_and_labels() {
        let text = render(&snapshot(), Format::Text);
        for line in [
            "# TYPE respbench_requests_total counter",
            "respbench_requests_total{test=\"SET\",command=\"SET\",worker=\"1\"} 7",
            "respbench_error_replies_total{test=\"SET\",command=\"SET\",worker=\"1\",prefix=\"ERR\"} 2",
            "respbench_lost_requests_total{test=\"SET\",worker=\"1\"} 1",
            "respbench_latency_seconds_bucket{test=\"SET\",command=\"SET\",worker=\"1\",le=\"0.00001\"} 0",
            "respbench_latency_seconds_bucket{test=\"SET\",command=\"SET\",worker=\"1\",le=\"0.0001\"} 7",
            "respbench_latency_seconds_bucket{test=\"SET\",command=\"SET\",worker=\"1\",le=\"+Inf\"} 7",
            "respbench_latency_seconds_count{test=\"SET\",command=\"SET\",worker=\"1\"} 7",
            "respbench_target_rate{test=\"SET\",worker=\"1\"} 1000",
            "# TYPE respbench_run_info gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
        assert!(!text.contains("# EOF"));
        // Every sample's name is one the dashboard may use.
        let names = sample_names();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let name = &l[..l.find('{').unwrap()];
            assert!(names.iter().any(|n| n == name), "{name}");
        }
    }

    #[test]
    fn openmetrics_types_families_and_ends_with_eof() {
        let text = render(&snapshot(), Format::OpenMetrics);
        assert!(text.contains("# TYPE respbench_requests counter\n"));
        assert!(text.contains("# TYPE respbench_run info\n"));
        assert!(text.contains("respbench_requests_total{"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(labels(&[("test", "a\"b\\c\nd"), ("node", "")]), "{test=\"a\\\"b\\\\c\\nd\"}");
    }
}
