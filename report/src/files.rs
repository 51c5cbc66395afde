//! Output files written safely: a document is written whole to a temporary file beside its
//! target, then renamed over it, so a reader never sees half a document and a failed write
//! leaves the old file (or none) behind.
//!
//! The temporary file's name is random (16 hex digits from `getrandom`) and it is opened with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600: in a shared directory, a name planted by
//! another user (a symlink to a file of the victim's) is never followed, truncated or
//! written; the open fails with `EEXIST` and another name is drawn. Once whole, the file gets
//! the mode a plain create would have given it (0666 less the umask) and is renamed.
//!
//! Only a new path or a regular file is replaced that way. A path that names something else is
//! never renamed over: a FIFO or a device (`/dev/null`, a terminal), or a symlink to one, is
//! written where it is (opened for writing, neither created nor truncated), as a shell's `>`
//! would, and so is a name of the process's own descriptors (`/dev/stdout`, `/dev/fd/N`), whose
//! descriptor is written; a directory, a socket or a block device is refused. Renaming over them emptied a
//! FIFO's reader, printed nothing for `/dev/stdout`, and, as root, made `/dev/null` a regular
//! file for the whole machine. [`check`] finds out which before a run with `stat` alone: opening
//! a FIFO early would hand its reader an end of file.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// How many random names are tried before giving up (each taken one is a collision of 64
/// random bits, or names planted by someone guessing them).
const ATTEMPTS: usize = 16;

/// The temporary files made and not yet renamed or removed, for [`remove_unfinished`].
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Who is told that an output's open waits for a FIFO's reader ([`on_waiting`]).
static WAITING: OnceLock<fn(&Path)> = OnceLock::new();

/// Registers `notice`, called with the path when an output opens a FIFO that no process reads,
/// before the open waits for a reader, so that a run that would wait can say why rather than seem
/// to hang. The binary registers one that says so on stderr; the library says nothing itself,
/// and without a registration nothing is said. The first registration holds.
pub fn on_waiting(notice: fn(&Path)) {
    let _ = WAITING.set(notice);
}

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

/// How an output's path is written, from what is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Nothing, or a regular file (or a symlink, which is replaced, not followed): written to a
    /// temporary file beside it, then renamed over it.
    Replaced,
    /// A FIFO or a character device (`/dev/null`, a terminal), or a symlink to one: written
    /// where it is, neither created, truncated nor replaced.
    InPlace,
    /// One of the process's own descriptors named (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
    /// `/proc/self/fd/N`): that descriptor is written, whatever it is open on.
    Descriptor(i32),
}

/// The descriptor `target` names, for the names of the process's own: `/dev/stdout` (1),
/// `/dev/stderr` (2), `/dev/fd/N` and `/proc/self/fd/N`. Opening one of them anew would start
/// at offset 0 of a regular file that stdout appends to, and a temporary file beside it would
/// be renamed over `/dev/stdout` itself.
fn own_descriptor(target: &Path) -> Option<i32> {
    let bytes = target.as_os_str().as_bytes();
    match bytes {
        b"/dev/stdout" => return Some(1),
        b"/dev/stderr" => return Some(2),
        _ => {}
    }
    let n = bytes.strip_prefix(b"/dev/fd/").or_else(|| bytes.strip_prefix(b"/proc/self/fd/"))?;
    std::str::from_utf8(n).ok().filter(|n| n.bytes().all(|b| b.is_ascii_digit())).and_then(|n| n.parse().ok())
}

/// How `target` will be written, found with `stat` alone (a FIFO is not opened: that would hand
/// its reader an end of file). A directory, a socket, a block device (a disk: no output belongs
/// there), or a FIFO or character device that cannot be written (`access(2)`) is an error, said
/// before a run rather than after it.
pub fn check(target: &Path) -> io::Result<Target> {
    if let Some(fd) = own_descriptor(target) {
        // SAFETY: fcntl(F_GETFL) reads the descriptor's flags, and nothing else.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        if flags & libc::O_ACCMODE == libc::O_RDONLY {
            return Err(io::Error::other(format!("descriptor {fd} is open for reading only")));
        }
        return Ok(Target::Descriptor(fd));
    }
    let meta = match std::fs::metadata(target) {
        Ok(m) => m,
        // A dangling symlink is replaced as a missing file would be created.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replaced),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    if kind.is_file() {
        Ok(Target::Replaced)
    } else if kind.is_dir() {
        Err(io::Error::other("it is a directory"))
    } else if kind.is_block_device() {
        Err(io::Error::other(NO_BLOCK_DEVICE))
    } else if kind.is_fifo() || kind.is_char_device() {
        let c = std::ffi::CString::new(target.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: access(2) reads a NUL-terminated path and opens nothing.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Target::InPlace)
    } else {
        Err(io::Error::other("it is a socket, not a file that can be written"))
    }
}

