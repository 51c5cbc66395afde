//! The one place the session calls the backends: a test on the backend `--backend` names, and
//! the io_uring check before the run.

use std::time::Instant;

use respbench_core::Outcome;
use respbench_driver::TestRun;

use crate::config::{Backend, Config};
use crate::error::Error;

/// Runs `run` on `backend` to its end.
pub(crate) fn run_backend(
    backend: Backend,
    run: &TestRun,
    tls: Option<&respbench_driver::Tls>,
    epoch: Instant,
) -> Result<Outcome, Error> {
    match backend {
        Backend::Mio => respbench_mio::run_test(run, tls, epoch),
        Backend::Smol => respbench_smol::run_test(run, tls, epoch),
        #[cfg(all(feature = "uring", target_os = "linux"))]
        Backend::Uring => match URING.get() {
            Some(uring) => respbench_uring::run_test(run, tls, uring, epoch),
            None => return Err(Error::Uring("io_uring was not checked before the run".into())),
        },
        #[cfg(not(all(feature = "uring", target_os = "linux")))]
        Backend::Uring => return Err(Error::Uring(no_uring())),
    }
    .map_err(Error::Backend)
}

/// The io_uring backend as this kernel offers it, found once before the first test.
#[cfg(all(feature = "uring", target_os = "linux"))]
static URING: std::sync::OnceLock<respbench_uring::Uring> = std::sync::OnceLock::new();

/// With `--backend uring`: whether io_uring works here, checked before the run, so that a kernel
/// or a container that refuses it ends the run with a message and status 1.
pub(crate) fn check_uring(cfg: &Config) -> Result<(), Error> {
    if !cfg.backends.contains(&Backend::Uring) {
        return Ok(());
    }
    #[cfg(all(feature = "uring", target_os = "linux"))]
    {
        let opts = respbench_uring::Options {
            sqpoll: cfg.uring_sqpoll,
            // The fallback of kernels without multishot receive, testable on one that has it.
            single_shot: std::env::var_os("RESPBENCH_URING_SINGLE_SHOT").is_some_and(|v| v == "1"),
        };
        let uring = respbench_uring::check(&opts).map_err(|e| Error::Uring(e.to_string()))?;
        let _ = URING.set(uring);
        Ok(())
    }
    #[cfg(not(all(feature = "uring", target_os = "linux")))]
    Err(Error::Uring(no_uring()))
}

#[cfg(not(all(feature = "uring", target_os = "linux")))]
fn no_uring() -> String {
    let why = if cfg!(target_os = "linux") {
        "this respbench was built without the `uring` feature"
    } else {
        "io_uring is Linux's, and this is not Linux"
    };
    format!("io_uring is not available here: {why}; use --backend mio")
}

/// How the backend named `backend` works, where it has something to say (the verbose report's
/// line).
pub fn note(backend: Option<&str>) -> Option<String> {
    #[cfg(all(feature = "uring", target_os = "linux"))]
    if backend == Some("uring") {
        return URING.get().map(|u| u.describe());
    }
    let _ = backend;
    None
}
