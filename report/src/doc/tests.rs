//! docs/respbench.schema.json against the types, both ways: every field the types write is
//! in the schema (and every field the schema describes is one the types write), and a
//! document made of what the schema requires reads back.

use super::*;

fn schema() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/respbench.schema.json"))
        .expect("docs/respbench.schema.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

/// `s` with its `$ref` followed (within the schema document).
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(root, root.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("{r}"))),
        None => s,
    }
}

/// The schemas `s` stands for: itself, or each of its `oneOf`/`anyOf` alternatives.
fn alternatives<'a>(root: &'a Value, s: &'a Value) -> Vec<&'a Value> {
    let s = resolve(root, s);
    let mut out: Vec<&Value> = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| s.get(*k).and_then(Value::as_array))
        .flatten()
        .map(|a| resolve(root, a))
        .collect();
    if out.is_empty() || s.get("properties").is_some() {
        out.push(s);
    }
    out
}

/// Walks the value `v` the types wrote beside the schema `s`: each object key must be a
/// property the schema names (or fall under a schema of `additionalProperties`), and each
/// property the schema names must be in `v` (`v` is a document with every field filled).
fn walk(
    root: &Value,
    s: &Value,
    v: &Value,
    path: &str,
    missing: &mut Vec<String>,
    unknown: &mut Vec<String>,
) {
    let alts = alternatives(root, s);
    match v {
        Value::Object(m) => {
            let objects: Vec<&Value> = alts
                .iter()
                .copied()
                .filter(|a| a.get("properties").is_some() || a.get("additionalProperties").is_some())
                .collect();
            if objects.is_empty() {
                return;
            }
            for (k, x) in m {
                let at = format!("{path}/{k}");
                let prop = objects.iter().find_map(|a| a.get("properties").and_then(|p| p.get(k)));
                let extra =
                    objects.iter().find_map(|a| a.get("additionalProperties").filter(|x| x.is_object()));
                match prop.or(extra) {
                    Some(ps) => walk(root, ps, x, &at, missing, unknown),
                    None => unknown.push(at),
                }
            }
            for a in &objects {
                for k in a.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
                    if !m.contains_key(k) {
                        missing.push(format!("{path}/{k}"));
                    }
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = alts.iter().find_map(|a| a.get("items")) {
                for (i, x) in list.iter().enumerate() {
                    walk(root, items, x, &format!("{path}[{i}]"), missing, unknown);
                }
            }
        }
        _ => {}
    }
}

/// A value of what the schema `s` requires, and nothing more.
fn required(root: &Value, s: &Value) -> Value {
    let s = alternatives(root, s)[0];
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e[0].clone();
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
        }
        _ if s.get("properties").is_some() => "object",
        _ => "null",
    };
    match ty {
        "object" => {
            let props = s.get("properties");
            let mut m = Map::new();
            for k in
                s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                let p = props.and_then(|p| p.get(k)).cloned().unwrap_or(Value::Null);
                m.insert(k.to_string(), required(root, &p));
            }
            Value::Object(m)
        }
        "array" => Value::Array(Vec::new()),
        "string" => Value::from("x"),
        "integer" => Value::from(1),
        "number" => Value::from(1.5),
        "boolean" => Value::from(false),
        _ => Value::Null,
    }
}

fn hist() -> HistogramData {
    HistogramData {
        unit: "us".into(),
        lowest: 1,
        highest: 2,
        sigfig: 3,
        encoding: "e".into(),
        data: "d".into(),
    }
}

/// A test entry with every field there is.
fn full_test() -> Test {
    full_test_of(1)
}

