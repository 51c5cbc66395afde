//! The command line: every redis-benchmark 7.x option with its meaning and default, checked into
//! a [`Config`].

use std::path::PathBuf;
use std::time::Duration;

use std::process::ExitCode;

use argh::FromArgs;
use respbench_core::dist::{KeyDist, ValueSize};
use respbench_core::{Endpoint, PipelineMode};

use respbench_report::say;
pub use respbench_session::config::{
    Backend, Config, OpenLoopConfig, OptionError, Output, Replicas, Rfr, Sweep, TlsOptions,
};
use respbench_session::syntax::{self, bad};
use OptionError::Conflict;

/// respbench: a redis-benchmark compatible load generator for Redis and every RESP server.
///
/// Runs redis-benchmark's default suite, or the command given after the options (with
/// __rand_int__ placeholders filled from the -r keyspace), and reports throughput and
/// per-request latency.
#[derive(FromArgs, Debug)]
#[argh(help_triggers("--help-all"))]
pub struct Opts {
    /// server hostname (default 127.0.0.1)
    #[argh(option, short = 'h', default = "String::from(\"127.0.0.1\")")]
    pub host: String,
    /// server port (default 6379)
    #[argh(option, short = 'p', default = "6379")]
    pub port: u16,
    /// server socket (overrides host and port)
    #[argh(option, short = 's')]
    pub socket: Option<String>,
    /// password for Redis Auth (else $REDISCLI_AUTH); hidden from ps once read, but
    /// REDISCLI_AUTH or --askpass keep it off the command line
    #[argh(option, short = 'a')]
    pub password: Option<String>,
    /// read the password from the terminal without echo (or one line of stdin when it is not
    /// a terminal); -a and REDISCLI_AUTH are then ignored
    #[argh(switch)]
    pub askpass: bool,
    /// used to send ACL style 'AUTH username pass'; needs a password (-a, REDISCLI_AUTH, --askpass)
    #[argh(option)]
    pub user: Option<String>,
    /// server URI: redis://[user:password@]host[:port][/db]; rediss:// turns TLS on
    #[argh(option, short = 'u')]
    pub uri: Option<String>,
    /// number of parallel connections (default 50); a list 50,100,200 runs a step for each
    #[argh(option, short = 'c', default = "String::from(\"50\")")]
    pub clients: String,
    /// total number of requests (default 100000)
    #[argh(option, short = 'n')]
    pub requests: Option<i64>,
    /// data size of SET/GET value in bytes (default 3); also a range 16-1024 (uniform) or a
    /// weighted list 16:3,1024:1, a size drawn per request; 16-1024/key sizes by the key's place
    /// in the keyspace; a list 16,128,1024 (no weights) runs a step for each
    #[argh(option, short = 'd', default = "String::from(\"3\")")]
    pub datasize: String,
    /// SELECT the specified db number (default 0)
    #[argh(option, default = "0")]
    pub dbnum: i64,
    /// start session in RESP3 protocol mode
    #[argh(switch, short = '3')]
    pub resp3: bool,
    /// enable multi-thread mode: N event loops (default 0: one loop); a list runs a step for
    /// each
    #[argh(option, default = "String::from(\"0\")")]
    pub threads: String,
    /// every TCP connection (the startup one too) is a Linux MPTCP socket, falling back to TCP
    /// where the server does not speak MPTCP (valkey-benchmark 9)
    #[argh(switch)]
    pub mptcp: bool,
    /// enable cluster mode: find the nodes from the -h/-p node (CLUSTER SHARDS, or CLUSTER
    /// SLOTS before Redis 7) and send each request to the node owning its key's slot
    #[argh(switch)]
    pub cluster: bool,
    /// read from replicas: no (default: reads at the primaries), yes (at the replicas) or all
    /// (both); writes always go to the primary; needs --cluster, --replicas auto or --replica
    /// (with those two the default is yes)
    #[argh(option)]
    pub rfr: Option<String>,
    /// auto: find the replicas of the standalone -h/-p primary (ROLE, else INFO replication)
    #[argh(option)]
    pub replicas: Option<String>,
    /// a replica of the standalone -h/-p primary, HOST:PORT as reachable from here, instead of
    /// the addresses the primary reports (repeatable)
    #[argh(option)]
    pub replica: Vec<String>,
    /// with --cluster or replicas: which arguments of the custom command are keys, counted from
    /// 1 after its name (e.g. 1 or 1,3), where the server's COMMAND INFO is refused or renamed
    #[argh(option)]
    pub key_args: Option<String>,
    /// 'TIME CMD [ARG...]' or 'TIME exec PROGRAM [ARG...]' (no shell): an event TIME (30s,
    /// 1m30s, 500ms) into each test's --duration, its disruption measured (repeatable; with
    /// --worker, worker 0 fires them)
    #[argh(option)]
    pub at: Vec<String>,
    /// where --at's commands go: primary (default), replica, all or HOST:PORT
    #[argh(option)]
    pub at_node: Option<String>,
    /// send CLIENT TRACKING on before starting benchmark
    #[argh(switch)]
    pub enable_tracking: bool,
    /// keep alive: 1 keeps connections open, 0 reconnects (default 1)
    #[argh(option, short = 'k', default = "1")]
    pub keepalive: i64,
    /// close each connection and open it again after N requests, all answered (memtier's
    /// --reconnect-interval); closed loop
    #[argh(option)]
    pub reconnect_every: Option<u64>,
    /// use random keys for SET/GET/INCR, random values for SADD, random members and scores for
    /// ZADD: __rand_int__ becomes a number in [0, keyspacelen)
    #[argh(option, short = 'r')]
    pub keyspacelen: Option<i64>,
    /// how __rand_int__ is drawn from the -r keyspace: uniform (default), sequential (0, 1, 2,
    /// ... over all connections), zipf:THETA (e.g. zipf:0.99) or gaussian (mean N/2, sd N/6)
    #[argh(option)]
    pub key_dist: Option<String>,
    /// valkey-benchmark 9's spelling of --key-dist sequential: placeholders take 0, 1, 2, ...
    /// over all connections instead of random keys (needs -r)
    #[argh(switch)]
    pub sequential: bool,
    /// put this before every key name of the default tests (key:, counter:, mylist, ...)
    #[argh(option)]
    pub key_prefix: Option<String>,
    /// pipeline N requests (default 1: no pipeline); a list 1,16,64 runs a step for each
    #[argh(option, short = 'P', default = "String::from(\"1\")")]
    pub pipeline: String,
    /// how -P keeps its N requests going: batch (default, redis-benchmark's -P: send N, wait
    /// for the N replies, send the next N) or window (N in flight, one sent as each reply lands)
    #[argh(option, default = "PipelineMode::Batch")]
    pub pipeline_mode: PipelineMode,
    /// quiet: just show query/sec values
    #[argh(switch, short = 'q')]
    pub quiet: bool,
    /// output in CSV format
    #[argh(switch)]
    pub csv: bool,
    /// significant figures of the latency histograms, 1 to 5 (default 3)
    #[argh(option, default = "3")]
    pub precision: i64,
    /// loop: run the tests forever
    #[argh(switch, short = 'l')]
    pub r#loop: bool,
    /// only run the comma separated list of tests (names as in the output, lower case)
    #[argh(option, short = 't')]
    pub tests: Option<String>,
    /// idle mode: just open N idle connections and wait
    #[argh(switch, short = 'I')]
    pub idle: bool,
    /// read the last argument of the command from standard input
    #[argh(switch, short = 'x')]
    pub stdin_arg: bool,
    /// seed of the random generator (default: from the clock); the same seed sends the same keys
    #[argh(option)]
    pub seed: Option<u64>,
    /// show the first error message of each kind the server replied with
    #[argh(switch, short = 'e')]
    pub show_errors: bool,
    /// send the server no INFO of respbench's own (the bottleneck verdict's reading at each
    /// test's start and end): only redis-benchmark's CONFIG GET and the benchmark reach it
    #[argh(switch)]
    pub no_server_probe: bool,
    /// how often the server's INFO (and a local server's threads' CPU) is sampled while a test
    /// runs, on a connection of its own: '1s', '250ms' or plain seconds (default: 1s)
    #[argh(option)]
    pub server_interval: Option<String>,
    /// functions in the Lua library -t function_load loads (valkey-benchmark 9; default 10)
    #[argh(option, default = "10")]
    pub num_functions: u32,
    /// keys passed to FCALL by -t fcall (valkey-benchmark 9; default 1)
    #[argh(option, default = "1")]
    pub num_keys_in_fcall: u32,
    /// a CSV file (TSV when its name has .tsv) whose header row names the fields: each request
    /// of the custom command takes the next row for its __field:NAME__ placeholders, cycling
    /// (valkey-benchmark 9)
    #[argh(option)]
    pub dataset: Option<String>,
    /// read at most N rows of --dataset (valkey-benchmark 9; default 0: all)
    #[argh(option, default = "0")]
    pub maxdocs: usize,
    /// the most of the --dataset file read, in bytes (default 1073741824: 1 GiB)
    #[argh(option, default = "respbench_session::config::DATASET_MAX_BYTES")]
    pub dataset_max_bytes: u64,
    /// the element each document of an XML --dataset (a name with .xml) is, whose child tags
    /// are its fields (valkey-benchmark 9)
    #[argh(option)]
    pub xml_root_element: Option<String>,
    /// event loop backend: mio (default, one mio event loop per thread), smol (one async task
    /// per connection) or uring (one io_uring per thread, Linux); a list (mio,smol,uring) runs
    /// every test on each and prints them side by side
    #[argh(option, default = "String::from(\"mio\")")]
    pub backend: String,
    /// with --backend uring: a kernel thread polls each ring's submissions, so the loops make
    /// almost no system calls (its CPU counts in the client's)
    #[argh(switch)]
    pub uring_sqpoll: bool,
    /// per-request timeout: a request (or connection handshake) with no reply after this long
    /// fails its connection and the run exits 1; '5s', '500ms' or plain seconds ('1.5'), up to
    /// 1 hour (default: wait forever)
    #[argh(option)]
    pub timeout: Option<String>,
    /// how long a connect may take before its connection fails (naming the address): '1s',
    /// '500ms' or plain seconds, up to 1 hour (default: as long as the kernel tries; the startup
    /// connection --timeout or 5s)
    #[argh(option)]
    pub connect_timeout: Option<String>,
    /// after a test's stop (the end of --duration, Ctrl-C), how long the requests still in
    /// flight (with --rps, and those due before the stop) may take to be answered before they
    /// are abandoned (counted as such, in the latencies as lower bounds; the run exits 1);
    /// '2s', '100ms' or plain seconds, up to 1 hour (default: 2s)
    #[argh(option)]
    pub drain_grace: Option<String>,
    /// a connection that fails mid-run (reset, closed, timed out, protocol error) reconnects
    /// after a backoff (10 ms, doubling up to 1 s) and the test goes on; its requests in flight
    /// count as errors of kind 'connection'; the run exits 1 if any was lost or a connection
    /// was still down at the end, else 0 with the outage reported (default: a failed connection
    /// ends the run)
    #[argh(switch)]
    pub reconnect: bool,
    /// with --reconnect: the wait before a connection's first attempt and the longest,
    /// FIRST[,MAX] ('1s', '500ms' or plain seconds; default 10ms,1s)
    #[argh(option)]
    pub reconnect_backoff: Option<String>,
    /// with --reconnect: each wait is this many times the one before (default 2)
    #[argh(option)]
    pub reconnect_factor: Option<String>,
    /// with --reconnect: attempts in a row after which a connection fails for good (default: no
    /// limit)
    #[argh(option)]
    pub reconnect_attempts: Option<u32>,
    /// with a SCAN, HSCAN, SSCAN or ZSCAN command (cursor 0): send the cursor each reply returns
    /// until it returns 0, then start again; first calls and continuations reported apart
    #[argh(switch)]
    pub follow_cursor: bool,
    /// with --follow-cursor: at most N continuations in a walk, then cursor 0 again (default:
    /// each cursor to 0)
    #[argh(option)]
    pub follow_cursor_limit: Option<u64>,
    /// with --mix or --mix-command: the commands go in turn, each its weight's times in a
    /// row, instead of drawn at random; one turn shared by all clients
    #[argh(switch)]
    pub mix_in_turn: bool,
    /// as --mix-in-turn, each client on its own turn (memtier's order of its --commands:
    /// MULTI, a write and EXEC go in their order on each connection)
    #[argh(switch)]
    pub mix_in_turn_per_client: bool,
    /// error replies that mean "wait", retried on the same connection after a backoff: the
    /// first words, such as LOADING,BUSY,TRYAGAIN; latency runs from the first send
    #[argh(option)]
    pub retry_on: Option<String>,
    /// with --retry-on: FIRST[,MAX], the pause before a request's first retry, doubled for each
    /// next one up to MAX (default: 1ms,1s)
    #[argh(option)]
    pub retry_backoff: Option<String>,
    /// with --retry-on: how many times one request is retried before it gives up, counted as
    /// failed with the error it got (default: 64)
    #[argh(option)]
    pub retry_limit: Option<u32>,
    /// ask the primary of these Sentinels (HOST:PORT[,…]) before the run and, with --reconnect,
    /// again each time a connection comes back: a failover is followed
    #[argh(option)]
    pub sentinel: Option<String>,
    /// with --sentinel: the master's name in the Sentinels' configuration
    #[argh(option)]
    pub sentinel_master: Option<String>,
    /// the Sentinels' own ACL user (-a and --user are the data nodes')
    #[argh(option)]
    pub sentinel_user: Option<String>,
    /// the Sentinels' own password (requirepass in sentinel.conf)
    #[argh(option)]
    pub sentinel_password: Option<String>,
    /// with --retry-on: write the keys of the requests that gave up to this file, one a line
    #[argh(option)]
    pub failed_keys: Option<String>,
    /// also write the results as a JSON document (schema respbench/2, see docs/json.md) to this
    /// file, or to stdout with '-' (the text report is then not printed)
    #[argh(option)]
    pub json: Option<String>,
    /// output version and exit
    #[argh(switch, short = 'v')]
    pub version: bool,
    /// print the scenario file (TOML) this command line stands for, for respbench run FILE,
    /// and exit
    #[argh(switch)]
    pub print_scenario: bool,
    /// establish a secure TLS connection
    #[argh(switch)]
    pub tls: bool,
    /// server name indication for TLS (SNI is sent only with this option)
    #[argh(option)]
    pub sni: Option<String>,
    /// CA certificate file (PEM) to verify the server with (default: the system's roots)
    #[argh(option)]
    pub cacert: Option<String>,
    /// directory of CA certificates (PEM files) to verify the server with
    #[argh(option)]
    pub cacertdir: Option<String>,
    /// allow insecure TLS connection by skipping certificate validation
    #[argh(switch)]
    pub insecure: bool,
    /// client certificate (PEM) to authenticate with; needs --key
    #[argh(option)]
    pub cert: Option<String>,
    /// private key (PEM) of the client certificate; needs --cert
    #[argh(option)]
    pub key: Option<String>,
    /// TLS 1.2 cipher suites to offer: an OpenSSL cipher-list string (DEFAULT:-AES128-SHA256,
    /// HIGH:!aNULL, ECDHE+AESGCM) evaluated over the suites rustls has, or exact names
    /// (ECDHE-RSA-AES128-GCM-SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
    #[argh(option)]
    pub tls_ciphers: Option<String>,
    /// TLS 1.3 cipher suites to offer, colon separated (TLS_AES_128_GCM_SHA256:...)
    #[argh(option)]
    pub tls_ciphersuites: Option<String>,
    /// TLS key exchange groups to offer, in order, colon separated, in OpenSSL's names
    /// (X25519:P-256:P-384, also secp256r1/prime256v1, secp384r1; '?' before a name skips it
    /// where rustls lacks it), as OpenSSL's groups lists
    #[argh(option)]
    pub tls_groups: Option<String>,
    /// open loop: send at this total rate (requests per second), latency counted from each
    /// request's intended send time; a list (10000,20000,40000) runs one step per rate
    #[argh(option)]
    pub rps: Option<String>,
    /// redis-benchmark 8's spelling of --rps N: one total rate, a pipelined command counting one
    #[argh(option)]
    pub rate: Option<String>,
    /// with -t pubsub, blpop, xreadgroup: subscribers (waiters, consumers), connections of their own, whose
    /// delivery latency and missing/duplicated/out-of-order messages are reported; a list
    /// (1,10,100) runs one step each (default: 1)
    #[argh(option)]
    pub subscribers: Option<String>,
    /// with -t pubsub: publish to this many channels in turn, each subscriber subscribed to all
    #[argh(option)]
    pub channels: Option<String>,
    /// a ramp within one test, its connections kept open: 'clients 10..200 step 10 every 5s'
    /// or 'rps 1000..50000 step 1000 every 2s' (the duration is the steps' unless given)
    #[argh(option)]
    pub ramp: Option<String>,
    /// capacity search: find the highest --rps whose steps meet these latency objectives on the
    /// corrected latency, comma separated (p99<=1ms,p99.9<=5ms; service:p99<=500us for the
    /// service time); with --rps LOW-HIGH inside that range, else below a short closed-loop
    /// probe's ceiling; each step is an open-loop test of --duration (default 5s) after --warmup
    /// (default 1s)
    #[argh(option)]
    pub slo: Option<String>,
    /// replay a capture (redis-cli monitor's text or respbench capture's) at its recorded pace
    #[argh(option)]
    pub replay: Option<String>,
    /// with --replay FILE of plain commands (one a line, redis-cli's quoting): in-order (each
    /// connection sends the lines in turn; the default) or random (each request a line drawn)
    #[argh(option)]
    pub replay_order: Option<String>,
    /// play --replay N times as fast (default 1)
    #[argh(option)]
    pub speed: Option<String>,
    /// play the capture N times; with --key-prefix P, pass K's keys begin with PK:
    #[argh(option)]
    pub replay_loop: Option<u64>,
    /// stop --replay at the first malformed line instead of counting it
    #[argh(switch)]
    pub strict: bool,
    /// with --replay, also send what changes the server's configuration, users or whole keyspace
    #[argh(switch)]
    pub replay_admin: bool,
    /// respbench capture: the file to write
    #[argh(option, short = 'o')]
    pub output: Option<String>,
    /// respbench capture: stop after N commands
    #[argh(option)]
    pub max_commands: Option<u64>,
    /// with --slo: stop bisecting when the bracket is this narrow: a share of the answer (2%, the
    /// default) or requests per second (500)
    #[argh(option)]
    pub slo_resolution: Option<String>,
    /// with --slo: the most open-loop steps the search runs (default 12; the probe is extra)
    #[argh(option)]
    pub slo_steps: Option<u32>,
    /// open-loop arrivals: constant (default) or poisson
    #[argh(option, default = "String::from(\"constant\")")]
    pub arrival: String,
    /// open loop: the event loops wake on a grid of this length and send every request due by
    /// then, so a request goes out up to this late (its lateness is reported and counts in its
    /// latency); 0 wakes at each request's intended time (default: 0 while each loop's share
    /// is at most 4000 a second, 250us above; same units as --duration)
    #[argh(option)]
    pub rps_slack: Option<String>,
    /// run each test for this long (30s, 500ms, 2m; a plain number is seconds) instead of -n
    #[argh(option)]
    pub duration: Option<String>,
    /// before each test, send its workload this long, unmeasured: those requests are extra,
    /// before the measured -n or --duration (same units as --duration; valkey-benchmark 9)
    #[argh(option)]
    pub warmup: Option<String>,
    /// one test mixing default tests by weight, e.g. set:1,get:10; a test's own keys after @:
    /// set:1@seq/10000,get:10@zipf:0.99 (a --key-dist, /N keys, -r's when left out)
    #[argh(option)]
    pub mix: Option<String>,
    /// add a custom command to the mix: 'WEIGHT COMMAND ARG...' (repeatable; WEIGHT@DIST/N
    /// gives it its own keys; arguments quoted as redis-cli's: "a b", "\x86")
    #[argh(option)]
    pub mix_command: Vec<String>,
    /// each SET key value carries EX, or PX for 500ms-1500ms, drawn from MIN-MAX (memtier)
    #[argh(option)]
    pub expiry_range: Option<String>,
    /// each GET that misses is followed on its connection by a SET of its key (-d's value,
    /// --expiry-range's TTL): a cache filling itself; reports hits, misses and a miss's latency
    #[argh(switch)]
    pub cache_aside: bool,
    /// with -t expiry: the keys' deadlines spread over this, 1 s after each write (default 2s)
    #[argh(option)]
    pub expiry_window: Option<String>,
    /// with -t expiry: how long after a deadline its notification is waited for (default 5s)
    #[argh(option)]
    pub expiry_grace: Option<String>,
    /// with -t expiry: this many other keys written first, deadlines a day ahead
    #[argh(option)]
    pub expiry_volatile: Option<String>,
    /// with -t expiry: this many other keys written first, without a deadline
    #[argh(option)]
    pub expiry_persistent: Option<String>,
    /// with -t expiry: turn on the server's expired events (notify-keyspace-events Ex) for the
    /// test, restoring the old setting after it
    #[argh(switch)]
    pub set_notify: bool,
    /// with -t tracking: CLIENT TRACKING's mode, default, bcast or optin (default: default)
    #[argh(option)]
    pub tracking_mode: Option<String>,
    /// with --tracking-mode bcast: a prefix of the keys broadcast, repeated (default: the test's)
    #[argh(option)]
    pub tracking_prefix: Vec<String>,
    /// with -t tracking: readers speak RESP2 and hear invalidations on a REDIRECT connection
    #[argh(switch)]
    pub tracking_redirect: bool,
    /// with -t tracking: the first N readers turn tracking off once they have read
    #[argh(option)]
    pub tracking_off: Option<String>,
    /// after each test, print its per-second time series (rps, p50, p99, errors)
    #[argh(switch)]
    pub series: bool,
    /// run each test (each step of a sweep) this many times and report the mean and spread of
    /// the runs (default 1)
    #[argh(option, default = "1")]
    pub repeat: u32,
    /// before a test that reads string keys (GET), write every key of the -r keyspace with
    /// SET at the -d value size, sequentially and pipelined, unmeasured, so that it reads hits
    #[argh(switch)]
    pub preload: bool,
    /// data to build before the tests, over their keys (key:000000000000 …), as
    /// 'hash 10000 keys x 50 fields x 100B', 'string 10000 keys x 16-1024B', 'list|set|zset N
    /// keys x M members x SIZE', 'stream N keys x M entries [x F fields] x SIZE'; repeatable
    #[argh(option)]
    pub dataset_shape: Vec<String>,
    /// build the --dataset-shape data and report it (encodings, memory), without a test
    #[argh(switch)]
    pub dataset_only: bool,
    /// do not flag a read test whose replies were mostly nil (keys that did not exist)
    #[argh(switch)]
    pub miss_ok: bool,
    /// SET values that encode their key and version, each GET's reply checked against them;
    /// mismatches counted and the first shown, exit 1 (memtier_benchmark's --data-verify)
    #[argh(switch)]
    pub verify: bool,
    /// GET every key of -r once (-n of them) and check it against --verify's encoding
    #[argh(switch)]
    pub verify_only: bool,
    /// while a test runs, print each second's rps, p50, p99 and errors on stderr
    #[argh(switch)]
    pub live: bool,
    /// stream each second's latency histogram of every test to this file as the run goes, in
    /// HdrHistogram's interval log format (tagged with the test's name)
    #[argh(option)]
    pub hlog: Option<String>,
    /// write each test's latency distribution to PREFIXTEST.hgrm (and an open loop's service
    /// time to PREFIXTEST.service.hgrm): HdrHistogram's percentile-distribution text, as wrk2
    /// prints it and HdrHistogram's plotter reads it
    #[argh(option)]
    pub hgrm: Option<String>,
    /// the latency percentiles the report shows, as memtier_benchmark's option: 50,99,99.9,99.99
    /// (verbose summary columns and -q lines; CSV keeps redis-benchmark's columns)
    #[argh(option)]
    pub print_percentiles: Option<String>,
    /// this process is worker I of N (0/4 .. 3/4) splitting the run: -n, -c and --rps are the
    /// whole run's, divided among the workers (the first ones take the remainder), --key-dist
    /// sequential gives each its own part of the -r keyspace, and --seed gives each its own
    /// streams; without it, JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job) of
    /// RESPBENCH_WORKERS is used when RESPBENCH_WORKERS is set; respbench merge checks it has
    /// every part
    #[argh(option)]
    pub worker: Option<String>,
    /// connect, then begin the measured window at this instant (after --warmup, which runs just
    /// before it): RFC 3339 (2026-12-01T10:00:00Z, or with an offset such as +01:00) or Unix
    /// seconds (1796119200.5); a worker that is late says so and records by how much
    #[argh(option)]
    pub start_at: Option<String>,
    /// a second server, HOST:PORT: each test runs on both in turn, A then B, B then A, … over
    /// --repeat; one --json document holds both, which respbench compare reads
    #[argh(option)]
    pub ab: Option<String>,
    /// serve the run's live figures for Prometheus at HOST:PORT (:PORT is 127.0.0.1, 0.0.0.0:PORT
    /// every interface, unauthenticated): GET /metrics, for the whole run (docs/long-runs.md)
    #[argh(option)]
    pub metrics: Option<String>,
    /// memtier_benchmark's form of --metrics 127.0.0.1:PORT
    #[argh(option)]
    pub prometheus_port: Option<u16>,
    /// after the run, how long --metrics waits for a scrape of the final figures (default 15s;
    /// 0 closes at once)
    #[argh(option)]
    pub metrics_linger: Option<String>,
    /// send each second's figures as StatsD datagrams over UDP to HOST[:PORT] (8125), named
    /// as memtier_benchmark names them: PREFIX.LABEL.ops_sec (docs/long-runs.md)
    #[argh(option)]
    pub statsd: Option<String>,
    /// the StatsD metric names' first part (default respbench; memtier's dashboards: memtier)
    #[argh(option)]
    pub statsd_prefix: Option<String>,
    /// the StatsD metric names' run label, after the prefix (default "default")
    #[argh(option)]
    pub statsd_label: Option<String>,
    /// POST each test's start and end as Graphite event annotations to this HTTP port of the
    /// --statsd host
    #[argh(option)]
    pub graphite_port: Option<u16>,
    /// the command to benchmark instead of the default suite, with its arguments
    #[argh(positional, greedy)]
    pub command: Vec<String>,
}

