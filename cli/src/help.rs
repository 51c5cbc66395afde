//! The short `--help` (one screen: usage, the options by group, examples, the subcommands) and
//! the suggestions for the commonest mistakes: an option spelled as memtier_benchmark or another
//! tool spells it, or misspelled. argh's own list of every option is `--help-all`.

/// What `respbench --help` prints. Options that take a value show it; defaults in parentheses.
pub const SHORT: &str = "\
respbench: a redis-benchmark compatible load generator for Redis and every RESP server

Usage: respbench [options] [command [arg...]]     (default: redis-benchmark's suite)
       respbench plot <file.json>... -o <out.svg|out.html> [--charts <list>]
       respbench merge <file.json>... [--json <out.json>] [--force]
       respbench compare <a.json> <b.json> [--fail-if-slower <5%>]   (--a <file>... --b <file>...)
       respbench capture [connection options] -o <file> [--duration <60s>] [--max-commands <n>]
       respbench run <scenario.toml> [options]
       respbench memtier <memtier_benchmark args>...
       respbench completions <bash|zsh|fish>      respbench man [markdown]

Connection     -h <host> (127.0.0.1)  -p <port> (6379)  -s <socket>  -u <redis://user:pw@host:port>
               -a <password> (or REDISCLI_AUTH, or --askpass)  --user <name> (ACL)  --dbnum <n>
               -3 (RESP3)  -k <0|1>  --timeout <5s>  --reconnect  --mptcp
               --retry-on <LOADING,BUSY,TRYAGAIN>  --retry-backoff <1ms,1s>  --retry-limit <64>
               --failed-keys <file>  --sentinel <host:port,...> --sentinel-master <name>
               --sentinel-user <name> --sentinel-password <pw> (the Sentinels' own)
Workload       -t <tests> (all: set,get,lpush,...)  -n <requests> (100000)  -d <bytes> (3)
               -r <keyspace>  --key-dist <uniform|sequential|zipf:0.99|gaussian>
               --key-prefix <p>  --preload  --mix <set:1,get:10>  --mix-command <'w CMD args'>
               --dataset <file.csv>  --seed <n>  -x  -e  -l (loop)  -I (idle connections)
               --verify (GETs checked)  --verify-only (read back)  --follow-cursor (SCAN)
               --dataset-shape <'hash 10000 keys x 50 fields x 100B'>  --dataset-only
Load shape     -c <clients> (50)  -P <pipeline> (1)  --pipeline-mode <batch|window>
               --threads <n>  --backend <mio|smol|uring>  --rps <total rate> (open loop)
               --arrival <poisson>  --duration <30s>  --warmup <5s>  --drain-grace <2s>
               --repeat <n>  --slo <p99<=1ms> (capacity search: the highest rate that meets it)
               a list sweeps: -c 10,50,100  -d 16,128,1024  -P 1,16  --threads 1,2  --rps 1000,2000
Output         -q  --csv  --json <file|->  --series  --live  --hlog <file>  --hgrm <prefix>
               --print-percentiles <50,99,99.9>  --precision <1-5>  --no-server-probe
               --server-interval <1s> (the server's INFO and threads sampled in each test)
Cluster / TLS  --cluster  --rfr <no|yes|all>  --replicas auto  --replica <host:port>
               --key-args <n,...>  --tls  --sni <host>  --cacert <file>  --cacertdir <dir>
               --cert <f> --key <f>  --insecure  --tls-ciphers  --tls-ciphersuites  --tls-groups
Multi-machine  --worker <I/N> (or JOB_COMPLETION_INDEX and RESPBENCH_WORKERS)
               --start-at <time>, then respbench merge of the workers' --json documents

Examples
  respbench -q -n 100000
  respbench -t set,lpush -n 100000 -q
  respbench -n 100000 -q script load \"redis.call('set','foo','bar')\"
  respbench -n 1000000 -t set,get -P 16 -q
  respbench -h HOST --user bench -a secret -t set -d 64 --threads 4 -c 256 -n 3000000 -r 10000000
  respbench -t get -d 16,128,1024 -r 100000 --preload -q --json sweep.json   # a sweep
  respbench -t get --rps 20000,40000,80000 --duration 10s -q                  # an open loop
  respbench -t get -r 100000 --preload --slo 'p99<=1ms'                       # a capacity search
  respbench plot sweep.json -o sweep.html                                     # a picture

Options take a value as -p 6380, --port 6380 or --port=6380. Every option, with its meaning:
respbench --help-all, or man respbench. The guide (docs/README.md) explains each.
";

/// Options of memtier_benchmark and other tools that respbench spells differently, with what to
/// write instead.
const PEER_SPELLINGS: &[(&str, &str)] = &[
    ("--server", "-h HOST (memtier's --server)"),
    ("--unix-socket", "-s PATH"),
    ("--authenticate", "-a PASSWORD, with --user NAME for an ACL user"),
    ("--data-size", "-d BYTES"),
    ("--data-size-range", "-d MIN-MAX (e.g. -d 16-1024)"),
    ("--data-size-list", "-d SIZE:WEIGHT,... (e.g. -d 16:3,1024:1)"),
    ("--ratio", "--mix set:1,get:10 (memtier's --ratio 1:10 is SET:GET)"),
    ("--data-verify", "--verify (with --mix set:1,get:1, -r and -d of 28 or more)"),
    ("--test-time", "--duration SECONDS (e.g. --duration 30s)"),
    ("--key-maximum", "-r KEYSPACE"),
    ("--key-pattern", "--key-dist uniform|sequential|zipf:0.99|gaussian"),
    ("--run-count", "--repeat N"),
    ("--hdr-file-prefix", "--hlog FILE (an HdrHistogram interval log)"),
    ("--json-out-file", "--json FILE"),
    ("--protocol", "-3 for RESP3 (RESP2 is the default)"),
    ("--rate-limiting", "--rps TOTAL (memtier's rate is per connection; --rps is the whole run's)"),
    ("--select-db", "--dbnum N"),
    ("--cluster-mode", "--cluster"),
    ("--tls-skip-verify", "--insecure"),
    ("--command", "the command after the options: respbench -n 1000 SET k v"),
    ("--clients-per-thread", "-c (respbench's -c is the total, spread over --threads)"),
    ("--help-full", "--help-all"),
];

/// What to say after argh's `Unrecognized argument: ARG`: another tool's spelling and
/// respbench's, or the nearest option by spelling among `long`; `None` when nothing is near.
pub fn suggest(arg: &str, long: &[String]) -> Option<String> {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    if let Some((_, instead)) = PEER_SPELLINGS.iter().find(|(peer, _)| *peer == name) {
        // memtier_benchmark's options: its whole line also runs as it is.
        let memtier = if respbench_session::memtier::is_option(name) {
            "; or run the memtier_benchmark line unchanged: respbench memtier ARGS..."
        } else {
            ""
        };
        return Some(format!("respbench spells {name} as {instead}{memtier}"));
    }
    if !name.starts_with("--") {
        return None;
    }
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    // A typo: a letter or two off, relative to the name's length.
    let within = 2.min(name.len() / 4).max(1);
    respbench_session::case::nearest(name, &long, within).map(|best| format!("did you mean {best}?"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Options;

    #[test]
    fn short_help_is_one_screen_with_every_group() {
        let lines: Vec<&str> = SHORT.lines().collect();
        assert!(lines.len() <= 50, "{} lines", lines.len());
        assert!(lines.iter().all(|l| l.chars().count() <= 100), "a line too wide");
        for group in ["Connection", "Workload", "Load shape", "Output", "Cluster / TLS", "Multi-machine"] {
            assert!(lines.iter().any(|l| l.starts_with(group)), "{group}");
        }
        for sub in ["--help-all", "--slo", "--rps", "-d 16,128,1024"] {
            assert!(SHORT.contains(sub), "{sub}");
        }
        // Every subcommand respbench dispatches has its usage line.
        for sub in ["plot", "merge", "compare", "capture"] {
            assert!(lines.iter().any(|l| l.trim_start().starts_with(&format!("respbench {sub} "))), "{sub}");
        }
    }

    #[test]
    fn every_option_the_short_help_names_exists() {
        // The short help is written by hand: each --name it shows must be a real option (or a
        // subcommand's, or one that lands with the capacity search).
        let o = Options::of::<crate::opts::Opts>(&["respbench"]);
        let extra = ["--help-all", "--charts", "--force", "--slo", "--a", "--b", "--fail-if-slower"];
        for word in SHORT.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',' || c == '/') {
            let word = word.split('=').next().unwrap_or(word).trim_end_matches(['.', ':']);
            if word.starts_with("--") && word.len() > 2 {
                assert!(o.long.iter().any(|l| l == word) || extra.contains(&word), "{word} is not an option");
            }
        }
    }

    #[test]
    fn suggestions_for_other_tools_and_typos() {
        let long: Vec<String> = ["--pipeline", "--precision", "--preload", "--duration", "--threads"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            suggest("--server", &long).as_deref(),
            Some(
                "respbench spells --server as -h HOST (memtier's --server); or run the memtier_benchmark line \
                 unchanged: respbench memtier ARGS..."
            )
        );
        assert!(suggest("--test-time=30", &long).unwrap().contains("--duration"));
        assert!(suggest("--test-time=30", &long).unwrap().ends_with("respbench memtier ARGS..."));
        assert!(!suggest("--help-full", &long).unwrap().contains("memtier"));
        assert_eq!(suggest("--pipline", &long).as_deref(), Some("did you mean --pipeline?"));
        assert_eq!(suggest("--thread", &long).as_deref(), Some("did you mean --threads?"));
        assert_eq!(suggest("--bogus", &long), None);
        assert_eq!(suggest("-Z", &long), None);
    }
}
