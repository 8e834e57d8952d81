//! Finding transcripts: every Claude Code and Codex file under the roots
//! the agents themselves would use, with its metadata, on every refresh.
//!
//! On a busy Host this is thousands of files in a thousand directories,
//! and a refresh that finds one appended file spends most of its time
//! here, so the walk runs on two threads sharing a queue of directories,
//! and reads each file's metadata through its directory entry (`statx`
//! relative to the open directory, no second path walk).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use crate::base::json::Value;
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
        let var = |k: &str| crate::usage::runtime::env_var(runtime, k);
        let home = var("HOME")
            .map(PathBuf::from)
            .or_else(|| crate::base::dirs::Env::process().home().ok())
            .unwrap_or_default();
        Roots::resolve(
            &home,
            var("CLAUDE_CONFIG_DIR").as_deref(),
            var("XDG_CONFIG_HOME").as_deref(),
            var("CODEX_HOME").as_deref(),
        )
    }
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

type Found = Vec<(PathBuf, fs::Metadata, Kind)>;

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
    let Ok(entries) = fs::read_dir(dir) else {
        return subdirs;
    };
    for entry in entries.flatten() {
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            if depth < MAX_DEPTH {
                subdirs.push((entry.path(), depth + 1, kind));
            }
        } else if file_type.is_file()
            && kind.wants(&entry.file_name())
            && let Ok(meta) = entry.metadata()
        {
            found.push((entry.path(), meta, kind));
        }
    }
    subdirs
}

/// One walker: takes directories until none are queued or being read.
fn walker(queue: &Mutex<Queue>, wake: &Condvar) -> Found {
    let mut found = Vec::new();
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
/// bytes (the index's order; deterministic dedupe). A `.jsonl.zst` with a
/// plain `.jsonl` sibling is left out (Codex materialises archives back to
/// plain files on resume).
pub fn discover(roots: &Roots) -> Vec<Candidate> {
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
    let mut out: Vec<Candidate> = found
        .into_iter()
        .flatten()
        .filter_map(|(path, meta, kind)| {
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
                meta: Some(meta),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        a.path
            .as_os_str()
            .as_bytes()
            .cmp(b.path.as_os_str().as_bytes())
    });
    out.dedup_by(|a, b| a.path == b.path);
    out
}