/// `-n` when not given, as in redis-benchmark.
const DEFAULT_REQUESTS: i64 = 100_000;

/// `--drain-grace` when not given.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The TLS options of a run: `None` unless `on` (`--tls`, or `asked_by` a `rediss://` URI).
/// The other TLS options without TLS are ignored, as redis-benchmark ignores them, with a
/// warning, since they show that TLS was meant.
fn tls_config(on: bool, asked_by: &str, o: TlsOptions) -> Result<Option<TlsOptions>, OptionError> {
    if !on {
        let given = o.given();
        if !given.is_empty() {
            say!("WARNING: {} ignored without --tls", given.join(", "));
        }
        return Ok(None);
    }
    #[cfg(feature = "tls")]
    {
        let _ = asked_by;
        Ok(Some(o))
    }
    #[cfg(not(feature = "tls"))]
    {
        Err(format!("{asked_by}: {NO_TLS}").into())
    }
}

/// What `--tls` says in a build without TLS.
#[cfg(not(feature = "tls"))]
const NO_TLS: &str =
    "this respbench was built without TLS (cargo feature `tls`, on by default): rebuild without --no-default-features";

impl Opts {
    /// Checks the rate, time and mix options.
    fn open_loop(&self) -> Result<OpenLoopConfig, OptionError> {
        let mut o = OpenLoopConfig {
            show_series: self.series,
            cache_aside: self.cache_aside,
            live: self.live,
            hlog: self.hlog.clone(),
            hgrm: self.hgrm.clone(),
            statsd: respbench_session::statsd::parse(
                self.statsd.as_deref(),
                self.statsd_prefix.as_deref(),
                self.statsd_label.as_deref(),
                self.graphite_port,
            )?,
            percentiles: match &self.print_percentiles {
                Some(list) => syntax::percentiles(list)?,
                None => Vec::new(),
            },
            follow_cursor: self.follow_cursor,
            follow_cursor_limit: self.follow_cursor_limit.unwrap_or(0),
            mix_in_turn: self.mix_in_turn,
            mix_in_turn_per_client: self.mix_in_turn_per_client,
            ..OpenLoopConfig::default()
        };
        if let Some(list) = &self.subscribers {
            o.subscribers = syntax::subscribers(list, self.tests.as_deref())?;
        }
        if let Some(v) = &self.channels {
            o.channels = syntax::channels(v, self.tests.as_deref(), self.cluster)?;
        }
        if let Some(list) = self.rps.as_ref().filter(|_| self.slo.is_none()) {
            o.rates = syntax::rates(list)?;
        }
        if let Some(r) = &self.rate {
            o.rates = syntax::rate(r, &o.rates, self.idle, self.slo.is_some())?;
            o.as_rate = true;
        }
        o.poisson = match self.arrival.as_str() {
            "constant" => false,
            "poisson" => true,
            other => return Err(bad("--arrival", other, "the arrivals are constant and poisson")),
        };
        if o.poisson && o.rates.is_empty() && self.slo.is_none() && self.ramp.is_none() {
            return Err("--arrival poisson needs a target rate (--rps)".into());
        }
        if let Some(s) = &self.rps_slack {
            let slack = syntax::duration("--rps-slack", s)?;
            if slack > Duration::from_millis(100) {
                return Err(bad("--rps-slack", s, "must be at most 100ms"));
            }
            if o.rates.is_empty() && self.slo.is_none() && self.ramp.is_none() {
                return Err("--rps-slack needs a target rate (--rps) or a capacity search (--slo)".into());
            }
            o.slack = Some(slack);
        }
        if let Some(d) = &self.duration {
            let d = syntax::duration("--duration", d)?;
            if d.is_zero() {
                return Err(bad("--duration", self.duration.as_deref().unwrap_or(""), "must be more than 0"));
            }
            if self.requests.is_some() {
                return Err(Conflict(
                    "-n",
                    "--duration",
                    "a run is either a number of requests or a length of time",
                ));
            }
            if self.r#loop {
                return Err(Conflict("-l", "--duration", ""));
            }
            o.duration = Some(d);
        }
        if let Some(w) = &self.warmup {
            o.warmup = syntax::duration("--warmup", w)?;
        }
        if self.slo.is_some() {
            // A search's steps are timed: defaults that give a stable answer in a few minutes.
            if self.requests.is_some() {
                return Err(Conflict("-n", "--slo", "a search's steps are timed (--duration)"));
            }
            o.duration = o.duration.or(Some(Duration::from_secs(5)));
            if self.warmup.is_none() {
                o.warmup = Duration::from_secs(1);
            }
        }
        if let Some(spec) = &self.mix {
            o.mix = syntax::mix(spec)?;
            o.mix_keys = syntax::mix_keys(spec)?;
        }
        o.mix_commands = self.mix_command.iter().map(|c| syntax::mix_command(c)).collect::<Result<_, _>>()?;
        o.mix_command_keys =
            self.mix_command.iter().map(|c| syntax::mix_command_keys(c)).collect::<Result<_, _>>()?;
        o.expiry = self.expiry_range.as_deref().map(syntax::expiry_range).transpose()?;
        let given = [&self.expiry_window, &self.expiry_grace, &self.expiry_volatile, &self.expiry_persistent];
        o.expiry_test =
            syntax::expiry_test(given.map(Option::as_deref), self.set_notify, self.tests.as_deref())?;
        let (mode, off) = (self.tracking_mode.as_deref(), self.tracking_off.as_deref());
        let (prefixes, redirect, tests) =
            (&self.tracking_prefix, self.tracking_redirect, self.tests.as_deref());
        o.tracking_test = syntax::tracking_test(mode, prefixes, redirect, off, tests)?;
        if o.mix.len() + o.mix_commands.len() > 64 {
            return Err("a mix takes at most 64 commands".into());
        }
        if o.has_mix() && !self.command.is_empty() {
            return Err(Conflict(
                "a command after the options",
                "--mix",
                "add it to the mix with --mix-command",
            ));
        }
        if o.has_mix() && self.tests.is_some() {
            return Err(Conflict("-t", "--mix", "name the tests in the mix"));
        }
        if (!o.rates.is_empty() || o.duration.is_some()) && self.idle {
            return Err("-I takes no --rps or --duration".into());
        }
        Ok(o)
    }

    /// Checks every value and resolves defaults into a [`Config`].
    pub fn check(self) -> Result<Config, OptionError> {
        let (rfr, replicas) = self.read_from_replicas()?;
        let key_args = match &self.key_args {
            None => None,
            Some(list) => {
                if !self.cluster && self.replicas.is_none() && self.replica.is_empty() {
                    return Err("--key-args routes a custom command over several nodes: add --cluster, \
                                --replicas auto or --replica HOST:PORT"
                        .into());
                }
                if self.command.is_empty() && self.mix_command.is_empty() {
                    return Err(
                        "--key-args is for a custom command (after the options, or --mix-command)".into()
                    );
                }
                Some(syntax::key_args(list)?)
            }
        };
        let backends = syntax::backends(&self.backend)?;
        if self.uring_sqpoll && !backends.contains(&Backend::Uring) {
            return Err("--uring-sqpoll needs --backend uring".into());
        }
        let clients = syntax::numbers(&self.clients, "-c", |c| {
            (1..=1_000_000)
                .contains(&c)
                .then_some(c as usize)
                .ok_or("the number of clients must be 1 to 1000000")
        })?;
        // redis-benchmark takes -P 0 or less as 1.
        let pipelines = syntax::numbers(&self.pipeline, "-P", |p| Ok(p.clamp(1, u32::MAX as i64) as u32))?;
        let threads = syntax::numbers(&self.threads, "--threads", |t| {
            (0..=500).contains(&t).then_some(t as usize).ok_or("must be 0 to 500")
        })?;
        let requests = self.requests.unwrap_or(DEFAULT_REQUESTS);
        if requests < 0 {
            return Err(bad("-n", requests, "the number of requests must be 0 or more"));
        }
        let open = self.open_loop()?;
        if !(1..=1000).contains(&self.repeat) {
            return Err(bad("--repeat", self.repeat, "must be 1 to 1000 runs"));
        }
        if !(1..=5).contains(&self.precision) {
            return Err(bad("--precision", self.precision, "must be 1 to 5 significant figures"));
        }

        if !(0..=1).contains(&self.keepalive) {
            return Err(bad("-k", self.keepalive, "must be 1 (keep alive) or 0 (reconnect)"));
        }
        if self.dbnum < 0 || self.dbnum > u32::MAX as i64 {
            return Err(bad("--dbnum", self.dbnum, "must be a database number, 0 or more"));
        }
        let keyspace = match self.keyspacelen {
            Some(r) if r < 0 => return Err(bad("-r", r, "the keyspace length must be 0 or more")),
            Some(r) => Some(r as u64),
            None => None,
        };
        // A list without weights is a sweep, one step per size; with weights, one mix of sizes.
        let d = &self.datasize;
        let sizes: Vec<&str> =
            if d.contains(',') && !d.contains(':') { d.split(',').collect() } else { vec![d] };
        let datasizes = sizes
            .iter()
            .map(|s| ValueSize::parse(s.trim()).map_err(|why| bad("-d", d, &why)))
            .collect::<Result<Vec<_>, _>>()?;
        let values = datasizes[0].clone();
        let key_dist = match &self.key_dist {
            Some(d) => KeyDist::parse(d).map_err(|why| bad("--key-dist", d, &why))?,
            None if self.sequential => KeyDist::Sequential,
            None => KeyDist::Uniform,
        };
        if self.sequential && key_dist != KeyDist::Sequential {
            return Err(Conflict("--sequential", "--key-dist", "give one of them"));
        }
        match (key_dist, keyspace) {
            (KeyDist::Uniform, _) => {}
            (_, None) if self.sequential => {
                return Err("--sequential needs -r <keyspacelen>: keys go over [0, keyspacelen)".into());
            }
            (_, None) => {
                let d = self.key_dist.as_deref().unwrap_or_default();
                return Err(bad(
                    "--key-dist",
                    d,
                    "needs -r <keyspacelen>: keys are drawn from [0, keyspacelen)",
                ));
            }
            (d, Some(n)) => drop(d.space(n).map_err(|why| bad("--key-dist", d, &why))?),
        }
        let output = if self.csv {
            Output::Csv
        } else if self.quiet {
            Output::Quiet
        } else {
            Output::Verbose
        };
        let timeout = self.timeout.as_deref();
        let timeout = timeout
            .map(|v| syntax::bounded_duration("--timeout", v, "leave --timeout out to wait forever"))
            .transpose()?;
        let connect_timeout = self.connect_timeout.as_deref();
        let connect_timeout = connect_timeout
            .map(|v| syntax::bounded_duration("--connect-timeout", v, "leave --connect-timeout out"))
            .transpose()?;
        let drain_grace = match self.drain_grace.as_deref() {
            Some(v) => syntax::bounded_duration("--drain-grace", v, "leave --drain-grace out for 2s")?,
            None => DRAIN_GRACE,
        };
        let server_interval = match self.server_interval.as_deref() {
            Some(v) => syntax::bounded_duration("--server-interval", v, "--no-server-probe samples nothing")?,
            None => Duration::from_secs(1),
        };
        if self.idle && self.json.is_some() {
            // Idle mode measures nothing: a document would be empty, so say so before it starts.
            return Err("--json cannot be used with -I: idle mode records no results".into());
        }
        let seed = self.seed.unwrap_or_else(clock_seed);
        let worker = match &self.worker {
            Some(w) => Some(respbench_session::workers::parse_worker(w)?),
            None => crate::workers::worker_from_env(|k| std::env::var(k).ok())?,
        };
        let start_at =
            self.start_at.as_deref().map(respbench_session::workers::parse_start_at_now).transpose()?;
        if start_at.is_some() && self.idle {
            return Err(Conflict("--start-at", "-I", "idle mode has no measured window to start"));
        }
        let mut c = Config {
            endpoint: match &self.socket {
                Some(s) => Endpoint::Unix(s.into()),
                None => Endpoint::Tcp { host: self.host.clone(), port: self.port },
            },
            cluster: self.cluster,
            rfr,
            replicas,
            tls: None,
            user: self.user,
            password: self.password,
            db: self.dbnum as u32,
            clients: clients[0],
            requests: requests as u64,
            // A fixed -d is clamped into [1, 1 GiB] as redis-benchmark does (in ValueSize::parse).
            datasize: values.max(),
            values,
            key_dist,
            key_prefix: self.key_prefix.unwrap_or_default(),
            resp3: self.resp3,
            threads: threads[0],
            mptcp: self.mptcp,
            tracking: self.enable_tracking,
            keepalive: self.keepalive == 1,
            reconnect_every: self.reconnect_every,
            keyspace,
            pipeline: pipelines[0],
            pipeline_mode: self.pipeline_mode,
            output,
            precision: self.precision as u8,
            repeat: self.r#loop,
            preload: self.preload,
            dataset_shapes: self
                .dataset_shape
                .iter()
                .map(|d| respbench_session::dataset::Shape::parse(d))
                .collect::<Result<_, _>>()?,
            dataset_only: self.dataset_only,
            miss_ok: self.miss_ok,
            sweep: Sweep { datasizes, clients, pipelines, threads, repeat: self.repeat as usize },
            tests: self.tests,
            idle: self.idle,
            stdin_arg: self.stdin_arg,
            seed,
            show_errors: self.show_errors,
            no_server_probe: self.no_server_probe,
            server_interval,
            num_functions: self.num_functions,
            num_keys_in_fcall: self.num_keys_in_fcall,
            valkey_suite: false,
            dataset: self.dataset,
            maxdocs: self.maxdocs,
            dataset_max_bytes: self.dataset_max_bytes,
            xml_root_element: self.xml_root_element,
            command: self.command.into_iter().map(String::into_bytes).collect(),
            backends,
            uring_sqpoll: self.uring_sqpoll,
            json: self.json,
            open,
            timeout,
            connect_timeout,
            drain_grace,
            reconnect: self.reconnect,
            reconnect_backoff: syntax::reconnect(
                self.reconnect,
                self.reconnect_backoff.as_deref(),
                self.reconnect_factor.as_deref(),
                self.reconnect_attempts,
            )?,
            sentinel: None,
            retry: syntax::retry(
                self.retry_on.as_deref(),
                self.retry_backoff.as_deref(),
                self.retry_limit,
                self.failed_keys,
            )?,
            split: None,
            start_at,
            key_args,
            capacity: None,
            replay: syntax::replay(
                self.replay.as_deref(),
                self.speed.as_deref(),
                self.replay_loop,
                self.strict,
                self.replay_admin,
            )?,
            capture: None,
            ab: None,
            events: syntax::events(&self.at, self.at_node.as_deref())?,
            metrics: respbench_session::metrics::parse(
                self.metrics.as_deref(),
                self.prometheus_port,
                self.metrics_linger.as_deref(),
                self.idle,
            )?,
            verify: Default::default(),
            memtier: None,
            groups: Vec::new(),
            scenario: None,
        };
        respbench_session::commands::plain(&mut c, self.replay_order.as_deref())?;
        respbench_session::verify::check(&mut c, self.verify, self.verify_only, self.requests.is_some())?;
        let given =
            [("-n", self.requests.is_some()), ("--slo", self.slo.is_some()), ("--worker", worker.is_some())];
        c.apply_ramp(self.ramp.as_deref().map(syntax::ramp).transpose()?, &given)?;
        respbench_session::event::check(&c.events, c.open.duration)?;
        if worker.is_some_and(|w| w.index > 0) {
            c.events = Default::default();
        }
        if let Some(w) = worker {
            if c.idle {
                return Err(Conflict("--worker", "-I", "idle mode measures nothing to split"));
            }
            respbench_session::workers::split(&mut c, w)?;
        }
        if self.slo.is_none() && (self.slo_resolution.is_some() || self.slo_steps.is_some()) {
            return Err("--slo-resolution and --slo-steps are the capacity search's: give --slo".into());
        }
        if let Some(slo) = &self.slo {
            c.capacity = Some(respbench_session::capacity::settings(
                slo,
                self.slo_resolution.as_deref(),
                self.slo_steps,
                self.rps.as_deref(),
                &c,
            )?);
        }
        respbench_session::sides::apply(&mut c, self.ab.as_deref())?;
        let mut tls_by = self.tls.then_some("--tls");
        let mut sentinel_url = None;
        if let Some(uri) = &self.uri {
            let u = syntax::uri(uri)?;
            c.user = u.user.or(c.user);
            c.password = u.password.or(c.password);
            c.db = u.db.unwrap_or(c.db);
            c.endpoint = u.endpoint.unwrap_or(c.endpoint);
            if u.secure {
                tls_by = tls_by.or(Some("-u rediss://"));
            }
            sentinel_url = u.sentinel;
        }
        let auth = (self.sentinel_user.clone(), self.sentinel_password.clone());
        let (list, master) = (self.sentinel.as_deref(), self.sentinel_master.as_deref());
        c.sentinel = syntax::sentinel(list, master, sentinel_url, auth)?;
        // redis-cli's variable, when neither -a nor -u gave one (--askpass, later, wins over all).
        if c.password.is_none() {
            c.password = std::env::var("REDISCLI_AUTH").ok().filter(|p| !p.is_empty());
        }
        let tls = TlsOptions {
            sni: self.sni,
            cacert: self.cacert.map(PathBuf::from),
            cacertdir: self.cacertdir.map(PathBuf::from),
            insecure: self.insecure,
            cert: self.cert.map(PathBuf::from),
            key: self.key.map(PathBuf::from),
            ciphers: self.tls_ciphers,
            ciphersuites: self.tls_ciphersuites,
            groups: self.tls_groups,
        };
        if c.cluster {
            // After -u, which can set both.
            if c.db != 0 {
                return Err("SELECT is refused in cluster mode: drop --dbnum".into());
            }
            if matches!(c.endpoint, Endpoint::Unix(_)) {
                return Err("--cluster needs a TCP address (-h/-p), not -s".into());
            }
        }
        c.tls = tls_config(tls_by.is_some(), tls_by.unwrap_or_default(), tls)?;
        respbench_session::dataset::check(&c.dataset_shapes, c.dataset_only)?;
        Ok(c)
    }

    /// Checks `--rfr`, `--replicas` and `--replica` together (and with `--cluster`).
    fn read_from_replicas(&self) -> Result<(Rfr, Replicas), OptionError> {
        let rfr = match self.rfr.as_deref() {
            None => None,
            Some("no") => Some(Rfr::No),
            Some("yes") => Some(Rfr::Yes),
            Some("all") => Some(Rfr::All),
            Some(other) => return Err(bad("--rfr", other, "the choices are no, yes and all")),
        };
        let replicas = match (&self.replicas, self.replica.is_empty()) {
            (Some(v), _) if v != "auto" => {
                return Err(bad(
                    "--replicas",
                    v,
                    "the only value is auto (name replicas with --replica HOST:PORT)",
                ))
            }
            (Some(_), false) => {
                return Err(Conflict(
                    "--replicas auto",
                    "--replica",
                    "name the replicas or let respbench find them",
                ))
            }
            (Some(_), true) => Replicas::Auto,
            (None, false) => Replicas::Listed(
                self.replica
                    .iter()
                    .map(|r| syntax::host_port(r).map_err(|why| bad("--replica", r, why)))
                    .collect::<Result<_, _>>()?,
            ),
            (None, true) => Replicas::None,
        };
        if self.cluster && replicas != Replicas::None {
            return Err(
                "--replicas and --replica are for a standalone primary; in cluster mode the replicas \
                        come from the cluster: use --rfr"
                    .into(),
            );
        }
        let rfr = match (rfr, &replicas) {
            // With a Sentinel, its replicas (SENTINEL REPLICAS).
            (Some(Rfr::Yes | Rfr::All), Replicas::None)
                if !self.cluster
                    && self.sentinel.is_none()
                    && !self.uri.as_ref().is_some_and(|u| u.contains("+sentinel://")) =>
            {
                return Err(
                    "--rfr reads from replicas: add --cluster, --replicas auto or --replica HOST:PORT".into(),
                )
            }
            (Some(Rfr::No), Replicas::Listed(_)) => {
                return Err("--rfr no sends no reads to the replicas you named".into())
            }
            (Some(Rfr::No), Replicas::Auto) => {
                return Err("--rfr no sends no reads to the replicas --replicas auto finds".into())
            }
            (Some(r), _) => r,
            (None, Replicas::None) => Rfr::No,
            (None, _) => Rfr::Yes,
        };
        Ok((rfr, replicas))
    }
}

