//! A temp directory guard for integration tests: a fresh, empty directory
//! under the system temp dir, removed with everything in it when the guard
//! is dropped, also when the test panics, so a test run leaves `/tmp` as
//! it found it.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// `<temp>/<name>-<pid>`, emptied first.
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
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
