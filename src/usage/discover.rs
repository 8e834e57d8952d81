//! Finding transcripts: every Claude Code and Codex file under the roots
//! the agents themselves would use, with its metadata, on every refresh.
//!
//! On a busy Host this is thousands of files in a thousand directories,
//! and a refresh that finds one appended file spends most of its time
//! here, so the walk runs on two threads sharing a queue of directories,
//! and reads each file's metadata through its directory entry (`statx`
//! relative to the open directory, no second path walk).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use crate::base::bytes::{byte_order, same_bytes, shared_prefix};
use crate::base::json::Value;
use crate::base::sys::{self, EntryKind, FileStat as Stat};
use crate::usage::cache::Candidate;
use crate::usage::event::Agent;

/// Where transcripts are, as the agents themselves would resolve it.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    pub claude: Vec<PathBuf>,
    pub codex: Vec<PathBuf>,
}

impl Roots {
    /// Roots from explicit environment values (the runtime record's or ours).
    pub fn resolve(
        home: &Path,
        claude_config_dir: Option<&str>,
        xdg_config_home: Option<&str>,
        codex_home: Option<&str>,
    ) -> Roots {
        Roots {
            claude: crate::usage::parse::claude::roots(claude_config_dir, home, xdg_config_home),
            codex: crate::usage::parse::codex::roots(codex_home, home),
        }
    }

    /// Roots from this process's environment, overridden by the runtime
    /// record's `HOME`, `CLAUDE_CONFIG_DIR` and `CODEX_HOME` when present.
    pub fn from_env(runtime: Option<&Value>) -> Roots {
        let (home, claude, xdg, codex) = env_values(runtime);
        Roots::resolve(&home, claude.as_deref(), xdg.as_deref(), codex.as_deref())
    }

    /// Every root [`Roots::from_env`] looks at, whether it exists or not.
    pub fn searched(runtime: Option<&Value>) -> Roots {
        let (home, claude, xdg, codex) = env_values(runtime);
        Roots {
            claude: crate::usage::parse::claude::candidates(
                claude.as_deref(),
                &home,
                xdg.as_deref(),
            ),
            codex: crate::usage::parse::codex::homes(codex.as_deref(), &home),
        }
    }
}

/// `HOME`, `CLAUDE_CONFIG_DIR`, `XDG_CONFIG_HOME` and `CODEX_HOME`: the
/// runtime record's when present, else this process's.
fn env_values(
    runtime: Option<&Value>,
) -> (PathBuf, Option<String>, Option<String>, Option<String>) {
    let var = |k: &str| crate::usage::runtime::env_var(runtime, k);
    let home = var("HOME")
        .map(PathBuf::from)
        .or_else(|| crate::base::dirs::Env::process().home().ok())
        .unwrap_or_default();
    (
        home,
        var("CLAUDE_CONFIG_DIR"),
        var("XDG_CONFIG_HOME"),
        var("CODEX_HOME"),
    )
}

/// The line a person reads when no transcript was found: the roots
/// searched ([`Roots::searched`]), and how to point at others (the
/// variables [`Roots::resolve`] reads).
pub fn nothing_found(roots: &Roots) -> String {
    let list = |paths: &[PathBuf]| {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        }
    };
    format!(
        "No Claude Code or Codex transcripts found (Claude Code: {}; Codex: {}). \
         Set CLAUDE_CONFIG_DIR or CODEX_HOME (comma-separated lists) to point at others.",
        list(&roots.claude),
        list(&roots.codex)
    )
}

/// Directories below a root walked at most this deep.
const MAX_DEPTH: usize = 12;
/// Threads walking at once.
const WALKERS: usize = 2;

/// What a walk looks for under one root.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Claude,
    Codex,
}

impl Kind {
    fn wants(self, name: &OsStr) -> bool {
        match self {
            Kind::Claude => name.as_bytes().ends_with(b".jsonl"),
            Kind::Codex => name
                .to_str()
                .is_some_and(crate::usage::parse::codex::is_rollout_name),
        }
    }
}

/// What walkers found: wanted files, and the directories that could not
/// be listed (by kind).
#[derive(Default)]
struct Found {
    files: Vec<(PathBuf, Stat, Kind)>,
    unreadable: Vec<Kind>,
}

/// Every transcript under the roots, and how many directories under them
/// could not be listed (coverage reports them: their files are missing).
#[derive(Debug, Default)]
pub struct Discovery {
    pub candidates: Vec<Candidate>,
    pub dirs_unreadable_claude: u64,
    pub dirs_unreadable_codex: u64,
}

