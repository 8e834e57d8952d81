//! Keeping `<HERDR_PLUGIN_CONFIG_DIR>/sidebar.json` in step with herdr's
//! `config.toml`: the refresh behind the `heeler sidebar-hook` startup
//! command (`hooks::startup`) and the one both event hooks run before their
//! gates.
//!
//! Why it is careful about doing nothing: every Agent Status transition runs
//! a fresh hook process that calls [`refresh`] first. When the source path,
//! existence and mtime match a clean snapshot, the cost is one `stat` of the
//! source and one read of `sidebar.json`: no TOML parse, no write. A
//! snapshot carrying diagnostics is re-parsed at every refresh (so a newer
//! heeler replaces an older rejection without a config edit) and rewritten
//! only when the result changes. The grammar itself is in
//! [`crate::sidebar::config`]; this module is the file-system edge. Only a
//! regular file of at most [`MAX_SOURCE_BYTES`] is read, since every hook
//! reads it before anything else: a device or FIFO named as the config is a
//! `read_error`, never a read that blocks or does not end.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::base::atomic_file;
use crate::base::json::{self, Value};
use crate::sidebar::config::{self, Diagnostic, Parsed, Source};

/// The snapshot's file name inside the plugin config dir.
pub(crate) const SNAPSHOT_FILE: &str = "sidebar.json";
/// Mode of `sidebar.json`.
pub(crate) const SNAPSHOT_MODE: u32 = 0o600;
/// Mode of a plugin config dir this module creates.
pub(crate) const CONFIG_DIR_MODE: u32 = 0o700;

/// The environment the source path is resolved from (the herdr server's,
/// inherited by plugin processes). `None` means unset; an empty value is set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceEnv {
    pub herdr_config_path: Option<OsString>,
    pub xdg_config_home: Option<OsString>,
    pub home: Option<OsString>,
    /// Node's `os.tmpdir()`: the fallback for `HOME/.config`.
    pub tmpdir: PathBuf,
}

impl SourceEnv {
    /// Reads `HERDR_CONFIG_PATH`, `XDG_CONFIG_HOME`, `HOME` and the temp dir.
    pub(crate) fn from_process_env() -> SourceEnv {
        SourceEnv {
            herdr_config_path: std::env::var_os("HERDR_CONFIG_PATH"),
            xdg_config_home: std::env::var_os("XDG_CONFIG_HOME"),
            home: std::env::var_os("HOME"),
            tmpdir: node_tmpdir(|name| std::env::var_os(name)),
        }
    }
}

/// `os.tmpdir()` on POSIX: the first non-empty of `TMPDIR`, `TMP`, `TEMP`,
/// else `/tmp`, without a trailing slash.
pub fn node_tmpdir(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let dir = ["TMPDIR", "TMP", "TEMP"]
        .into_iter()
        .filter_map(var)
        .find(|value| !value.is_empty())
        .unwrap_or_else(|| OsString::from("/tmp"));
    let text = dir.to_string_lossy();
    if text.len() > 1 && text.ends_with('/') {
        PathBuf::from(&text[..text.len() - 1])
    } else {
        PathBuf::from(dir)
    }
}

/// The herdr config the snapshot exports: `HERDR_CONFIG_PATH` verbatim when
/// defined (even empty), else `XDG_CONFIG_HOME/herdr/config.toml`, else
/// `HOME/.config/herdr/config.toml`, else `<tmpdir>/herdr/config.toml`.
/// The joined forms are normalized as Node's `path.join` does.
pub fn source_path(env: &SourceEnv) -> PathBuf {
    if let Some(explicit) = &env.herdr_config_path {
        return PathBuf::from(explicit);
    }
    let base = match (&env.xdg_config_home, &env.home) {
        (Some(xdg), _) => vec![xdg.to_string_lossy().into_owned()],
        (None, Some(home)) => vec![home.to_string_lossy().into_owned(), ".config".to_owned()],
        (None, None) => vec![env.tmpdir.to_string_lossy().into_owned()],
    };
    let mut parts = base;
    parts.extend(["herdr".to_owned(), "config.toml".to_owned()]);
    PathBuf::from(js_path_join(&parts))
}

