//! The notification tests' chart (issue #52): `-t expiry`'s lag from each deadline to its
//! expired event and `-t tracking`'s invalidation latency from each write's send, by
//! percentile, a line per test (solid for a lag, dashed for a latency).

use super::data::Test;
use super::svg::{Axis, Chart, Dash, Line};

/// The chart of the tests with a notification curve (`None` without any); `label` names a test.
pub fn chart(tests: &[&Test], label: &dyn Fn(&Test) -> String) -> Option<Chart> {
    let mut lines = Vec::new();
    let (mut nines, mut lo, mut hi) = (0.0_f64, f64::INFINITY, 0.0_f64);
    for t in tests {
        let Some((what, points)) = t.notify.as_ref().filter(|(_, p)| !p.is_empty()) else { continue };
        for &(x, y) in points {
            nines = nines.max(x);
            lo = lo.min(y);
            hi = hi.max(y);
        }
        let dash = if *what == "expiry lag" { Dash::Solid } else { Dash::Dashed };
        // The test's title says which (SET PXAT (expiry lag), SET (invalidation latency, …)).
        lines.push(Line {
            label: label(t),
            points: points.clone(),
            color: lines.len(),
            dash,
            ..Line::default()
        });
    }
    if lines.is_empty() {
        return None;
    }
    Some(Chart {
        title:
            "Notifications: expiry lag (from the deadline) and invalidation latency (from the write's send)"
                .into(),
        x: Axis::nines("percentile", nines.ceil() as u32),
        y: Axis::log("ms", lo, hi),
        lines,
        ..Chart::default()
    })
}
