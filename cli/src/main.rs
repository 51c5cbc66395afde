//! respbench: the command line over `respbench-session`. Parses redis-benchmark's options, runs
//! a session of tests and renders the results in redis-benchmark's formats. Its lines on stderr
//! go through `respbench_report::say!`, which never panics (see `respbench_report::stderr`).
#![cfg_attr(not(test), deny(clippy::print_stderr))]

mod args;
mod help;
mod opts;
mod scenario;
mod secret;
mod signals;
mod subcommands;
mod workers;

use std::io::Write;
use std::process::ExitCode;

use argh::FromArgs;

use respbench_driver::Tls;
use respbench_session::{Ended, Pair};

use opts::{Config, Opts};
use respbench_report::outputs::Outputs;
use respbench_report::say;
use respbench_report::{capacity, json};
use signals::exit_interrupted;

fn main() -> ExitCode {
    one_malloc_arena();
    let mut args = args::collect();
    respbench_report::files::on_waiting(|p| {
        say!("{}: a FIFO that no process reads: waiting for a reader", p.display())
    });
    // memtier_benchmark's command line, read into respbench's options (session's memtier).
    let memtier = match respbench_session::memtier::dialect(&args).map(respbench_session::memtier::translate)
    {
        Some(Ok(t)) => {
            args = std::iter::once(args[0].clone()).chain(t.args).collect();
            Some(t.memtier)
        }
        Some(Err(e)) => {
            say!("{e}");
            return ExitCode::from(1);
        }
        None => None,
    };
    // `run FILE.toml`: a scenario's groups, its options after the command line's.
    let (scenario, took) = match respbench_report::rerun::take(&mut args) {
        Ok(s) => s.map_or((None, 0), |(s, n)| (Some(s), n)),
        Err(e) => {
            say!("{e}");
            return ExitCode::from(1);
        }
    };
    let name = args.first().map(|s| s.as_str()).unwrap_or("respbench");
    let rest: Vec<&str> = args.iter().skip(1).map(|s| s.as_str()).collect();
    // `merge` is detected before argh: a subcommand does not fit the flat redis-benchmark
    // options, whose positional arguments are a command to benchmark.
    if matches!(rest.first(), Some(&("man" | "completions"))) {
        return subcommands::manual(name, &rest);
    }
    if matches!(rest.first(), Some(&("merge" | "plot" | "compare"))) {
        if let Err(e) = args::all_text(&rest) {
            say!("respbench {}: {e}", rest[0]);
            return ExitCode::from(1);
        }
        return match rest[0] {
            "merge" => subcommands::merge(name, &rest[1..]),
            "compare" => subcommands::compare(name, &rest[1..]),
            _ => subcommands::plot(name, &rest[1..]),
        };
    }
    // `capture` takes the run's options (server, TLS, AUTH, --duration) and records instead.
    let capturing = rest.first() == Some(&"capture");
    let args: Vec<String> =
        args.iter().enumerate().filter(|(i, _)| !(capturing && *i == 1)).map(|(_, a)| a.clone()).collect();
    let rest: Vec<&str> = args.iter().skip(1).map(|s| s.as_str()).collect();
    let command_line = json::command_line(&rest);
    // `--opt=value` is `--opt value`: the command's arguments below are counted after it.
    let options = args::Options::of::<Opts>(&[name]);
    let mut split = options.split_equals(&args[1..]);
    let user = split.clone();
    if let Some(s) = &scenario {
        split.extend(s.base_args(&respbench_session::scenario::given(&user)));
    }
    let rest: Vec<&str> = split.iter().map(String::as_str).collect();
    // The short help; argh's list of every option is --help-all. The options before it are
    // still checked by argh (as its own --help does), so an unknown one is an error.
    let end = options.options_end(&split);
    let short_help = rest[..end].contains(&"--help");
    let parsed: Vec<&str> = rest
        .iter()
        .enumerate()
        .map(|(i, a)| if i < end && *a == "--help" { "--help-all" } else { a })
        .collect();
    if short_help {
        if let Err(e) = Opts::from_args(&[name], &parsed).map(drop).or_else(|e| {
            if e.status.is_ok() {
                Ok(())
            } else {
                Err(e)
            }
        }) {
            say!("{}\nRun 'respbench --help' for the options.", args::shown(e.output.trim_end()));
            return ExitCode::from(1);
        }
        let _ = std::io::stdout().write_all(help::SHORT.as_bytes());
        return ExitCode::SUCCESS;
    }
    let opts: Opts = match opts::parse_args(&[name], &rest, "respbench --help") {
        Ok(o) => o,
        Err(code) => return code,
    };
    // Read: off `ps` from here on.
    secret::scrub(&args, &options.values, usize::from(capturing) + took);
    let askpass = opts.askpass;
    let capture = (opts.output.clone(), opts.max_commands);
    if opts.print_scenario {
        return match respbench_session::scenario::of_args(&user, &|o| options.values.iter().any(|v| v == o)) {
            Ok(toml) => {
                let _ = std::io::stdout().write_all(toml.as_bytes());
                ExitCode::SUCCESS
            }
            Err(e) => {
                say!("{e}");
                ExitCode::from(1)
            }
        };
    }
    if opts.version {
        let _ = writeln!(std::io::stdout(), "respbench {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    // The TLS client configuration is made once, here, so that a certificate that cannot be
    // read is an error in the options.
    let checked = opts.check().map_err(Box::<dyn std::error::Error>::from).and_then(|mut c| {
        // The command's arguments are bytes; any other value must be text.
        c.command = args::command_bytes(&rest, std::mem::take(&mut c.command))?;
        // Installed as valkey-benchmark (a link of that name), the default suite is valkey's.
        c.valkey_suite = std::path::Path::new(name)
            .file_name()
            .is_some_and(|f| f.to_string_lossy().starts_with("valkey-benchmark"));
        c.memtier = memtier;
        c.capture = respbench_session::syntax::capture(capturing, capture.0.as_deref(), capture.1)?;
        if askpass {
            c.password = Some(respbench_session::secret::read_password(&mut std::io::stderr())?);
        }
        if let Some(s) = &scenario {
            c = scenario::groups(name, s, &user, c)?;
        }
        Ok((respbench_session::tls_client(&c)?, c))
    });
    let (tls, cfg) = match checked {
        Ok(c) => c,
        Err(e) => {
            say!("{e}\nRun 'respbench --help' for the options.");
            return ExitCode::from(1);
        }
    };
    match run(&cfg, tls, command_line) {
        Ok(code) => code,
        Err(e) => {
            say!("{e}");
            if let Some(hint) = respbench_report::text::refused_hint(&e.to_string()) {
                say!("{hint}");
            }
            ExitCode::from(1)
        }
    }
}

/// One malloc arena for the whole process (glibc's `M_ARENA_MAX`), set before any thread starts.
/// glibc gives each thread that allocates an arena of its own, and each keeps the pages it has
/// touched; the event loops allocate when a test starts and ends, not per request (5,740
/// allocations in a 3 s memtier line of 283,000 requests, by heaptrack), so sharing one costs no
/// contention. Peak RSS of `memtier -t 2 -c 25 --ratio 1:10`: 0.6-0.7 MB less (issue #48 item 4).
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of glibc's allocator; no thread is running yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// The files written once the run is over (`--json out.json and --hgrm run`), which a late signal
/// cuts.
fn written_at_end(cfg: &Config) -> String {
    let json = cfg.json.as_deref().map(|p| format!("--json {p}"));
    let hgrm = cfg.open.hgrm.as_deref().map(|p| format!("--hgrm {p}"));
    json.into_iter().chain(hgrm).collect::<Vec<_>>().join(" and ")
}

/// The run the options ask for, the signal handlers installed first; `main` prints an error.
fn run(
    cfg: &Config,
    tls: Option<Tls>,
    command_line: Vec<String>,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let stop = signals::install(written_at_end(cfg))?;
    if let Some(c) = &cfg.capture {
        let server = respbench_session::server::Server::new(cfg, tls);
        let mut out = std::io::stdout();
        writeln!(out, "{}", respbench_session::capture::COST_WARNING)?;
        let conn = respbench_session::capture::connect(&server)?;
        let shown = c.output.display().to_string();
        let cannot = |e| format!("capture: cannot write {shown}: {e}");
        let mut file = respbench_report::files::Streamed::create(&c.output).map_err(cannot)?;
        let done = respbench_session::capture::run(cfg, c, conn, &stop, &mut file)?;
        file.finish().map_err(cannot)?;
        writeln!(out, "{}", done.line(&shown))?;
        return Ok(ExitCode::SUCCESS);
    }
    respbench_session::check_machine(cfg)?;
    let mut outputs = Outputs::new(cfg, command_line);
    outputs.watch_stop(&stop);
    if cfg.idle {
        // A closed stdout stops none of this: the connections are what -I is for.
        let _ = writeln!(
            std::io::stdout(),
            "Creating {} idle connections and waiting forever (Ctrl+C when done)",
            cfg.clients
        );
        let failures = respbench_session::idle(cfg, tls, &mut outputs, &stop);
        let _ = writeln!(std::io::stdout());
        let failures = failures?;
        for (msg, n) in &failures {
            let plural = if *n == 1 { "" } else { "s" };
            say!("{n} connection{plural} failed: {msg}");
        }
        // One line in the peers' words: the server's, else respbench's reason after `Error:`.
        if let Some(refused) = failures.iter().find_map(|(e, _)| respbench_session::refusal(e)) {
            say!("Error from server: {}", refused.message);
        } else if let Some((e, _)) = failures.first() {
            say!("Error: {}", respbench_session::failure_words(e, false));
        }
        return Ok(if !failures.is_empty() {
            ExitCode::from(1)
        } else if stop.requested() {
            ExitCode::from(exit_interrupted())
        } else {
            ExitCode::SUCCESS
        });
    }
    // Find out now, not after a long run, whether the outputs' directories take their files.
    respbench_report::outputs::check_outputs(cfg)?;
    outputs.serve_metrics(cfg)?;
    // memtier's --data-verify: the import file read back after the run, or alone.
    let verify = cfg.memtier.as_ref().and_then(|m| m.verify.clone().map(|v| (m, v)));
    if let Some((m, v)) = verify.as_ref().filter(|(_, v)| v.only) {
        return memtier_verify(cfg, m, tls, v);
    }
    let verify_tls = verify.as_ref().and(tls.clone());
    let session = Pair::new(cfg, tls, &mut outputs, stop)?;
    outputs.begin_pair(&session)?;
    let base = session.config().clone();
    let epoch_us = session.epoch_us();
    let done = session.run(&mut outputs);
    let interrupted = !matches!(done.ended, Ok(Ended::Completed));
    signals::writing_outputs();
    outputs.finish(&base, interrupted, done.late_by_s, epoch_us, &done.searches)?;
    // After every result, in the peers' words: their callers check the status and this line.
    // `-e` printed each error reply's message already.
    if let Some(e) = done.first_error.as_ref().filter(|e| !(e.reply && base.show_errors)) {
        say!("Error from server: {}", e.message);
    } else if let Some(why) = done.first_failure.as_ref().filter(|_| done.first_error.is_none()) {
        // A connection that failed otherwise (reset, closed, TLS, protocol, --timeout): the
        // word redis-benchmark prints before its reason, which scripts look for.
        say!("Error: {why}");
    }
    if let Some(test) = &done.empty_window {
        say!("{test}: no request completed in the measured window");
    }
    // An objective no rate met is the search's failure: said on stderr, exit 1.
    let mut unreachable = false;
    // A worker's ladder is judged by `respbench merge` on the fleet's histograms, not by its part.
    for f in done.searches.iter().filter(|f| f.worker.is_none()) {
        if !matches!(f.capacity.conclusion, respbench_session::capacity::Conclusion::Met { .. }) {
            say!("{}", capacity::answer_line(f));
            unreachable = true;
        }
    }
    // A group's objective missed: said on stderr, exit 1.
    outputs.slo_missed().iter().for_each(|line| say!("{line}"));
    if outputs.mismatches() > 0 {
        say!("--verify: {} replies did not match what was written", outputs.mismatches());
    }
    let mut failed = false;
    if let Some((m, v)) = verify.as_ref().filter(|_| matches!(done.ended, Ok(Ended::Completed))) {
        failed = memtier_verify(cfg, m, verify_tls, v)? != ExitCode::SUCCESS;
    }
    let failed = failed
        || outputs.mismatches() > 0
        || done.dropped
        || done.first_error.is_some()
        || done.empty_window.is_some()
        || unreachable
        || !outputs.slo_missed().is_empty()
        || outputs.none_succeeded();
    match done.ended {
        Ok(Ended::Completed) if failed || done.unfinished => Ok(ExitCode::from(1)),
        Ok(Ended::Completed) => Ok(ExitCode::SUCCESS),
        Ok(Ended::ConnectionsFailed) => Ok(ExitCode::from(1)),
        Ok(Ended::Interrupted) => Ok(ExitCode::from(exit_interrupted())),
        Err(e) => Err(e.into()),
    }
}

/// memtier's `--data-verify`: each item of the import file read back and compared, memtier's
/// lines for the mismatches on stderr (the first 20) and its counts where its table goes; exit 1
/// on a mismatch.
fn memtier_verify(
    cfg: &Config,
    m: &respbench_session::memtier::Memtier,
    tls: Option<Tls>,
    v: &respbench_session::memtier::Verify,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let found = respbench_session::memtier_verify::verify(cfg, tls, v)?;
    found.lines.iter().for_each(|l| say!("{l}"));
    if let Some(more) = found.failed.checked_sub(found.lines.len() as u64).filter(|n| *n > 0) {
        say!("... and {more} more keys failed");
    }
    respbench_report::memtier::verify::write(m, &found, !v.only)?;
    Ok(if found.failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
