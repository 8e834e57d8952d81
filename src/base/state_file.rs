//! The one safe way to read a state file heeler wrote itself.
//!
//! A state dir is only trusted when no other user can write to it (see
//! [`crate::base::dirs::trusted`]), but whatever sits at a state path is
//! still opened carefully: a FIFO there would block a plain `open` or
//! `read` forever (a hung `heeler accept`), a symbolic link would redirect
//! the read, and a huge file would be read whole. So a state file is opened
//! without following a link in its last component and without blocking
//! (`O_NOFOLLOW|O_NONBLOCK`, close-on-exec as every `std` open), must be a
//! regular file by `fstat`, and is read up to a cap. heeler writes its
//! state files by rename, never as links, so a link there is refused.
//!
//! Config files the user edits (which may well be links into a dotfiles
//! checkout) are not read here.

use std::fs::Metadata;
use std::io::{self, Read};
use std::path::Path;

use crate::base::sys;

/// The cap of [`read_text`] callers that have no smaller one.
pub const MAX_BYTES: u64 = 4 * 1024 * 1024;

/// The bytes of the regular file at `path` and its `fstat` metadata: an
/// error when it is missing, a link, not a regular file, unreadable or
/// longer than `cap` bytes.
pub fn read(path: &Path, cap: u64) -> io::Result<(Vec<u8>, Metadata)> {
    let file = sys::open_no_follow(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is longer than {cap} bytes", path.display()),
        ));
    }
    Ok((bytes, meta))
}

/// The UTF-8 text of the state file at `path` (see [`read`]); `None` for
/// any failure, which for heeler's own state means "start over".
pub fn read_text(path: &Path, cap: u64) -> Option<String> {
    String::from_utf8(read(path, cap).ok()?.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;
    use std::time::{Duration, Instant};

    #[test]
    fn reads_a_regular_file_up_to_its_cap() {
        let scratch = ScratchDir::new("state-file-read");
        let path = scratch.path().join("a.json");
        std::fs::write(&path, b"{}\n").unwrap();
        assert_eq!(read_text(&path, 3).as_deref(), Some("{}\n"));
        assert_eq!(read_text(&path, 2), None, "over the cap");
        assert_eq!(read_text(&scratch.path().join("missing"), 9), None);
        std::fs::write(&path, [0xff]).unwrap();
        assert_eq!(read_text(&path, 9), None, "not UTF-8");
    }

    #[test]
    fn refuses_links_directories_and_fifos_without_blocking() {
        let scratch = ScratchDir::new("state-file-refuse");
        let target = scratch.path().join("target.json");
        std::fs::write(&target, b"{}").unwrap();
        let link = scratch.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(read(&link, MAX_BYTES).is_err(), "a link");
        assert!(read(scratch.path(), MAX_BYTES).is_err(), "a directory");
        let fifo = scratch.path().join("fifo.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if made {
            let started = Instant::now();
            assert!(read(&fifo, MAX_BYTES).is_err(), "a FIFO");
            assert!(started.elapsed() < Duration::from_secs(5));
        }
    }
}
