//! respbench's outputs: every format a run writes and the readers of its result document.
//!
//! The session reports to an [`respbench_session::Observer`] and never prints; this crate is that
//! observer ([`present::Presenter`]) and the formats behind it: redis-benchmark's text (verbose,
//! `-q`, `--csv`: [`text`]), the JSON document ([`json`]), `--hlog` ([`hlog`]), `--hgrm`
//! ([`hgrm`]), the capacity tables ([`capacity`]), `respbench merge` ([`merge`]) and
//! `respbench plot` ([`plot`], behind the `plot` feature). The binary parses options and wires
//! them here, as ripgrep's binary picks a printer from `grep-printer`.

pub mod capacity;
pub mod doc;
pub mod files;
pub mod hdr;
pub mod hgrm;
pub mod hlog;
pub mod json;
pub mod merge;
#[cfg(feature = "plot")]
pub mod plot;
pub mod present;
pub mod text;
