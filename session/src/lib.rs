//! respbench's run engine, below the command line: the startup connection and discovery of a
//! cluster's or replica set's nodes, the routes of commands over them, the CPU readings around
//! each test and who limited it, a run split over workers, and the checked configuration the
//! command line derives from its options. It never prints: the command line presents.

pub mod config;
pub mod cpu;
pub mod limits;
pub mod result;
pub mod routing;
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;
pub mod topology;
pub mod verdict;
pub mod workers;
