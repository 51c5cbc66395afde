//! respbench's run engine, below the command line. A [`Session`] runs the tests of a
//! [`config::Config`] (the options, checked by the command line) on the backends: it makes the
//! startup connection, finds a cluster's or replica set's nodes and the routes of commands over
//! them, runs each test at each sweep step, rate and backend with the CPU readings around it, and
//! tells an [`Observer`] how it goes, with typed results ([`result::TestResult`]) and errors
//! ([`Error`]). It never prints: the command line presents.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::print_stderr))]

mod backend;
pub mod cache_aside;
pub mod capacity;
pub mod capture;
pub mod case;
pub mod commands;
pub mod config;
pub mod cpu;
pub mod cursor;
pub mod dataset;
mod deliver;
#[cfg(feature = "serde")]
mod doc_form;
mod engine;
pub mod error;
pub mod event;
mod expiry;
mod fire;
mod groups;
pub mod input;
pub mod limits;
pub mod memtier;
pub mod memtier_verify;
pub mod metrics;
mod notify_nodes;
pub mod objective;
pub mod observer;
pub mod probe;
pub mod ramp;
pub mod replay;
pub mod replayed;
pub mod result;
pub mod retry;
pub mod routing;
mod run;
pub mod sampler;
pub mod scenario;
pub mod secret;
pub mod sentinel;
pub mod server;
pub mod server_window;
pub mod sides;
pub mod slo;
pub mod statsd;
pub mod stop;
pub mod syntax;
pub mod threads;
pub mod timing;
#[cfg(feature = "tls")]
pub mod tls;
pub mod topology;
mod tracking;
pub mod verdict;
pub mod verify;
pub mod words;
pub mod workers;

pub use backend::note as backend_note;
pub use engine::ab::Pair;
pub use engine::{
    check_machine, failure_words, never_ran, refusal, tls_client, Ended, Finished, FirstError, Session,
};
pub use error::Error;
pub use observer::{Observer, StopHandle};
/// The live figures the loops share while a test runs (what `--metrics` reads).
pub use respbench_driver::{Figures, Progress, ServerGauges};
pub use run::idle;