/// [`full_test`], its groups `depth` deep.
fn full_test_of(depth: u32) -> Test {
    let lat = Latency::default();
    let figures: BTreeMap<String, f64> = [("x".to_string(), 1.0)].into();
    Test {
        name: "GET".into(),
        command: "GET k".into(),
        requests: 1,
        nil_replies: 0,
        expired_misses: Some(0),
        array_replies: Some(10),
        array_elements: Some(100),
        nil_elements: Some(7),
        errors: [("ERR".to_string(), 1)].into(),
        duration_s: 1.0,
        rps: Some(1.0),
        latency_ms: Some(lat),
        no_request_succeeded: Some(true),
        histogram: hist(),
        bytes_sent: 1,
        bytes_received: 1,
        connections_opened: 1,
        start_us: 1,
        end_us: 2,
        last_reply_us: Some(2),
        backend: Some("mio".into()),
        target_rps: Some(1),
        rps_slack_us: Some(250),
        clients_never_ran: Some(NeverRan::default()),
        failed_clients: Some(1),
        service_latency_ms: Some(lat),
        service_histogram: Some(hist()),
        lateness: Some(Distribution { ms: lat, histogram: hist() }),
        connection_setup: Some(ConnectionSetup {
            connections: 1,
            phases: ["connect", "tls", "handshake", "total"]
                .map(|p| (p.to_string(), Phase { latency_ms: lat, histogram: hist() }))
                .into(),
        }),
        nodes: Some(vec![Node {
            address: "a:1".into(),
            role: "primary".into(),
            service_latency_ms: Some(lat),
            service_histogram: Some(hist()),
            histogram: hist(),
            errors: [("ERR".to_string(), 1)].into(),
            ..Node::default()
        }]),
        redirects: Some(respbench_core::stats::Redirects::default()),
        verify: Some(Verify { shown: vec![VerifyMismatch::default()], ..Verify::default() }),
        warnings: Some(vec![Finding { kind: "client_limited".into(), text: "t".into(), figures }]),
        abandoned_requests: Some(1),
        unsent_requests: Some(1),
        latency_lower_bounds: Some(1),
        arrivals: Some(Arrivals::default()),
        reconnects: Some(Reconnects::default()),
        retries: Some(Retries::default()),
        cursor: Some(Cursor::default()),
        address_changes: Some(vec![AddressChange::default()]),
        replay: Some(Replay {
            figures: respbench_session::replay::Figures {
                skipped: vec![Default::default()],
                malformed_lines: vec![Default::default()],
                ..Default::default()
            },
            ..Replay::default()
        }),
        series: Some(vec![SecondEntry {
            ramp_step: Some(0),
            p50_ms: Some(1.0),
            p90_ms: Some(1.0),
            p99_ms: Some(1.0),
            p999_ms: Some(1.0),
            max_ms: Some(1.0),
            upper_bounds: Some(true),
            // respbench/1's second histograms are read, never written.
            histogram: None,
            ..SecondEntry::default()
        }]),
        client_cpu: Some(ClientCpu::default()),
        server_cpu: Some(ServerCpu {
            main_thread_share: Some(0.5),
            command_share: Some(0.5),
            wait_share: Some(0.1),
            threaded: Some("4".into()),
            ..ServerCpu::default()
        }),
        step: Some(respbench_session::result::StepValues::default()),
        bottleneck: Some(Bottleneck {
            machine_cpu_busy: Some(0.5),
            client_wait_share: Some(0.1),
            ..Bottleneck::default()
        }),
        side: Some("a".into()),
        server_time: Some(ServerTime {
            measures: "m".into(),
            nodes: vec![NodeTime {
                source: Some("latency_histogram".into()),
                not_known: Some("n".into()),
                expected_calls: Some(1),
                mismatch: Some("m".into()),
                commands: vec![full_command()],
                ..NodeTime::default()
            }],
            merged: Some(vec![full_command()]),
        }),
        client_pauses: Some(ClientPauses {
            wake_ms: Some(lat),
            wake_histogram: Some(hist()),
            idle_histogram: hist(),
            series_max_ms: vec![1.0],
            series_p99_ms: vec![1.0],
            ..ClientPauses::default()
        }),
        cache_aside: Some(CacheAside {
            miss_latency_ms: Some(lat),
            miss_histogram: Some(hist()),
            ..CacheAside::default()
        }),
        tracking: Some(Tracking {
            tracking_total_keys: Some(1),
            tracking_total_items: Some(1),
            latency_ms: Some(lat),
            histogram: Some(hist()),
            ..Tracking::default()
        }),
        expiry: Some(Expiry {
            per_second: Some(1.0),
            server_expired: Some(1),
            lag_ms: Some(lat),
            histogram: Some(hist()),
            ..Expiry::default()
        }),
        delivery: Some(Delivery {
            failure: Some("closed".into()),
            latency_ms: Some(lat),
            histogram: Some(hist()),
            service_ms: Some(lat),
            service_histogram: Some(hist()),
            ..Delivery::default()
        }),
        time_split: Some(TimeSplit {
            percentiles: vec![50.0],
            corrected_ms: vec![1.0],
            send_lateness_ms: Some(vec![1.0]),
            service_ms: vec![1.0],
            server_ms: Some(vec![[0.5, 1.0]]),
            rest_ms: Some(vec![[0.0, 0.5]]),
            server_source: Some("latency_histogram".into()),
        }),
        events: Some(vec![EventEntry {
            sent_s: Some(5.0),
            replies: Some(vec![EventReply::default()]),
            exit: Some(ProgramExit { status: Some(0), ..ProgramExit::default() }),
            not_started: Some("x".into()),
            part: Some(0),
            server: vec![crate::server_window::full()],
            disruption: Some(DisruptionEntry {
                window_ms: Some(1.0),
                errors: [("ERR".to_string(), 1)].into(),
                moved_to: vec!["a:1".into()],
                windows: vec![WindowEntry::default()],
                ..DisruptionEntry::default()
            }),
            ..EventEntry::default()
        }]),
        ramp: Some(respbench_session::ramp::RampResult {
            kind: respbench_core::RampKind::Clients,
            from: 1,
            to: 1,
            step: 1,
            every_s: 1.0,
            steps: vec![respbench_session::ramp::StepResult {
                level: 1,
                clients: 1,
                target_rps: Some(1),
                verdict: Some(verdict()),
                ..Default::default()
            }],
        }),
        server_series: Some(vec![super::server_series::full_sample()]),
        server_sampling: Some(ServerSampling::default()),
        server_threads: Some(ServerThreads {
            node: Some("a:1".into()),
            busiest: Some("io_thd_1".into()),
            busiest_cores: Some(1.0),
            main_thread_cores: Some(1.0),
            other_cores: Some(1.0),
            source: Some("/proc".into()),
            ..ServerThreads::default()
        }),
        // A group is shaped as a test (the schema's reference, expanded once).
        groups: (depth > 0).then(|| vec![Test { groups: Some(Vec::new()), ..full_test_of(depth - 1) }]),
        slo: Some(super::GroupSlo {
            met: false,
            text: "missed: p99 3.10 ms > 2ms".into(),
            objectives: vec![super::GroupObjective {
                objective: super::Objective {
                    text: "p99<=2ms".into(),
                    metric: "latency".into(),
                    percentile: 99.0,
                    limit_us: 2000.0,
                },
                value_us: 3100.0,
                held: false,
            }],
        }),
    }
}

