//! Replacing files without ever leaving a torn or truncated one behind.
//!
//! Every file heeler rewrites (`authorized_keys`, `notifications.json`,
//! `sidebar.json`, state files) goes through [`write`]: a fresh temp file in
//! the same directory, written in full and synced, then renamed over the
//! target, so a reader sees the old or the new file and never a mix. Edits
//! that read-modify-write hold a [`LockFile`] around the whole cycle.
//!
//! Temp files are named `<name>.tmp-<pid>-<n>` and created with `O_EXCL`;
//! a name that already exists (a leftover of a killed writer whose pid we
//! now have) is skipped for the next `n`, so a leftover never makes a write
//! fail and a writer only ever removes the temp file it created itself.
//! Leftovers are swept by [`sweep_stale_temps`], which the owner of a
//! target calls under the target's lock: a file of exactly our temp-name
//! pattern is stale when its pid names no process, or when it is older than
//! [`STALE_TEMP_AGE`] (the pid may have been reused; no live write takes
//! that long). [`write_through_links`] edits the file a symbolic link points
//! at, so a managed link (home-manager, config management) stays a link.
//!
//! The lock protocol is shared with processes that predate `flock` (the
//! Node plugin, older heeler builds), which create the lock file with
//! `O_CREAT|O_EXCL`, write `<pid>\n`, treat any existing file as held until
//! its mtime is more than `stale_after` old, then unlink it and retry, and
//! unlink it when done. We keep that file, its path, content and
//! lifetime, so an old process still sees our lock as held and our release
//! as a release; on top of it a holder keeps an exclusive `flock` on its
//! file for as long as it holds it, and a new process decides on a file it
//! has `flock`ed itself:
//!
//! - taking it: `O_EXCL` create, then `flock` the new file, then check the
//!   path still names that inode;
//! - a file whose `flock` is busy is held by a live new process, whatever
//!   its age: it is never taken over;
//! - a file we could `flock` is held by an old process or abandoned; it is
//!   taken over only when stale, when the pid it names is no process (a
//!   holder killed with SIGKILL), or when it still names no pid a second
//!   after it was created (a holder killed between its create and its pid
//!   write, which nothing else would ever remove before it turns stale),
//!   by unlinking it *while holding its
//!   `flock`* and after checking the path still names it, so two new
//!   processes can never both take one stale lock over, and a new lock
//!   that replaced it is never the one unlinked;
//! - releasing unlinks the path only while it still names our inode (we
//!   hold its `flock`, so no new process can have replaced it).
//!
//! What `flock` cannot fix is an old process's own stat-then-unlink: it may
//! still take over a lock held for longer than `stale_after` (ours are held
//! for milliseconds). On a filesystem without `flock` the protocol falls
//! back to the old one. Anything at the lock path that is not a regular
//! file (a symbolic link, a directory), or a stale lock that cannot be
//! removed, is never taken over or followed: acquisition waits for it like
//! for a held lock and ends at the deadline with an error that names it.
//! Every attempt sleeps before the next, except one immediate retry after
//! the lock vanished or was taken over, so a wait never spins.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::base::sys;

static TEMP_COUNTER: AtomicU32 = AtomicU32::new(0);

/// How many taken temp names a write skips before it gives up.
const TEMP_NAME_TRIES: u32 = 64;

/// A temp file of ours older than this is a leftover even if its pid is
/// alive (then it is another process's, the id reused).
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

/// The permission bits (`mode & 0o777`) of an existing file.
#[cfg(test)]
pub(crate) fn existing_mode(path: &Path) -> io::Result<Option<u32>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions().mode() & 0o777)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn temp_path_for(path: &Path, unique: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.tmp-{}-{unique}", std::process::id()))
}

