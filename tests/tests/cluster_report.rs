//! The per-node figures of a `--cluster` run against a real three-primary cluster: the nodes of
//! the `--json` document add up to the test, each agrees with its server's own count of the
//! command (`INFO commandstats`), the load follows the slots, a stable cluster sends no
//! redirects, and the verbose report has a row per node. `respbench merge` of two runs' documents
//! keeps the nodes. Both checks read counts only: they run in turn on one cluster, each counting
//! its own run's calls.

use std::time::Duration;

use respbench_tests::cluster::Cluster;
use respbench_tests::{json_path, respbench, respbench_on, take_document, RedisServer, Tool};
use serde_json::Value;

/// What each node has executed of `command` so far.
fn calls(nodes: &[RedisServer], command: &str) -> Vec<u64> {
    nodes.iter().map(|n| n.command_calls(command)).collect()
}

/// One cluster (3 primaries) for both report checks; respbench on mio (the report is the
/// command line's).
#[test]
fn reports_of_one_cluster() {
    let cluster = Cluster::start(3, 0);
    per_node_figures_add_up(respbench_on("mio"), &cluster);
    merged_documents_keep_the_nodes(&cluster);
}

fn per_node_figures_add_up(tool: Tool, cluster: &Cluster) {
    let nodes = &cluster.nodes;
    let ports: Vec<u16> = nodes.iter().map(RedisServer::port).collect();
    let before = [calls(nodes, "set"), calls(nodes, "get")];
    let path = json_path("cluster-report", "nodes");
    let out = tool.run(
        &[
            "-p",
            &ports[0].to_string(),
            "--cluster",
            "-t",
            "set,get",
            "-n",
            "30000",
            "-r",
            "10000",
            "--json",
            path.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{}", out.dump());
    let doc: Value = serde_json::from_str(&take_document(&path)).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{doc}");
    for ((t, command), before) in tests.iter().zip(["set", "get"]).zip(&before) {
        let name = t["name"].as_str().unwrap();
        let total = t["requests"].as_u64().unwrap();
        assert_eq!(total, 30000, "{name}");
        let entries = t["nodes"].as_array().unwrap_or_else(|| panic!("{name}: no nodes: {t}"));
        assert_eq!(entries.len(), 3, "{name}: {entries:?}");
        let mut sum = 0;
        for port in &ports {
            let address = format!("127.0.0.1:{port}");
            let n = entries
                .iter()
                .find(|n| n["address"] == address.as_str())
                .unwrap_or_else(|| panic!("{name}: no node {address} in {entries:?}"));
            assert_eq!(n["role"], "primary");
            let requests = n["requests"].as_u64().unwrap();
            sum += requests;
            // ~1/3 of the slots each: a third of the keys, give or take.
            let share = requests as f64 / total as f64;
            assert!((0.25..=0.42).contains(&share), "{name}: {address} served {share:.3} of the requests");
            let slots = n["slots"].as_u64().unwrap();
            assert!((5000..=5600).contains(&slots), "{name}: {address} has {slots} slots");
            assert_eq!(n["redirects"]["moved"], 0, "{name}: {address}");
            assert_eq!(n["errors"], serde_json::json!({}), "{name}: {address}");
        }
        assert_eq!(sum, total, "{name}: the nodes' requests add up to the test's");
        for (kind, count) in t["redirects"].as_object().unwrap() {
            assert_eq!(count, 0, "{name}: {kind} redirects in a stable cluster");
        }
        // Each node's count is its server's own: the requests it answered, no more, no fewer.
        for ((s, port), before) in nodes.iter().zip(&ports).zip(before) {
            let address = format!("127.0.0.1:{port}");
            let n = entries.iter().find(|n| n["address"] == address.as_str()).unwrap();
            let served = s.command_calls(command) - before;
            assert_eq!(n["requests"].as_u64().unwrap(), served, "{name}: {address}");
        }
    }
    // The verbose report: a row per node after each test's summary, and the redirects line.
    for block in out.stdout.split("====== ").skip(1) {
        let table: Vec<&str> = block
            .lines()
            .skip_while(|l| !l.starts_with("  nodes (requests by the node that answered them):"))
            .collect();
        assert!(table.len() >= 6, "no node table:\n{block}");
        for port in &ports {
            let row = table
                .iter()
                .find(|l| l.trim_start().starts_with(&format!("127.0.0.1:{port} ")))
                .unwrap_or_else(|| panic!("no row for port {port}:\n{block}"));
            assert!(row.contains(" primary "), "{row}");
        }
        assert!(
            table.contains(
                &"  redirects: 0 moved, 0 ask, 0 tryagain, 0 clusterdown (not counted as requests)"
            ),
            "{block}"
        );
    }
}

/// Two load machines' documents (each found the cluster from another node) merge into one whose
/// nodes hold both runs' requests: the servers' own counts.
fn merged_documents_keep_the_nodes(cluster: &Cluster) {
    let nodes = &cluster.nodes;
    let ports: Vec<u16> = nodes.iter().map(RedisServer::port).collect();
    let before = calls(nodes, "set");
    let tool = respbench_on("mio");
    let paths = [json_path("cluster-report", "a"), json_path("cluster-report", "b")];
    for (path, port) in paths.iter().zip([ports[0], ports[2]]) {
        let args = ["-p", &port.to_string(), "--cluster", "-t", "set", "-n", "9000", "-r", "10000", "-q"];
        let out =
            tool.run(&[&args[..], &["--json", path.to_str().unwrap()]].concat(), Duration::from_secs(120));
        assert!(out.status.success(), "{}", out.dump());
    }
    let merged = json_path("cluster-report", "merged");
    let (a, b, m) = (paths[0].to_str().unwrap(), paths[1].to_str().unwrap(), merged.to_str().unwrap());
    let out = respbench().run(&["merge", a, b, "--json", m], Duration::from_secs(60));
    assert!(out.status.success(), "{}", out.dump());
    for p in &paths {
        let _ = std::fs::remove_file(p);
    }
    let doc: Value = serde_json::from_str(&take_document(&merged)).unwrap();
    let t = &doc["tests"][0];
    assert_eq!(t["requests"], 18000, "{t}");
    let entries = t["nodes"].as_array().unwrap_or_else(|| panic!("no nodes: {t}"));
    assert_eq!(entries.len(), 3, "{entries:?}");
    for ((s, port), before) in nodes.iter().zip(&ports).zip(&before) {
        let address = format!("127.0.0.1:{port}");
        let n = entries
            .iter()
            .find(|n| n["address"] == address.as_str())
            .unwrap_or_else(|| panic!("no node {address} in {entries:?}"));
        assert_eq!(n["requests"].as_u64().unwrap(), s.command_calls("set") - before, "{address}");
    }
    assert_eq!(t["redirects"]["moved"], 0);
}
