//! `--cache-aside` (a scenario's `kind = "cache-aside"` group) checked against a test: the `SET`
//! the core sends after each `GET` that misses ([`respbench_core::cache`]), of the `GET`'s key
//! pattern, with the `-d` values and `--expiry-range`'s time as its TTL.

use std::sync::Arc;

use respbench_core::cache::CacheAside;
use respbench_core::template::Template;

use crate::config::{Config, Verification};
use crate::Error;

/// What a test sends after a miss under `cfg`: `None` without `--cache-aside`; an error (said
/// before connecting) when the test (titled `title`, its request `template`, `mixed`: a mix or
/// a replay) is not a `GET` of one key or the options cannot go with it.
pub fn for_test(
    cfg: &Config,
    title: &str,
    template: &Template,
    mixed: bool,
) -> Result<Option<Arc<CacheAside>>, Error> {
    if !cfg.open.cache_aside {
        return Ok(None);
    }
    let refuse = |why: &str| Err(Error::Tests(format!("--cache-aside: {why}")));
    let conflict = [
        (cfg.cluster, "--cluster"),
        (cfg.retry.is_some(), "--retry-on"),
        (cfg.verify != Verification::Off, "--verify"),
        (cfg.replay.is_some(), "--replay"),
        (cfg.dataset.is_some(), "--dataset"),
    ];
    if let Some((_, other)) = conflict.iter().find(|(on, _)| *on) {
        return refuse(&format!(
            "cannot go with {other} (the SET after a miss goes on the GET's own connection)"
        ));
    }
    if mixed {
        return refuse("reads with GET alone: give -t get or a command 'GET key:__rand_int__', not a mix");
    }
    let Some(spec) = respbench_core::suite::preload(template, &cfg.values) else {
        return refuse(&format!(
            "reads with GET of one key: '{}' is not one (give -t get or 'GET key:__rand_int__')",
            title
        ));
    };
    let mut set = spec.template;
    if let Some(e) = cfg.open.expiry {
        set = set.with_expiry(e).unwrap_or(set);
    }
    Ok(Some(Arc::new(CacheAside { set })))
}