/// The pid in `entry`, when `entry` is one of our temp names for a file
/// named `target` (`<target>.tmp-<pid>-<n>`, both decimal).
pub(crate) fn temp_owner_pid(target: &str, entry: &str) -> Option<u32> {
    let rest = entry.strip_prefix(target)?.strip_prefix(".tmp-")?;
    let (pid, n) = rest.split_once('-')?;
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !decimal(pid) || !decimal(n) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a temp file of ours is a leftover: its writer is gone, or it is
/// older than any write takes.
pub(crate) fn is_stale_temp(pid_alive: bool, age: Duration) -> bool {
    !pid_alive || age > STALE_TEMP_AGE
}

/// Removes the leftover temp files of `target` (see the module doc for the
/// rule); only regular files of exactly our temp-name pattern are removed.
/// Call it under the lock that serialises `target`'s writers. Best effort:
/// returns how many were removed.
pub(crate) fn sweep_stale_temps(target: &Path) -> usize {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return 0;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let name = name.to_string_lossy();
    sweep_temps_where(dir, |entry| temp_owner_pid(&name, entry))
}

/// [`sweep_stale_temps`] for every target in `dir` at once: the leftover
/// temp files of any file there (`<name>.tmp-<pid>-<n>`), for a directory
/// of many small files such as the pairing state's `enrolled/`. Call it
/// where the directory's writers are serialised, or where a live writer's
/// temp is safe anyway (its pid is alive and it is fresh). Best effort:
/// returns how many were removed.
pub(crate) fn sweep_stale_temps_in(dir: &Path) -> usize {
    sweep_temps_where(dir, |entry| {
        let (target, _) = entry.rsplit_once(".tmp-")?;
        temp_owner_pid(target, entry)
    })
}

/// Removes the regular files in `dir` whose name `owner` maps to a writer
/// pid, when [`is_stale_temp`] says so.
fn sweep_temps_where(dir: &Path, owner: impl Fn(&str) -> Option<u32>) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let Some(pid) = owner(&entry_name.to_string_lossy()) else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if is_stale_temp(sys::process_exists(pid), age) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Atomically replaces `path` with `contents`, giving the new file `mode`
/// exactly (umask does not apply). The temp file is removed on failure.
pub fn write(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    write_atomically(path, contents, mode, None, Durability::Synced)
}

/// Like [`write`] but without `fsync`: still atomic (a reader sees the old
/// or the new file), but a crash may lose the new contents. Only for
/// ephemeral state whose loss is harmless (pairing state files; the usage
/// cache, snapshot and worker status, all rebuilt by the next refresh),
/// where the fsyncs would dominate the cost of a short-lived process.
pub(crate) fn write_unsynced(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    write_atomically(path, contents, mode, None, Durability::Unsynced)
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
    owner: Option<(u32, u32)>,
    durability: Durability,
) -> io::Result<()> {
    let (temp, file) = create_temp(path, mode)?;
    let result = write_then_rename(file, &temp, path, contents, mode, owner, durability);
    if result.is_err() {
        // Ours: we created it with O_EXCL above.
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Creates a fresh temp file beside `path` with `O_EXCL`, skipping names
/// that are taken.
fn create_temp(path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    let mut tries = 0;
    loop {
        let temp = temp_path_for(path, TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries + 1 < TEMP_NAME_TRIES => {
                tries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How many symbolic links [`resolve_links`] follows (the kernel's own
/// limit).
const MAX_LINKS: usize = 40;

/// The file `path` stands for: `path` itself, or, when it is a symbolic
/// link, what the chain of links ends at (relative links resolve against
/// the link's directory). The end need not exist.
pub(crate) fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "too many levels of symbolic links at {}",
        path.display()
    )))
}

/// Like [`write`] for the file `path` stands for, keeping the mode of the
/// file it replaces (`new_mode` for a new file): a symbolic
/// link is kept and the file it points at is replaced (the temp file beside
/// that file), keeping that file's mode and, where we may, its owner and
/// group. Returns the file written.
pub(crate) fn write_through_links(
    path: &Path,
    contents: &[u8],
    new_mode: u32,
) -> io::Result<PathBuf> {
    let target = resolve_links(path)?;
    let (mode, owner) = match fs::metadata(&target) {
        Ok(meta) => (meta.mode() & 0o777, Some((meta.uid(), meta.gid()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (new_mode, None),
        Err(e) => return Err(e),
    };
    write_atomically(&target, contents, mode, owner, Durability::Synced)?;
    Ok(target)
}

fn write_then_rename(
    mut file: File,
    temp: &Path,
    path: &Path,
    contents: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
    durability: Durability,
) -> io::Result<()> {
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    if let Some((uid, gid)) = owner {
        let ours = file.metadata()?;
        if (ours.uid(), ours.gid()) != (uid, gid) {
            // Best effort: only root may give a file away, and a user only
            // to a group they are in; sshd accepts a file the user owns.
            let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
        }
    }
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

/// What tells one version of a file from another: which file it is
/// (device and inode), how long, and when it last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Identity {
    pub fn of(meta: &fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// How the file at a path compares with the version a checked replace
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drift {
    /// The very version that was read.
    Same,
    /// The same file with bytes added at its end and the bytes read
    /// still in front of them (someone's `>>`): the replace goes ahead
    /// and carries the added bytes over.
    Appended,
    /// Another file (renamed over it), or the same one shrunk or
    /// rewritten in place: the replace must start again from a new read.
    Replaced,
}

/// The pure judgement of [`replace_checked`]: `read` is what was read,
/// `now` what the path names just before the swap, `prefix_kept` whether
/// the file still starts with the bytes read (asked only when it grew).
pub(crate) fn drift(read: &Identity, now: &Identity, prefix_kept: impl FnOnce() -> bool) -> Drift {
    if (read.dev, read.ino) != (now.dev, now.ino) || now.size < read.size {
        Drift::Replaced
    } else if now.size == read.size {
        if (now.mtime, now.ctime) == (read.mtime, read.ctime) {
            Drift::Same
        } else {
            Drift::Replaced
        }
    } else if prefix_kept() {
        Drift::Appended
    } else {
        Drift::Replaced
    }
}

/// A file as read for [`replace_checked`]: its bytes, its identity, and
/// the open file itself, so bytes appended to it after the read can still
/// be found once a new file has taken its place.
#[derive(Debug)]
pub struct Snapshot {
    pub contents: Vec<u8>,
    /// `None` when there was no file.
    pub identity: Option<Identity>,
    open: Option<File>,
    mode: u32,
    owner: Option<(u32, u32)>,
}

/// How many times [`snapshot`] re-reads a file that grew while it read.
const SNAPSHOT_TRIES: u32 = 16;

/// Reads `path` (a file, not a link: resolve it first) for a checked
/// replace. A missing file is an empty snapshot.
pub fn snapshot(path: &Path) -> io::Result<Snapshot> {
    use std::io::{Read, Seek};
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Snapshot {
                contents: Vec::new(),
                identity: None,
                open: None,
                mode: 0o600,
                owner: None,
            });
        }
        Err(e) => return Err(e),
    };
    for _ in 0..SNAPSHOT_TRIES {
        let mut contents = Vec::new();
        file.rewind()?;
        file.read_to_end(&mut contents)?;
        let meta = file.metadata()?;
        // An append between the read and the stat: read again, so the
        // identity describes exactly the bytes in hand.
        if meta.size() == contents.len() as u64 {
            return Ok(Snapshot {
                contents,
                identity: Some(Identity::of(&meta)),
                mode: meta.mode() & 0o777,
                owner: Some((meta.uid(), meta.gid())),
                open: Some(file),
            });
        }
    }
    Err(io::Error::other(format!(
        "{} kept growing while it was read",
        path.display()
    )))
}

/// What [`replace_checked`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replace {
    /// The new contents are in place (plus whatever others appended
    /// meanwhile, carried over).
    Done,
    /// Another writer replaced or rewrote the file since the snapshot;
    /// nothing was changed: read again and retry.
    Changed,
}

/// How long after the swap [`replace_checked`] looks at the old file once
/// more: a writer that opened it just before the swap (a `>>` between its
/// open and its write) writes into the old file, and what it wrote is
/// carried over into the new one.
pub(crate) const SETTLE: Duration = Duration::from_millis(10);

/// Replaces `path` (a file, not a link) with `contents` unless it changed
/// since `read` was taken, keeping the old file's mode and, where we may,
/// owner. The new file is written and synced beside it first; then, just
/// before the swap, the path is checked against the snapshot ([`drift`]):
/// another file or an in-place rewrite means [`Replace::Changed`] and
/// nothing changes; bytes appended at the end are carried over. The swap
/// itself is an atomic exchange where the system has one, so that a file
/// renamed over the path in the instant between the check and the swap is
/// found in the temp file's place, put back, and reported as
/// [`Replace::Changed`]; elsewhere it is a rename. Appends that reach the
/// old file during or just after the swap are carried over after
/// [`SETTLE`]. Call it under the lock that serialises the path's writers.
pub(crate) fn replace_checked(
    path: &Path,
    read: &Snapshot,
    contents: &[u8],
) -> io::Result<Replace> {
    let (temp, file) = create_temp(path, read.mode)?;
    let result = replace_from_temp(path, read, contents, file, &temp);
    // Ours: created with O_EXCL above. Gone already when it was renamed.
    let _ = fs::remove_file(&temp);
    result
}

fn replace_from_temp(
    path: &Path,
    read: &Snapshot,
    contents: &[u8],
    file: File,
    temp: &Path,
) -> io::Result<Replace> {
    file.set_permissions(fs::Permissions::from_mode(read.mode))?;
    if let Some((uid, gid)) = read.owner {
        let ours = file.metadata()?;
        if (ours.uid(), ours.gid()) != (uid, gid) {
            // Best effort, as in `write_through_links`.
            let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
        }
    }
    let mut writer = &file;
    writer.write_all(contents)?;
    // Synced before the check, so that the check and the swap are an
    // instant apart.
    file.sync_all()?;
    let ours = Identity::of(&file.metadata()?);
    drop(file);
    let (Some(identity), Some(old)) = (&read.identity, &read.open) else {
        // There was no file: it must still be absent, and a link refuses
        // to replace one that appeared meanwhile.
        return match fs::hard_link(temp, path) {
            Ok(()) => {
                sync_parent(path);
                Ok(Replace::Done)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Replace::Changed),
            Err(e) => Err(e),
        };
    };
    let now = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Identity::of(&meta),
        Ok(_) => return Ok(Replace::Changed),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Replace::Changed),
        Err(e) => return Err(e),
    };
    if drift(identity, &now, || starts_with(old, &read.contents)) == Drift::Replaced {
        return Ok(Replace::Changed);
    }
    #[cfg(test)]
    test_hooks::run(&test_hooks::BEFORE_SWAP, path);
    if sys::exchange(temp, path)? {
        // `temp` now names what `path` named at the swap.
        let displaced = Identity::of(&fs::symlink_metadata(temp)?);
        if (displaced.dev, displaced.ino) != (identity.dev, identity.ino) {
            // Renamed over in the instant before the swap: theirs goes
            // back.
            #[cfg(test)]
            test_hooks::run(&test_hooks::BETWEEN_EXCHANGES, path);
            put_back(temp, path, &ours)?;
            return Ok(Replace::Changed);
        }
    } else {
        fs::rename(temp, path)?;
    }
    // What reached the old file since the read (an `Appended` drift, or
    // the instant before the swap), then what a writer that had opened it
    // before the swap wrote a moment later.
    let carried = carry_over_from(old, identity.size, path)?;
    #[cfg(test)]
    test_hooks::run(&test_hooks::AFTER_SWAP, path);
    sync_parent(path);
    std::thread::sleep(SETTLE);
    carry_over_from(old, carried, path)?;
    Ok(Replace::Done)
}

/// Puts another writer's file, which a swap moved from `path` to `temp`,
/// back at `path` while `path` still names our file (`ours`), and carries
/// over what was appended to ours meanwhile. When that writer saved again
/// since, its newer file has replaced ours at `path` and stands: the older
/// one in `temp` is left to be removed. A save in the instant between the
/// look and the swap back is found in `temp` afterwards and swapped back
/// in turn, so the writer's newest file ends at `path` whole, edits in
/// the middle included. A third save inside those two exchanges, a few
/// microseconds, could still leave the second at `path`: the system keeps
/// no order of renames to check against.
fn put_back(temp: &Path, path: &Path, ours: &Identity) -> io::Result<()> {
    let names_ours = |at: &Path| -> io::Result<bool> {
        match fs::symlink_metadata(at) {
            Ok(meta) => Ok((meta.dev(), meta.ino()) == (ours.dev, ours.ino)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    };
    if !names_ours(path)? {
        return Ok(());
    }
    #[cfg(test)]
    test_hooks::run(&test_hooks::BEFORE_PUT_BACK, path);
    if !sys::exchange(temp, path)? {
        return Ok(());
    }
    if names_ours(temp)? {
        carry_over(temp, ours.size, path)?;
    } else {
        // A newer save had replaced ours: it goes back over the older one.
        sys::exchange(temp, path)?;
    }
    Ok(())
}

/// Whether `file` starts with `prefix`.
fn starts_with(file: &File, prefix: &[u8]) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0; prefix.len()];
    file.read_exact_at(&mut head, 0).is_ok() && head == prefix
}

fn tail_of(from: &File, offset: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut tail = Vec::new();
    let mut reader = from;
    std::io::Seek::seek(&mut reader, io::SeekFrom::Start(offset))?;
    reader.read_to_end(&mut tail)?;
    Ok(tail)
}

fn carry_over(from: &Path, offset: u64, to: &Path) -> io::Result<u64> {
    carry_over_from(&File::open(from)?, offset, to)
}

/// Appends to `to` the whole lines `from` holds past `offset` (lines
/// others appended to a file we were replacing) that `to` does not hold
/// already (an editor that read the old file and saved over ours has
/// them); returns the offset reached. A line still being written (no
/// newline yet) waits for the next look.
fn carry_over_from(from: &File, offset: u64, to: &Path) -> io::Result<u64> {
    let mut tail = tail_of(from, offset)?;
    let whole = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    tail.truncate(whole);
    if tail.is_empty() {
        return Ok(offset);
    }
    let held = match fs::read(to) {
        Ok(held) => held,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let held: std::collections::HashSet<&[u8]> = held.split(|&b| b == b'\n').collect();
    let missing: Vec<u8> = tail
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !held.contains(&line[..line.len() - 1]))
        .flatten()
        .copied()
        .collect();
    if !missing.is_empty() {
        append_bytes(to, &missing, 0o600)?;
    }
    Ok(offset + tail.len() as u64)
}

fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent() {
        // Durability of the rename itself; best effort.
        if let Ok(dir) = File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        }) {
            let _ = dir.sync_all();
        }
    }
}

