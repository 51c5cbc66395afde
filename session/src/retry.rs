//! `--retry-on`, `--retry-backoff`, `--retry-limit` and `--failed-keys`: error replies that mean
//! "wait" (a restarting server's `LOADING`, a busy script's `BUSY`, a migration's `TRYAGAIN`),
//! after which a request is sent again on the same connection, as production clients do. The
//! core does the retrying ([`respbench_core::Retry`]); [`crate::syntax::retry`] reads the
//! options.

use std::time::Duration;

use respbench_core::Retry;

/// The pause before a request's first retry when `--retry-backoff` is not given.
pub const FIRST: Duration = Duration::from_millis(1);
/// The longest pause when `--retry-backoff` is not given.
pub const MAX: Duration = Duration::from_secs(1);
/// How many times one request is retried when `--retry-limit` is not given: with the default
/// backoff, about 55 s of waiting.
pub const LIMIT: u32 = 64;
/// The most error words `--retry-on` takes.
pub const MOST_WORDS: usize = 32;

/// What the retry options ask for.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// What the core retries, and how.
    pub retry: Retry,
    /// `--failed-keys FILE`: where the keys of the requests that gave up are written.
    pub failed_keys: Option<String>,
}

/// The line that says what a test retried (`None`: nothing): `retried 1,234 requests
/// (--retry-on): 1,200 × LOADING, 34 × BUSY; 2 gave up`.
pub fn summary(r: &respbench_core::stats::RetryStats) -> Option<String> {
    if r.total() == 0 && r.gave_up == 0 {
        return None;
    }
    let kinds: Vec<String> =
        r.by_error.kinds().iter().map(|k| format!("{} × {}", k.count, k.prefix)).collect();
    let kinds = if kinds.is_empty() { String::from("none") } else { kinds.join(", ") };
    Some(format!("retries (--retry-on): {kinds}; {} requests gave up", r.gave_up))
}

/// The lines that say which names moved during a test (`--reconnect`): `redis.test:6379 moved
/// from 127.0.0.1:6379 to 127.0.0.2:6379 at 1.52 s (10 connections followed)`.
pub fn moves(s: &respbench_core::Stats) -> impl Iterator<Item = String> + '_ {
    s.readdressed.iter().map(|r| {
        let at = r.at.nanos_since(s.start) as f64 / 1e9;
        format!(
            "{} moved from {} to {} at {at:.2} s ({} connections followed)",
            r.name, r.from, r.to, r.connections
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::retry as settings;
    use respbench_core::Backoff;

    #[test]
    fn the_options_read_and_refused() {
        let s = settings(Some("LOADING,BUSY"), Some("2ms,500ms"), Some(5), Some("k.txt".into()))
            .unwrap()
            .unwrap();
        assert_eq!(s.retry.on, ["LOADING", "BUSY"]);
        assert_eq!(s.retry.backoff, Backoff::doubling(Duration::from_millis(2), Duration::from_millis(500)));
        assert_eq!((s.retry.limit, s.failed_keys.as_deref()), (5, Some("k.txt")));
        // The pauses double up to the longest.
        let pauses: Vec<u128> = (1..=10).map(|k| s.retry.pause(k).as_millis()).collect();
        assert_eq!(pauses, [2, 4, 8, 16, 32, 64, 128, 256, 500, 500]);
        assert!(s.retry.retries(b"LOADING Redis is loading the dataset in memory"));
        assert!(!s.retry.retries(b"LOADINGX y") && !s.retry.retries(b"ERR x"));
        let d = settings(Some("LOADING"), None, None, None).unwrap().unwrap();
        assert_eq!((d.retry.backoff.first, d.retry.backoff.max, d.retry.limit), (FIRST, MAX, LIMIT));
        assert_eq!(settings(None, None, None, None).unwrap(), None);
        for (on, backoff, limit, keys) in [
            (None, Some("1ms"), None, None),
            (None, None, Some(3), None),
            (None, None, None, Some("f".to_string())),
            (Some("loading"), None, None, None),
            (Some("LOADING,"), None, None, None),
            (Some("LOADING"), Some("0ms"), None, None),
            (Some("LOADING"), Some("1s,1ms"), None, None),
            (Some("LOADING"), Some("x"), None, None),
            (Some("LOADING"), None, Some(0), None),
        ] {
            let e = settings(on, backoff, limit, keys).unwrap_err().to_string();
            assert!(e.contains("--retry-") || e.contains("--failed-keys"), "{e}");
        }
    }
}
