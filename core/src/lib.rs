//! respbench-core: the sans-io heart of respbench.
//!
//! Everything here is a pure state machine: no sockets, no threads, no locks, no clock reads.
//! Time comes in as a [`Time`] parameter; bytes come in and go out as slices. The backends
//! (`respbench-mio`, `respbench-smol`, `respbench-uring`, through `respbench-driver`) own the
//! sockets and the clock and move bytes and time between them and a [`Client`] per client of the
//! test: its connections, one per node (one against a single server), by node index.
//!
//! # Parts
//! - [`template`]: requests pre-encoded once; each request is a copy plus 12 digits per
//!   `__rand_int__` placeholder overwritten in place. [`keys`] draws the keys (with [`rng`]).
//!   [`wire`]: a connection's output, which takes a large value by reference to the one copy.
//! - [`resp`]: an incremental, allocation-free RESP2/RESP3 reply parser.
//! - [`plan`]: what a test's clients share: handshake, pipeline, open-loop schedule, workload,
//!   the exact request budget and the run control ([`Stop`]: `--duration`, Ctrl-C, drain grace).
//! - [`client`]: one client's state machine: its request source (budget, schedule, mix, keys,
//!   gaps), its router over the nodes, and its connections; events out to the backend.
//! - [`conn`]: one socket's protocol: handshake, pipelining, reply matching.
//! - [`stats`]: per-test counts and HdrHistograms, mergeable across clients, threads and runs;
//!   [`collector`]: a test's per-second series from every loop.
//! - [`shared`]: the leaf types every module may use: [`Endpoint`], the histogram helpers, the
//!   per-second records. [`handshake`]: what a connection sends first.
//! - [`suite`]: redis-benchmark's default tests, byte for byte.
//! - [`cluster`]: Redis Cluster's key slots (CRC16 and the hash-tag rule), routes and the
//!   per-client router.
//! - [`replay`]: recorded traffic: MONITOR's lines and capture records read, and the feed a
//!   replaying client takes its records from.
//!
//! # The drain rule
//! A backend drives each node's socket of a [`Client`] like this, reading the clock right after
//! each system call returns and passing that reading as `now`:
//! 1. When the socket connects: [`Client::handle_connected`].
//! 2. After every input ([`Client::handle_connected`], [`Client::handle_input`] with the bytes
//!    of each read, [`Client::handle_closed`], [`Client::handle_io_error`], or
//!    [`Client::handle_timeout`] when the time from [`Client::poll_timeout`] has come), drain
//!    the outputs of that node:
//!    - [`Client::poll_transmit`] until it returns `None` or the socket would block, calling
//!      [`Client::advance_transmit`] with what each write took ([`Client::poll_transmit_chunk`]
//!      instead hands a large value's bytes as an owned [`SharedBytes`] handle, for a backend
//!      whose sends complete after the call: io_uring);
//!    - [`Client::poll_event`] until `None`, acting on each event (reconnect, close);
//!    - [`Client::poll_timeout`]: when to wake up if no bytes arrive;
//!
//!    then [`Client::poll_wake`] until `None`, and drain each node it names the same way: the
//!    client queued requests for it, a node appeared, or the client is done.
//!
//! Latency is per request: from the start of the write that handed the request's last byte to
//! the kernel (the `now` of the `advance_transmit` that covered it: backends read the clock
//! before the write, because on loopback the reply can arrive before the send syscall returns)
//! to the moment its reply was fully parsed (the
//! `handle_input` that completed it) — or, on an open-loop schedule, from its intended send time.
//!
//! # The `testing` feature
//! Not part of the API; for respbench's own tests and fuzzing. It compiles in `sim` (a fake
//! server on a virtual clock), `resp::parse_chunked`, `template::check_substitution` and
//! `template::check_values`, which the fuzz targets call. This crate's unit tests always have them.
#![warn(missing_docs)]

pub mod cache;
pub mod client;
pub mod cluster;
pub mod collector;
pub mod conn;
pub mod cursor;
pub mod dataset;
pub mod delivery;
pub mod disruption;
pub mod dist;
pub mod expiry;
pub mod handshake;
pub mod keys;
pub mod memtier_import;
pub mod plan;
pub mod ramp;
pub mod replay;
pub mod resp;
pub mod rng;
pub mod run;
pub mod shared;
#[cfg(any(test, feature = "testing"))]
pub mod sim;
pub mod stats;
pub mod suite;
pub mod template;
pub mod time;
pub mod tracking;
pub mod verify;
pub mod wire;

pub use client::Client;
pub use conn::{ConnError, Connection, Event, IoFailure, IoOp};
pub use handshake::Handshake;
pub use plan::{
    Backoff, Budget, ConnConfig, Mix, OpenLoop, PipelineMode, Plan, Ramp, RampKind, Retry, Stop, Workload,
    SETUP_TIMEOUT,
};
pub use run::{Outcome, RunError};
pub use shared::Endpoint;
pub use stats::{Stats, StepStats};
pub use time::Time;
pub use wire::{Chunk, SharedBytes};
