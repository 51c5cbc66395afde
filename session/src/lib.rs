//! respbench's run engine, below the command line: the startup connection and discovery of a
//! cluster's or replica set's nodes, the routes of commands over them, the CPU readings around
//! each test and who limited it, a run split over workers, and the checked configuration the
//! command line derives from its options. It never prints: the command line presents.

mod backend;
pub mod case;
pub mod config;
pub mod cpu;
mod engine;
mod error;
pub mod limits;
pub mod observer;
pub mod result;
pub mod routing;
mod run;
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;
pub mod topology;
pub mod verdict;
pub mod workers;

pub use backend::note as backend_note;
pub use engine::{check_machine, tls_client, Ended, Finished, Session};
pub use error::Error;
pub use observer::{Observer, StopHandle};
pub use run::idle;