/// Node's `path.posix.join`: join with `/`, then normalize (collapse `//`,
/// drop `.`, resolve `..` where possible; empty result is `.`).
pub(crate) fn js_path_join(parts: &[String]) -> String {
    let joined = parts
        .iter()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("/");
    if joined.is_empty() {
        return ".".to_owned();
    }
    let absolute = joined.starts_with('/');
    let trailing = joined.ends_with('/');
    let mut out: Vec<&str> = Vec::new();
    for segment in joined.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let mut path = out.join("/");
    if path.is_empty() && !absolute {
        path.push('.');
    }
    if trailing && !path.is_empty() {
        path.push('/');
    }
    if absolute { format!("/{path}") } else { path }
}

/// Node's `Stats.mtimeMs`: seconds × 1000 + nanoseconds ÷ 10⁶, in doubles.
pub fn mtime_ms(meta: &fs::Metadata) -> f64 {
    meta.mtime() as f64 * 1000.0 + meta.mtime_nsec() as f64 / 1e6
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A clean snapshot for the same source was kept without parsing.
    Reused,
    /// The source was parsed again and gave the snapshot already on disk.
    Unchanged,
    /// A new snapshot was written.
    Written,
}

/// The snapshot now in effect and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct Refresh {
    pub snapshot: Value,
    pub action: Action,
}

/// Why the snapshot could not be written. Never about the source: a source
/// that cannot be read is a `read_error` diagnostic inside the snapshot.
#[derive(Debug)]
pub enum SidebarError {
    /// The plugin config dir could not be created.
    CreateDir(io::Error),
    /// `sidebar.json` could not be written.
    Write(io::Error),
}

impl SidebarError {
    /// The errno name (`EACCES`, …) when known, else `write_error`, as the
    /// hooks' log line shows it.
    pub fn code(&self) -> &'static str {
        let (SidebarError::CreateDir(e) | SidebarError::Write(e)) = self;
        errno_name(e).unwrap_or("write_error")
    }
}

impl fmt::Display for SidebarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for SidebarError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SidebarError::CreateDir(e) | SidebarError::Write(e) => Some(e),
        }
    }
}

fn errno_name(error: &io::Error) -> Option<&'static str> {
    let names: [(i32, &str); 20] = [
        (libc::EACCES, "EACCES"),
        (libc::EPERM, "EPERM"),
        (libc::ENOENT, "ENOENT"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EISDIR, "EISDIR"),
        (libc::EROFS, "EROFS"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::EDQUOT, "EDQUOT"),
        (libc::EEXIST, "EEXIST"),
        (libc::EIO, "EIO"),
        (libc::ELOOP, "ELOOP"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG"),
        (libc::EMFILE, "EMFILE"),
        (libc::ENFILE, "ENFILE"),
        (libc::EBUSY, "EBUSY"),
        (libc::EXDEV, "EXDEV"),
        (libc::EINVAL, "EINVAL"),
        (libc::ENOTEMPTY, "ENOTEMPTY"),
        (libc::ETXTBSY, "ETXTBSY"),
        (libc::EFBIG, "EFBIG"),
    ];
    let code = error.raw_os_error()?;
    names
        .into_iter()
        .find(|(number, _)| *number == code)
        .map(|(_, name)| name)
}

/// What a `stat` of the source found.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SourceStat {
    /// Exists, with Node's `mtimeMs`.
    Found(f64),
    /// Exists but is not a regular file (a FIFO, socket, device or
    /// directory): reading it could block the hook or never end, so it is a
    /// `read_error` (found, mtime kept).
    Unreadable(f64),
    /// `ENOENT`: a missing source, not an error.
    Missing,
    /// Any other failure: a `read_error`, retried next time.
    Failed,
}