/// Appends `line` (without its `\n`) to `path` (a file, not a link: resolve
/// it first) as one `O_APPEND` write of the whole line and its newline,
/// preceded by a newline when the file does not end with one; a missing
/// file is created with `new_mode`. Nothing is read back or rewritten, so
/// a concurrent appender (a user's `>>`) loses nothing. The line lands
/// whole or not at all: a write cut short (a full disk, a file size limit)
/// or a failed sync is cut off again and returned as the error (see
/// [`roll_back_append`]), so no torn line is left for the next `>>` to be
/// glued to.
pub(crate) fn append_line(path: &Path, line: &[u8], new_mode: u32) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 2);
    bytes.extend_from_slice(line);
    bytes.push(b'\n');
    append_bytes(path, &bytes, new_mode)
}

/// Appends `bytes` in one `O_APPEND` write (see [`append_line`]), with a
/// newline in front when the file ends without one, and syncs.
fn append_bytes(path: &Path, bytes: &[u8], new_mode: u32) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let file = loop {
        match OpenOptions::new().read(true).append(true).open(path) {
            Ok(file) => break file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(new_mode)
            .open(path)
        {
            Ok(file) => {
                file.set_permissions(fs::Permissions::from_mode(new_mode))?;
                break file;
            }
            // Created by someone else meanwhile: append to theirs.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    };
    let size = file.metadata()?.size();
    let mut last = [b'\n'];
    if size > 0 {
        file.read_exact_at(&mut last, size - 1)?;
    }
    let mut out = Vec::with_capacity(bytes.len() + 1);
    if last[0] != b'\n' {
        out.push(b'\n');
    }
    out.extend_from_slice(bytes);
    let mut writer = &file;
    // One write(2): a regular file takes a small buffer whole, so a short
    // count means a full disk or a file size limit stopped it. It is not
    // retried (past a size limit the retry would raise SIGXFSZ): the torn
    // bytes are cut off again and the error returned.
    let outcome = match writer.write(&out) {
        Ok(written) if written == out.len() => file.sync_all().map_err(|e| (e, written)),
        Ok(written) => Err((
            io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "only {written} of {} bytes could be written (disk full or file size limit)",
                    out.len()
                ),
            ),
            written,
        )),
        Err(e) => Err((e, 0)),
    };
    let Err((error, written)) = outcome else {
        return Ok(());
    };
    roll_back_append(&file, size, written);
    Err(error)
}

