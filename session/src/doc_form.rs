//! How a few of the session's figures are written in the result document, for the types that
//! derive serde (the feature `serde`) and so are the document's own: a figure that is not finite
//! written 0 (JSON has no NaN), microseconds written as milliseconds.

use serde::{Deserialize, Deserializer, Serializer};

/// `x`, or 0 where it is not finite.
pub(crate) fn finite<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(if x.is_finite() { *x } else { 0.0 })
}

/// Microseconds kept as a `u64`, written as milliseconds (`1500` as `1.5`) and read back to the
/// nearest microsecond (a negative or non-finite figure as 0, one too large as `u64::MAX`).
pub(crate) mod ms {
    use super::*;

    /// `us` in milliseconds.
    pub(crate) fn serialize<S: Serializer>(us: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*us as f64 / 1000.0)
    }

    /// Milliseconds read back to microseconds (`as` saturates: NaN and below 0 are 0).
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        Ok((f64::deserialize(d)? * 1000.0).round() as u64)
    }
}