fn stat_source(path: &Path) -> SourceStat {
    match fs::metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => SourceStat::Unreadable(mtime_ms(&meta)),
        Ok(meta) => SourceStat::Found(mtime_ms(&meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => SourceStat::Missing,
        Err(_) => SourceStat::Failed,
    }
}

/// The previous snapshot, if it is a readable v1 snapshot with the shape
/// the cache relies on.
fn read_previous(destination: &Path) -> Option<Value> {
    // Through the one safe state read: a FIFO or a device planted here
    // would otherwise hold both event hooks, which refresh first.
    let text = crate::base::state_file::read_text(destination, MAX_SNAPSHOT_BYTES)?;
    let value = json::parse(&text).ok()?;
    let shaped = value.get("v").and_then(Value::as_i64) == Some(1)
        && value
            .get("sidebar")
            .and_then(|s| s.get("agents"))
            .and_then(|a| a.get("rows"))
            .and_then(Value::as_array)
            .is_some()
        && value
            .get("diagnostics")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().all(|name| name.as_str().is_some()));
    shaped.then_some(value)
}

/// Whether a previous snapshot describes the same source (path, existence,
/// mtime).
fn same_source(previous: &Value, source: &Source) -> bool {
    let Some(recorded) = previous.get("source") else {
        return false;
    };
    let mtime_matches = match (recorded.get("mtime_ms"), source.mtime_ms) {
        (Some(Value::Null), None) => true,
        (Some(recorded), Some(now)) => recorded.as_f64() == Some(now),
        _ => false,
    };
    recorded.get("path").and_then(Value::as_str) == Some(source.path.as_str())
        && recorded.get("found").and_then(Value::as_bool) == Some(source.found)
        && mtime_matches
}

