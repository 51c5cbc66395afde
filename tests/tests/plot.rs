//! `respbench plot` on real results: runs against a real redis-server write `--json` documents,
//! `respbench plot` draws them, and real renderers draw the output: `rsvg-convert` (Debian's
//! librsvg2-bin) for the SVG and for each chart of the HTML report, headless Chromium for the
//! report as a page. Each picture is decoded and checked to hold the lines' colours, and the
//! SVG text to hold the axis titles and series labels.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use respbench_tests::{json_path, respbench, Output, RedisServer};

const T: Duration = Duration::from_secs(60);

/// The first three line colours of respbench's palette.
const BLUE: [u8; 3] = [0x1f, 0x77, 0xb4];
const ORANGE: [u8; 3] = [0xff, 0x7f, 0x0e];
const GREEN: [u8; 3] = [0x2c, 0xa0, 0x2c];

/// Runs respbench against `server` with `args` and `--json`, and returns the document's path.
fn results(server: &RedisServer, tag: &str, args: &[&str]) -> PathBuf {
    let json = json_path("plot", tag);
    let mut a: Vec<String> = vec!["-p".into(), server.port().to_string(), "-q".into()];
    a.extend(args.iter().map(|s| s.to_string()));
    a.extend(["--json".into(), json.to_string_lossy().into_owned()]);
    let out = respbench().run(&a, T);
    assert!(out.status.success(), "{}", out.dump());
    json
}

fn plot<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    let mut a: Vec<std::ffi::OsString> = vec!["plot".into()];
    a.extend(args.iter().map(|s| s.as_ref().to_owned()));
    respbench().run(&a, T)
}

fn plot_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) {
    let out = plot(args);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", out.dump());
}

fn tmp(name: &str) -> PathBuf {
    let p = json_path("plot", name);
    p.with_extension(Path::new(name).extension().unwrap_or_default())
}

