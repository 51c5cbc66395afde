//! `--ab HOST:PORT`: one invocation runs the tests on two targets in turn, A then B in even runs
//! and B then A in odd ones (A B, B A, A B, … over `--repeat`), so that whatever drifts on the
//! machine falls on both. Each target is a [`Session`] of its own (its startup connection, its
//! server probe for the verdict) on one epoch; a [`Pair`] is one session, or these two.

use respbench_driver::Tls;

use super::{Ended, Finished, Session};
use crate::config::Config;
use crate::error::Error;
use crate::observer::{Observer, StopHandle};
use crate::result::{Side, StepValues};
use crate::sides::{plain, sided};

/// The run the options ask for: one [`Session`], or with `--ab` one per target.
pub struct Pair {
    /// The options as given (`--repeat N` the whole run's).
    base: Config,
    a: Session,
    b: Option<Session>,
}

impl Pair {
    /// [`Session::new`] for `-h`/`-p`, and with `--ab` for its target too, each running its
    /// tests once per pass. `tls`: from [`crate::tls_client`] (B's is made for its own name).
    pub fn new(
        cfg: &Config,
        tls: Option<Tls>,
        obs: &mut dyn Observer,
        stop: StopHandle,
    ) -> Result<Pair, Error> {
        let Some(target) = cfg.ab.clone() else {
            return Ok(Pair { base: cfg.clone(), a: Session::new(cfg, tls, obs, stop)?, b: None });
        };
        // Each pass runs a side's tests once: the passes are the repeats.
        let mut one = cfg.clone();
        one.sweep.repeat = 1;
        let a = Session::new(&one, tls, &mut plain(obs, Side::A), stop.clone())?;
        let mut other = one;
        other.endpoint = target;
        let tls_b = super::tls_client(&other)?;
        let mut b = Session::new(&other, tls_b, &mut plain(obs, Side::B), stop)?;
        // One epoch: the documents' times are comparable across the sides.
        b.epoch = a.epoch;
        b.epoch_us = a.epoch_us;
        Ok(Pair { base: cfg.clone(), a, b: Some(b) })
    }

    /// The first target's session (the only one without `--ab`).
    pub fn first(&self) -> &Session {
        &self.a
    }

    /// `--ab`: the second target's session.
    pub fn second(&self) -> Option<&Session> {
        self.b.as_ref()
    }

    /// The run's configuration, as given.
    pub fn config(&self) -> &Config {
        &self.base
    }

    /// The run's epoch (see [`Session::epoch_us`]).
    pub fn epoch_us(&self) -> u64 {
        self.a.epoch_us
    }

    /// Runs every test: one session's run, or `--ab`'s passes in A B, B A order until one stops.
    pub fn run(self, obs: &mut dyn Observer) -> Finished {
        let Some(mut b) = self.b else { return self.a.run(obs) };
        let mut a = self.a;
        let runs = self.base.sweep.repeat.max(1) as u64;
        let ended = (|| {
            for run in 0..runs {
                let order = if run % 2 == 0 { [Side::A, Side::B] } else { [Side::B, Side::A] };
                for side in order {
                    let s = if side == Side::A { &mut a } else { &mut b };
                    let plain = StepValues::of(&crate::config::Step {
                        values: s.base.values.clone(),
                        clients: s.base.clients,
                        pipeline: s.base.pipeline,
                        threads: s.base.threads,
                        run: 0,
                    });
                    let mut sided = sided(&mut *obs, side, run, plain);
                    match s.run_suite(&mut sided)? {
                        Ended::Completed => {}
                        stop => return Ok(stop),
                    }
                }
            }
            Ok(Ended::Completed)
        })();
        let (fa, fb) = (finished(a, Ok(Ended::Completed)), finished(b, Ok(Ended::Completed)));
        Finished {
            ended,
            dropped: fa.dropped || fb.dropped,
            unfinished: fa.unfinished || fb.unfinished,
            late_by_s: fa.late_by_s.or(fb.late_by_s),
            first_error: fa.first_error.or(fb.first_error),
            empty_window: fa.empty_window.or(fb.empty_window),
            searches: fa.searches.into_iter().chain(fb.searches).collect(),
            first_failure: fa.first_failure.or(fb.first_failure),
        }
    }
}

/// What a session that ran (`ended`) leaves for the report.
fn finished(s: Session, ended: Result<Ended, Error>) -> Finished {
    Finished {
        ended,
        dropped: s.dropped,
        unfinished: s.unfinished,
        late_by_s: s.late_by_s,
        first_error: s.first_error,
        empty_window: s.empty_window,
        searches: s.searches,
        first_failure: s.first_failure,
    }
}
