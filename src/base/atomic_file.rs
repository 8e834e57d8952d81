//! Replacing files without ever leaving a torn or truncated one behind.
//!
//! Every file heeler rewrites (`authorized_keys`, `notifications.json`,
//! `sidebar.json`, state files) goes through [`write`]: a fresh temp file in
//! the same directory, written in full and synced, then renamed over the
//! target, so a reader sees the old or the new file and never a mix. Edits
//! that read-modify-write hold a [`LockFile`] around the whole cycle.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

static TEMP_COUNTER: AtomicU32 = AtomicU32::new(0);

/// The permission bits (`mode & 0o777`) of an existing file.
pub fn existing_mode(path: &Path) -> io::Result<Option<u32>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions().mode() & 0o777)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn temp_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!("{name}.tmp-{}-{unique}", std::process::id()))
}

/// Atomically replaces `path` with `contents`, giving the new file `mode`
/// exactly (umask does not apply). The temp file is removed on failure.
pub fn write(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    write_atomically(path, contents, mode, Durability::Synced)
}

/// Like [`write`] but without `fsync`: still atomic (a reader sees the old
/// or the new file), but a crash may lose the new contents. Only for
/// ephemeral state whose loss is harmless (pairing state files), where the
/// fsyncs would dominate the cost of a short-lived process.
pub fn write_unsynced(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    write_atomically(path, contents, mode, Durability::Unsynced)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    Synced,
    Unsynced,
}

fn write_atomically(
    path: &Path,
    contents: &[u8],
    mode: u32,
    durability: Durability,
) -> io::Result<()> {
    let temp = temp_path_for(path);
    let result = write_then_rename(&temp, path, contents, mode, durability);
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Like [`write`], keeping the mode of the file it replaces, or `new_mode`
/// for a new file.
pub fn write_keeping_mode(path: &Path, contents: &[u8], new_mode: u32) -> io::Result<()> {
    let mode = existing_mode(path)?.unwrap_or(new_mode);
    write(path, contents, mode)
}

fn write_then_rename(
    temp: &Path,
    path: &Path,
    contents: &[u8],
    mode: u32,
    durability: Durability,
) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(temp)?;
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    file.write_all(contents)?;
    if durability == Durability::Unsynced {
        drop(file);
        return fs::rename(temp, path);
    }
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)?;
    if let Some(dir) = path.parent() {
        // Durability of the rename itself; best effort (not every fs allows it).
        if let Ok(dir) = File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        }) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Creates `dir` and its missing parents; directories it creates get `mode`,
/// existing ones are left as they are.
pub fn create_dir_all(dir: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(mode).create(dir)
}

/// How long [`LockFile::acquire`] waits, and when a lock counts as abandoned.
#[derive(Debug, Clone, Copy)]
pub struct LockPolicy {
    pub deadline: Duration,
    pub stale_after: Duration,
    pub retry_every: Duration,
}

impl LockPolicy {
    /// The Node plugin's authorized_keys policy: 5 s deadline, a lock older
    /// than 10 s is taken over, retry every 25 ms.
    pub const AUTHORIZED_KEYS: LockPolicy = LockPolicy {
        deadline: Duration::from_millis(5_000),
        stale_after: Duration::from_millis(10_000),
        retry_every: Duration::from_millis(25),
    };
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    TimedOut(PathBuf),
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::TimedOut(path) => write!(f, "timed out waiting for lock {}", path.display()),
            LockError::Io(path, e) => write!(f, "cannot create lock {}: {e}", path.display()),
        }
    }
}

impl std::error::Error for LockError {}

/// An exclusive lock held by creating a file with `O_EXCL` (it contains our
/// pid); removed on drop. Works across processes and on every filesystem
/// the Node plugin's lock worked on, and interoperates with it.
#[derive(Debug)]
pub struct LockFile {
    path: PathBuf,
}

impl LockFile {
    pub fn acquire(path: &Path, policy: LockPolicy) -> Result<LockFile, LockError> {
        let started = Instant::now();
        loop {
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(LockFile {
                        path: path.to_path_buf(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    match fs::metadata(path).and_then(|m| m.modified()) {
                        Ok(modified) => {
                            let age = SystemTime::now()
                                .duration_since(modified)
                                .unwrap_or_default();
                            if age > policy.stale_after {
                                let _ = fs::remove_file(path);
                                continue;
                            }
                        }
                        // The holder released it between our open and stat.
                        Err(_) => continue,
                    }
                    if started.elapsed() >= policy.deadline {
                        return Err(LockError::TimedOut(path.to_path_buf()));
                    }
                    std::thread::sleep(policy.retry_every);
                }
                Err(e) => return Err(LockError::Io(path.to_path_buf(), e)),
            }
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::base::scratch::ScratchDir;

    fn temp_dir(name: &str) -> ScratchDir {
        ScratchDir::new(&format!("atomic-{name}"))
    }

    #[test]
    fn write_replaces_and_keeps_mode() {
        let dir = temp_dir("mode");
        let path = dir.join("f");
        write(&path, b"one", 0o640).unwrap();
        write_keeping_mode(&path, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(existing_mode(&path).unwrap(), Some(0o640));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
    }

    #[test]
    fn lock_excludes_then_releases() {
        let dir = temp_dir("lock");
        let path = dir.join("l.lock");
        let quick = LockPolicy {
            deadline: Duration::from_millis(50),
            stale_after: Duration::from_secs(60),
            retry_every: Duration::from_millis(5),
        };
        let held = LockFile::acquire(&path, quick).unwrap();
        assert!(matches!(
            LockFile::acquire(&path, quick),
            Err(LockError::TimedOut(_))
        ));
        drop(held);
        assert!(LockFile::acquire(&path, quick).is_ok());
    }
}