/// Runs a renderer under a hard timeout; panics with what it printed when it fails.
fn render(program: &str, args: &[&str], hint: &str) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}: {hint}"));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
            assert!(status.success(), "{program} {args:?}: {status}\n{err}");
            return;
        }
        if start.elapsed() > T {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not finish within {T:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Draws an SVG file into a PNG with rsvg-convert.
fn rsvg(svg: &Path) -> PathBuf {
    let png = svg.with_extension("png");
    render(
        "rsvg-convert",
        &[svg.to_str().unwrap(), "-o", png.to_str().unwrap()],
        "install Debian's librsvg2-bin (apt-get install librsvg2-bin)",
    );
    png
}

/// A decoded picture: width, height and RGBA pixels (transparent ones count as white, the page).
struct Picture {
    width: u32,
    height: u32,
    rgb: Vec<[u8; 3]>,
}

fn decode(png: &Path) -> Picture {
    let file = std::fs::File::open(png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let rgb = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| {
            let (c, a) = match channels {
                1 => ([p[0]; 3], 255),
                2 => ([p[0]; 3], p[1]),
                3 => ([p[0], p[1], p[2]], 255),
                _ => ([p[0], p[1], p[2]], p[3]),
            };
            // Composite over white.
            c.map(|v| ((u32::from(v) * u32::from(a) + 255 * (255 - u32::from(a))) / 255) as u8)
        })
        .collect();
    Picture { width: info.width, height: info.height, rgb }
}

impl Picture {
    /// The share of pixels that are not white.
    fn ink(&self) -> f64 {
        let inked = self.rgb.iter().filter(|p| p.iter().any(|&v| v < 235)).count();
        inked as f64 / self.rgb.len() as f64
    }

    /// How many pixels are close to `color`.
    fn count(&self, color: [u8; 3]) -> usize {
        self.rgb.iter().filter(|p| p.iter().zip(color).all(|(&a, b)| a.abs_diff(b) <= 24)).count()
    }

    /// Checks that the picture is drawn: a plausible size, ink beyond axes and text, and each of
    /// `colors` (lines of those colours) in more than a few pixels.
    fn assert_drawn(&self, what: &str, colors: &[[u8; 3]]) {
        assert!(self.width >= 400 && self.height >= 300, "{what}: {}x{}", self.width, self.height);
        let ink = self.ink();
        assert!(ink > 0.02, "{what}: only {:.2}% of the pixels are drawn", ink * 100.0);
        for &c in colors {
            let n = self.count(c);
            assert!(n > 150, "{what}: {n} pixels of colour {c:?}");
        }
    }
}

/// The picture checks themselves: a chart frame with text but no line is not "drawn".
#[test]
fn the_checks_see_an_empty_chart() {
    let svg = tmp("empty-chart.svg");
    std::fs::write(
        &svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="800" height="400">
<rect width="100%" height="100%" fill="white"/>
<rect x="78" y="40" width="620" height="330" fill="none" stroke="#444"/>
<text x="78" y="24" font-size="14" font-family="sans-serif">Latency by percentile</text>
</svg>"##,
    )
    .unwrap();
    let pic = decode(&rsvg(&svg));
    assert!(pic.ink() < 0.02, "{}", pic.ink());
    assert_eq!(pic.count(BLUE), 0);
    let _ = std::fs::remove_file(svg.with_extension("png"));
    let _ = std::fs::remove_file(&svg);
}

/// Closed loop, two tests: the percentile chart alone (no series, no rates, one input); the SVG
/// renders with both lines and carries its titles and labels.
#[test]
fn percentile_chart_of_one_run() {
    let server = RedisServer::start();
    let json = results(&server, "closed", &["-t", "set,get", "-n", "20000"]);
    let svg = tmp("percentiles.svg");
    plot_ok(&[json.as_os_str(), "-o".as_ref(), svg.as_os_str()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    for want in
        ["Latency by percentile", ">percentile<", ">latency (ms)<", ">SET<", ">GET<", ">90%<", ">99.9%<"]
    {
        assert!(text.contains(want), "{want} is missing from\n{text}");
    }
    // One input: labels carry no file name; no other chart applies.
    assert!(!text.contains(".json: "), "{text}");
    // Under the chart, what was measured around it: the command line, the server, the date, the
    // backend, and each test's verdict and client CPU.
    let args = format!("respbench -p {} -q -t set,get -n 20000 --json {}", server.port(), json.display());
    for want in [args.as_str(), "server redis ", " standalone", "backend mio", "SET: ", "µs/request"] {
        assert!(text.contains(want), "{want} is missing from\n{text}");
    }
    assert!(!text.contains("Open loop") && !text.contains("second by second"), "{text}");
    assert_eq!(text.matches("<svg").count(), 2, "one chart in one document");
    let pic = decode(&rsvg(&svg));
    pic.assert_drawn("percentile chart", &[BLUE, ORANGE]);
    // `-o -` writes the same SVG to stdout.
    let out = plot(&[json.as_os_str(), "-o".as_ref(), "-".as_ref()]);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stdout, text);
    for p in [&json, &svg] {
        let _ = std::fs::remove_file(p);
    }
}

/// Every kind of chart from real results: an open-loop run at three rates (with a series), and
/// closed-loop runs at three -c. The SVG holds every chart's titles and labels and renders; the
/// HTML report is self-contained, has the table and the charts, and renders in Chromium and, chart
/// by chart, in rsvg-convert.
#[test]
fn every_chart_and_the_html_report() {
    let server = RedisServer::start();
    let ol =
        results(&server, "rates", &["-t", "get", "-c", "10", "--rps", "1000,2000,4000", "--duration", "2s"]);
    let sweep: Vec<PathBuf> = ["4", "16", "64"]
        .iter()
        .map(|c| results(&server, &format!("c{c}"), &["-t", "set,get", "-n", "10000", "-c", c]))
        .collect();
    let mut inputs: Vec<&std::ffi::OsStr> = vec![ol.as_os_str()];
    inputs.extend(sweep.iter().map(|p| p.as_os_str()));

    let svg = tmp("all.svg");
    let mut args = inputs.clone();
    args.extend(["-o".as_ref(), svg.as_os_str()]);
    plot_ok(&args);
    let text = std::fs::read_to_string(&svg).unwrap();
    let file = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let wants = [
        "Latency by percentile".to_string(),
        "Open loop: latency against target rate".into(),
        ">target rate (requests per second)<".into(),
        "Open loop: achieved rate against target rate".into(),
        "Open loop: corrected latency (from the intended send) and service time (from the actual send)"
            .into(),
        "GET @ 1000 rps service<".into(),
        "Requests per second, second by second".into(),
        "p99 latency, second by second".into(),
        ">time from the test&#39;s start (s)<".into(),
        "Requests per second against connections".into(),
        "p99 latency against connections".into(),
        ">connections (-c)<".into(),
        // Several inputs: percentile lines are named FILE: TEST.
        format!(">{}: GET @ 2000 rps<", file(&ol)),
        format!(">{}: SET<", file(&sweep[1])),
        // The rate chart's lines, and the sweep's, one per test.
        ">GET p99<".into(),
        ">GET service p99<".into(),
        ">SET<".into(),
        // The sweep's x ticks are its steps.
        ">16<".into(),
        ">64<".into(),
    ];
    for want in &wants {
        assert!(text.contains(want.as_str()), "{want} is missing from\n{text}");
    }
    // Eight charts of the client and, under its series, the server panel's four (#51).
    assert_eq!(text.matches("<svg").count(), 1 + 8 + 4, "twelve charts stacked in one document");
    assert!(text.contains("Server: commands per second (INFO), second by second"), "{text}");
    decode(&rsvg(&svg)).assert_drawn("all charts", &[BLUE, ORANGE, GREEN]);

    // --charts picks charts; a chart the results cannot give is an error.
    let only = tmp("sweep.svg");
    let mut args = inputs.clone();
    args.extend(["--charts".as_ref(), "sweep".as_ref(), "-o".as_ref(), only.as_os_str()]);
    plot_ok(&args);
    let text = std::fs::read_to_string(&only).unwrap();
    assert_eq!(text.matches("<svg").count(), 1 + 2, "{text}");
    decode(&rsvg(&only)).assert_drawn("sweep charts", &[BLUE, ORANGE]);

    let html = tmp("report.html");
    let mut args = inputs.clone();
    args.extend(["-o".as_ref(), html.as_os_str()]);
    plot_ok(&args);
    let page = std::fs::read_to_string(&html).unwrap();
    self_contained(&page);
    // The summary table: a row per test of every input (3 rates, 2 tests × 3 runs).
    assert!(page.contains("<table>") && page.contains("<th>p99</th>"), "{page}");
    assert_eq!(page.matches("<tr").count(), 1 + 3 + 6, "{page}");
    // What ran, and each test's verdict and client CPU.
    for want in [
        "<h2>What ran</h2>",
        "command: <code>respbench -p ",
        "server: redis ",
        "<th>limited by</th>",
        "<th>client µs/req</th>",
    ] {
        assert!(page.contains(want), "{want} is missing from the report");
    }
    assert!(page.contains(&format!("<td>{}</td>", file(&sweep[2]))), "{page}");
    // The charts, inline.
    let charts = inline_svgs(&page);
    assert_eq!(charts.len(), 8 + 4);
    for (i, c) in charts.iter().enumerate() {
        let path = tmp(&format!("chart{i}.svg"));
        std::fs::write(&path, c).unwrap();
        if c.contains("connected clients") {
            // A gauge read once a second: a test of a second or two may have a single reading,
            // drawn as a point (a line needs two).
            decode(&rsvg(&path)).assert_drawn(&format!("HTML chart {i}"), &[]);
            assert!(c.contains(r##"fill="#1f77b4""##) || c.contains(r##"stroke="#1f77b4""##), "{c}");
        } else {
            decode(&rsvg(&path)).assert_drawn(&format!("HTML chart {i}"), &[BLUE]);
        }
        let _ = std::fs::remove_file(path.with_extension("png"));
        let _ = std::fs::remove_file(&path);
    }
    let shot = chromium(&html);
    let pic = decode(&shot);
    pic.assert_drawn("the report in Chromium", &[BLUE, ORANGE, GREEN]);

    for p in [&ol, &svg, &only, &html, &shot].into_iter().chain(&sweep) {
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_file(p.with_extension("png"));
    }
}

/// The new charts from real results: `--repeat 3` (means with the runs' spread), `--backend
/// mio,smol,uring` (bars of requests per second and client CPU per request side by side) and an
/// open loop's corrected and service percentiles on one chart. Each renders with its colours,
/// and the page carries the run's context once; a test the verdict says was not server-limited is
/// ringed in red and named in red.
#[test]
fn repeats_backends_and_service_charts() {
    let server = RedisServer::start();
    let rep = results(&server, "repeat", &["-t", "set,get", "-n", "5000", "--repeat", "3"]);
    let be = results(&server, "backends", &["-t", "set,get", "-n", "10000", "--backend", "mio,smol,uring"]);
    let ol = results(&server, "service", &["-t", "get", "-c", "4", "--rps", "2000", "--duration", "2s"]);
    let draw = |input: &Path, charts: &str, name: &str, wants: &[&str], colors: &[[u8; 3]]| {
        let svg = tmp(name);
        plot_ok(&[input.as_os_str(), "--charts".as_ref(), charts.as_ref(), "-o".as_ref(), svg.as_os_str()]);
        let text = std::fs::read_to_string(&svg).unwrap();
        for want in wants.iter().chain(&["standalone", "respbench -p ", "µs/request"]) {
            assert!(text.contains(want), "{want} is missing from\n{text}");
        }
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(input).unwrap()).unwrap();
        let flagged =
            doc["tests"].as_array().unwrap().iter().filter(|t| t["bottleneck"]["side"] != "server").count();
        // Every test not limited by the server is named so, in red, once on the page (under its
        // last chart: every chart shares the notes).
        let red_notes = text.matches(r##"fill="#b00020">"##).count();
        assert_eq!(red_notes, flagged, "{text}");
        let pic = decode(&rsvg(&svg));
        pic.assert_drawn(name, colors);
        for p in [&svg, &svg.with_extension("png")] {
            let _ = std::fs::remove_file(p);
        }
        text
    };
    let text = draw(
        &rep,
        "repeat",
        "repeat.svg",
        &[
            "Requests per second: mean of 3 runs with lowest and highest (--repeat)",
            "p99 latency: mean of 3 runs",
            ">SET<",
            ">GET<",
        ],
        &[BLUE],
    );
    // A spread bar per step on each chart.
    assert_eq!(text.matches("<path d=\"M").count(), 2 * 2, "{text}");
    let text = draw(
        &be,
        "backends",
        "backends.svg",
        &[
            "Requests per second by backend",
            "Client CPU per request by backend",
            ">mio<",
            ">smol<",
            ">uring<",
        ],
        &[BLUE, ORANGE, GREEN],
    );
    // Two tests × three backends, on two charts.
    assert_eq!(
        text.matches("<rect x=").count() - text.matches(r#"height="10""#).count(),
        2 * 2 * 3 + 2 * 2,
        "{text}"
    );
    draw(
        &ol,
        "service",
        "service.svg",
        &[
            "Open loop: corrected latency (from the intended send) and service time (from the actual send)",
            ">GET @ 2000 rps corrected<",
            ">GET @ 2000 rps service<",
        ],
        &[BLUE],
    );
    for p in [&rep, &be, &ol] {
        let _ = std::fs::remove_file(p);
    }
}

/// The page loads nothing: no URL, no script, no external stylesheet, font or image.
fn self_contained(page: &str) {
    let lower = page.to_ascii_lowercase();
    for bad in
        ["http://", "https://", "//", "src=", "<script", "<link", "@import", "<img", "<object", "<iframe"]
    {
        let hit = if bad == "//" {
            // A protocol-relative URL; "//" inside text would do no harm, but none is written.
            lower.contains("\"//") || lower.contains("'//") || lower.contains("(//")
        } else {
            lower.contains(bad)
        };
        assert!(!hit, "the report contains {bad}");
    }
    // url(…) only for the charts' own clip paths.
    for (at, _) in lower.match_indices("url(") {
        assert!(lower[at + 4..].starts_with('#'), "the report refers outside: {}", &page[at..at + 40]);
    }
}

/// Each `<svg>…</svg>` of the page as a standalone SVG file's text.
fn inline_svgs(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("an unclosed <svg>") + start + "</svg>".len();
        let svg = &rest[start..end];
        out.push(svg.replacen("<svg", r#"<svg xmlns="http://www.w3.org/2000/svg""#, 1));
        rest = &rest[end..];
    }
    out
}

/// A screenshot of the page in headless Chromium, with no network.
fn chromium(html: &Path) -> PathBuf {
    let shot = html.with_extension("png");
    let profile = tmp("chromium-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let url = format!("file://{}", html.display());
    render(
        "chromium",
        &[
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400",
            &url,
        ],
        "install Debian's chromium (apt-get install chromium)",
    );
    let _ = std::fs::remove_dir_all(&profile);
    shot
}

/// What cannot be plotted ends with a message naming the problem and status 1, never a panic.
#[test]
fn bad_input_is_a_clear_error() {
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let missing = dir.join("missing.json").to_string_lossy().into_owned();
    let not_json = write("notjson.json", "GET: 1000 requests per second\n");
    let binary = dir.join("binary.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x9c]).unwrap();
    let binary = binary.to_string_lossy().into_owned();
    let schema = write("schema.json", r#"{"schema": "respbench/9", "tests": []}"#);
    let other = write("other.json", r#"{"hello": "world"}"#);
    let empty = write("empty.json", r#"{"schema": "respbench/2", "tests": []}"#);
    let garbled = write(
        "garbled.json",
        r#"{"schema": "respbench/2", "tests": [{"name": "GET", "requests": 1, "duration_s": 1, "rps": 1,
            "latency_ms": {"avg": 1, "p50": 1, "p99": 1, "p99_9": 1, "max": 1},
            "histogram": {"data": "not a histogram"}}]}"#,
    );
    let no_latency = write("nolatency.json", r#"{"schema": "respbench/2", "tests": [{"name": "GET"}]}"#);
    let out_svg = dir.join("out.svg").to_string_lossy().into_owned();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![&missing, "-o", &out_svg], "cannot read"),
        (vec![&not_json, "-o", &out_svg], "notjson.json is not JSON"),
        (vec![&binary, "-o", &out_svg], "binary.json is not JSON"),
        (vec![&schema, "-o", &out_svg], "schema is 'respbench/9'"),
        (vec![&other, "-o", &out_svg], "schema is missing"),
        (vec![&empty, "-o", &out_svg], "no tests"),
        (vec![&garbled, "-o", &out_svg], "histogram data is not base64"),
        (vec![&no_latency, "-o", &out_svg], "nolatency.json: missing field `requests`"),
        (vec!["-o", &out_svg], "no files to plot"),
        (vec![&empty], "no output file: give -o FILE.svg"),
        (vec![&empty, "-o", "x.png"], "name a .svg file"),
        (vec![&empty, "-o", &out_svg, "--charts", "pie"], "unknown chart 'pie'"),
    ];
    for (args, want) in &cases {
        let out = plot(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains(want), "{args:?}: wanted '{want}' in\n{}", out.dump());
        assert!(!out.stderr.contains("panicked"), "{}", out.dump());
        assert!(!Path::new(&out_svg).exists(), "{args:?} wrote {out_svg}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A chart the results lack, asked for by name, says why; an unwritable output says so.
#[test]
fn missing_charts_and_unwritable_output() {
    let server = RedisServer::start();
    let json = results(&server, "one", &["-t", "get", "-n", "2000"]);
    let svg = tmp("none.svg");
    for (chart, want) in [
        ("rate", "cannot draw the rate chart: no open-loop test ran at two target rates"),
        ("series", "cannot draw the series chart: no test has a per-second series"),
        ("sweep", "cannot draw the sweep chart: no test ran at two values of -d, -c, -P or --threads"),
    ] {
        let out =
            plot(&[json.as_os_str(), "--charts".as_ref(), chart.as_ref(), "-o".as_ref(), svg.as_os_str()]);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(want), "{}", out.dump());
    }
    let out = plot(&[json.as_os_str(), "-o".as_ref(), "/nonexistent-dir/x.html".as_ref()]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("cannot write /nonexistent-dir/x.html"), "{}", out.dump());
    let _ = std::fs::remove_file(&json);
}

/// `--charts notify` (#52): a `-t expiry` run's lag and a `-t tracking` run's invalidation
/// latency by percentile, a line each, from their documents' histograms; a run without either
/// has no such chart, and says why.
#[test]
fn the_notification_chart() {
    let server = RedisServer::start();
    let expiry = results(&server, "expiry", &["-t", "expiry", "-n", "500", "--set-notify"]);
    let tracking = results(&server, "tracking", &["-t", "tracking", "--subscribers", "2", "-n", "2000"]);
    let svg = tmp("notify.svg");
    let args = [expiry.as_os_str(), tracking.as_os_str(), "--charts".as_ref(), "notify".as_ref()];
    plot_ok(&[&args[..], &["-o".as_ref(), svg.as_os_str()]].concat());
    let text = std::fs::read_to_string(&svg).unwrap();
    let legend = ["expiry-0.json: SET PXAT (expiry lag)<", "tracking-1.json: SET (invalidation latency"];
    for want in ["Notifications: expiry lag", ">percentile<", legend[0], legend[1]] {
        assert!(text.contains(want), "{want} is missing from\n{text}");
    }
    assert_eq!(text.matches("<svg").count(), 2, "one chart in one document");
    decode(&rsvg(&svg)).assert_drawn("notification chart", &[BLUE, ORANGE]);
    let get = results(&server, "get", &["-t", "get", "-n", "1000"]);
    let out =
        plot(&[get.as_os_str(), "--charts".as_ref(), "notify".as_ref(), "-o".as_ref(), svg.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("no -t expiry or -t tracking test has a lag or latency histogram"),
        "{}",
        out.dump()
    );
    for p in [&expiry, &tracking, &get, &svg] {
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_file(svg.with_extension("png"));
}

/// `--dataset-shape … --dataset-only`: the plot draws the server's memory and the bytes per key
/// against the keys written, from the document's growth samples (#50), whose last `used_memory`
/// is the server's own after the build (nothing else wrote to it).
#[test]
fn dataset_growth_chart() {
    let server = RedisServer::start();
    let shape = "hash 2000 keys x 50 fields x 100B";
    let json = results(&server, "dataset", &["--dataset-shape", shape, "--dataset-only"]);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let growth = doc["dataset"]["shapes"][0]["growth"].as_array().expect("growth samples").clone();
    assert!(growth.len() >= 4, "{growth:?}");
    let last = growth.last().unwrap();
    assert_eq!(last["keys"], 2000);
    let info: f64 = server.info_field("memory", "used_memory").unwrap().parse().unwrap();
    let drawn = last["used_memory"].as_f64().unwrap();
    assert!((drawn - info).abs() <= info * 0.02, "last sample {drawn}, INFO used_memory {info}");
    let svg = tmp("dataset.svg");
    plot_ok(&[json.as_os_str(), "-o".as_ref(), svg.as_os_str()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    for want in [
        "Dataset: the server memory as the keys were written",
        "Dataset: bytes per key",
        ">keys written<",
        ">memory (MiB)<",
        ">bytes per key<",
        &format!(">{shape} used_memory<"),
        &format!(">{shape} RSS<"),
    ] {
        assert!(text.contains(want), "{want} is missing from\n{text}");
    }
    assert_eq!(text.matches("<svg").count(), 3, "two charts in one document");
    decode(&rsvg(&svg)).assert_drawn("dataset charts", &[BLUE]);
    // Asked for by name, and refused by name for results without a dataset.
    plot_ok(&[json.as_os_str(), "--charts".as_ref(), "dataset".as_ref(), "-o".as_ref(), svg.as_os_str()]);
    let plain = results(&server, "no-dataset", &["-t", "get", "-n", "1000"]);
    let out =
        plot(&[plain.as_os_str(), "--charts".as_ref(), "dataset".as_ref(), "-o".as_ref(), svg.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("cannot draw the dataset chart: no run built a dataset"), "{}", out.dump());
    for p in [&json, &plain, &svg, &svg.with_extension("png")] {
        let _ = std::fs::remove_file(p);
    }
}

/// A GET test against a server with two I/O threads (#51): under the client's seconds, the
/// server panel on the same time axis: its commands per second, its CPU (user, sys, main
/// thread), each busy thread's CPU by name (the I/O thread among them) and its connected clients
/// (the test's 8 and the sampler's own, as the server counted them).
#[test]
fn server_panel_under_the_client_series() {
    let server = RedisServer::start_with(&[("io-threads", "2"), ("io-threads-do-reads", "yes")]);
    let json = results(&server, "server-panel", &["-t", "get", "-c", "8", "--duration", "4"]);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let series = doc["tests"][0]["server_series"].as_array().expect("server_series").clone();
    let inner: Vec<&serde_json::Value> =
        series.iter().filter(|s| s.get("edge").is_none() && s.get("missing").is_none()).collect();
    // A second's gauges are read at its end: the last second's reading may come after the
    // test's 4 s, when its connections have closed (a late tick on a busy machine read 1 client
    // at 4.005 s), so the connection count is checked on the readings taken inside the test.
    let during: Vec<&&serde_json::Value> =
        inner.iter().filter(|s| s["at_s"].as_f64().is_some_and(|at| at < 4.0)).collect();
    assert!(during.len() >= 2, "{series:?}");
    for s in &during {
        assert_eq!(s["connected_clients"], 9, "{s}");
    }
    let io_thread = inner.iter().flat_map(|s| s["threads"].as_array().unwrap()).any(|t| {
        t["name"].as_str().is_some_and(|n| n.starts_with("io_thd_")) && t["cores"].as_f64() >= Some(0.01)
    });
    assert!(io_thread, "no busy I/O thread in {series:?}");
    let svg = tmp("server-panel.svg");
    plot_ok(&[json.as_os_str(), "--charts".as_ref(), "series".as_ref(), "-o".as_ref(), svg.as_os_str()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    for want in [
        "Requests per second, second by second",
        "Server: commands per second (INFO), second by second",
        "Server CPU: user and sys (INFO used_cpu_*), second by second",
        "Server CPU by thread (/proc), second by second",
        "Server: connected clients, second by second",
        ">GET user<",
        ">GET sys<",
        ">GET main thread<",
        ">GET redis-server<",
        ">GET io_thd_1<",
        ">connected clients<",
    ] {
        assert!(text.contains(want), "{want} is missing from\n{text}");
    }
    // The client's two charts and the server's four, every one on the same time axis.
    assert_eq!(text.matches("<svg").count(), 7, "{text}");
    assert_eq!(text.matches(">time from the test&#39;s start (s)<").count(), 6, "{text}");
    decode(&rsvg(&svg)).assert_drawn("server panel", &[BLUE, ORANGE]);
    for p in [&json, &svg, &svg.with_extension("png")] {
        let _ = std::fs::remove_file(p);
    }
}