/// Cuts a failed append off again: truncates `file` back to `size`, its
/// length before the append, when it is exactly `size + written` long
/// (nothing was appended after our bytes; a line another writer appended
/// after them is never cut off). Best effort: the append's error is what
/// the caller reports.
fn roll_back_append(file: &File, size: u64, written: usize) {
    if written == 0 {
        return;
    }
    let ours = size.saturating_add(written as u64);
    if file.metadata().is_ok_and(|meta| meta.size() == ours) && file.set_len(size).is_ok() {
        let _ = file.sync_all();
    }
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
    pub(crate) const AUTHORIZED_KEYS: LockPolicy = LockPolicy {
        deadline: Duration::from_millis(5_000),
        stale_after: Duration::from_millis(10_000),
        retry_every: Duration::from_millis(25),
    };
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// The deadline passed while the lock was held.
    TimedOut(PathBuf),
    /// The deadline passed while the lock path held something we may not
    /// take over.
    Unusable(PathBuf, Unusable),
    /// The lock file could not be created.
    Io(PathBuf, io::Error),
}

/// What sits at a lock path that we will neither take nor take over.
#[derive(Debug)]
pub enum Unusable {
    Symlink,
    NotAFile,
    Unopenable(io::Error),
    Undeletable(io::Error),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::TimedOut(path) => write!(f, "timed out waiting for lock {}", path.display()),
            LockError::Unusable(path, why) => {
                let path = path.display();
                match why {
                    Unusable::Symlink => write!(f, "lock {path} is a symbolic link"),
                    Unusable::NotAFile => write!(f, "lock {path} is not a regular file"),
                    Unusable::Unopenable(e) => write!(f, "cannot open lock {path}: {e}"),
                    Unusable::Undeletable(e) => {
                        write!(f, "cannot remove stale lock {path}: {e}")
                    }
                }
            }
            LockError::Io(path, e) => write!(f, "cannot create lock {}: {e}", path.display()),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::TimedOut(_) => None,
            LockError::Unusable(_, Unusable::Unopenable(e) | Unusable::Undeletable(e)) => Some(e),
            LockError::Unusable(_, Unusable::Symlink | Unusable::NotAFile) => None,
            LockError::Io(_, e) => Some(e),
        }
    }
}

/// What one look at an existing lock path found.
#[derive(Debug)]
enum Seen {
    /// Nothing there any more, or another inode than the one we opened.
    Gone,
    /// A lock file whose `flock` another process holds.
    Held,
    /// A lock file we hold the `flock` of (or could not `flock`: no
    /// `flock` on this filesystem), last written `age` ago, naming a
    /// holder that is alive, dead or unknown.
    Unlocked { age: Duration, holder: Holder },
    /// Something we may not take over.
    Unusable(Unusable),
}

/// What the pid a lock file names says about its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// A process with that id exists (perhaps another by pid reuse).
    Alive,
    /// No process has that id: the holder is gone.
    Dead,
    /// The file names no pid (being written, or not ours to read).
    Unknown,
}

impl Holder {
    /// Reads the `<pid>\n` a lock file holds (at most a few bytes).
    fn of(file: &File) -> Holder {
        use std::io::Read;
        let mut bytes = [0u8; 24];
        let mut reader = file;
        let len = reader.read(&mut bytes).unwrap_or(0);
        let pid = std::str::from_utf8(&bytes[..len])
            .ok()
            .and_then(|text| text.strip_suffix('\n'))
            .and_then(|digits| digits.parse::<u32>().ok())
            .filter(|pid| *pid > 0);
        match pid {
            Some(pid) if sys::process_exists(pid) => Holder::Alive,
            Some(_) => Holder::Dead,
            None => Holder::Unknown,
        }
    }
}

/// How long a lock file may stay without a pid before it counts as
/// abandoned: every writer (ours, the Node plugin's) writes its pid right
/// after creating the file, so an unheld file still without one this long
/// after is a writer killed in between, and nothing will ever remove it.
/// Well inside a ceremony end's 5 s deadline, unlike the 10 s staleness.
const UNWRITTEN_LOCK_AGE: Duration = Duration::from_millis(1_000);

/// What to do after a look.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    RetryNow,
    Wait,
    TakeOver,
}

/// The decision after a look: a lock that no live new process holds is
/// taken over when it is stale or the process it names is gone (a holder
/// killed with SIGKILL leaves a fresh file; an older process writes its
/// pid before it edits, so a pid of no process is no holder), or when it
/// names no pid past [`UNWRITTEN_LOCK_AGE`] (a holder killed between its
/// create and its pid write); a vanished one is retried at once; anything
/// else waits.
fn next_step(seen: &Seen, stale_after: Duration) -> Step {
    match seen {
        Seen::Gone => Step::RetryNow,
        Seen::Unlocked { age, .. } if *age > stale_after => Step::TakeOver,
        Seen::Unlocked {
            holder: Holder::Dead,
            ..
        } => Step::TakeOver,
        Seen::Unlocked {
            age,
            holder: Holder::Unknown,
        } if *age > UNWRITTEN_LOCK_AGE => Step::TakeOver,
        Seen::Held | Seen::Unlocked { .. } | Seen::Unusable(_) => Step::Wait,
    }
}

/// An exclusive lock: a file created with `O_EXCL` holding our pid, with
/// our `flock` on it for as long as we hold it (see the module doc for the
/// protocol shared with older processes). Dropping it unlinks the file only
/// while the path still names it.
#[derive(Debug)]
pub(crate) struct LockFile {
    path: PathBuf,
    file: File,
}

fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Whether `path` still names the inode `file` has open.
fn still_names(path: &Path, file: &File) -> bool {
    match (fs::symlink_metadata(path), file.metadata()) {
        (Ok(at_path), Ok(ours)) => same_file(&at_path, &ours),
        _ => false,
    }
}

impl LockFile {
    /// Takes the lock at `path`, waiting up to `policy.deadline`.
    pub fn acquire(path: &Path, policy: LockPolicy) -> Result<LockFile, LockError> {
        let started = Instant::now();
        let mut retried_now = false;
        let mut last_unusable = None;
        loop {
            #[cfg(test)]
            test_hooks::ATTEMPTS.with(|a| a.set(a.get() + 1));
            let step = match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(file) => match Self::hold_created(path, file, policy, started) {
                    Some(lock) => return Ok(lock),
                    None => Step::RetryNow,
                },
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let (seen, probe) = look(path);
                    let step = next_step(&seen, policy.stale_after);
                    last_unusable = match seen {
                        Seen::Unusable(why) => Some(why),
                        _ => None,
                    };
                    if step == Step::TakeOver {
                        match take_over(path, probe) {
                            Ok(()) => Step::RetryNow,
                            Err(why) => {
                                last_unusable = Some(why);
                                Step::Wait
                            }
                        }
                    } else {
                        step
                    }
                }
                Err(e) => return Err(LockError::Io(path.to_path_buf(), e)),
            };
            let left = policy.deadline.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(match last_unusable {
                    Some(why) => LockError::Unusable(path.to_path_buf(), why),
                    None => LockError::TimedOut(path.to_path_buf()),
                });
            }
            if step == Step::RetryNow && !retried_now {
                retried_now = true;
                continue;
            }
            retried_now = false;
            std::thread::sleep(policy.retry_every.min(left));
        }
    }

    /// Finishes taking a file we just created: our pid in it, our `flock`
    /// on it, and the path still naming it. `None` when the file was
    /// replaced before we held it (it is then not ours to remove).
    fn hold_created(
        path: &Path,
        mut file: File,
        policy: LockPolicy,
        started: Instant,
    ) -> Option<LockFile> {
        let _ = writeln!(file, "{}", std::process::id());
        // A newer process may be looking at our fresh file under its own
        // `flock` for a moment; wait for it within the deadline.
        loop {
            match sys::try_lock_exclusive(&file) {
                Ok(true) | Err(_) => break,
                Ok(false) => {
                    let left = policy.deadline.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(policy.retry_every.min(left));
                }
            }
        }
        if still_names(path, &file) {
            Some(LockFile {
                path: path.to_path_buf(),
                file,
            })
        } else {
            None
        }
    }
}

