//! A temp directory guard for integration tests: a fresh, empty directory
//! under the system temp dir, removed with everything in it when the guard
//! is dropped, also when the test panics, so a test run leaves `/tmp` as
//! it found it.

use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// `<temp>/<name>-<pid>`, new and empty; when another test of this
    /// process holds that name (every test of the one integration binary
    /// shares the pid), `<name>-<pid>-<n>` with the first free `n`. The
    /// first asker keeps the short name: some tests show the path on a
    /// screen of fixed width.
    pub fn new(name: &str) -> TempDir {
        let base = format!("{name}-{}", std::process::id());
        for n in 0u32.. {
            let leaf = if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let dir = std::env::temp_dir().join(leaf);
            match std::fs::create_dir(&dir) {
                Ok(()) => return TempDir(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("{}: {e}", dir.display()),
            }
        }
        unreachable!("a free directory name below u32::MAX")
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