/// Why a block device is not written.
const NO_BLOCK_DEVICE: &str = "it is a block device, which respbench writes no output into";

/// Opens `target`, which [`check`] found is not to be replaced, for writing where it is: no
/// create, no truncation (and with `nofollow`, not through a symlink). `None` when what it opens
/// is a regular file after all (the path changed since it was checked): closed unwritten, it is
/// replaced as one; a block device there then is an error.
fn open_in_place(target: &Path, how: Target, nofollow: bool) -> io::Result<Option<File>> {
    let file = match how {
        Target::Replaced => return Ok(None),
        Target::Descriptor(fd) => {
            // SAFETY: the descriptor is only borrowed to duplicate it; `check` found it open.
            File::from(unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?)
        }
        Target::InPlace => {
            let nofollow = if nofollow { libc::O_NOFOLLOW } else { 0 };
            let open = |flags: i32| {
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC | nofollow | flags)
                    .open(target)
            };
            // A FIFO's open waits for a reader: tried without waiting first, so that a run that
            // would wait says why rather than seem to hang.
            let file = match open(libc::O_NONBLOCK) {
                Ok(file) => blocking(file)?,
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) && is_fifo(target) => {
                    if let Some(notice) = WAITING.get() {
                        notice(target);
                    }
                    open(0)?
                }
                Err(e) => return Err(e),
            };
            let kind = file.metadata()?.file_type();
            if kind.is_file() {
                return Ok(None);
            }
            if kind.is_block_device() {
                return Err(io::Error::other(NO_BLOCK_DEVICE));
            }
            file
        }
    };
    Ok(Some(file))
}

/// Whether `target` leads to a FIFO.
fn is_fifo(target: &Path) -> bool {
    std::fs::metadata(target).is_ok_and(|m| m.file_type().is_fifo())
}

/// `file`, opened with `O_NONBLOCK`, made blocking: a write to a full FIFO waits for its reader
/// rather than fail with `EAGAIN`.
fn blocking(file: File) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl reads and sets the flags of a descriptor `file` owns.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Opens `target` for writing where it is when it is not to be replaced ([`check`]): `None`
/// for a new path or a regular file.
fn in_place(target: &Path) -> io::Result<Option<File>> {
    open_in_place(target, check(target)?, false)
}

