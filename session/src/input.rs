//! An input file read whole before anything connects (`--dataset`): in bounded memory, no
//! further than what is needed, and a stop (SIGINT, SIGTERM) heard at once, even while a FIFO
//! or a device never answers.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::stop::StopHandle;

/// How a bounded read ended without the file's bytes.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(io::Error),
    /// It had more than the bound: the bytes read when that was found.
    TooLarge {
        /// Bytes read.
        read: u64,
    },
    /// A stop was asked for while it was read: the bytes read by then.
    Stopped {
        /// Bytes read.
        read: u64,
    },
}

/// How large a piece of the file each read asks for.
const CHUNK: usize = 64 << 10;

/// How often the caller looks for a stop while the file is read.
const LOOK: Duration = Duration::from_millis(20);

/// Reads `path` from its start to its end, or to where `enough` says what is needed ends (the
/// bytes up to there are given); a file of more than `max` bytes is refused, and a stop asked
/// on `stop` ends the read at once. The file is read on a thread of its own, so that an open or
/// a read that never returns (a FIFO nobody writes) cannot keep the caller from the stop: the
/// thread is left to the process's exit then. `enough` is asked each time the bytes read have
/// doubled, so that it runs in linear time in all, and the read goes at most twice as far as
/// it needed.
pub fn read_bounded(
    path: &Path,
    max: u64,
    stop: &StopHandle,
    enough: impl Fn(&[u8]) -> Option<usize> + Send + 'static,
) -> Result<Vec<u8>, ReadError> {
    let read = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let (path, counter, thread_stop) = (PathBuf::from(path), Arc::clone(&read), stop.clone());
    std::thread::Builder::new()
        .name("input".into())
        .spawn(move || {
            let _ = tx.send(read_all(&path, max, &thread_stop, &counter, enough));
        })
        .map_err(ReadError::Io)?;
    loop {
        match rx.recv_timeout(LOOK) {
            Ok(r) => return r,
            Err(RecvTimeoutError::Timeout) if stop.requested() => {
                return Err(ReadError::Stopped { read: read.load(Ordering::Relaxed) })
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(ReadError::Io(io::Error::other("the thread reading it ended")))
            }
        }
    }
}

/// [`read_bounded`]'s thread: the reads, `read` kept up to date.
fn read_all(
    path: &Path,
    max: u64,
    stop: &StopHandle,
    read: &AtomicU64,
    enough: impl Fn(&[u8]) -> Option<usize>,
) -> Result<Vec<u8>, ReadError> {
    let mut file = File::open(path).map_err(ReadError::Io)?;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    let mut looked_at = 0;
    loop {
        if stop.requested() {
            return Err(ReadError::Stopped { read: buf.len() as u64 });
        }
        let n = match file.read(&mut chunk) {
            Ok(0) => return Ok(buf),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        let total = buf.len() as u64 + n as u64;
        if total > max {
            return Err(ReadError::TooLarge { read: total });
        }
        buf.extend_from_slice(&chunk[..n]);
        read.store(total, Ordering::Relaxed);
        if buf.len() >= looked_at * 2 {
            looked_at = buf.len();
            if let Some(end) = enough(&buf) {
                buf.truncate(end);
                return Ok(buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_to_the_end_to_enough_or_refuses_past_the_bound() {
        let dir = std::env::temp_dir().join(format!("respbench-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, vec![b'x'; 300_000]).unwrap();
        let stop = StopHandle::new();
        assert_eq!(read_bounded(&file, 300_000, &stop, |_| None).unwrap().len(), 300_000);
        let r = read_bounded(&file, 299_999, &stop, |_| None);
        assert!(matches!(r, Err(ReadError::TooLarge { read: 300_000 })), "{r:?}");
        // Enough is asked at 64 KiB, 128 KiB, 256 KiB: what it needs is kept, and no more read.
        let got = read_bounded(&file, 200_000, &stop, |b| (b.len() > 100_000).then_some(7)).unwrap();
        assert_eq!(got.len(), 7);
        stop.request();
        let r = read_bounded(Path::new("/dev/zero"), u64::MAX, &stop, |_| None);
        assert!(matches!(r, Err(ReadError::Stopped { .. })), "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