/// Looks at an existing lock path without following a link, and returns
/// the open lock file when we hold its `flock`.
fn look(path: &Path) -> (Seen, Option<File>) {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Seen::Gone, None),
        Err(e) => return (Seen::Unusable(Unusable::Unopenable(e)), None),
        Ok(meta) if meta.file_type().is_symlink() => {
            return (Seen::Unusable(Unusable::Symlink), None);
        }
        Ok(meta) if !meta.file_type().is_file() => {
            return (Seen::Unusable(Unusable::NotAFile), None);
        }
        Ok(_) => {}
    }
    let file = match sys::open_no_follow(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Seen::Gone, None),
        Err(e) => return (Seen::Unusable(Unusable::Unopenable(e)), None),
    };
    let Ok(meta) = file.metadata() else {
        return (Seen::Gone, None);
    };
    if !meta.file_type().is_file() {
        return (Seen::Unusable(Unusable::NotAFile), None);
    }
    // `Err`: this filesystem has no `flock`; judge by age alone, as the
    // older processes do.
    if let Ok(false) = sys::try_lock_exclusive(&file) {
        return (Seen::Held, None);
    }
    if !still_names(path, &file) {
        return (Seen::Gone, None);
    }
    let age = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    let holder = Holder::of(&file);
    (Seen::Unlocked { age, holder }, Some(file))
}

