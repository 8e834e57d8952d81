//! Scratch directories for unit tests: unique per test, always removed.
//!
//! Unit tests of one binary run as threads of one process, so a name built
//! from the process id alone can collide between two modules' tests; a
//! counter makes every directory unique. The directory goes when the value
//! is dropped, whether the test passed or panicked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh, empty directory under the system temp dir.
pub(crate) struct ScratchDir(pub PathBuf);

impl ScratchDir {
    /// Creates `heeler-<name>-<pid>-<n>`; panics (it is test code) when the
    /// temp dir is unusable.
    pub fn new(name: &str) -> ScratchDir {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("heeler-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a scratch dir");
        ScratchDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, path: impl AsRef<Path>) -> PathBuf {
        self.0.join(path)
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_scratch_dirs_of_one_name_differ_and_both_go() {
        let a = ScratchDir::new("scratch-test");
        let b = ScratchDir::new("scratch-test");
        assert_ne!(a.path(), b.path());
        std::fs::write(a.join("f"), b"x").unwrap();
        let (pa, pb) = (a.0.clone(), b.0.clone());
        drop(a);
        drop(b);
        assert!(!pa.exists() && !pb.exists());
    }
}