fn full_command() -> CommandTime {
    CommandTime {
        usec_per_call: Some(1.0),
        p50_us: Some([1, 2]),
        p99_us: Some([1, 2]),
        p99_9_us: Some([1, 2]),
        since_reset_us: Some([1.0, 2.0, 3.0]),
        buckets: vec![[2, 1]],
        ..CommandTime::default()
    }
}

/// A document with every field there is.
fn full_document() -> Document {
    let step = SearchStep {
        miss: Some("m".into()),
        bottleneck: Some("server".into()),
        rerun_after_pause_ms: Some(1.0),
        server: vec![crate::server_window::full()],
        test: full_test(),
        ..SearchStep::default()
    };
    Document {
        schema: "respbench/2".into(),
        tool: Tool { name: "respbench".into(), version: "0".into() },
        command_line: Some(vec!["-q".into()]),
        scenario: Some(ScenarioFile::default()),
        config: RunConfig {
            host: Some("h".into()),
            port: Some(1),
            socket: Some("/s".into()),
            user: Some("u".into()),
            pipeline_mode: Some("window".into()),
            keyspace: Some(1),
            replicas: Value::from("auto"),
            tests: Some("get".into()),
            command: Some(vec!["GET".into()]),
            timeout_ms: Some(1.0),
            rps: Some(vec![1]),
            rps_slack_us: Some(1),
            duration_s: Some(1.0),
            mix: Some(vec![MixEntry { command: "get".into(), weight: 1, keys: Some("zipf:0.99/10".into()) }]),
            expiry_range: Some("1-2".into()),
            slo: Some(Slo { range_rps: Some([1, 2]), ..Slo::default() }),
            start_at_us: Some(1),
            mptcp: Some(true),
            worker: Some(WorkerPart {
                rps: Some(vec![1]),
                keys: Some(KeyRange::default()),
                ..WorkerPart::default()
            }),
            workers: Some(2),
            sweep: Some(SweepLists::default()),
            ab: Some("h:2".into()),
            ..RunConfig::default()
        },
        server: Server {
            save: Some("".into()),
            appendonly: Some("no".into()),
            name: Some("redis".into()),
            version: Some("7".into()),
            mode: Some("standalone".into()),
            tls_name_checked: Some(true),
        },
        interrupted: false,
        tests: vec![full_test()],
        warnings: Some(vec![Notice { kind: "notice".into(), text: "t".into() }]),
        late_by_s: Some(0.0),
        capacity: Some(vec![Search {
            objectives: vec![Objective::default()],
            ceiling_rps: Some(1.0),
            answer: Some(Answer { above_step: Some(1), above_rps: Some(2), ..Answer::default() }),
            unreachable: Some(Unreachable::default()),
            client_ceiling: Some(verdict()),
            steps: vec![step],
            probe: Some(full_test()),
            ..Search::default()
        }]),
        merged_from: Some(vec!["a.json".into()]),
        mixture: Some(vec!["m".into()]),
        server_b: Some(Server::default()),
        comparison: Some(Comparison {
            a: ComparedSide { address: Some("h:1".into()), ..ComparedSide::default() },
            fail_if_slower: Some(0.05),
            forced: Some(vec!["f".into()]),
            memory: vec![crate::dataset_compare::ComparedMemory::default()],
            tests: vec![ComparedTest {
                backend: Some("mio".into()),
                target_rps: Some(1),
                step: Some(respbench_session::result::StepValues::default()),
                left_out: Some("l".into()),
                forced: Some("f".into()),
                figures: vec![ComparedFigure {
                    more_repeats: Some(3),
                    gate: Some("pass".into()),
                    ..ComparedFigure::default()
                }],
                ..ComparedTest::default()
            }],
            ..Comparison::default()
        }),
        dataset: Some(crate::dataset::Dataset {
            bytes_per_key: Some(1.0),
            shapes: vec![crate::dataset::DatasetShape {
                dbsize_growth: Some(1),
                encodings: vec![crate::dataset::Encoding::default()],
                bytes_per_key: Some(1.0),
                bytes_per_element: Some(1.0),
                fragmentation: Some(1.0),
                before: Some(crate::dataset::Point::default()),
                growth: vec![crate::dataset::Point { bytes_per_key: Some(1.0), ..Default::default() }],
                ..Default::default()
            }],
        }),
    }
}