/// Unlinks a stale lock while holding its `flock` (`probe`), so no other
/// new process can be taking it over or have replaced it.
fn take_over(path: &Path, probe: Option<File>) -> Result<(), Unusable> {
    #[cfg(test)]
    std::thread::sleep(test_hooks::PAUSE_BEFORE_TAKEOVER.with(std::cell::Cell::get));
    if let Some(file) = &probe
        && !still_names(path, file)
    {
        return Ok(());
    }
    #[cfg(test)]
    if test_hooks::TAKEOVER_UNLINK_FAILS.with(std::cell::Cell::get) {
        return Err(Unusable::Undeletable(io::Error::from(
            io::ErrorKind::PermissionDenied,
        )));
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Unusable::Undeletable(e)),
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // We hold the file's `flock`, so a new process cannot replace it
        // between this check and the unlink; an older process's takeover
        // after `stale_after` can, and then its lock is left alone.
        if still_names(&self.path, &self.file) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Fault injection for the lock tests, per thread.
#[cfg(test)]
mod test_hooks {
    use std::cell::Cell;
    use std::path::Path;
    use std::time::Duration;

    thread_local! {
        pub(crate) static ATTEMPTS: Cell<u32> = const { Cell::new(0) };
        pub(crate) static PAUSE_BEFORE_TAKEOVER: Cell<Duration> = const { Cell::new(Duration::ZERO) };
        pub(crate) static TAKEOVER_UNLINK_FAILS: Cell<bool> = const { Cell::new(false) };
        /// Runs once just before a checked replace swaps (another writer
        /// acting in that instant).
        pub(crate) static BEFORE_SWAP: Cell<SwapHook> = const { Cell::new(None) };
        /// Runs once right after a checked replace swapped and carried
        /// over what it found (a writer that opened the old file before).
        pub(crate) static AFTER_SWAP: Cell<SwapHook> = const { Cell::new(None) };
        /// Runs once between a swap that displaced another writer's file
        /// and the swap that puts it back.
        pub(crate) static BETWEEN_EXCHANGES: Cell<SwapHook> = const { Cell::new(None) };
        /// Runs once after the look that found our file still at the path,
        /// before the swap that puts the other writer's file back.
        pub(crate) static BEFORE_PUT_BACK: Cell<SwapHook> = const { Cell::new(None) };
    }

    /// A test's action at a point of a checked replace.
    pub(crate) type SwapHook = Option<Box<dyn FnOnce(&Path)>>;

    /// Runs `hook` once if a test set it.
    pub fn run(hook: &'static std::thread::LocalKey<Cell<SwapHook>>, path: &Path) {
        if let Some(f) = hook.with(Cell::take) {
            f(path);
        }
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
        write_through_links(&path, b"two", 0o600).unwrap();
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

    const QUICK: LockPolicy = LockPolicy {
        deadline: Duration::from_millis(200),
        stale_after: Duration::from_secs(10),
        retry_every: Duration::from_millis(20),
    };

    /// Runs one acquisition on its own thread and waits for it a generous
    /// bound past its deadline, so a lock that spins forever fails the test
    /// instead of hanging it. Returns the outcome (held, or the error text)
    /// and how many attempts it made.
    fn acquire_bounded(
        path: &Path,
        policy: LockPolicy,
        setup: impl FnOnce() + Send + 'static,
    ) -> (Result<(), String>, u32) {
        let (send, receive) = std::sync::mpsc::channel();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            setup();
            let outcome = LockFile::acquire(&path, policy)
                .map(drop)
                .map_err(|e| e.to_string());
            let attempts = test_hooks::ATTEMPTS.with(std::cell::Cell::get);
            let _ = send.send((outcome, attempts));
        });
        receive
            .recv_timeout(policy.deadline + Duration::from_secs(3))
            .expect("the acquisition ended within its deadline")
    }

    /// At most one attempt per retry interval plus one immediate retry
    /// after each: the wait slept instead of spinning.
    fn assert_slept(attempts: u32, policy: LockPolicy) {
        let intervals = policy.deadline.as_millis() / policy.retry_every.as_millis();
        let bound = 2 * u32::try_from(intervals).unwrap() + 4;
        assert!(attempts <= bound, "{attempts} attempts (at most {bound})");
    }

    fn set_age(path: &Path, age: Duration) {
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
    }

    fn stale_lock(path: &Path) {
        fs::write(path, b"1\n").unwrap();
        set_age(path, Duration::from_secs(3600));
    }

    #[test]
    fn the_decision_takes_over_only_stale_unheld_locks() {
        let stale = Duration::from_secs(10);
        let old = Duration::from_secs(11);
        assert_eq!(next_step(&Seen::Gone, stale), Step::RetryNow);
        assert_eq!(next_step(&Seen::Held, stale), Step::Wait);
        assert_eq!(
            next_step(
                &Seen::Unlocked {
                    age: stale,
                    holder: Holder::Alive
                },
                stale
            ),
            Step::Wait
        );
        // A lock without a pid: waited for while its writer may be about
        // to write it, taken over once no writer would still be.
        let unwritten = |age| Seen::Unlocked {
            age,
            holder: Holder::Unknown,
        };
        assert_eq!(next_step(&unwritten(UNWRITTEN_LOCK_AGE), stale), Step::Wait);
        assert_eq!(
            next_step(
                &unwritten(UNWRITTEN_LOCK_AGE + Duration::from_millis(1)),
                stale
            ),
            Step::TakeOver
        );
        for holder in [Holder::Alive, Holder::Dead, Holder::Unknown] {
            assert_eq!(
                next_step(&Seen::Unlocked { age: old, holder }, stale),
                Step::TakeOver
            );
        }
        assert_eq!(
            next_step(
                &Seen::Unlocked {
                    age: Duration::ZERO,
                    holder: Holder::Dead
                },
                stale
            ),
            Step::TakeOver
        );
        assert_eq!(
            next_step(&Seen::Unusable(Unusable::Symlink), stale),
            Step::Wait
        );
    }

    /// The id of a process that has exited (and been reaped).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!sys::process_exists(pid));
        pid
    }

    #[test]
    fn a_fresh_lock_left_by_a_dead_process_is_taken_over_at_once() {
        // A holder killed with SIGKILL (its flock went with it) leaves a
        // fresh lock file naming its pid. Nothing holds it, so the next
        // writer need not wait for it to turn stale.
        let dir = temp_dir("dead-holder");
        let path = dir.join("l.lock");
        fs::write(&path, format!("{}\n", dead_pid())).unwrap();
        let (outcome, _) = acquire_bounded(&path, QUICK, || {});
        assert_eq!(outcome, Ok(()));
        // An unheld fresh lock naming a live process (one that predates
        // flock, say) is still waited for, as is a fresh one naming no
        // process (its writer may be about to write its pid).
        for content in [
            format!("{}\n", std::process::id()),
            String::new(),
            "x\n".into(),
        ] {
            fs::write(&path, content).unwrap();
            let (outcome, _) = acquire_bounded(&path, QUICK, || {});
            assert!(outcome.unwrap_err().contains("timed out"));
        }
        // Past the pid-write grace, an empty lock (a writer killed between
        // its create and its pid write) is taken over at once.
        fs::write(&path, b"").unwrap();
        set_age(&path, UNWRITTEN_LOCK_AGE + Duration::from_millis(200));
        let (outcome, _) = acquire_bounded(&path, QUICK, || {});
        assert_eq!(outcome, Ok(()));
    }

    #[test]
    fn a_dangling_symlink_at_the_lock_path_fails_in_time() {
        let dir = temp_dir("dangling");
        let path = dir.join("l.lock");
        std::os::unix::fs::symlink(dir.join("nowhere"), &path).unwrap();
        let (outcome, attempts) = acquire_bounded(&path, QUICK, || {});
        let error = outcome.unwrap_err();
        assert!(error.contains("is a symbolic link"), "{error}");
        assert_slept(attempts, QUICK);
        assert!(
            fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(!dir.join("nowhere").exists(), "the link was not followed");
    }

    #[test]
    fn a_directory_at_the_lock_path_fails_in_time() {
        let dir = temp_dir("lockdir");
        let path = dir.join("l.lock");
        fs::create_dir(&path).unwrap();
        let (outcome, attempts) = acquire_bounded(&path, QUICK, || {});
        let error = outcome.unwrap_err();
        assert!(error.contains("is not a regular file"), "{error}");
        assert_slept(attempts, QUICK);
        assert!(path.is_dir());
    }

    #[test]
    fn an_undeletable_stale_lock_fails_in_time() {
        let dir = temp_dir("undeletable");
        let path = dir.join("l.lock");
        stale_lock(&path);
        let (outcome, attempts) = acquire_bounded(&path, QUICK, || {
            test_hooks::TAKEOVER_UNLINK_FAILS.with(|f| f.set(true));
        });
        let error = outcome.unwrap_err();
        assert!(error.contains("cannot remove stale lock"), "{error}");
        assert_slept(attempts, QUICK);
    }

    #[test]
    fn a_held_lock_times_out_after_sleeping() {
        let dir = temp_dir("held");
        let path = dir.join("l.lock");
        let _held = LockFile::acquire(&path, QUICK).unwrap();
        let (outcome, attempts) = acquire_bounded(&path, QUICK, || {});
        assert_eq!(
            outcome.unwrap_err(),
            format!("timed out waiting for lock {}", path.display())
        );
        assert_slept(attempts, QUICK);
    }

    #[test]
    fn a_stale_lock_is_taken_over_but_a_held_old_one_is_not() {
        let dir = temp_dir("stale");
        let path = dir.join("l.lock");
        stale_lock(&path);
        let taken = LockFile::acquire(&path, QUICK).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        // Held by us (our flock) for longer than `stale_after`: never
        // taken over by a process that speaks flock.
        set_age(&path, Duration::from_secs(3600));
        let (outcome, _) = acquire_bounded(&path, QUICK, || {});
        assert!(outcome.unwrap_err().starts_with("timed out"));
        drop(taken);
        assert!(!path.exists());
    }

    #[test]
    fn two_takeovers_of_one_stale_lock_never_both_hold() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        let dir = temp_dir("takeover");
        let path = dir.join("l.lock");
        stale_lock(&path);
        let patient = LockPolicy {
            deadline: Duration::from_secs(5),
            ..QUICK
        };
        let holders = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (path, holders, most) = (path.clone(), holders.clone(), most.clone());
                std::thread::spawn(move || {
                    // Both judge the lock stale before either replaces it.
                    test_hooks::PAUSE_BEFORE_TAKEOVER.with(|p| p.set(Duration::from_millis(100)));
                    let lock = LockFile::acquire(&path, patient).unwrap();
                    let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(300));
                    holders.fetch_sub(1, Ordering::SeqCst);
                    drop(lock);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "one holder at a time");
        assert!(!path.exists(), "the last holder released it");
    }

    #[test]
    fn dropping_a_replaced_lock_leaves_the_new_one() {
        let dir = temp_dir("replaced");
        let path = dir.join("l.lock");
        let held = LockFile::acquire(&path, QUICK).unwrap();
        // Another writer (an older process taking over after 10 s)
        // replaced our file with its own.
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"4242\n").unwrap();
        drop(held);
        assert_eq!(fs::read(&path).unwrap(), b"4242\n");
    }

    #[test]
    fn temp_names_parse_exactly() {
        assert_eq!(temp_owner_pid("ak", "ak.tmp-12-0"), Some(12));
        assert_eq!(temp_owner_pid("ak", "ak.tmp-12-"), None);
        assert_eq!(temp_owner_pid("ak", "ak.tmp--3"), None);
        assert_eq!(temp_owner_pid("ak", "ak.tmp-1x-3"), None);
        assert_eq!(temp_owner_pid("ak", "ak.tmp-1-3-4"), None);
        assert_eq!(temp_owner_pid("ak", "akx.tmp-1-3"), None);
        assert_eq!(temp_owner_pid("ak", "ak.herdr-pairing.1.tmp"), None);
        assert!(is_stale_temp(false, Duration::ZERO));
        assert!(!is_stale_temp(true, STALE_TEMP_AGE));
        assert!(is_stale_temp(true, STALE_TEMP_AGE + Duration::from_secs(1)));
    }

    #[test]
    fn a_leftover_with_our_next_temp_name_is_skipped_and_kept() {
        let dir = temp_dir("collide");
        let path = dir.join("f");
        // Leftovers for the next names this process would pick, as if a
        // killed writer had had our pid.
        let next = TEMP_COUNTER.load(Ordering::Relaxed);
        let leftovers: Vec<PathBuf> = (next..next + 8).map(|n| temp_path_for(&path, n)).collect();
        for leftover in &leftovers {
            fs::write(leftover, b"revoked key").unwrap();
        }
        write(&path, b"new", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        for leftover in &leftovers {
            assert_eq!(fs::read(leftover).unwrap(), b"revoked key", "not ours");
        }
    }

    #[test]
    fn the_sweep_removes_only_our_stale_leftovers() {
        let dir = temp_dir("sweep");
        let target = dir.join("ak");
        fs::write(&target, b"keys").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let ours = std::process::id();
        let name = |pid: u32, n: u32| dir.join(format!("ak.tmp-{pid}-{n}"));
        fs::write(name(dead, 0), b"x").unwrap();
        fs::write(name(ours, 1), b"x").unwrap();
        fs::write(name(ours, 2), b"x").unwrap();
        set_age(&name(ours, 2), STALE_TEMP_AGE + Duration::from_secs(60));
        let others = [
            "ak.tmp-x-1",
            "ak.bak",
            "other.tmp-1-1",
            "ak.herdr-pairing.1.tmp",
        ];
        for other in others {
            fs::write(dir.join(other), b"x").unwrap();
        }
        std::os::unix::fs::symlink(&target, name(dead, 3)).unwrap();
        assert_eq!(sweep_stale_temps(&target), 2);
        assert!(!name(dead, 0).exists(), "its writer is gone");
        assert!(name(ours, 1).exists(), "a live writer's fresh temp");
        assert!(!name(ours, 2).exists(), "too old to be a live write");
        for other in others {
            assert!(dir.join(other).exists(), "{other} is not ours");
        }
        assert!(fs::symlink_metadata(name(dead, 3)).is_ok(), "not a file");
        assert_eq!(fs::read(&target).unwrap(), b"keys");
    }

    #[test]
    fn a_failed_append_is_cut_off_unless_another_writer_followed() {
        let dir = temp_dir("append-rollback");
        let path = dir.path().join("f");
        fs::write(&path, b"mine\n").unwrap();
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        // Our torn bytes alone after the old end: cut off.
        (&file).write_all(b"restrict,comm").unwrap();
        roll_back_append(&file, 5, 13);
        assert_eq!(fs::read(&path).unwrap(), b"mine\n");
        // Another writer's line after ours: nothing is cut.
        (&file).write_all(b"torn").unwrap();
        (&file).write_all(b"theirs\n").unwrap();
        roll_back_append(&file, 5, 4);
        assert_eq!(fs::read(&path).unwrap(), b"mine\ntorntheirs\n");
    }

    #[test]
    fn a_directory_sweep_removes_every_targets_stale_temps_only() {
        let dir = temp_dir("sweep-in");
        let dead = dead_pid();
        let live = std::process::id();
        let names = [
            format!("a1.json.tmp-{dead}-0"),
            format!("b2.json.tmp-{dead}-3"),
            format!("c3.json.tmp-{live}-0"),
            "d4.json".to_owned(),
            format!("e5.json.tmp-{dead}"),
            format!("f6.json.tmp-x{dead}-0"),
        ];
        for name in &names {
            fs::write(dir.join(name), b"{}").unwrap();
        }
        fs::create_dir(dir.join(format!("g7.tmp-{dead}-0"))).unwrap();
        assert_eq!(sweep_stale_temps_in(dir.path()), 2);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected = vec![
            names[2].clone(),
            names[3].clone(),
            names[4].clone(),
            names[5].clone(),
            format!("g7.tmp-{dead}-0"),
        ];
        expected.sort();
        assert_eq!(left, expected);
        // A live writer's temp older than any write is a leftover too.
        set_age(
            &dir.join(&names[2]),
            STALE_TEMP_AGE + Duration::from_secs(1),
        );
        assert_eq!(sweep_stale_temps_in(dir.path()), 1);
    }

    #[test]
    fn drift_tells_appends_from_replacements() {
        let read = Identity {
            dev: 1,
            ino: 2,
            size: 10,
            mtime: (5, 0),
            ctime: (5, 0),
        };
        let never = || panic!("the prefix is asked only when the file grew");
        assert_eq!(drift(&read, &read, never), Drift::Same);
        let touched = Identity {
            mtime: (6, 0),
            ..read
        };
        assert_eq!(drift(&read, &touched, never), Drift::Replaced);
        let grown = Identity {
            size: 20,
            mtime: (6, 0),
            ctime: (6, 0),
            ..read
        };
        assert_eq!(drift(&read, &grown, || true), Drift::Appended);
        assert_eq!(drift(&read, &grown, || false), Drift::Replaced);
        let shrunk = Identity { size: 9, ..read };
        assert_eq!(drift(&read, &shrunk, never), Drift::Replaced);
        let other = Identity { ino: 3, ..read };
        assert_eq!(drift(&read, &other, never), Drift::Replaced);
        let elsewhere = Identity { dev: 9, ..read };
        assert_eq!(drift(&read, &elsewhere, never), Drift::Replaced);
    }

    #[test]
    fn an_append_is_one_whole_line_after_a_newline() {
        let dir = temp_dir("append");
        let path = dir.join("f");
        append_line(&path, b"one", 0o600).unwrap();
        assert_eq!(existing_mode(&path).unwrap(), Some(0o600));
        fs::write(&path, b"one\ntwo").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let before = fs::metadata(&path).unwrap().ino();
        append_line(&path, b"three", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one\ntwo\nthree\n");
        assert_eq!(fs::metadata(&path).unwrap().ino(), before, "not replaced");
        assert_eq!(existing_mode(&path).unwrap(), Some(0o640));
        append_line(&path, b"four", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one\ntwo\nthree\nfour\n");
    }

    #[test]
    fn a_checked_replace_carries_appends_over_and_refuses_a_replaced_file() {
        let dir = temp_dir("checked");
        let path = dir.join("f");
        fs::write(&path, b"a\nb\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        // Unchanged: replaced, mode kept.
        let read = snapshot(&path).unwrap();
        assert_eq!(read.contents, b"a\nb\n");
        assert_eq!(
            replace_checked(&path, &read, b"a\n").unwrap(),
            Replace::Done
        );
        assert_eq!(fs::read(&path).unwrap(), b"a\n");
        assert_eq!(existing_mode(&path).unwrap(), Some(0o640));
        // Someone's `>>` after the read: carried over.
        let read = snapshot(&path).unwrap();
        append_line(&path, b"theirs", 0o600).unwrap();
        assert_eq!(replace_checked(&path, &read, b"").unwrap(), Replace::Done);
        assert_eq!(fs::read(&path).unwrap(), b"theirs\n");
        // An editor's save (a rename over it) after the read: nothing
        // changes, and the caller is told to read again.
        let read = snapshot(&path).unwrap();
        fs::write(dir.join("saved"), b"theirs\nsaved\n").unwrap();
        fs::rename(dir.join("saved"), &path).unwrap();
        assert_eq!(
            replace_checked(&path, &read, b"mine\n").unwrap(),
            Replace::Changed
        );
        assert_eq!(fs::read(&path).unwrap(), b"theirs\nsaved\n");
        // An in-place rewrite of the same length: read again too.
        let read = snapshot(&path).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            replace_checked(&path, &read, b"mine\n").unwrap(),
            Replace::Changed
        );
        // A file that appeared after a read that found none is kept.
        let fresh = dir.join("fresh");
        let read = snapshot(&fresh).unwrap();
        assert!(read.identity.is_none());
        fs::write(&fresh, b"theirs\n").unwrap();
        assert_eq!(
            replace_checked(&fresh, &read, b"mine\n").unwrap(),
            Replace::Changed
        );
        assert_eq!(fs::read(&fresh).unwrap(), b"theirs\n");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    }

    /// A hook that saves `text` over the path as an editor does: a file
    /// beside it, renamed over it.
    fn editor_save(text: &'static [u8]) -> test_hooks::SwapHook {
        Some(Box::new(move |path: &Path| {
            let saved = path.with_file_name("saved");
            fs::write(&saved, text).unwrap();
            fs::rename(&saved, path).unwrap();
        }))
    }

    #[test]
    fn a_save_in_the_instant_before_the_swap_is_put_back() {
        let dir = temp_dir("swap-race");
        let path = dir.join("f");
        fs::write(&path, b"a\nboot\n").unwrap();
        let read = snapshot(&path).unwrap();
        // An editor's save lands between the check and the swap.
        test_hooks::BEFORE_SWAP.with(|h| h.set(editor_save(b"a\nboot\nsaved\n")));
        assert_eq!(
            replace_checked(&path, &read, b"a\n").unwrap(),
            Replace::Changed
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            b"a\nboot\nsaved\n",
            "theirs is back"
        );
        // The retry, as `authorized_keys` does it, reads theirs.
        let read = snapshot(&path).unwrap();
        assert_eq!(
            replace_checked(&path, &read, b"a\nsaved\n").unwrap(),
            Replace::Done
        );
        assert_eq!(fs::read(&path).unwrap(), b"a\nsaved\n");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
    }

    /// An editor saves in the instant before the swap, then saves again
    /// at `second` (a hook point of the swap back) with a line deleted in
    /// the middle and one added: that last save ends at the path as saved.
    fn a_second_save_is_kept_whole(name: &str, second: SwapPoint) {
        let dir = temp_dir(name);
        let path = dir.join("f");
        fs::write(&path, b"a\nboot\nz\n").unwrap();
        let read = snapshot(&path).unwrap();
        test_hooks::BEFORE_SWAP.with(|h| h.set(editor_save(b"a\nboot\nz\nsaved\n")));
        second.with(|h| h.set(editor_save(b"a\nz\nsaved\nsaved2\n")));
        assert_eq!(
            replace_checked(&path, &read, b"a\n").unwrap(),
            Replace::Changed
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            b"a\nz\nsaved\nsaved2\n",
            "the editor's last save is in place, its deletion kept"
        );
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
    }

    type SwapPoint = &'static std::thread::LocalKey<std::cell::Cell<test_hooks::SwapHook>>;

    #[test]
    fn a_line_appended_to_ours_before_the_swap_back_is_carried_into_theirs() {
        let dir = temp_dir("swap-race-append");
        let path = dir.join("f");
        fs::write(&path, b"a\nboot\n").unwrap();
        let read = snapshot(&path).unwrap();
        test_hooks::BEFORE_SWAP.with(|h| h.set(editor_save(b"a\nboot\nsaved\n")));
        test_hooks::BETWEEN_EXCHANGES.with(|h| {
            h.set(Some(Box::new(|path: &Path| {
                append_line(path, b"appended", 0o600).unwrap();
            })))
        });
        assert_eq!(
            replace_checked(&path, &read, b"a\n").unwrap(),
            Replace::Changed
        );
        assert_eq!(fs::read(&path).unwrap(), b"a\nboot\nsaved\nappended\n");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
    }

    #[test]
    fn a_second_save_between_the_swap_and_the_swap_back_is_kept_whole() {
        a_second_save_is_kept_whole("swap-race-2", &test_hooks::BETWEEN_EXCHANGES);
    }

    #[test]
    fn a_second_save_in_the_instant_before_the_swap_back_is_kept_whole() {
        a_second_save_is_kept_whole("swap-race-3", &test_hooks::BEFORE_PUT_BACK);
    }

    #[test]
    fn a_line_written_to_the_old_file_after_the_swap_is_carried_over() {
        let dir = temp_dir("late");
        let path = dir.join("f");
        fs::write(&path, b"a\nboot\n").unwrap();
        // A `>>` that opened the file before the swap and writes after it.
        let late = OpenOptions::new().append(true).open(&path).unwrap();
        let read = snapshot(&path).unwrap();
        test_hooks::AFTER_SWAP.with(|h| {
            h.set(Some(Box::new(move |_: &Path| {
                let mut late = late;
                late.write_all(b"late\n").unwrap();
            })));
        });
        assert_eq!(
            replace_checked(&path, &read, b"a\n").unwrap(),
            Replace::Done
        );
        assert_eq!(fs::read(&path).unwrap(), b"a\nlate\n");
        // A line the new file holds already is not carried twice (an
        // editor that read the old file and saved over ours has it).
        let read = snapshot(&path).unwrap();
        append_line(&path, b"kept", 0o600).unwrap();
        assert_eq!(
            replace_checked(&path, &read, b"kept\n").unwrap(),
            Replace::Done
        );
        assert_eq!(fs::read(&path).unwrap(), b"kept\n");
    }

    #[test]
    fn writing_through_a_link_replaces_its_target() {
        use std::os::unix::fs::symlink;
        let dir = temp_dir("link");
        fs::create_dir(dir.join("real")).unwrap();
        let target = dir.join("real/ak");
        write(&target, b"one", 0o640).unwrap();
        symlink("middle", dir.join("link")).unwrap();
        symlink("real/ak", dir.join("middle")).unwrap();
        let written = write_through_links(&dir.join("link"), b"two", 0o600).unwrap();
        assert_eq!(written, dir.join("real/ak"));
        assert!(
            fs::symlink_metadata(dir.join("link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            fs::symlink_metadata(dir.join("middle"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&target).unwrap(), b"two");
        assert_eq!(existing_mode(&target).unwrap(), Some(0o640));
        assert_eq!(fs::read_dir(dir.join("real")).unwrap().count(), 1);
        // A link to a file that does not exist yet creates it.
        symlink("real/new", dir.join("fresh")).unwrap();
        write_through_links(&dir.join("fresh"), b"n", 0o600).unwrap();
        assert_eq!(existing_mode(&dir.join("real/new")).unwrap(), Some(0o600));
        // A loop is an error, not a hang.
        symlink("loop", dir.join("loop")).unwrap();
        assert!(write_through_links(&dir.join("loop"), b"x", 0o600).is_err());
    }
}