/// Parses `args` with argh, each `--opt=value` among the options taken as `--opt value`
/// ([`crate::args::Options::split_equals`]): a help trigger prints the usage and exits 0; an
/// error names the bad argument, suggests the fix where it can (another tool's spelling, a
/// typo), points at `help` and exits 1.
pub(crate) fn parse_args<T: FromArgs>(command: &[&str], args: &[&str], help: &str) -> Result<T, ExitCode> {
    let options = crate::args::Options::of::<T>(command);
    let owned: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let split = options.split_equals(&owned);
    let args: Vec<&str> = split.iter().map(String::as_str).collect();
    T::from_args(command, &args).map_err(|e| {
        if e.status.is_ok() {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), e.output.as_bytes());
            ExitCode::SUCCESS
        } else {
            let said = e.output.trim_end();
            let hint = said
                .strip_prefix("Unrecognized argument: ")
                .and_then(|arg| crate::help::suggest(arg.trim(), &options.long))
                .map(|h| format!("\n{h}"))
                .unwrap_or_default();
            say!("{}{hint}\nRun '{help}' for the options.", crate::args::shown(said));
            ExitCode::from(1)
        }
    })
}

/// A seed for runs without `--seed`: the clock and the process id, as redis-benchmark does.
fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_report::{doc, json};
    use respbench_session::server::ServerInfo;

    fn parse(args: &[&str]) -> Result<Config, String> {
        let o = Opts::from_args(&["respbench"], args).map_err(|e| e.output)?;
        o.check().map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_redis_benchmark_defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.endpoint, Endpoint::Tcp { host: "127.0.0.1".into(), port: 6379 });
        assert_eq!((c.clients, c.requests, c.datasize, c.pipeline, c.precision), (50, 100_000, 3, 1, 3));
        assert!(c.keepalive && c.keyspace.is_none() && c.output == Output::Verbose);
    }

    #[test]
    fn published_lines_parse() {
        let c = parse(&[
            "-h",
            "10.0.0.1",
            "-p",
            "6380",
            "-a",
            "testaccount:Rp829dlwa",
            "-n",
            "3000000",
            "-r",
            "10000000",
            "-c",
            "256",
            "-t",
            "set",
            "-d",
            "64",
            "--threads",
            "16",
        ])
        .unwrap();
        assert_eq!(c.endpoint, Endpoint::Tcp { host: "10.0.0.1".into(), port: 6380 });
        assert_eq!(c.password.as_deref(), Some("testaccount:Rp829dlwa"));
        assert_eq!((c.threads, c.clients, c.keyspace), (16, 256, Some(10_000_000)));
        let c = parse(&["-n", "100000", "-q", "script", "load", "redis.call('set','foo','bar')"]).unwrap();
        assert_eq!(c.command, [&b"script"[..], b"load", b"redis.call('set','foo','bar')"]);
        assert_eq!(c.output, Output::Quiet);
    }

    #[test]
    fn command_arguments_may_look_like_options() {
        let c = parse(&["-q", "zadd", "key", "-1", "member"]).unwrap();
        assert_eq!(c.command, [&b"zadd"[..], b"key", b"-1", b"member"]);
    }

    #[test]
    fn lists_make_sweeps_and_weights_make_mixes() {
        let c = parse(&["-d", "16,1024", "-c", "10,50", "-P", "1,0,16", "--threads", "2", "--repeat", "2"])
            .unwrap();
        assert_eq!(c.sweep.datasizes, [ValueSize::Fixed(16), ValueSize::Fixed(1024)]);
        assert_eq!(
            (c.sweep.clients.as_slice(), c.sweep.pipelines.as_slice()),
            ([10, 50].as_slice(), [1, 1, 16].as_slice())
        );
        let steps = c.sweep.steps();
        assert_eq!(steps.len(), 2 * 2 * 3 * 2);
        // --threads, then the runs, vary fastest; -d slowest.
        assert_eq!((steps[1].run, steps[2].pipeline, steps[12].values.max()), (1, 1, 1024));
        assert_eq!(c.sweep.label(&steps[13]), "-d 1024 -c 10 -P 1 run 2/2");
        assert_eq!(c.at(&steps[13]).datasize, 1024);
        // With a weight, a list is one mix of sizes, as before.
        let m = parse(&["-d", "16:3,1024"]).unwrap();
        assert_eq!(m.values, ValueSize::Weighted(vec![(16, 3), (1024, 1)]));
        assert!(!m.sweep.is_sweep());
        assert!(parse(&["-c", "10,0"]).unwrap_err().contains("-c"));
        assert!(parse(&["-P", "1,x"]).unwrap_err().contains("a list like"));
        assert!(parse(&["--repeat", "0"]).unwrap_err().contains("--repeat"));
    }

    #[test]
    fn bad_values_name_the_option() {
        assert!(parse(&["--precision", "0"]).unwrap_err().contains("--precision"));
        assert!(parse(&["-c", "0"]).unwrap_err().contains("-c"));
        assert!(parse(&["-n", "-5"]).unwrap_err().contains("-n"));
        assert!(parse(&["-k", "2"]).unwrap_err().contains("-k"));
        assert!(parse(&["--cluster"]).unwrap().cluster);
        assert!(parse(&["-n", "many"]).is_err());
        assert!(parse(&["--key-args", "1", "GET", "k"]).unwrap_err().contains("add --cluster"));
        assert!(parse(&["--cluster", "--key-args", "1"]).unwrap_err().contains("for a custom command"));
        assert!(parse(&["--cluster", "--key-args", "0", "GET", "k"]).unwrap_err().contains("--key-args"));
        assert!(parse(&["--cluster", "--key-args", "1,x", "GET", "k"]).unwrap_err().contains("--key-args"));
        assert_eq!(
            parse(&["--cluster", "--key-args", "1,3", "MSET", "a", "1", "b", "2"]).unwrap().key_args,
            Some(vec![1, 3])
        );
        assert!(parse(&["--bogus"]).unwrap_err().contains("--bogus"));
        assert!(parse(&["--backend", "tokio"]).unwrap_err().contains("--backend"));
        assert!(parse(&["-I", "--json", "r.json"]).unwrap_err().contains("--json cannot be used with -I"));
        assert_eq!(parse(&["--backend", "smol"]).unwrap().backends, [Backend::Smol]);
        assert_eq!(parse(&["--backend", "mio,smol"]).unwrap().backends, [Backend::Mio, Backend::Smol]);
        assert!(parse(&["--backend", "mio,mio"]).unwrap_err().contains("twice"));
        assert!(parse(&["--backend", "mio,"]).unwrap_err().contains("--backend"));
        assert_eq!(
            parse(&["--backend", "mio,smol,uring"]).unwrap().backends,
            [Backend::Mio, Backend::Smol, Backend::Uring]
        );
        assert!(parse(&["--uring-sqpoll", "--backend", "uring"]).unwrap().uring_sqpoll);
        assert!(parse(&["--uring-sqpoll"]).unwrap_err().contains("needs --backend uring"));
    }

    #[test]
    fn cluster_and_replica_options() {
        let c = parse(&[]).unwrap();
        assert_eq!((c.cluster, c.rfr, &c.replicas), (false, Rfr::No, &Replicas::None));
        let c = parse(&["--cluster", "--rfr", "all"]).unwrap();
        assert_eq!((c.cluster, c.rfr), (true, Rfr::All));
        assert_eq!(parse(&["--cluster", "--rfr", "no"]).unwrap().rfr, Rfr::No);
        // Naming replicas sends the reads to them unless --rfr says otherwise.
        let c = parse(&["--replicas", "auto"]).unwrap();
        assert_eq!((c.rfr, &c.replicas), (Rfr::Yes, &Replicas::Auto));
        let c = parse(&["--replica", "10.0.0.2:6380", "--replica", "[::1]:6381", "--replica", "::1:6382"])
            .unwrap();
        let tcp = |h: &str, port| Endpoint::Tcp { host: h.into(), port };
        assert_eq!(
            c.replicas,
            Replicas::Listed(vec![tcp("10.0.0.2", 6380), tcp("::1", 6381), tcp("::1", 6382)])
        );
        assert_eq!(c.rfr, Rfr::Yes);
        assert_eq!(parse(&["--replica", "r:1", "--rfr", "all"]).unwrap().rfr, Rfr::All);
        // A primary on a unix socket may have replicas on TCP.
        assert!(parse(&["-s", "/tmp/r.sock", "--replicas", "auto"]).is_ok());

        let e = parse(&["--rfr", "maybe", "--cluster"]).unwrap_err();
        assert_eq!(e, "invalid value 'maybe' for --rfr: the choices are no, yes and all");
        let e = parse(&["--replicas", "all"]).unwrap_err();
        assert!(e.starts_with("invalid value 'all' for --replicas: the only value is auto"), "{e}");
        for (r, why) in [
            ("host", "expected HOST:PORT"),
            (":6380", "expected HOST:PORT"),
            ("host:0", "the port must be 1 to 65535"),
            ("host:65536", "the port must be 1 to 65535"),
            ("host:x", "the port must be 1 to 65535"),
        ] {
            assert_eq!(
                parse(&["--replica", r]).unwrap_err(),
                format!("invalid value '{r}' for --replica: {why}")
            );
        }
        let e = parse(&["--replicas", "auto", "--replica", "h:1"]).unwrap_err();
        assert_eq!(e, "--replicas auto and --replica conflict: name the replicas or let respbench find them");
        let in_cluster =
            "--replicas and --replica are for a standalone primary; in cluster mode the replicas \
                          come from the cluster: use --rfr";
        assert_eq!(parse(&["--cluster", "--replicas", "auto"]).unwrap_err(), in_cluster);
        assert_eq!(parse(&["--cluster", "--replica", "h:1"]).unwrap_err(), in_cluster);
        let e = "SELECT is refused in cluster mode: drop --dbnum";
        assert_eq!(parse(&["--cluster", "--dbnum", "2"]).unwrap_err(), e);
        assert_eq!(parse(&["--cluster", "-u", "redis://h:7000/3"]).unwrap_err(), e);
        assert!(parse(&["--cluster", "--dbnum", "0"]).is_ok());
        let e = parse(&["--cluster", "-s", "/tmp/r.sock"]).unwrap_err();
        assert_eq!(e, "--cluster needs a TCP address (-h/-p), not -s");
        for rfr in ["yes", "all"] {
            let e = parse(&["--rfr", rfr]).unwrap_err();
            assert_eq!(e, "--rfr reads from replicas: add --cluster, --replicas auto or --replica HOST:PORT");
        }
        assert_eq!(parse(&["--rfr", "no"]).unwrap().rfr, Rfr::No);
        let e = parse(&["--rfr", "no", "--replica", "h:1"]).unwrap_err();
        assert_eq!(e, "--rfr no sends no reads to the replicas you named");
        let e = parse(&["--rfr", "no", "--replicas", "auto"]).unwrap_err();
        assert_eq!(e, "--rfr no sends no reads to the replicas --replicas auto finds");
    }

    #[test]
    fn timeout_takes_a_bounded_duration() {
        let t = |v: &str| parse(&["--timeout", v]).map(|c| c.timeout);
        assert_eq!(parse(&[]).unwrap().timeout, None);
        assert_eq!(t("500ms"), Ok(Some(Duration::from_millis(500))));
        assert!(t("0").unwrap_err().contains("--timeout"));
    }

    #[test]
    fn drain_grace_is_a_duration_like_timeout() {
        let g = |v: &str| parse(&["--drain-grace", v]).map(|c| c.drain_grace);
        assert_eq!(parse(&[]).unwrap().drain_grace, Duration::from_secs(2));
        assert_eq!(g("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(g("5"), Ok(Duration::from_secs(5)));
        for v in ["0", "-1", "x", "3601"] {
            let e = g(v).unwrap_err();
            assert!(e.contains("--drain-grace"), "{v}: {e}");
        }
    }

    #[test]
    fn the_default_slack_is_none_up_to_4000_a_second_per_loop_and_250us_above() {
        let us = |args: &[&str], rate: u64| parse(args).unwrap().open_slack(rate).as_micros();
        let ol = ["--rps", "1000"];
        assert_eq!([us(&ol, 1_000), us(&ol, 4_000), us(&ol, 4_001), us(&ol, 50_000)], [0, 0, 250, 250]);
        // Each loop's share counts: two loops at 8,000 a second are 4,000 each.
        let two = ["--rps", "1000", "--threads", "2"];
        assert_eq!([us(&two, 8_000), us(&two, 8_002)], [0, 250]);
        // ... and a loop has one client at least.
        assert_eq!(us(&["--rps", "1000", "--threads", "4", "-c", "1"], 8_000), 250);
        // --rps-slack is taken as given; --slo caps the default above the threshold only.
        assert_eq!(us(&["--rps", "1000", "--rps-slack", "1ms"], 100), 1_000);
        let slo = ["--slo", "p99<=1ms"];
        assert_eq!([us(&slo, 1_000), us(&slo, 50_000)], [0, 50]);
    }

    #[test]
    fn slo_takes_objectives_a_range_and_refuses_what_a_search_cannot_run_with() {
        let c = parse(&["--slo", "p99<=1ms,service:p99.9<=5ms"]).unwrap();
        let s = c.capacity.unwrap();
        assert_eq!(s.objectives.len(), 2);
        assert_eq!((s.range, s.max_steps, s.ladder), (None, 12, false));
        // Timed steps, with defaults that give a stable answer in a few minutes.
        assert_eq!(c.open.duration, Some(Duration::from_secs(5)));
        assert_eq!(c.open.warmup, Duration::from_secs(1));
        let c =
            parse(&["--slo", "p99<=1ms", "--rps", "1000-5000", "--duration", "2s", "--warmup", "0"]).unwrap();
        assert_eq!(c.capacity.unwrap().range, Some((1000, 5000)));
        assert_eq!((c.open.duration, c.open.warmup), (Some(Duration::from_secs(2)), Duration::ZERO));
        assert!(c.open.rates.is_empty());
        let s = parse(&["--slo", "p99<=1ms", "--slo-resolution", "500", "--slo-steps", "20"]).unwrap();
        let s = s.capacity.unwrap();
        assert_eq!((s.resolution, s.max_steps), (respbench_session::capacity::Resolution::Rps(500), 20));
        let err = |args: &[&str]| parse(args).unwrap_err();
        assert!(err(&["--slo", "p99<1ms"]).contains("--slo"));
        assert!(err(&["--slo", "p99<=1ms", "--rps", "5000"]).contains("LOW-HIGH"));
        assert!(err(&["--slo", "p99<=1ms", "--rps", "5000-100"]).contains("below HIGH"));
        assert!(err(&["--slo", "p99<=1ms", "-n", "1000"]).contains("-n and --slo"));
        assert!(err(&["--slo", "p99<=1ms", "-c", "10,20"]).contains("sweep"));
        assert!(err(&["--slo", "p99<=1ms", "-l"]).contains("-l"));
        assert!(err(&["--slo", "p99<=1ms", "--backend", "mio,smol"]).contains("--backend"));
        assert!(err(&["--slo", "p99<=1ms", "--slo-steps", "0"]).contains("--slo-steps"));
        assert!(err(&["--slo-steps", "3"]).contains("give --slo"));
        // A split search is a ladder over the fleet's range, at instants from --start-at.
        assert!(err(&["--slo", "p99<=1ms", "--worker", "0/2", "--start-at", "10"]).contains("--rps LOW-HIGH"));
        assert!(err(&["--slo", "p99<=1ms", "--rps", "10-20", "--worker", "0/2"]).contains("--start-at"));
        let w =
            parse(&["--slo", "p99<=1ms", "--rps", "100-200", "--worker", "1/2", "--start-at", "10"]).unwrap();
        let s = w.capacity.unwrap();
        assert!(s.ladder && s.range == Some((100, 200)));
    }

    #[test]
    fn a_worker_does_its_share() {
        let args = ["-n", "1003", "-c", "10,50", "--rps", "1001", "-r", "1000", "--key-dist", "sequential"];
        let w = |i: &str| parse(&[&args[..], &["--seed", "7", "--worker", i]].concat()).unwrap();
        let (first, last) = (w("0/4"), w("3/4"));
        assert_eq!((first.requests, first.clients, first.open.rates.as_slice()), (251, 3, [251].as_slice()));
        assert_eq!((last.requests, last.clients, last.open.rates.as_slice()), (250, 2, [250].as_slice()));
        assert_eq!(
            (first.sweep.clients.as_slice(), last.sweep.clients.as_slice()),
            ([3, 13].as_slice(), [2, 12].as_slice())
        );
        let split = last.split.as_ref().unwrap();
        assert_eq!((split.requests, split.clients.as_slice(), split.seed), (1003, [10, 50].as_slice(), 7));
        assert_eq!(split.keys, Some((750, 250)));
        assert_ne!(first.seed, last.seed);
        assert!(first.split.as_ref().unwrap().keys == Some((0, 250)));
        // Uniform keys are drawn from the whole keyspace by every worker (only --preload keeps
        // to the share).
        let u = parse(&["-r", "1000", "--worker", "1/4"]).unwrap();
        assert_eq!((u.split.unwrap().keys, u.keyspace), (Some((250, 250)), Some(1000)));
        assert!(parse(&["-r", "3", "--worker", "0/4"]).is_ok());
        assert!(parse(&["-r", "3", "--preload", "--worker", "0/4"]).unwrap_err().contains("--preload"));
        let e = parse(&["-c", "3", "--worker", "0/4"]).unwrap_err();
        assert!(e.contains("-c 3 gives 4 workers fewer than one connection each"), "{e}");
        let e = parse(&["--rps", "3", "--worker", "0/4"]).unwrap_err();
        assert!(e.contains("--rps 3"), "{e}");
        let e = parse(&["-r", "3", "--key-dist", "sequential", "--worker", "0/4"]).unwrap_err();
        assert!(e.contains("-r 4 or more"), "{e}");
        assert!(parse(&["--worker", "4/4"]).unwrap_err().contains("--worker"));
        assert!(parse(&["-I", "--worker", "0/2"]).unwrap_err().contains("-I"));
        assert!(parse(&["--start-at", "soon"]).unwrap_err().contains("--start-at"));
        assert!(parse(&["-I", "--start-at", "10"]).unwrap_err().contains("-I"));
        assert_eq!(parse(&["--start-at", "10.5"]).unwrap().start_at.unwrap().unix_us, 10_500_000);
    }

    #[test]
    fn pipeline_mode_is_redis_benchmarks_batch_unless_asked() {
        assert_eq!(parse(&["-P", "16"]).unwrap().pipeline_mode, PipelineMode::Batch);
        let c = parse(&["-P", "16", "--pipeline-mode", "window"]).unwrap();
        assert_eq!((c.pipeline, c.pipeline_mode), (16, PipelineMode::Window));
        assert_eq!(parse(&["--pipeline-mode", "batch"]).unwrap().pipeline_mode, PipelineMode::Batch);
        assert!(parse(&["--pipeline-mode", "deep"]).is_err());
    }

    #[test]
    fn pipeline_and_datasize_clamp_like_redis_benchmark() {
        let c = parse(&["-P", "0", "-d", "0"]).unwrap();
        assert_eq!((c.pipeline, c.datasize), (1, 1));
    }

    #[test]
    fn value_sizes_and_key_distributions() {
        let c =
            parse(&["-d", "16-1024", "-r", "1000", "--key-dist", "zipf:0.99", "--key-prefix", "b:"]).unwrap();
        assert_eq!((c.datasize, c.values.clone()), (1024, ValueSize::Range { lo: 16, hi: 1024 }));
        assert_eq!((c.key_dist, c.key_prefix.as_str()), (KeyDist::Zipf(0.99), "b:"));
        let c = parse(&["-d", "16:3,1024:1"]).unwrap();
        assert_eq!(c.datasize, 1024);
        assert_eq!(parse(&["-d", "64"]).unwrap().values, ValueSize::Fixed(64));
        assert_eq!(parse(&["--key-dist", "uniform"]).unwrap().key_dist, KeyDist::Uniform);
        for args in [
            &["-d", "1024-16"][..],
            &["-d", "big"],
            &["-d", "16:0"],
            &["--key-dist", "zipf:0", "-r", "10"],
            &["--key-dist", "pareto", "-r", "10"],
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(args[0]), "{args:?}: {e}");
        }
        let e = parse(&["--key-dist", "gaussian"]).unwrap_err();
        assert!(e.contains("--key-dist") && e.contains("-r"), "{e}");
        let e = parse(&["--key-dist", "zipf", "-r", "10000000000000000"]).unwrap_err();
        assert!(e.contains("2^53"), "{e}");
    }

    #[test]
    fn uri_sets_auth_host_port_db() {
        let c = parse(&["-u", "redis://bench:pw@example.com:6390/4"]).unwrap();
        assert_eq!(c.endpoint, Endpoint::Tcp { host: "example.com".into(), port: 6390 });
        assert_eq!((c.user.as_deref(), c.password.as_deref(), c.db), (Some("bench"), Some("pw"), 4));
        assert!(parse(&["-u", "redis://h"]).unwrap().tls.is_none());
    }

    /// The TLS settings `args` make, as the session makes them.
    #[cfg(feature = "tls")]
    fn tls_of(args: &[&str]) -> Result<respbench_driver::Tls, String> {
        let c = parse(args)?;
        respbench_session::tls_client(&c).map(|t| t.expect("TLS on")).map_err(|e| e.to_string())
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_from_the_switch_or_the_uri() {
        let tls = tls_of(&["--tls", "--insecure", "-h", "10.0.0.1"]).unwrap();
        assert_eq!(tls.server_name, rustls::pki_types::ServerName::try_from("10.0.0.1").unwrap());
        assert!(!tls.config.enable_sni);
        let args = ["-u", "rediss://bench:pw@example.com:6390", "--insecure", "--sni", "cache.example"];
        assert_eq!(parse(&args).unwrap().endpoint, Endpoint::Tcp { host: "example.com".into(), port: 6390 });
        let tls = tls_of(&args).unwrap();
        assert_eq!(tls.server_name, rustls::pki_types::ServerName::try_from("cache.example").unwrap());
        assert!(tls.config.enable_sni);
        // Without --tls the TLS options are ignored, as redis-benchmark ignores them.
        assert!(parse(&["--cacert", "/nonexistent/ca.crt", "--insecure"]).unwrap().tls.is_none());
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn tls_needs_the_feature() {
        let e = parse(&["--tls"]).unwrap_err();
        assert!(e.starts_with("--tls: this respbench was built without TLS"), "{e}");
        let e = parse(&["-u", "rediss://h"]).unwrap_err();
        assert!(e.starts_with("-u rediss://: this respbench was built without TLS"), "{e}");
        assert!(parse(&["--cacert", "ca.crt"]).unwrap().tls.is_none());
    }
    /// The document's config, from options as parsed (a test's fields: report/src/convert.rs; the config: doc.rs).
    #[test]
    fn document_config_from_the_options() {
        let cfg = parse(&["-n", "4", "-q", "--seed", "7", "-a", "secret"]).unwrap();
        let doc = json::document(
            doc::RunConfig::from(&cfg),
            doc::Server::from(&ServerInfo::default()),
            false,
            vec![],
        );
        let doc = serde_json::to_value(doc).unwrap();
        assert_eq!(doc["schema"], "respbench/2");
        assert_eq!((&doc["config"]["port"], &doc["config"]["seed"]), (&6379.into(), &7.into()));
        assert!(doc["config"].get("password").is_none());
    }
}
