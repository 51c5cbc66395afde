//! A run split over workers (`--worker I/N`, or the environment a Kubernetes Indexed Job sets):
//! what each worker's share of the run is, and the common instant of their measured windows
//! (`--start-at`). The command line parses both.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use respbench_core::dist::KeyDist;
use respbench_core::rng::Rng;

use crate::config::{Config, Split, StartAt, Worker};

/// The most workers one run may be split over.
const MAX_WORKERS: u64 = 100_000;

impl Worker {
    /// Worker `index` of `count`, checked.
    pub fn new(index: u64, count: u64) -> Result<Worker, String> {
        if count == 0 || count > MAX_WORKERS {
            return Err(format!("the count of workers must be 1 to {MAX_WORKERS}"));
        }
        if index >= count {
            return Err(format!("the index counts from 0, so worker {index} of {count} does not exist"));
        }
        Ok(Worker { index, count })
    }

    /// This worker's share of `total`: where it begins and how many. Shares are as equal as
    /// can be, the remainder going one each to the first workers, and they tile `[0, total)`.
    pub fn share(&self, total: u64) -> (u64, u64) {
        let (q, r) = (total / self.count, total % self.count);
        let len = q + u64::from(self.index < r);
        (self.index * q + self.index.min(r), len)
    }

    /// This worker's seed, from the run's: different for each index, reproducible.
    pub fn seed(&self, seed: u64) -> u64 {
        Rng::for_stream(seed ^ WORKER_SEED_TAG, self.index).next_u64()
    }
}

/// Keeps the workers' seeds apart from the connections' streams of the same seed.
const WORKER_SEED_TAG: u64 = 0x5745_524b_4552_5321;

/// Makes `cfg`, the whole run, this worker's share of it.
pub fn split(cfg: &mut Config, worker: Worker) -> Result<(), String> {
    let Worker { index, count } = worker;
    let who = format!("--worker {index}/{count}");
    let whole = Split {
        worker,
        requests: cfg.requests,
        clients: cfg.sweep.clients.clone(),
        rates: cfg.open.rates.clone(),
        seed: cfg.seed,
        keys: None,
    };
    let mut clients = Vec::new();
    for &c in &cfg.sweep.clients {
        if (c as u64) < count {
            return Err(format!(
                "{who}: -c {c} gives {count} workers fewer than one connection each; give -c {count} or more \
                 (-c is the whole run's, divided among the workers)"
            ));
        }
        clients.push(worker.share(c as u64).1 as usize);
    }
    let mut rates = Vec::new();
    for &r in &cfg.open.rates {
        if r < count {
            return Err(format!(
                "{who}: --rps {r} gives {count} workers less than one request per second each (--rps is the \
                 whole run's, divided among the workers)"
            ));
        }
        rates.push(worker.share(r).1);
    }
    if let Some(n) = cfg.keyspace.filter(|&n| n < count) {
        let by = if cfg.preload { Some("--preload") } else { None };
        if let Some(by) = by.or((cfg.key_dist == KeyDist::Sequential).then_some("--key-dist sequential")) {
            return Err(format!(
                "{who}: {by} over -r {n} keys leaves some of {count} workers no key; give -r {count} or more"
            ));
        }
    }
    // Sequential keys and --preload go over this share only; other distributions draw from the
    // whole keyspace.
    let keys = cfg.keyspace.map(|n| worker.share(n));
    cfg.requests = worker.share(cfg.requests).1;
    cfg.sweep.clients = clients;
    cfg.clients = cfg.sweep.clients[0];
    cfg.open.rates = rates;
    cfg.seed = worker.seed(cfg.seed);
    cfg.split = Some(Split { keys, ..whole });
    Ok(())
}

impl StartAt {
    /// The instant as a `SystemTime`.
    pub fn time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.unix_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The shares tile [0, total) in order, and differ by at most one.
        #[test]
        fn shares_tile_the_total(total in 0u64..1_000_000_000_000, count in 1u64..300) {
            let mut next = 0;
            let mut sizes = Vec::new();
            for index in 0..count {
                let (first, len) = Worker { index, count }.share(total);
                prop_assert_eq!(first, next);
                next += len;
                sizes.push(len);
            }
            prop_assert_eq!(next, total);
            prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
            // The extra ones go to the first workers.
            prop_assert!(sizes.windows(2).all(|w| w[0] >= w[1]));
        }
    }

    #[test]
    fn seeds_differ_per_worker_and_repeat() {
        let seeds: Vec<u64> = (0..100).map(|i| Worker { index: i, count: 100 }.seed(42)).collect();
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 100);
        assert_eq!(Worker { index: 7, count: 100 }.seed(42), seeds[7]);
        assert_ne!(Worker { index: 7, count: 100 }.seed(43), seeds[7]);
    }
}
