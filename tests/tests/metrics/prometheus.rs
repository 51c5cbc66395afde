//! A real Prometheus (Debian's `prometheus` package, `scripts/ensure-prometheus`) started by a
//! test on a free loopback port with its own config and storage, scraping given targets every
//! second; its HTTP query API; and a plain HTTP GET for the tests' own requests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use respbench_tests::{free_port, wait_until};

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// A `prometheus` child process, killed and its directory removed on drop.
pub struct Prometheus {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// One HTTP response: its status, headers (as sent) and body.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The header block, lines as sent.
    pub head: String,
    /// The body.
    pub body: Vec<u8>,
}

/// `GET path` from `127.0.0.1:port` over HTTP/1.0 (so no chunked body), with `headers` added;
/// the whole response, read to the close. `None` when the connection fails.
pub fn http_get(port: u16, path: &str, headers: &[&str]) -> Option<Response> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{extra}\r\n").as_bytes()).ok()?;
    let mut all = Vec::new();
    s.read_to_end(&mut all).ok()?;
    let end = all.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some(Response { status, head, body: all[end + 4..].to_vec() })
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Prometheus {
    /// Starts Prometheus scraping each of `jobs` (a job name and its `127.0.0.1` ports) every
    /// second, and waits until it is ready.
    pub fn start(jobs: &[(&str, &[u16])]) -> Prometheus {
        assert!(
            std::path::Path::new(PROMETHEUS).is_file(),
            "prometheus not found: install Debian's prometheus package (scripts/ensure-prometheus)"
        );
        let dir = std::env::temp_dir().join(format!("respbench-prom-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).expect("prometheus' directory");
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for (job, ports) in jobs {
            let targets: Vec<String> = ports.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
            config += &format!(
                "  - job_name: '{job}'\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            );
        }
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("writing prometheus.yml");
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("prometheus.log");
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {PROMETHEUS}: {e}"));
        let p = Prometheus { child, port, dir };
        wait_until("prometheus ready", Duration::from_secs(60), || {
            http_get(port, "/-/ready", &[]).is_some_and(|r| r.status == 200)
        });
        // Its scrape loops start seconds after it is ready (targets are applied every 5 s): a
        // run begins once every target has been tried (`up` 0 until it listens).
        let targets: usize = jobs.iter().map(|(_, ports)| ports.len()).sum();
        wait_until("prometheus' first scrapes", Duration::from_secs(60), || {
            p.scalar("count(up)", None) == Some(targets as f64)
        });
        p
    }

    /// Its log so far (for assertion messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query at `time` (Unix seconds), or now: the result's `data.result` array.
    pub fn query(&self, expr: &str, time: Option<f64>) -> serde_json::Value {
        let mut path = format!("/api/v1/query?query={}", encode(expr));
        if let Some(t) = time {
            path += &format!("&time={t:.3}");
        }
        let r = http_get(self.port, &path, &[]).unwrap_or_else(|| panic!("querying {expr}: no answer"));
        let v: serde_json::Value =
            serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{expr}: {e}: {:?}", r));
        assert_eq!(v["status"], "success", "{expr}: {v}");
        v["data"]["result"].clone()
    }

    /// The one value of an instant query's vector (`None` for an empty one; panics on several).
    pub fn scalar(&self, expr: &str, time: Option<f64>) -> Option<f64> {
        let r = self.query(expr, time);
        let list = r.as_array().unwrap_or_else(|| panic!("{expr}: {r}"));
        assert!(list.len() <= 1, "{expr}: several series: {r}");
        list.first().map(|s| s["value"][1].as_str().and_then(|v| v.parse().ok()).expect("a value"))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