impl Discovery {
    /// Directories of `agent`'s roots that could not be listed.
    pub fn dirs_unreadable(&self, agent: Agent) -> u64 {
        match agent {
            Agent::Claude => self.dirs_unreadable_claude,
            Agent::Codex => self.dirs_unreadable_codex,
        }
    }
}

/// Whether a failed directory read is a directory missing (a root without
/// `archived_sessions/`, a directory removed mid-walk): nothing is lost.
fn missing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Directories waiting to be read, and how many are being read.
struct Queue {
    dirs: Vec<(PathBuf, usize, Kind)>,
    busy: usize,
}

/// Reads one directory: wanted files into `found`, subdirectories back.
fn read_one(
    dir: &Path,
    depth: usize,
    kind: Kind,
    found: &mut Found,
) -> Vec<(PathBuf, usize, Kind)> {
    let mut subdirs = Vec::new();
    let mut listing = match sys::Directory::open(dir) {
        Ok(listing) => listing,
        Err(e) => {
            if !missing(&e) {
                found.unreadable.push(kind);
            }
            return subdirs;
        }
    };
    let mut broken = false;
    while let Some(entry) = listing.next_entry() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                broken |= !missing(&e);
                break;
            }
        };
        match entry.kind() {
            EntryKind::Directory if depth < MAX_DEPTH => {
                subdirs.push((joined(dir, entry.name()), depth + 1, kind));
            }
            // A file gone before its metadata could be read is not listed.
            EntryKind::File if kind.wants(entry.name()) => {
                if let Ok(stat) = entry.stat() {
                    found.files.push((joined(dir, entry.name()), stat, kind));
                }
            }
            _ => {}
        }
    }
    if broken {
        found.unreadable.push(kind);
    }
    subdirs
}

/// `dir/name`, allocated once at its length (`std`'s `DirEntry::path`
/// allocates the directory's length and grows it for the name: a
/// reallocation for each of thousands of entries, which the static build's
/// allocator does by copying).
fn joined(dir: &Path, name: &OsStr) -> PathBuf {
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    path.push(dir);
    path.push(name);
    path
}

/// One walker: takes directories until none are queued or being read.
fn walker(queue: &Mutex<Queue>, wake: &Condvar) -> Found {
    let mut found = Found::default();
    loop {
        let job = {
            let Ok(mut q) = queue.lock() else {
                return found;
            };
            loop {
                if let Some(job) = q.dirs.pop() {
                    q.busy += 1;
                    break Some(job);
                }
                if q.busy == 0 {
                    break None;
                }
                q = match wake.wait(q) {
                    Ok(q) => q,
                    Err(_) => return found,
                };
            }
        };
        let Some((dir, depth, kind)) = job else {
            wake.notify_all();
            return found;
        };
        let subdirs = read_one(&dir, depth, kind, &mut found);
        if let Ok(mut q) = queue.lock() {
            q.dirs.extend(subdirs);
            q.busy -= 1;
        }
        wake.notify_all();
    }
}

/// Every transcript under the roots with its metadata, sorted by path
/// bytes (the index's order; deterministic dedupe), and the directories
/// that could not be listed. A `.jsonl.zst` with a plain `.jsonl` sibling
/// is left out (Codex materialises archives back to plain files on resume).
pub fn discover(roots: &Roots) -> Discovery {
    let mut starts = Vec::new();
    for root in &roots.claude {
        starts.push((root.join("projects"), 0, Kind::Claude));
    }
    for root in &roots.codex {
        starts.push((root.join("sessions"), 0, Kind::Codex));
        starts.push((root.join("archived_sessions"), 0, Kind::Codex));
    }
    let queue = Mutex::new(Queue {
        dirs: starts,
        busy: 0,
    });
    let wake = Condvar::new();
    let found: Vec<Found> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..WALKERS)
            .map(|_| scope.spawn(|| walker(&queue, &wake)))
            .collect();
        let mut all = vec![walker(&queue, &wake)];
        all.extend(helpers.into_iter().filter_map(|h| h.join().ok()));
        all
    });
    let mut discovery = Discovery::default();
    for kind in found.iter().flat_map(|f| &f.unreadable) {
        match kind {
            Kind::Claude => discovery.dirs_unreadable_claude += 1,
            Kind::Codex => discovery.dirs_unreadable_codex += 1,
        }
    }
    let unsorted: Vec<Candidate> = found
        .into_iter()
        .flat_map(|f| f.files)
        .filter_map(|(path, stat, kind)| {
            let (agent, compressed) = match kind {
                Kind::Claude => (Agent::Claude, false),
                Kind::Codex => (Agent::Codex, path.as_os_str().as_bytes().ends_with(b".zst")),
            };
            if compressed && path.with_extension("").exists() {
                return None;
            }
            Some(Candidate {
                path,
                agent,
                compressed,
                stat: Some(stat.into()),
            })
        })
        .collect();
    discovery.candidates = in_path_order(unsorted);
    discovery
}