#[test]
fn the_schema_and_the_types_name_the_same_fields() {
    let root = schema();
    let v = serde_json::to_value(full_document()).unwrap();
    let (mut missing, mut unknown) = (Vec::new(), Vec::new());
    walk(&root, &root, &v, "", &mut missing, &mut unknown);
    assert!(unknown.is_empty(), "fields the types write that the schema does not describe: {unknown:?}");
    assert!(missing.is_empty(), "fields the schema describes that the types never write: {missing:?}");
}

#[test]
fn a_document_of_what_the_schema_requires_reads_back() {
    let root = schema();
    let minimal = required(&root, &root);
    let doc: Document = serde_json::from_value(minimal.clone())
        .unwrap_or_else(|e| panic!("{e}: a document the schema allows does not read: {minimal:#}"));
    assert_eq!(doc.schema, minimal["schema"].as_str().unwrap());
    // With a test of what the schema requires of one.
    let mut with_test = minimal.clone();
    with_test["tests"] = Value::Array(vec![required(&root, &root["$defs"]["test"])]);
    let doc: Document = serde_json::from_value(with_test.clone())
        .unwrap_or_else(|e| panic!("{e}: a test the schema allows does not read: {with_test:#}"));
    assert_eq!(doc.tests.len(), 1);
    // And the full document reads back as it was written.
    let full = full_document();
    let back: Document = serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
    assert_eq!(back, full);
}

/// A verdict as the document holds it (its side and text; the shares are the bottleneck's).
fn verdict() -> respbench_session::verdict::Verdict {
    respbench_session::verdict::Verdict {
        side: respbench_session::verdict::Side::Server,
        text: "t".into(),
        machine: None,
        client_wait: None,
    }
}
