//! `respbench merge` and `respbench plot` on hostile result files (issue #35), end to end: counts
//! that overflow, histograms that do not hold what their counts say, and a histogram whose
//! encoding declares 2^31 - 1 bytes in a file of kilobytes (under a 1 GiB address-space limit,
//! where it allocated 2.1 GB and aborted before). Each is refused with the file and the test
//! named, status 1, never a panic, an abort or a wrapped sum.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use respbench_tests::{respbench, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

extern "C" {
    fn setrlimit(resource: i32, limit: *const [u64; 2]) -> i32;
}
const RLIMIT_AS: i32 = 9;

/// The child's address space cannot pass 1 GiB.
fn limit_memory() -> std::io::Result<()> {
    const GIB: u64 = 1 << 30;
    // SAFETY: a plain system call on this (child) process.
    if unsafe { setrlimit(RLIMIT_AS, &[GIB, GIB]) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn dir() -> respbench_tests::Scratch {
    respbench_tests::Scratch::new("respbench-hostile")
}

/// A histogram of `count` values of 100 µs, encoded as respbench writes them (V2 deflate,
/// base64), by Python's standard library: the header, the payload of one count, zlib.
fn histogram_of(count: u64, payload_len: Option<u32>) -> String {
    let script = r#"
import base64, struct, sys, zlib
count, forced = int(sys.argv[1]), sys.argv[2]
def leb(n):
    out = b''
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
zz = lambda v: (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1
# Value 100 at 3 significant figures sits at counts index 100: 100 zeros, then the count.
payload = leb(zz(-100)) + leb(zz(count))
length = len(payload) if forced == '-' else int(forced)
inner = struct.pack('>IIIIqqd', 0x1c849313, length, 0, 3, 1, 3600000000, 1.0) + payload
z = zlib.compress(inner)
print(base64.b64encode(struct.pack('>II', 0x1c849314, len(z)) + z).decode())
"#;
    let forced = payload_len.map_or("-".to_string(), |n| n.to_string());
    let out = Command::new("python3").args(["-c", script, &count.to_string(), &forced]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write(path: &Path, doc: &Value) -> String {
    std::fs::write(path, serde_json::to_string(doc).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn hostile_result_files_are_refused_with_the_file_named() {
    let server = RedisServer::start();
    let d = dir();
    let real = d.join("real.json");
    let out = respbench().run(
        &[
            "-p",
            &server.port().to_string(),
            "-t",
            "get",
            "-n",
            "2000",
            "-q",
            "--json",
            real.to_str().unwrap(),
        ],
        T,
    );
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    let real = real.to_string_lossy().into_owned();
    let tool = Tool { pre_exec: Some(limit_memory), ..respbench() };

    // Counts whose sum does not fit: two tests of 2^63 - 1 requests (histograms that hold as
    // many) and the real run's 2,000.
    let mut huge = doc.clone();
    huge["tests"][0]["requests"] = (i64::MAX as u64).into();
    huge["tests"][0]["histogram"]["data"] = histogram_of(i64::MAX as u64, None).into();
    let (a, b) = (write(&d.join("huge-a.json"), &huge), write(&d.join("huge-b.json"), &huge));
    let out = tool.run(&["merge", &a, &b, &real, "--force"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!("{real}: test 'GET': requests: the sum overflows")),
        "{}",
        out.dump()
    );
    assert!(!out.stdout.contains("requests per second"), "a sum was printed:\n{}", out.dump());

    // A histogram of 2^62 values in a test of 2,000 requests.
    let mut lie = doc.clone();
    lie["tests"][0]["histogram"]["data"] = histogram_of(1 << 62, None).into();
    let lie = write(&d.join("lie.json"), &lie);
    for args in [vec!["merge", &real, &lie], vec!["plot", &lie, "-o", "/dev/null"]] {
        let out = tool.run(&args, T);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains("lie.json"), "{args:?}: the file is named\n{}", out.dump());
        assert!(
            out.stderr.contains("'GET': its histogram holds 4611686018427387904 values where"),
            "{args:?}: {}",
            out.dump()
        );
    }

    // A payload length of 2^31 - 1 in a histogram of a few bytes, under the memory limit.
    let mut long = doc.clone();
    long["tests"][0]["histogram"]["data"] = histogram_of(2000, Some(0x7fff_ffff)).into();
    let long = write(&d.join("long.json"), &long);
    assert!(std::fs::metadata(&long).unwrap().len() < 20_000);
    for args in [vec!["merge", &real, &long], vec!["plot", &long, "-o", "/dev/null"]] {
        let out = tool.run(&args, T);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains("long.json"), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains("it says 2147483647 payload bytes for"), "{args:?}: {}", out.dump());
        assert!(
            !out.stderr.contains("panicked") && !out.stderr.contains("memory allocation"),
            "{}",
            out.dump()
        );
    }
    // The crafted encoding is a real one when its length is true: the check is of the length.
    let mut fine = doc.clone();
    fine["tests"][0]["histogram"]["data"] = histogram_of(2000, None).into();
    let fine = write(&d.join("fine.json"), &fine);
    let out = tool.run(&["merge", &real, &fine], T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
}

/// `respbench merge` holds one merged test at a time (issue #56 item 5: a document of 2,000
/// tests took 1.9 GB, about 1 MB a test): a real run's test entry repeated under 2,000 names,
/// two such documents merge under 200 MB of peak RSS (wait4's, as /usr/bin/time reports it),
/// and one of 20,000 tests merges under the same bound, with every test there.
#[test]
fn merge_memory_does_not_grow_with_the_tests() {
    let server = RedisServer::start();
    let d = dir();
    let real = d.join("real.json");
    let port = server.port().to_string();
    let out =
        respbench().run(&["-p", &port, "-t", "get", "-n", "2000", "-q", "--json", real.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    let many = |n: usize| {
        let mut m = doc.clone();
        let names = (0..n).map(|i| {
            let mut t = doc["tests"][0].clone();
            t["name"] = format!("GET {i}").into();
            t
        });
        m["tests"] = names.collect();
        write(&d.join(format!("tests-{n}.json")), &m)
    };
    let bin = respbench().path.to_string_lossy().into_owned();
    let timed = Tool {
        path: "/usr/bin/time".into(),
        pre_args: vec!["-f".into(), "peak %M kB".into(), bin],
        ..respbench()
    };
    let merged = d.join("merged.json");
    let merged_str = merged.to_str().unwrap();
    // Generous: a debug build on a busy machine reads 20,000 tests in minutes.
    let slow = Duration::from_secs(900);
    let mut peaks = Vec::new();
    for (inputs, tests) in [(vec![many(2000), many(2000)], 2000), (vec![many(20_000)], 20_000)] {
        let mut args = vec!["merge".to_string()];
        args.extend(inputs);
        args.extend(["--json".to_string(), merged_str.to_string()]);
        let out = timed.run(&args, slow);
        assert_eq!(out.status.code(), Some(0), "{}", out.dump());
        let peak_kb: u64 = out
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("peak ")?.strip_suffix(" kB")?.parse().ok())
            .unwrap_or_else(|| panic!("no peak in {}", out.dump()));
        let m: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
        let got = m["tests"].as_array().unwrap();
        assert_eq!(got.len(), tests);
        let each = doc["tests"][0]["requests"].as_u64().unwrap() * (if tests == 2000 { 2 } else { 1 });
        assert_eq!(got[tests - 1]["name"], format!("GET {}", tests - 1));
        assert_eq!(got[tests - 1]["requests"], each);
        assert_eq!(out.stdout.lines().count(), tests, "{}", out.dump());
        peaks.push(peak_kb);
    }
    eprintln!(
        "peak RSS: {} kB for two documents of 2,000 tests, {} kB for one of 20,000",
        peaks[0], peaks[1]
    );
    assert!(peaks[0] < 200 * 1024, "two documents of 2,000 tests merged in {} kB", peaks[0]);
    assert!(peaks[1] < 200 * 1024, "a document of 20,000 tests merged in {} kB", peaks[1]);
}
