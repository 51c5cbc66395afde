//! respbench-core: the sans-io heart of respbench.
#![warn(missing_docs)]

pub mod resp;
pub mod rng;
pub mod template;
pub mod time;

pub use time::Time;
