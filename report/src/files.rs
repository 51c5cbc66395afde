//! Output files written safely: a document is written whole to a temporary file beside its
//! target, then renamed over it, so a reader never sees half a document and a failed write
//! leaves the old file (or none) behind.
//!
//! The temporary file's name is random (16 hex digits from `getrandom`) and it is opened with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600: in a shared directory, a name planted by
//! another user (a symlink to a file of the victim's) is never followed, truncated or
//! written; the open fails with `EEXIST` and another name is drawn. Once whole, the file gets
//! the mode a plain create would have given it (0666 less the umask) and is renamed.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many random names are tried before giving up (each taken one is a collision of 64
/// random bits, or names planted by someone guessing them).
const ATTEMPTS: usize = 16;

/// The temporary files made and not yet renamed or removed, for [`remove_unfinished`].
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn unfinished() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    UNFINISHED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the temporary files of writes still under way: for a process about to end without
/// finishing them (a late signal), so that it leaves none behind. Held only for a push or a
/// removal, the lock never waits on a write.
pub fn remove_unfinished() {
    for tmp in unfinished().drain(..) {
        let _ = std::fs::remove_file(tmp);
    }
}

/// `tmp` is renamed or removed: no longer [`remove_unfinished`]'s.
fn finished(tmp: &Path) {
    unfinished().retain(|t| t != tmp);
}

/// Eight random bytes from the kernel, as 16 hex digits.
fn random_hex() -> io::Result<String> {
    let mut buf = [0u8; 8];
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: getrandom writes at most `len` bytes into the buffer given.
        let n = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n as usize;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A temporary file beside `target` (same directory, so the rename stays on one filesystem),
/// created exclusively under a random name; its path and the open file.
pub fn create_temp_beside(target: &Path) -> io::Result<(PathBuf, File)> {
    let name = target.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(&name);
        tmp_name.push(format!(".{}.tmp", random_hex()?));
        let tmp = target.with_file_name(OsString::from_vec(tmp_name.into_vec()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => {
                unfinished().push(tmp.clone());
                return Ok((tmp, f));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name could be made")))
}

/// The process's umask, from `/proc/self/status` (read without changing it, which `umask(2)`
/// cannot do); 022 where the kernel does not say.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Writes `bytes` to `target` whole: into a temporary file beside it, then renamed over it.
/// On failure the temporary file is removed and `target` is as it was.
pub fn write_atomically(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let (tmp, mut file) = create_temp_beside(target)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.flush())
        .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(0o666 & !umask())))
        .and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, target)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    finished(&tmp);
    written
}

/// A file written as it goes (a capture of unknown length) under a temporary name beside its
/// target, renamed over it by [`Streamed::finish`]; dropped unfinished, it is removed.
pub struct Streamed {
    tmp: PathBuf,
    target: PathBuf,
    file: Option<io::BufWriter<File>>,
}

impl Streamed {
    /// Starts writing `target`.
    pub fn create(target: &Path) -> io::Result<Streamed> {
        let (tmp, file) = create_temp_beside(target)?;
        Ok(Streamed {
            tmp,
            target: target.to_path_buf(),
            file: Some(io::BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// Flushes the file and renames it over the target.
    pub fn finish(mut self) -> io::Result<()> {
        let Some(w) = self.file.take() else { return Ok(()) };
        let done = w
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
            .and_then(|f| f.set_permissions(std::fs::Permissions::from_mode(0o666 & !umask())))
            .and_then(|()| std::fs::rename(&self.tmp, &self.target));
        if done.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        finished(&self.tmp);
        done
    }
}

impl Write for Streamed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().map_or(Ok(0), |f| f.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

impl Drop for Streamed {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
            finished(&self.tmp);
        }
    }
}

/// Whether a file can be written at `target` (its directory takes a new file), found out by
/// creating and removing a temporary file beside it, as the write will: before a long run, not
/// after it. Nothing is left behind.
pub fn probe_writable(target: &Path) -> io::Result<()> {
    let (tmp, file) = create_temp_beside(target)?;
    drop(file);
    let removed = std::fs::remove_file(&tmp);
    finished(&tmp);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("respbench-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn writes_whole_and_leaves_no_temporary() {
        let d = dir("whole");
        let target = d.join("out.json");
        write_atomically(&target, b"first").unwrap();
        write_atomically(&target, b"second").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![OsString::from("out.json")]);
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        probe_writable(&target).unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temporary_names_differ_and_are_exclusive() {
        let d = dir("names");
        let target = d.join("x.json");
        let (a, _fa) = create_temp_beside(&target).unwrap();
        let (b, _fb) = create_temp_beside(&target).unwrap();
        assert_ne!(a, b);
        assert!(a.file_name().unwrap().to_string_lossy().starts_with(".x.json."));
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_streamed_file_appears_whole_or_not_at_all() {
        let d = dir("streamed");
        let target = d.join("cap.bin");
        let mut s = Streamed::create(&target).unwrap();
        s.write_all(b"part").unwrap();
        assert!(!target.exists(), "not before it is finished");
        drop(s);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "an unfinished one leaves nothing");
        let mut s = Streamed::create(&target).unwrap();
        s.write_all(b"whole").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let target = Path::new("/nonexistent-respbench-dir/out.json");
        assert!(write_atomically(target, b"x").is_err());
        assert!(probe_writable(target).is_err());
    }
}
