//! respbench's outputs: every format a run writes and the readers of its result document.
//!
//! The session reports to an [`respbench_session::Observer`] and never prints; this crate is that
//! observer ([`outputs::Outputs`]: the list of sinks the options ask for) and the sinks, one type
//! per format behind [`sink::Output`], each fed the session's [`sink::Event`]s and writing to the
//! `Write` it was given: redis-benchmark's verbose text, `-q` and `--csv`, the JSON document,
//! `--hlog`, `--hgrm`, memtier_benchmark's outputs, `--metrics`, the progress line, `--live` and
//! the lines on stderr ([`sink`]). Below them the pieces they render with: [`text`], [`events`],
//! [`capacity`], [`json`], [`hlog`], [`hgrm`]; beside them `respbench merge` ([`merge`]) and
//! `respbench plot` ([`plot`], behind the `plot` feature). The binary parses options and wires
//! them here, as ripgrep's binary picks a printer from `grep-printer`. Its lines on stderr go
//! through [`say!`] ([`stderr`]), which never panics.
#![cfg_attr(not(test), deny(clippy::print_stderr))]

pub mod cache;
pub mod capacity;
pub mod codec;
pub mod compare;
pub mod convert;
pub mod cursor;
pub mod dataset;
pub mod dataset_compare;
pub mod doc;
pub mod error;
pub mod events;
pub mod files;
pub mod groups;
pub mod hdr;
pub mod hgrm;
pub mod hlog;
pub mod json;
pub mod manual;
pub mod memtier;
pub mod merge;
pub mod metrics;
pub mod notify;
pub mod outputs;
#[cfg(feature = "plot")]
pub mod plot;
pub mod rerun;
pub mod server_series;
pub mod server_window;
pub mod shared;
pub mod sink;
pub mod statsd;
pub mod stderr;
pub mod text;

/// Reads `bytes` as a result document the way `respbench merge`, `plot` and `compare` do: the
/// document, each of its tests back into a result, a merge of it with itself (forced, so that
/// every sum is made), its capacity searches merged, it compared with itself, and the charts
/// drawn. The fuzz target
/// (fuzz/fuzz_targets/document.rs) calls it; whatever the bytes, it returns (an error is an
/// answer), never panics, and allocates in proportion to its input.
pub fn read_untrusted(bytes: &[u8]) -> Result<(), error::Error> {
    #[cfg(feature = "plot")]
    let drawn = plot::draw_untrusted(bytes).map(drop);
    #[cfg(not(feature = "plot"))]
    let drawn: Result<(), error::Error> = Ok(());
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| error::Error::Document(e.to_string()))?;
    let doc = json::document_of(value)?;
    let merged = merge::merge(&[doc.clone(), doc.clone()], true).map_err(|e| e.1)?;
    merged.document()?.to_text()?;
    capacity::merge(&[doc.clone(), doc.clone()])?;
    // Compared with itself; no test in both sides is an answer too.
    let _ = compare::compare_untrusted(&doc);
    drawn
}

#[cfg(test)]
mod tests {
    /// The fuzz target's function on a real document, an edited one and garbage.
    #[test]
    fn untrusted_documents_are_read_or_refused() {
        let mut s = respbench_core::Stats::new(respbench_core::Time::ZERO, 3, false).unwrap();
        for i in 0..100u64 {
            s.record(1_000 * (i + 1), 0, respbench_core::Time::from_micros(1_000 + i));
        }
        let e = respbench_session::result::TestResult::new("GET".into(), "GET".into(), s);
        let doc = crate::json::document(
            Default::default(),
            Default::default(),
            false,
            vec![crate::convert::test(&e, 0).unwrap()],
        );
        let text = doc.to_text().unwrap();
        assert!(super::read_untrusted(text.as_bytes()).is_ok());
        let edited = text.replace("\"requests\": 100", "\"requests\": 18446744073709551615");
        assert!(super::read_untrusted(edited.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("histogram holds 100 values"));
        for garbage in [
            &b""[..],
            b"{",
            b"[]",
            b"{\"schema\": \"respbench/2\"}",
            b"\xff\xfe",
            b"{\"schema\": \"respbench/2\", \"tests\": [1]}",
        ] {
            assert!(super::read_untrusted(garbage).is_err());
        }
    }
}