/// `found` sorted by path bytes, the first of each path kept. A candidate
/// is large (its metadata): their positions are sorted, not they.
fn in_path_order(found: Vec<Candidate>) -> Vec<Candidate> {
    fn bytes(c: &Candidate) -> &[u8] {
        c.path.as_os_str().as_bytes()
    }
    // Every path starts with the bytes they all share (the roots' common
    // part, tens of bytes): the sort compares what follows.
    let shared = found.first().map_or(0, |first| {
        let first = bytes(first);
        found
            .iter()
            .fold(first.len(), |n, c| n.min(shared_prefix(first, bytes(c))))
    });
    let rest = |i: usize| &bytes(&found[i])[shared..];
    let mut order: Vec<usize> = (0..found.len()).collect();
    // Position breaks ties: unstable and still deterministic.
    order.sort_unstable_by(|&a, &b| byte_order(rest(a), rest(b)).then(a.cmp(&b)));
    order.dedup_by(|a, b| same_bytes(rest(*a), rest(*b)));
    let mut slots: Vec<Option<Candidate>> = found.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn candidates_come_in_path_byte_order_with_the_first_of_a_path_kept() {
        let found = |path: &str, agent| Candidate {
            path: PathBuf::from(path),
            agent,
            compressed: false,
            stat: None,
        };
        let sorted = in_path_order(vec![
            found("/r/b.jsonl", Agent::Claude),
            found("/r/a/z.jsonl", Agent::Claude),
            found("/r/b.jsonl", Agent::Codex),
            found("/r/a.jsonl", Agent::Codex),
            found("/r/B.jsonl", Agent::Claude),
        ]);
        let got: Vec<(&str, Agent)> = sorted
            .iter()
            .map(|c| (c.path.to_str().unwrap(), c.agent))
            .collect();
        // Byte order: 'B' (0x42) before 'a' (0x61); '.' (0x2e) before '/'
        // (0x2f), so "a.jsonl" before "a/z.jsonl".
        assert_eq!(
            got,
            [
                ("/r/B.jsonl", Agent::Claude),
                ("/r/a.jsonl", Agent::Codex),
                ("/r/a/z.jsonl", Agent::Claude),
                ("/r/b.jsonl", Agent::Claude),
            ]
        );
    }

    #[test]
    fn a_missing_directory_is_not_an_unreadable_one() {
        use std::io::{Error, ErrorKind};
        assert!(missing(&Error::from(ErrorKind::NotFound)));
        assert!(missing(&Error::from(ErrorKind::NotADirectory)));
        assert!(!missing(&Error::from(ErrorKind::PermissionDenied)));
        assert!(!missing(&Error::from_raw_os_error(5))); // EIO
    }

    #[test]
    fn directories_that_cannot_be_listed_are_counted() {
        let dir = crate::base::scratch::ScratchDir::new("discover-unreadable");
        let claude = dir.join("claude");
        fs::create_dir_all(claude.join("projects/ok")).unwrap();
        fs::write(claude.join("projects/ok/a.jsonl"), b"").unwrap();
        let locked = claude.join("projects/locked");
        fs::create_dir_all(&locked).unwrap();
        fs::write(locked.join("b.jsonl"), b"").unwrap();
        // A Codex home with `sessions/` but no `archived_sessions/`.
        let codex = dir.join("codex");
        fs::create_dir_all(codex.join("sessions")).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        // Root reads any directory: then there is nothing unreadable.
        let denied = fs::read_dir(&locked).is_err();
        let found = discover(&Roots {
            claude: vec![claude],
            codex: vec![codex],
        });
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(found.dirs_unreadable(Agent::Claude), u64::from(denied));
        assert_eq!(found.dirs_unreadable(Agent::Codex), 0);
        assert_eq!(found.candidates.len(), if denied { 1 } else { 2 });
    }
}
