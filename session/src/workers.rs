//! A run split over workers (`--worker I/N`, or the environment a Kubernetes Indexed Job sets):
//! what each worker's share of the run is, and the common instant of their measured windows
//! (`--start-at`). The command line parses both.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use respbench_core::dist::KeyDist;
use respbench_core::rng::Rng;

/// Why a worker or a split is refused: defined beside [`Worker`], in the configuration, and named
/// here, where workers are parsed and split.
pub use crate::config::WorkerError;
use crate::config::{Config, Split, StartAt, Worker, MAX_WORKERS};

impl Worker {
    /// Worker `index` of `count`, checked.
    pub fn new(index: u64, count: u64) -> Result<Worker, WorkerError> {
        if count == 0 || count > MAX_WORKERS {
            return Err(WorkerError::Count);
        }
        if index >= count {
            return Err(WorkerError::Index { index, count });
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
pub fn split(cfg: &mut Config, worker: Worker) -> Result<(), WorkerError> {
    let count = worker.count;
    let whole = Split {
        worker,
        requests: cfg.requests,
        clients: cfg.sweep.clients.clone(),
        rates: cfg.open.rates.clone(),
        seed: cfg.seed,
        keys: None,
    };
    if let Some(test) = cfg.tests.as_deref().and_then(respbench_core::suite::delivery_test) {
        return Err(WorkerError::Delivery { worker, test });
    }
    let mut clients = Vec::new();
    for &c in &cfg.sweep.clients {
        if (c as u64) < count {
            return Err(WorkerError::FewerClients { worker, clients: c });
        }
        clients.push(worker.share(c as u64).1 as usize);
    }
    let mut rates = Vec::new();
    for &r in &cfg.open.rates {
        if r < count {
            return Err(WorkerError::LowerRate { worker, rate: r });
        }
        rates.push(worker.share(r).1);
    }
    if let Some(n) = cfg.keyspace.filter(|&n| n < count) {
        let by = if cfg.preload { Some("--preload") } else { None };
        if let Some(by) = by.or((cfg.key_dist == KeyDist::Sequential).then_some("--key-dist sequential")) {
            return Err(WorkerError::FewerKeys { worker, by, keys: n });
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

/// Parses `I/N` (0 ≤ I < N).
pub fn parse_worker(text: &str) -> Result<Worker, WorkerError> {
    let why = "expected INDEX/COUNT with 0 <= INDEX < COUNT, such as 0/4";
    let bad = |why: &str| WorkerError::Invalid {
        option: "--worker",
        value: text.to_string(),
        why: why.to_string(),
    };
    let (i, n) = text.split_once('/').ok_or_else(|| bad(why))?;
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad(why));
    Worker::new(number(i)?, number(n)?).map_err(|e| bad(&e.to_string()))
}

/// Parses RFC 3339 (`2026-12-01T10:00:00Z`, `2026-12-01T11:00:00.5+01:00`) or Unix seconds
/// (`1796119200`, fractions allowed).
pub fn parse_start_at(text: &str) -> Result<StartAt, WorkerError> {
    let bad = |why: &str| WorkerError::Invalid {
        option: "--start-at",
        value: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim();
    let unix_us = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
        let secs: u64 = secs.parse().map_err(|_| bad("expected Unix seconds such as 1796119200.5"))?;
        if frac.contains('.') {
            return Err(bad("expected Unix seconds such as 1796119200.5"));
        }
        secs.checked_mul(1_000_000)
            .and_then(|us| us.checked_add(fraction_micros(frac)))
            .filter(|&us| us <= LATEST_US)
            .ok_or_else(|| bad("too far in the future"))?
    } else {
        rfc3339_micros(t).map_err(|why| bad(&why))?
    };
    Ok(StartAt { unix_us, text: t.to_string() })
}

/// The furthest ahead `--start-at` may be: a day (a year mistyped waited silently for it).
pub const START_AT_AHEAD_MAX: Duration = Duration::from_secs(24 * 3600);

/// [`parse_start_at`], refused when the instant is more than [`START_AT_AHEAD_MAX`] after now.
pub fn parse_start_at_now(text: &str) -> Result<StartAt, WorkerError> {
    let at = parse_start_at(text)?;
    at.within_reach(SystemTime::now())?;
    Ok(at)
}

/// The latest instant `--start-at` takes: the end of the year 9999.
const LATEST_US: u64 = 253_402_300_799_999_999;

/// Microseconds of a decimal fraction's digits (`"5"` is 500000); digits past the sixth are
/// dropped.
fn fraction_micros(digits: &str) -> u64 {
    digits.bytes().take(6).chain(std::iter::repeat(b'0')).take(6).fold(0, |n, d| n * 10 + u64::from(d - b'0'))
}

/// Parses RFC 3339's `date-time` (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `t`, `z` and a
/// space for `T` allowed) into microseconds since the Unix epoch.
fn rfc3339_micros(t: &str) -> Result<u64, Cow<'static, str>> {
    let form = "expected RFC 3339 such as 2026-12-01T10:00:00Z (or +01:00 for an offset), or Unix seconds";
    let b = t.as_bytes();
    let digits = |from: usize, len: usize| -> Result<u64, Cow<'static, str>> {
        let s = b.get(from..from + len).ok_or(form)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return Err(form.into());
        }
        Ok(s.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
    };
    let at = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt ") && at(13, b":") && at(16, b":")) {
        return Err(form.into());
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    let mut i = 19;
    let mut micros = 0;
    if at(i, b".") {
        let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return Err(form.into());
        }
        micros = fraction_micros(&t[i + 1..i + 1 + n]);
        i += 1 + n;
    }
    let offset_s: i64 = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && at(i + 3, b":") => {
            let (h, m) = (digits(i + 1, 2)?, digits(i + 4, 2)?);
            if h > 23 || m > 59 {
                return Err("the offset must be -23:59 to +23:59".into());
            }
            let s = (h * 3600 + m * 60) as i64;
            if sign == b'-' {
                -s
            } else {
                s
            }
        }
        _ => return Err(form.into()),
    };
    if !(1..=12).contains(&month) {
        return Err("the month must be 01 to 12".into());
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(format!("{year:04}-{month:02} has no day {day:02}").into());
    }
    // 60 is a leap second: it counts as the next second's start, as POSIX time has no leap seconds.
    if hour > 23 || minute > 59 || second > 60 {
        return Err("the time must be 00:00:00 to 23:59:60".into());
    }
    let days = days_from_civil(year as i64, month, day);
    let local = days * 86_400 + (hour * 3600 + minute * 60 + second) as i64;
    let utc = local - offset_s;
    if utc < 0 {
        return Err("before 1970 (the Unix epoch)".into());
    }
    Ok(utc as u64 * 1_000_000 + micros)
}

/// Days in `month` (1–12) of `year`, by the Gregorian calendar.
fn days_in_month(year: u64, month: u64) -> u64 {
    // Remainders matched, not compared (`% 4 == 0` trips clippy's `is_multiple_of`, which is
    // newer than the MSRV): every 4th year leaps, but of the centuries only every 4th.
    let leap = matches!((year % 4, year % 100, year % 400), (0, 1.., _) | (0, 0, 0));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a Gregorian date (negative before it). Counts in 400-year eras
/// that begin on 1 March, so the leap day falls at the end of each year of the era.
fn days_from_civil(year: i64, month: u64, day: u64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let m = month as i64;
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719468 days from 0000-03-01 to 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

impl StartAt {
    /// The instant as a `SystemTime`.
    pub fn time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.unix_us)
    }

    /// Refuses an instant more than [`START_AT_AHEAD_MAX`] after `now`, with both figures.
    pub fn within_reach(&self, now: SystemTime) -> Result<(), WorkerError> {
        let ahead = self.time().duration_since(now).unwrap_or_default();
        if ahead <= START_AT_AHEAD_MAX {
            return Ok(());
        }
        Err(WorkerError::Invalid {
            option: "--start-at",
            value: self.text.clone(),
            why: format!(
                "it is {} s ({:.1} days) from now, more than the {} s (24 hours) --start-at waits at most",
                ahead.as_secs(),
                ahead.as_secs_f64() / 86_400.0,
                START_AT_AHEAD_MAX.as_secs()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn worker_parses_and_refuses() {
        assert_eq!(parse_worker("0/4"), Ok(Worker { index: 0, count: 4 }));
        assert_eq!(parse_worker("3/4"), Ok(Worker { index: 3, count: 4 }));
        for bad in ["4/4", "1/0", "-1/4", "1", "a/b", "1/4/5", "", "0/100001"] {
            let e = parse_worker(bad).unwrap_err().to_string();
            assert!(e.contains("--worker"), "{bad}: {e}");
        }
        assert!(parse_worker("4/4").unwrap_err().to_string().contains("counts from 0"));
    }

    #[test]
    fn start_at_reads_rfc3339_and_unix_seconds() {
        let us = |t: &str| parse_start_at(t).map(|s| s.unix_us);
        // `date -d 2026-12-01T10:00:00Z +%s` is 1796119200.
        assert_eq!(us("2026-12-01T10:00:00Z"), Ok(1_796_119_200_000_000));
        assert_eq!(us("2026-12-01t10:00:00z"), Ok(1_796_119_200_000_000));
        assert_eq!(us("2026-12-01 11:30:00+01:30"), Ok(1_796_119_200_000_000));
        assert_eq!(us("2026-12-01T05:00:00-05:00"), Ok(1_796_119_200_000_000));
        assert_eq!(us("2026-12-01T10:00:00.25Z"), Ok(1_796_119_200_250_000));
        assert_eq!(us("2026-12-01T10:00:00.1234567Z"), Ok(1_796_119_200_123_456));
        assert_eq!(us("1796119200"), Ok(1_796_119_200_000_000));
        assert_eq!(us("1796119200.5"), Ok(1_796_119_200_500_000));
        assert_eq!(us("1970-01-01T00:00:00Z"), Ok(0));
        // Leap days and the Gregorian rules: 2000 leap, 2100 not; 9999 the last year.
        assert_eq!(us("2000-02-29T00:00:00Z"), Ok(951_782_400_000_000));
        assert_eq!(us("2024-03-01T00:00:00Z"), Ok(1_709_251_200_000_000));
        assert_eq!(us("9999-12-31T23:59:59Z"), Ok(253_402_300_799_000_000));
        assert_eq!(us("2016-12-31T23:59:60Z"), Ok(1_483_228_800_000_000));
        for bad in [
            "",
            "tomorrow",
            "2026-12-01",
            "2026-12-01T10:00:00",
            "2026-12-01T10:00Z",
            "2026-13-01T10:00:00Z",
            "2026-02-29T10:00:00Z",
            "2100-02-29T10:00:00Z",
            "2026-04-31T10:00:00Z",
            "2026-12-00T10:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T10:60:00Z",
            "2026-12-01T10:00:61Z",
            "2026-12-01T10:00:00.Z",
            "2026-12-01T10:00:00+0100",
            "2026-12-01T10:00:00+24:00",
            "2026-12-01T10:00:00Zjunk",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:30:00+01:00",
            "1.2.3",
            "99999999999999999999",
            "+1796119200",
        ] {
            let e = parse_start_at(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("invalid value '{bad}' for --start-at")), "{bad}: {e}");
        }
    }

    #[test]
    fn start_at_more_than_a_day_ahead_is_refused() {
        let now = UNIX_EPOCH + Duration::from_secs(1_796_119_200);
        let at = |t: &str| parse_start_at(t).unwrap().within_reach(now);
        assert_eq!(at("1796119200"), Ok(()));
        assert_eq!(at("1796205600"), Ok(()), "a day ahead exactly");
        assert_eq!(at("1000"), Ok(()), "a past instant is a late start, not refused");
        let e = at("1796205601").unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid value '1796205601' for --start-at: it is 86401 s (1.0 days) from now, more than the \
             86400 s (24 hours) --start-at waits at most"
        );
        assert!(at("4952052000").unwrap_err().to_string().contains("3155932800 s (36527.0 days)"));
    }

    proptest! {
        /// Any Unix second written out as RFC 3339 (by civil-from-days, the inverse) reads back.
        #[test]
        fn rfc3339_round_trips(secs in 0u64..253_402_300_800, offset in -1439i64..1440) {
            let local = secs as i64 + offset * 60;
            prop_assume!(local >= 0);
            let (days, rest) = (local.div_euclid(86_400), local.rem_euclid(86_400));
            let (y, m, d) = civil_from_days(days);
            prop_assume!((1970..=9999).contains(&y));
            let sign = if offset < 0 { '-' } else { '+' };
            let text = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
                rest / 3600,
                rest / 60 % 60,
                rest % 60,
                offset.abs() / 60,
                offset.abs() % 60
            );
            prop_assert_eq!(parse_start_at(&text).map(|s| s.unix_us), Ok(secs * 1_000_000), "{}", text);
        }
    }

    /// The Gregorian date of a day number (days since 1970-01-01), by counting whole years and
    /// months: slow, and independent of [`days_from_civil`]'s era arithmetic.
    fn civil_from_days(mut days: i64) -> (i64, u64, u64) {
        let mut year = 1970;
        loop {
            let len = if days_in_month(year as u64, 2) == 29 { 366 } else { 365 };
            if days < len {
                break;
            }
            days -= len;
            year += 1;
        }
        let mut month = 1;
        while days >= days_in_month(year as u64, month) as i64 {
            days -= days_in_month(year as u64, month) as i64;
            month += 1;
        }
        (year, month, days as u64 + 1)
    }

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