/// Writes `bytes` to `target` whole: into a temporary file beside it, then renamed over it.
/// On failure the temporary file is removed and `target` is as it was. A FIFO, a device or a
/// descriptor ([`Target`]) is written where it is.
pub fn write_atomically(target: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(mut file) = in_place(target)? {
        return file.write_all(bytes).and_then(|()| file.flush());
    }
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
/// target, renamed over it by [`Streamed::finish`]; dropped unfinished, it is removed. A FIFO, a
/// device or a descriptor ([`Target`]) is written where it is as the writes come.
pub struct Streamed {
    /// The temporary file, `None` when the target is written in place.
    tmp: Option<PathBuf>,
    target: PathBuf,
    file: Option<io::BufWriter<File>>,
}

impl Streamed {
    /// Starts writing `target`.
    pub fn create(target: &Path) -> io::Result<Streamed> {
        let (tmp, file) = match in_place(target)? {
            Some(file) => (None, file),
            None => create_temp_beside(target).map(|(tmp, file)| (Some(tmp), file))?,
        };
        Ok(Streamed {
            tmp,
            target: target.to_path_buf(),
            file: Some(io::BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// Flushes the file and renames it over the target.
    pub fn finish(mut self) -> io::Result<()> {
        let Some(w) = self.file.take() else { return Ok(()) };
        let file = w.into_inner().map_err(io::IntoInnerError::into_error);
        let Some(tmp) = &self.tmp else { return file.map(drop) };
        let done = file
            .and_then(|f| f.set_permissions(std::fs::Permissions::from_mode(0o666 & !umask())))
            .and_then(|()| std::fs::rename(tmp, &self.target));
        if done.is_err() {
            let _ = std::fs::remove_file(tmp);
        }
        finished(tmp);
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
        if let (Some(_), Some(tmp)) = (self.file.take(), &self.tmp) {
            let _ = std::fs::remove_file(tmp);
            finished(tmp);
        }
    }
}

/// A file streamed at its path as it is written (`--hlog`, read while the run goes): created
/// under a temporary name (`O_EXCL`, mode 0600) and renamed to its path at once, so that a
/// symlink planted there is replaced, never followed; [`Live::publish`] gives it the usual mode
/// (0666 less the umask) once the run is over. A FIFO, a device or a descriptor ([`Target`]) is
/// written where it is, and its mode left alone.
pub struct Live {
    file: File,
    /// Created by respbench: its mode is made the usual one at the end.
    created: bool,
}

impl Live {
    /// Creates `target` (see [`Live`]); a symlink at `target` is an error
    /// ([`check_unfollowed`]).
    pub fn create(target: &Path) -> io::Result<Live> {
        if let Some(file) = open_in_place(target, check_unfollowed(target)?, true)? {
            return Ok(Live { file, created: false });
        }
        let (tmp, file) = create_temp_beside(target)?;
        let renamed = std::fs::rename(&tmp, target);
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        finished(&tmp);
        renamed.map(|()| Live { file, created: true })
    }

    /// Gives the file the mode a plain create would have (0666 less the umask), once written;
    /// nothing for one written in place.
    pub fn publish(&self) -> io::Result<()> {
        if self.created {
            self.file.set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()))?;
        }
        Ok(())
    }
}

impl Write for Live {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Live {
    /// A log dropped before [`Live::publish`] (it failed, or the run ended in an error) gets
    /// its usual mode too.
    fn drop(&mut self) {
        let _ = self.publish();
    }
}

/// [`check`] for a file that is written at its path as it goes ([`Live`]), where following a
/// symlink planted there would write the file or device it points to: a symlink is an error,
/// whatever it leads to, unless the path names one of the process's descriptors
/// (`/dev/stdout`, whose descriptor is written). A FIFO or a character device itself at the
/// path is written in place.
pub fn check_unfollowed(target: &Path) -> io::Result<Target> {
    let how = check(target)?;
    if !matches!(how, Target::Descriptor(_)) {
        if let Ok(meta) = std::fs::symlink_metadata(target) {
            if meta.file_type().is_symlink() {
                let to =
                    std::fs::read_link(target).map(|t| format!(" (to {})", t.display())).unwrap_or_default();
                return Err(io::Error::other(format!(
                    "it is a symbolic link{to}, which respbench does not follow there: name the file itself"
                )));
            }
        }
    }
    Ok(how)
}

/// Whether a file can be written at `target`, found out before a long run, not after it: for a
/// new path or a regular file, whether its directory takes a new file (by creating and removing
/// a temporary file beside it, as the write will; nothing is left behind); for anything else,
/// [`check`]'s `stat` and `access`.
pub fn probe_writable(target: &Path) -> io::Result<()> {
    probe(target, check(target)?)
}

/// [`probe_writable`] for a target [`check`] or [`check_unfollowed`] found is written as `how`.
pub fn probe(target: &Path, how: Target) -> io::Result<()> {
    if how != Target::Replaced {
        return Ok(());
    }
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
    fn what_is_at_a_path_decides_how_it_is_written() {
        let d = dir("kinds");
        assert_eq!(check(&d.join("new.json")).unwrap(), Target::Replaced);
        assert_eq!(check(&d).unwrap_err().to_string(), "it is a directory");
        assert_eq!(check(Path::new("/dev/null")).unwrap(), Target::InPlace);
        assert_eq!(own_descriptor(Path::new("/dev/stdout")), Some(1));
        assert_eq!(own_descriptor(Path::new("/proc/self/fd/7")), Some(7));
        assert_eq!(own_descriptor(Path::new("/dev/fd/1x")), None);
        // A symlink is replaced by a write as a whole, but refused by a live file.
        let link = d.join("link");
        std::os::unix::fs::symlink(d.join("elsewhere"), &link).unwrap();
        assert_eq!(check(&link).unwrap(), Target::Replaced);
        assert!(check_unfollowed(&link).unwrap_err().to_string().contains("symbolic link"));
        std::os::unix::fs::symlink("/dev/null", d.join("null")).unwrap();
        assert_eq!(check(&d.join("null")).unwrap(), Target::InPlace);
        assert!(check_unfollowed(&d.join("null")).is_err());
        assert_eq!(check_unfollowed(Path::new("/dev/null")).unwrap(), Target::InPlace);
        let mut live = Live::create(Path::new("/dev/null")).unwrap();
        live.write_all(b"x").unwrap();
        let disk = std::fs::read_dir("/dev")
            .unwrap()
            .flatten()
            .find(|e| e.file_type().is_ok_and(|t| t.is_block_device()));
        if let Some(disk) = disk {
            assert_eq!(check(&disk.path()).unwrap_err().to_string(), NO_BLOCK_DEVICE);
        }
        let log = d.join("live.hlog");
        let live = Live::create(&log).unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
        live.publish().unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o666 & !umask());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let target = Path::new("/nonexistent-respbench-dir/out.json");
        assert!(write_atomically(target, b"x").is_err());
        assert!(probe_writable(target).is_err());
    }
}