/// Two snapshots say the same thing when they differ at most in
/// `generated_at`.
fn same_result(previous: &Value, fresh: &Value) -> bool {
    fn without_time(v: &Value) -> Option<String> {
        let mut object = v.as_object()?.clone();
        object.remove("generated_at")?;
        Some(Value::Object(object).to_json())
    }
    match (without_time(previous), without_time(fresh)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Longest source read: far above any real herdr config, and a bound on
/// what a hook reads before every event.
pub const MAX_SOURCE_BYTES: u64 = 1024 * 1024;

/// Longest previous snapshot read back: it holds a layout derived from a
/// source of at most [`MAX_SOURCE_BYTES`].
const MAX_SNAPSHOT_BYTES: u64 = 4 * MAX_SOURCE_BYTES;

/// Reads at most [`MAX_SOURCE_BYTES`] of the herdr config (a link
/// followed), without blocking: a longer file, a FIFO or a device is an
/// error (`state_file::read_config`, the one config read).
fn read_source(path: &Path) -> io::Result<Vec<u8>> {
    crate::base::state_file::read_config(path, MAX_SOURCE_BYTES)
}

/// Reads and validates the source (already statted as a regular file).
fn parse_source(path: &Path, source: &mut Source) -> Parsed {
    match read_source(path) {
        Ok(bytes) => config::parse_config(&bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            source.found = false;
            source.mtime_ms = None;
            Parsed::fallback(None)
        }
        Err(_) => Parsed::fallback(Some(Diagnostic::ReadError)),
    }
}

/// Brings `<config_dir>/sidebar.json` up to date with the herdr config the
/// environment names, and returns the snapshot in effect.
pub fn refresh(config_dir: &Path, env: &SourceEnv, now_unix: i64) -> Result<Refresh, SidebarError> {
    let path = source_path(env);
    let destination = config_dir.join(SNAPSHOT_FILE);
    let stat = stat_source(&path);
    let stat_failed = stat == SourceStat::Failed;
    let mut source = Source {
        path: path.to_string_lossy().into_owned(),
        found: matches!(stat, SourceStat::Found(_) | SourceStat::Unreadable(_)),
        mtime_ms: match stat {
            SourceStat::Found(mtime_ms) | SourceStat::Unreadable(mtime_ms) => Some(mtime_ms),
            SourceStat::Missing | SourceStat::Failed => None,
        },
    };
    let previous = read_previous(&destination);
    let reusable = previous.as_ref().is_some_and(|previous| {
        let clean = previous
            .get("diagnostics")
            .and_then(Value::as_array)
            .is_some_and(<[Value]>::is_empty);
        !stat_failed && clean && same_source(previous, &source)
    });
    if reusable && let Some(previous) = previous {
        return Ok(Refresh {
            snapshot: previous,
            action: Action::Reused,
        });
    }
    let parsed = match stat {
        SourceStat::Failed | SourceStat::Unreadable(_) => {
            Parsed::fallback(Some(Diagnostic::ReadError))
        }
        SourceStat::Found(_) => parse_source(&path, &mut source),
        SourceStat::Missing => Parsed::fallback(None),
    };
    let fresh = config::snapshot(now_unix, &source, &parsed);
    if let Some(previous) = previous
        && same_result(&previous, &fresh)
    {
        return Ok(Refresh {
            snapshot: previous,
            action: Action::Unchanged,
        });
    }
    atomic_file::create_dir_all(config_dir, CONFIG_DIR_MODE).map_err(SidebarError::CreateDir)?;
    let mut contents = fresh.to_json();
    contents.push('\n');
    atomic_file::write(&destination, contents.as_bytes(), SNAPSHOT_MODE)
        .map_err(SidebarError::Write)?;
    Ok(Refresh {
        snapshot: fresh,
        action: Action::Written,
    })
}

/// [`refresh`] with the process environment and clock.
pub(crate) fn refresh_from_process_env(config_dir: &Path) -> Result<Refresh, SidebarError> {
    refresh(
        config_dir,
        &SourceEnv::from_process_env(),
        crate::base::clock::unix_seconds(),
    )
}

/// The event hooks' prologue: refresh, and turn a failure into one log line
/// on stderr so that it never stops a notification.
pub(crate) fn refresh_for_event(config_dir: &Path) {
    if let Err(error) = refresh_from_process_env(config_dir) {
        eprintln!("sidebar-hook: snapshot refresh failed ({})", error.code());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_a_device_at_the_snapshot_or_the_source_is_refused_at_once() {
        let scratch = crate::base::scratch::ScratchDir::new("sidebar-fifo");
        let fifo = scratch.path().join(SNAPSHOT_FILE);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let zero = scratch.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        // On another thread, so that a blocked read fails the test instead
        // of hanging it.
        let (sender, receiver) = std::sync::mpsc::channel();
        let paths = (fifo.clone(), zero.clone());
        std::thread::spawn(move || {
            let (fifo, zero) = paths;
            let _ = sender.send((
                read_previous(&fifo).is_none(),
                read_previous(&zero).is_none(),
                read_source(&fifo).map_err(|e| e.kind()).err(),
                read_source(&zero).map_err(|e| e.kind()).err(),
            ));
        });
        let outcome = receiver
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a read blocked");
        let refused = Some(io::ErrorKind::InvalidInput);
        assert_eq!(outcome, (true, true, refused, refused));
    }

    fn join(parts: &[&str]) -> String {
        js_path_join(&parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn path_join_normalizes_like_node() {
        assert_eq!(
            join(&["/home/u", ".config", "herdr", "config.toml"]),
            "/home/u/.config/herdr/config.toml"
        );
        assert_eq!(join(&["/a/", "b"]), "/a/b");
        assert_eq!(join(&["/a/../..", "b"]), "/b");
        assert_eq!(join(&["rel/..", "..", "b"]), "../b");
        assert_eq!(join(&["", "herdr"]), "herdr");
        assert_eq!(join(&["", ""]), ".");
        assert_eq!(join(&["./x/", "./"]), "x/");
    }

    #[test]
    fn errors_name_their_errno() {
        let error = SidebarError::Write(io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(error.code(), "EACCES");
        assert_eq!(error.to_string(), "EACCES");
        let other = SidebarError::CreateDir(io::Error::other("custom"));
        assert_eq!(other.code(), "write_error");
    }
}
