//! The HTML report: one self-contained page (no script, no external font, stylesheet or image)
//! with a summary table of every test of every input and the charts inline as SVG.

use std::fmt::Write;

use super::data::{Input, Test, PARAMS};
use super::svg::{escape, Chart};

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px}\
table{border-collapse:collapse;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 8px;white-space:nowrap}\
th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.wide{overflow-x:auto}figure{margin:16px 0}svg{display:block;max-width:100%;height:auto}\
tr.warn td{background:#fdecee}.warn{color:#b00020}dl{font-size:13px}dt{font-weight:bold;margin-top:8px}\
dd{margin-left:16px}code{white-space:pre-wrap}";

/// The report for `inputs` with `charts`.
pub fn report(inputs: &[Input], charts: &[Chart]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<title>respbench report</title>\n");
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>\n<h1>respbench report</h1>");
    out.push_str("<p>Results of ");
    let files: Vec<String> = inputs
        .iter()
        .map(|i| {
            format!("<code>{}</code> ({} {})", escape(&i.path), i.tests.len(), plural(i.tests.len(), "test"))
        })
        .collect();
    out.push_str(&files.join(", "));
    out.push_str(". Latencies in milliseconds.</p>\n<h2>What ran</h2>\n<dl>\n");
    for i in inputs {
        let c = &i.context;
        let _ = writeln!(out, "<dt><code>{}</code></dt>", escape(&i.label));
        let line = c.command_line.as_deref().unwrap_or("(the document has no command line)");
        let _ = writeln!(out, "<dd>command: <code>{}</code></dd>", escape(line));
        let _ = writeln!(out, "<dd>server: {}</dd>", escape(c.server.as_deref().unwrap_or("not identified")));
        if let Some(d) = &c.date {
            let _ = writeln!(out, "<dd>date: {}</dd>", escape(d));
        }
        if let Some(b) = &c.backend {
            let _ = writeln!(out, "<dd>backend: {}</dd>", escape(b));
        }
        if c.mixture {
            out.push_str(
                "<dd class=\"warn\">a MIXTURE (respbench merge --force): its runs had different configurations</dd>\n",
            );
        }
    }
    out.push_str("</dl>\n<h2>Summary</h2>\n");
    let flagged = inputs.iter().flat_map(|i| &i.tests).filter(|t| t.not_server_limited()).count();
    if flagged > 0 {
        let _ = writeln!(
            out,
            "<p class=\"warn\">{flagged} {} not limited by the server (red rows, red rings on the charts): \
             their figures are the client's or the machine's limit, not the server's.</p>",
            if flagged == 1 { "test was" } else { "tests were" }
        );
    }
    table(inputs, &mut out);
    if !charts.is_empty() {
        out.push_str("<h2>Charts</h2>\n");
    }
    // What was measured around them once, under the last chart that shares it.
    for (i, c) in super::svg::notes_once(charts).iter().enumerate() {
        out.push_str("<figure>\n");
        c.write(&mut out, &format!("c{i}"), 0.0, 0.0, false);
        out.push_str("</figure>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.into()
    } else {
        format!("{word}s")
    }
}

/// A cell's text from its input and test.
type Cell = Box<dyn Fn(&Input, &Test) -> String>;

/// A column of the summary table: its heading, whether it holds numbers, and a cell's text.
struct Column {
    head: &'static str,
    numeric: bool,
    cell: Cell,
}

fn table(inputs: &[Input], out: &mut String) {
    let tests = || inputs.iter().flat_map(|i| i.tests.iter().map(move |t| (i, t)));
    let mut cols: Vec<Column> = Vec::new();
    let col = |head, numeric, cell: Cell| Column { head, numeric, cell };
    if inputs.len() > 1 {
        cols.push(col("file", false, Box::new(|i, _| i.label.clone())));
    }
    cols.push(col("test", false, Box::new(|_, t| t.name.clone())));
    // What every test shares goes in a sentence above the table; what differs gets a column.
    let mut shared = Vec::new();
    let backends: Vec<Option<&String>> = tests().map(|(_, t)| t.backend.as_ref()).collect();
    match backends.first() {
        Some(Some(b)) if backends.iter().all(|o| *o == Some(*b)) => shared.push(format!("backend {b}")),
        _ if backends.iter().any(Option::is_some) => {
            cols.push(col("backend", false, Box::new(|_, t| t.backend.clone().unwrap_or_default())));
        }
        _ => {}
    }
    if tests().any(|(_, t)| t.target_rps.is_some()) {
        cols.push(col(
            "target rps",
            true,
            Box::new(|_, t| t.target_rps.map(|r| r.to_string()).unwrap_or_default()),
        ));
    }
    for (p, param) in PARAMS.iter().enumerate() {
        let values: Vec<Option<u64>> = tests().map(|(_, t)| t.params[p]).collect();
        match values.first() {
            Some(Some(v)) if values.iter().all(|o| *o == Some(*v)) => {
                shared.push(format!("{} {v}", param.option))
            }
            _ if values.iter().any(Option::is_some) => cols.push(col(
                param.option,
                true,
                Box::new(move |_, t| t.params[p].map(|v| v.to_string()).unwrap_or_default()),
            )),
            _ => {}
        }
    }
    cols.push(col("requests", true, Box::new(|_, t| t.requests.to_string())));
    cols.push(col("errors", true, Box::new(|_, t| t.errors.to_string())));
    cols.push(col("seconds", true, Box::new(|_, t| format!("{:.2}", t.duration_s))));
    cols.push(col("rps", true, Box::new(|_, t| format!("{:.2}", t.rps))));
    cols.push(col("avg", true, Box::new(|_, t| format!("{:.3}", t.latency.avg))));
    cols.push(col("p50", true, Box::new(|_, t| format!("{:.3}", t.latency.p50))));
    cols.push(col("p99", true, Box::new(|_, t| format!("{:.3}", t.latency.p99))));
    cols.push(col("p99.9", true, Box::new(|_, t| format!("{:.3}", t.latency.p999))));
    cols.push(col("max", true, Box::new(|_, t| format!("{:.3}", t.latency.max))));
    if tests().any(|(_, t)| t.service.is_some()) {
        let s = |f: fn(&super::data::Latency) -> f64| {
            Box::new(move |_: &Input, t: &Test| {
                t.service.as_ref().map(|l| format!("{:.3}", f(l))).unwrap_or_default()
            })
        };
        cols.push(col("service p50", true, s(|l| l.p50)));
        cols.push(col("service p99", true, s(|l| l.p99)));
    }
    if tests().any(|(_, t)| t.verdict.is_some()) {
        cols.push(col("limited by", false, Box::new(|_, t| t.verdict.clone().unwrap_or_default())));
    }
    if tests().any(|(_, t)| t.cpu_us.is_some()) {
        cols.push(col(
            "client µs/req",
            true,
            Box::new(|_, t| t.cpu_us.map(|v| format!("{v:.2}")).unwrap_or_default()),
        ));
        cols.push(col(
            "client core per loop",
            true,
            Box::new(|_, t| t.core_share.map(|(v, _)| format!("{:.0}%", v * 100.0)).unwrap_or_default()),
        ));
    }
    if !shared.is_empty() {
        let _ = writeln!(out, "<p>Every test ran with {}.</p>", escape(&shared.join(", ")));
    }
    out.push_str("<div class=\"wide\">\n<table>\n<thead><tr>");
    for c in &cols {
        let _ = write!(out, "<th>{}</th>", escape(c.head));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (i, t) in tests() {
        out.push_str(if t.not_server_limited() { "<tr class=\"warn\">" } else { "<tr>" });
        for c in &cols {
            let class = if c.numeric { " class=\"n\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", escape(&(c.cell)(i, t)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
}

#[cfg(test)]
mod tests {
    use super::super::data::Latency;
    use super::*;

    fn test(name: &str, clients: u64, backend: &str) -> Test {
        Test {
            input: 0,
            name: name.into(),
            backend: Some(backend.into()),
            target_rps: None,
            params: [Some(3), Some(clients), Some(1), Some(0)],
            requests: 10,
            errors: 1,
            duration_s: 0.5,
            rps: 20.0,
            latency: Latency { avg: 0.5, p50: 0.25, p99: 1.0, p999: 2.0, max: 3.0 },
            service: None,
            server: Vec::new(),
            ramp: None,
            curve: Vec::new(),
            series: Vec::new(),
            events: Vec::new(),
            start_us: 0,
            service_curve: None,
            verdict: None,
            cpu_us: None,
            core_share: None,
            run: 0,
            notify: None,
            server_series: Vec::new(),
        }
    }

    /// The charts' context footer is on the page once (it was under every chart).
    #[test]
    fn the_page_has_the_charts_notes_once() {
        use super::super::svg::Note;
        let notes = vec![Note { text: "GET c=5: client 5.9 µs/request".into(), warn: false }];
        let chart = Chart { title: "t".into(), notes, ..Chart::default() };
        let inputs = [Input {
            path: "r.json".into(),
            label: "r.json".into(),
            tests: vec![test("GET", 5, "mio")],
            context: Default::default(),
            capacity: Vec::new(),
            comparison: None,
            dataset: None,
        }];
        let page = report(&inputs, &[chart.clone(), chart.clone(), chart]);
        assert_eq!(page.matches("<figure>").count(), 3, "{page}");
        assert_eq!(page.matches("GET c=5: client 5.9 µs/request").count(), 1, "{page}");
    }

    #[test]
    fn what_differs_gets_a_column() {
        let inputs = [Input {
            path: "r<1>.json".into(),
            label: "r<1>.json".into(),
            tests: vec![test("SET", 5, "mio"), test("GET", 50, "mio")],
            context: Default::default(),
            capacity: Vec::new(),
            comparison: None,
            dataset: None,
        }];
        let page = report(&inputs, &[]);
        assert!(page.contains("<p>Every test ran with backend mio, -d 3, -P 1, --threads 0.</p>"), "{page}");
        assert!(page.contains("<th>test</th><th>-c</th><th>requests</th>"), "{page}");
        assert!(page.contains("<td>GET</td><td class=\"n\">50</td><td class=\"n\">10</td>"), "{page}");
        assert!(page.contains("<code>r&lt;1&gt;.json</code> (2 tests)"), "{page}");
        // One input: no file column; no chart: no heading for them.
        assert!(!page.contains("<th>file</th>") && !page.contains("Charts"), "{page}");
    }
}
