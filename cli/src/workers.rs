//! The worker a Kubernetes Indexed Job's environment names, when `--worker` is absent (it may
//! warn, so it is the command line's). Parsing `--worker I/N` and `--start-at`, and what a
//! worker's share is, are the session's (`respbench_session::workers`).

use respbench_report::say;
use respbench_session::config::{OptionError, Worker};

/// The worker index a Kubernetes Indexed Job gives each pod.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// How many workers share the run, when `--worker` is not given.
pub const COUNT_ENV: &str = "RESPBENCH_WORKERS";

/// The worker the environment names when `--worker` is absent: `JOB_COMPLETION_INDEX` (set
/// by a Kubernetes Indexed Job) of `RESPBENCH_WORKERS`. `None` without `RESPBENCH_WORKERS`
/// (an index alone splits nothing: a warning says so).
pub fn worker_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Worker>, OptionError> {
    let index = var(INDEX_ENV);
    let Some(count) = var(COUNT_ENV) else {
        if let Some(i) = index {
            say!(
                "WARNING: {INDEX_ENV}={i} but {COUNT_ENV} is not set: this process runs the whole load \
                     (set {COUNT_ENV}=N, or --worker I/N, to split it)"
            );
        }
        return Ok(None);
    };
    let count: u64 = count.trim().parse().map_err(|_| {
        OptionError::Refused(format!(
            "invalid value '{count}' in {COUNT_ENV}: expected the number of workers"
        ))
    })?;
    let Some(index) = index else {
        return Err(OptionError::Refused(format!(
            "{COUNT_ENV}={count} but {INDEX_ENV} is not set: say which worker this is with --worker \
                 I/{count} or {INDEX_ENV}=I"
        )));
    };
    let i: u64 = index.trim().parse().map_err(|_| {
        OptionError::Refused(format!(
            "invalid value '{index}' in {INDEX_ENV}: expected a worker index from 0"
        ))
    })?;
    Worker::new(i, count)
        .map(Some)
        .map_err(|e| OptionError::Refused(format!("{INDEX_ENV}={i}, {COUNT_ENV}={count}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_from_the_environment() {
        fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        }
        let both = [(INDEX_ENV, "2"), (COUNT_ENV, "5")];
        assert_eq!(worker_from_env(env(&both)), Ok(Some(Worker { index: 2, count: 5 })));
        assert_eq!(worker_from_env(env(&[])), Ok(None));
        assert_eq!(worker_from_env(env(&[(INDEX_ENV, "2")])), Ok(None));
        let e = worker_from_env(env(&[(COUNT_ENV, "5")])).unwrap_err().to_string();
        assert!(e.contains(INDEX_ENV), "{e}");
        let e = worker_from_env(env(&[(INDEX_ENV, "5"), (COUNT_ENV, "5")])).unwrap_err().to_string();
        assert!(e.contains("JOB_COMPLETION_INDEX=5, RESPBENCH_WORKERS=5"), "{e}");
        assert!(worker_from_env(env(&[(INDEX_ENV, "x"), (COUNT_ENV, "5")])).is_err());
        assert!(worker_from_env(env(&[(INDEX_ENV, "0"), (COUNT_ENV, "five")])).is_err());
    }
}
