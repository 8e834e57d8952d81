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
//! Config files the user edits (`pair.json`, `notify.json`), or the app
//! writes over SSH (`notifications.json`), may well be links into a
//! dotfiles checkout, so [`read_config`] follows a link in the last
//! component and otherwise applies the same rules: opened without
//! blocking, a regular file by `fstat`, read up to a cap. A link to
//! `/dev/zero` or `/dev/urandom` is then a device, refused at once instead
//! of read until memory runs out, and a FIFO is refused instead of waited
//! on (it once held a hook in one of herdr's command slots).
//!
//! The plugin's config files, the herdr config the sidebar reads, the
//! pairing, hook and sidebar state, every file of Usage state (its JSON
//! files whole through [`read`]; its stores' base files, journals, locks
//! and logs opened through [`open`] and [`open_with`], the same rules for
//! a file read at offsets or written in place), and what doctor shows are
//! all read here. A
//! refusal is an [`io::Error`] of a kind the caller can tell apart:
//! `NotFound` (missing), `InvalidInput` (not a regular file: a FIFO, a
//! device, a directory, or for state a link), `FileTooLarge` (over the
//! cap).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

use crate::base::sys;

/// The cap of [`read_text`] callers that have no smaller one.
pub(crate) const MAX_BYTES: u64 = 4 * 1024 * 1024;

/// Whether a symbolic link in a path's last component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FinalLink {
    /// heeler's own state: a link there is refused (`O_NOFOLLOW`).
    Refused,
    /// A config file: the link is followed to the file it names.
    Followed,
}

/// The bytes of the regular file at `path` and its `fstat` metadata: an
/// error when it is missing, a link, not a regular file, unreadable or
/// longer than `cap` bytes.
pub fn read(path: &Path, cap: u64) -> io::Result<(Vec<u8>, Metadata)> {
    read_with(path, cap, FinalLink::Refused)
}

/// The bytes of the config file at `path`, a link in its last component
/// followed: an error when it is missing, not a regular file (a FIFO, a
/// device), unreadable or longer than `cap` bytes.
pub(crate) fn read_config(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_with(path, cap, FinalLink::Followed).map(|(bytes, _)| bytes)
}

/// The UTF-8 text of the config file at `path` (see [`read_config`]);
/// `None` for any failure, which for a config file means "absent".
pub(crate) fn read_config_text(path: &Path, cap: u64) -> Option<String> {
    String::from_utf8(read_config(path, cap).ok()?).ok()
}

fn read_with(path: &Path, cap: u64, link: FinalLink) -> io::Result<(Vec<u8>, Metadata)> {
    let file = match link {
        FinalLink::Refused => sys::open_no_follow(path)?,
        FinalLink::Followed => sys::open_non_blocking(path)?,
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is longer than {cap} bytes", path.display()),
        ));
    }
    Ok((bytes, meta))
}

/// Opens heeler's own state file at `path` for reads at chosen offsets
/// (a store's base file), as [`read`] opens it: no link in the last
/// component, no blocking, a regular file by `fstat`. Returns the file and
/// that metadata.
pub(crate) fn open(path: &Path) -> io::Result<(File, Metadata)> {
    open_with(std::fs::OpenOptions::new().read(true), path)
}

/// Opens heeler's own state file at `path` with `options` (a journal
/// appended to, a lock, a store's file read and written), as [`open`]
/// does: `O_NOFOLLOW|O_NONBLOCK` added, so a FIFO there fails the open or
/// is refused by `fstat` instead of blocking it or the reads and writes
/// after it, and anything but a regular file is refused.
pub(crate) fn open_with(
    options: &mut std::fs::OpenOptions,
    path: &Path,
) -> io::Result<(File, Metadata)> {
    let file = sys::no_follow_non_blocking(options).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    Ok((file, meta))
}

fn not_regular(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is not a regular file", path.display()),
    )
}

/// The UTF-8 text of the state file at `path` (see [`read`]); `None` for
/// any failure, which for heeler's own state means "start over".
pub(crate) fn read_text(path: &Path, cap: u64) -> Option<String> {
    String::from_utf8(read(path, cap).ok()?.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;
    use std::time::Duration;

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

    /// Runs `read` on another thread and fails the test when it has not
    /// answered within a minute (a blocked read never answers).
    fn answered<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> T {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(read());
        });
        receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the read blocked")
    }

    /// Makes a FIFO at `path` (coreutils' `mkfifo`, on every machine the
    /// tests run on).
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status();
        assert!(status.is_ok_and(|s| s.success()), "mkfifo {path:?}");
    }

    #[test]
    fn a_config_read_follows_a_link_to_a_regular_file_only() {
        let scratch = ScratchDir::new("state-file-config");
        let target = scratch.path().join("target.json");
        std::fs::write(&target, b"{}").unwrap();
        let link = scratch.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(read_config(&link, 2).unwrap(), b"{}");
        assert_eq!(read_config_text(&link, 2).as_deref(), Some("{}"));
        let kind = |path: &Path, cap| read_config(path, cap).unwrap_err().kind();
        assert_eq!(kind(&link, 1), io::ErrorKind::FileTooLarge);
        assert_eq!(
            kind(&scratch.path().join("missing"), 9),
            io::ErrorKind::NotFound
        );
        assert_eq!(kind(scratch.path(), 9), io::ErrorKind::InvalidInput);
        // Devices, directly or through a link, are refused before a read.
        for device in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            let to_device = scratch.path().join("device.json");
            let _ = std::fs::remove_file(&to_device);
            std::os::unix::fs::symlink(device, &to_device).unwrap();
            for path in [Path::new(device), to_device.as_path()] {
                let path = path.to_path_buf();
                let error = answered(move || read_config(&path, MAX_BYTES).unwrap_err());
                assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{device}");
                assert!(error.to_string().contains("not a regular file"), "{error}");
            }
        }
        let fifo = scratch.path().join("fifo.json");
        mkfifo(&fifo);
        let to_fifo = scratch.path().join("to-fifo.json");
        std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
        for path in [fifo.clone(), to_fifo] {
            let error = answered(move || read_config(&path, MAX_BYTES).unwrap_err());
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        }
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
        mkfifo(&fifo);
        let error = answered(move || read(&fifo, MAX_BYTES).unwrap_err());
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "a FIFO");
        for device in ["/dev/zero", "/dev/urandom"] {
            let error = answered(move || read(Path::new(device), MAX_BYTES).unwrap_err());
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{device}");
        }
    }
}
