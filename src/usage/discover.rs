//! Finding transcripts: every Claude Code and Codex file under the roots
//! the agents themselves would use, with its metadata, on every refresh.
//!
//! On a busy Host this is thousands of files in a thousand directories,
//! and a refresh that finds one appended file spends most of its time
//! here, so the walk runs on two threads sharing a queue of directories,
//! reads each file's metadata relative to its open directory
//! (`sys::Directory`: no path joined or looked up again), and puts the
//! files in the index's order (path bytes) by sorting each directory's
//! entries by name (`read_one` says why that is enough).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use crate::base::bytes::{byte_order, same_bytes};
use crate::base::json::Value;
use crate::base::sys::{self, EntryKind, FileStat as Stat};
use crate::usage::agents;
use crate::usage::cache::Candidate;
use crate::usage::event::Agent;

/// Where transcripts are, as the agents themselves would resolve it: each
/// agent's roots ([`agents::Source::roots`]), in [`agents::ALL`]'s order.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    lists: [Vec<PathBuf>; agents::ALL.len()],
}

impl Roots {
    /// Roots from explicit values: the home, and the environment variables
    /// (`var`) the agents read.
    pub fn resolve(home: &Path, var: &dyn Fn(&str) -> Option<String>) -> Roots {
        let env = agents::Env { home, var };
        Roots {
            lists: agents::ALL.map(|agent| agent.roots(&env)),
        }
    }

    /// Roots from this process's environment, overridden by the runtime
    /// record's `HOME` and the agents' variables when present.
    pub fn from_env(runtime: Option<&Value>) -> Roots {
        let home = home_of(runtime);
        Roots::resolve(&home, &|k| crate::usage::runtime::env_var(runtime, k))
    }

    /// Every root [`Roots::from_env`] looks at, whether it exists or not.
    pub(crate) fn searched(runtime: Option<&Value>) -> Roots {
        let home = home_of(runtime);
        let var = |k: &str| crate::usage::runtime::env_var(runtime, k);
        let env = agents::Env {
            home: &home,
            var: &var,
        };
        Roots {
            lists: agents::ALL.map(|agent| agent.searched(&env)),
        }
    }

    /// `agent`'s roots.
    pub fn of(&self, agent: Agent) -> &[PathBuf] {
        &self.lists[agent.index()]
    }

    /// These roots with `agent`'s replaced by `roots` (tests and
    /// benchmarks name their own).
    pub fn with(mut self, agent: Agent, roots: Vec<PathBuf>) -> Roots {
        self.lists[agent.index()] = roots;
        self
    }
}

/// `HOME`: the runtime record's when present, else this process's.
fn home_of(runtime: Option<&Value>) -> PathBuf {
    crate::usage::runtime::env_var(runtime, "HOME")
        .map(PathBuf::from)
        .or_else(|| crate::base::dirs::Env::process().home().ok())
        .unwrap_or_default()
}

/// The line a person reads when no transcript was found: the roots each
/// agent searched ([`Roots::searched`]), and the variables that point at
/// others (each agent's `POINTED_BY`; Claude Code's and Codex's take
/// comma-separated lists).
pub(crate) fn nothing_found(roots: &Roots) -> String {
    let list = |paths: &[PathBuf]| {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        }
    };
    let searched: Vec<String> = agents::ALL
        .iter()
        .map(|&a| format!("{}: {}", a.title(), list(roots.of(a))))
        .collect();
    let mut vars: Vec<&str> = Vec::new();
    for v in agents::ALL
        .iter()
        .flat_map(|a| a.pointed_by().iter().copied())
    {
        // opencode and Kilo are both moved by `XDG_DATA_HOME`.
        if !vars.contains(&v) {
            vars.push(v);
        }
    }
    format!(
        "No transcripts found. Searched {}. Set {} to point at others \
         (CLAUDE_CONFIG_DIR and CODEX_HOME take comma-separated lists).",
        searched.join("; "),
        or_list(&vars)
    )
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Directories below a root walked at most this deep.
const MAX_DEPTH: usize = 12;
/// Threads walking at once.
const WALKERS: usize = 2;

/// What walkers found: each directory's listing (by job number), and the
/// directories that could not be listed (by kind).
#[derive(Default)]
struct Found {
    listings: Vec<(usize, Listing)>,
    unreadable: Vec<Agent>,
}

/// One directory's wanted files and walked subdirectories, in the byte
/// order of their paths (see [`read_one`]); a subdirectory is the number
/// of the job that reads it.
type Listing = Vec<Listed>;

enum Listed {
    File(PathBuf, Stat),
    Dir(usize),
}

/// Every transcript under the roots, and how many directories under them
/// could not be listed (coverage reports them: their files are missing).
#[derive(Debug, Default)]
pub struct Discovery {
    pub candidates: Vec<Candidate>,
    pub(crate) dirs_unreadable: [u64; agents::ALL.len()],
}

impl Discovery {
    /// Directories of `agent`'s roots that could not be listed.
    pub fn dirs_unreadable(&self, agent: Agent) -> u64 {
        self.dirs_unreadable[agent.index()]
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

/// Directories waiting to be read (with their job numbers), how many are
/// being read, and the next job number.
struct Queue {
    dirs: Vec<Job>,
    busy: usize,
    jobs: usize,
}

struct Job {
    dir: PathBuf,
    depth: usize,
    kind: Agent,
    number: usize,
}

/// Reads one directory: its listing, and the subdirectories to walk
/// (numbered by [`walker`] when it queues them).
///
/// Every path below a directory `D` starts with `D/`, then an entry's
/// name: a file's path ends there, a subdirectory's continues with `/`.
/// So the byte order of all the paths below `D` is the order of the
/// entries by name, a subdirectory's name read with its `/`, with each
/// subdirectory's own paths in its place (no other entry's name falls
/// between `name/` and the paths that extend it). The listing is sorted
/// so here, comparing names of a few dozen bytes; [`put_in_order`] then
/// puts the listings together, without comparing whole paths.
fn read_one(
    dir: &Path,
    depth: usize,
    kind: Agent,
    found: &mut Found,
    scratch: &mut Scratch,
) -> (Listing, Vec<PathBuf>) {
    let Scratch { entries, order } = scratch;
    entries.clear();
    let mut listing = match sys::Directory::open(dir) {
        Ok(listing) => listing,
        Err(e) if depth == 0 && is_file(&e) => return (file_root(dir), Vec::new()),
        Err(e) => {
            if !missing(&e) {
                found.unreadable.push(kind);
            }
            return (Vec::new(), Vec::new());
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
            EntryKind::Directory if depth < MAX_DEPTH.min(kind.depth()) => {
                entries.push((joined(dir, entry.name()), None));
            }
            // A file gone before its metadata could be read is not listed.
            EntryKind::File if kind.wants(entry.name()) => {
                if let Ok(stat) = entry.stat() {
                    entries.push((joined(dir, entry.name()), Some(stat)));
                }
            }
            // A symbolic link: followed ([`followed`]).
            EntryKind::Other => entries.extend(followed(dir, entry.name(), depth, kind)),
            _ => {}
        }
    }
    if broken {
        found.unreadable.push(kind);
    }
    // The names start after `dir/` in every path.
    let name_at = dir.as_os_str().len() + 1;
    fn key((path, stat): &(PathBuf, Option<Stat>), name_at: usize) -> (&[u8], bool) {
        let name = path
            .as_os_str()
            .as_bytes()
            .get(name_at..)
            .unwrap_or_default();
        (name, stat.is_none())
    }
    // Positions are sorted, not the entries (each a path and metadata, and
    // the static build's `memcpy` is a call).
    order.clear();
    order.extend(0..entries.len());
    sort_positions(order, &|a, b| {
        let ((a, a_dir), (b, b_dir)) = (key(&entries[a], name_at), key(&entries[b], name_at));
        name_order(a, a_dir, b, b_dir)
    });
    let mut subdirs = Vec::new();
    let listing = order
        .iter()
        .map(|&i| match std::mem::take(&mut entries[i]) {
            (path, Some(stat)) => Listed::File(path, stat),
            (path, None) => {
                subdirs.push(path);
                // Numbered when queued; until then the position among the
                // subdirectories.
                Listed::Dir(subdirs.len() - 1)
            }
        })
        .collect();
    (listing, subdirs)
}

/// Whether a failed directory read is of a file (see [`file_root`]).
fn is_file(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotADirectory
}

/// A root that is a file a person named (Copilot's
/// `COPILOT_OTEL_FILE_EXPORTER_PATH`): the one transcript, whatever its
/// name.
fn file_root(path: &Path) -> Listing {
    let file = std::fs::metadata(path).ok().filter(|m| m.is_file());
    let listed = file.map(|m| Listed::File(path.to_path_buf(), stat_of(&m)));
    listed.into_iter().collect()
}

/// The symbolic link `name` in `dir` (`depth` below its root's start), as
/// a listing entry: people move `~/.claude/projects/<p>` to another disk
/// and link it back. A link to a directory is walked like any other
/// directory unless it is one of this directory's own (a loop); to a
/// transcript, listed with its target's metadata. A file reached twice is
/// kept once ([`discover`]).
fn followed(
    dir: &Path,
    name: &OsStr,
    depth: usize,
    kind: Agent,
) -> Option<(PathBuf, Option<Stat>)> {
    let path = joined(dir, name);
    let meta = std::fs::metadata(&path).ok()?;
    if meta.is_dir() {
        (depth < MAX_DEPTH.min(kind.depth()) && !loops_back(&meta, dir, depth))
            .then_some((path, None))
    } else {
        (meta.is_file() && kind.wants(name)).then(|| (path, Some(stat_of(&meta))))
    }
}

/// Whether the directory `target` (a link's, found in `dir`, `depth` below
/// its root's start) is `dir` or one of the directories above it up to
/// that start: following it would walk in a circle.
fn loops_back(target: &std::fs::Metadata, dir: &Path, depth: usize) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = (target.dev(), target.ino());
    dir.ancestors()
        .take(depth + 1)
        .filter_map(|a| std::fs::metadata(a).ok())
        .any(|a| (a.dev(), a.ino()) == id)
}

/// The metadata of a followed link's target, as [`Stat`] has it.
fn stat_of(meta: &std::fs::Metadata) -> Stat {
    use std::os::unix::fs::MetadataExt;
    Stat {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime_sec: meta.mtime(),
        mtime_nsec: meta.mtime_nsec(),
        ctime_sec: meta.ctime(),
        ctime_nsec: meta.ctime_nsec(),
    }
}

/// A walker's buffers, kept from directory to directory: one directory's
/// entries and their order.
#[derive(Default)]
struct Scratch {
    entries: Vec<(PathBuf, Option<Stat>)>,
    order: Vec<usize>,
}

/// The order of two names of one directory's entries, a subdirectory's
/// (`dir`) read with a `/` after it: the order of the paths that start
/// with them.
fn name_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    byte_order(&a[..n], &b[..n]).then_with(|| {
        // One name starts the other: the byte after the shorter one decides,
        // a `/` for a subdirectory, none (first) for a file.
        let next = |name: &[u8], dir: bool| name.get(n).copied().or(dir.then_some(b'/'));
        next(a, a_dir).cmp(&next(b, b_dir))
    })
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
    let mut scratch = Scratch::default();
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
        let Some(job) = job else {
            wake.notify_all();
            return found;
        };
        let (mut listing, subdirs) =
            read_one(&job.dir, job.depth, job.kind, &mut found, &mut scratch);
        if let Ok(mut q) = queue.lock() {
            let first = q.jobs;
            q.jobs += subdirs.len();
            for (i, dir) in subdirs.into_iter().enumerate() {
                q.dirs.push(Job {
                    dir,
                    depth: job.depth + 1,
                    kind: job.kind,
                    number: first + i,
                });
            }
            q.busy -= 1;
            for listed in &mut listing {
                if let Listed::Dir(n) = listed {
                    *n += first;
                }
            }
            found.listings.push((job.number, listing));
        }
        wake.notify_all();
    }
}

/// The files of job `number`'s listing and of its subdirectories', in
/// order, appended to `out` with their root's `kind` (a directory not
/// listed adds nothing).
fn put_in_order(
    number: usize,
    kind: Agent,
    listings: &mut [Option<Listing>],
    out: &mut Vec<(PathBuf, Stat, Agent)>,
) {
    let Some(listing) = listings.get_mut(number).and_then(Option::take) else {
        return;
    };
    for listed in listing {
        match listed {
            Listed::File(path, stat) => out.push((path, stat, kind)),
            // At most MAX_DEPTH deep.
            Listed::Dir(n) => put_in_order(n, kind, listings, out),
        }
    }
}

/// Every transcript under the roots with its metadata, sorted by path
/// bytes (the index's order; deterministic dedupe), and the directories
/// that could not be listed. A `.jsonl.zst` with a plain `.jsonl` sibling
/// is left out (Codex materialises archives back to plain files on resume),
/// and so is a file reached again by another path (a symbolic link, a hard
/// link, a linked directory): one file, by device and inode, is the first
/// of its paths.
pub fn discover(roots: &Roots) -> Discovery {
    let mut discovery = walk(roots);
    // Each root's files are in order; so are all of them unless a root lies
    // inside another (or is named twice): then they are sorted.
    fn bytes(c: &Candidate) -> &[u8] {
        c.path.as_os_str().as_bytes()
    }
    let in_order = discovery
        .candidates
        .windows(2)
        .all(|w| byte_order(bytes(&w[0]), bytes(&w[1])).is_lt());
    if !in_order {
        discovery.candidates = in_path_order(std::mem::take(&mut discovery.candidates));
    }
    let mut seen: rustc_hash::FxHashSet<(u64, u64)> = Default::default();
    discovery
        .candidates
        .retain(|c| c.stat.is_none_or(|s| seen.insert((s.dev, s.ino))));
    discovery
}

/// [`discover`]'s walk: the roots' files in the order of the roots' paths,
/// each root's in path order.
fn walk(roots: &Roots) -> Discovery {
    let starts = starts(roots);
    let kinds: Vec<Agent> = starts.iter().map(|(_, kind)| *kind).collect();
    let queue = Mutex::new(Queue {
        dirs: starts
            .into_iter()
            .enumerate()
            .map(|(number, (dir, kind))| Job {
                dir,
                depth: 0,
                kind,
                number,
            })
            .collect(),
        busy: 0,
        jobs: kinds.len(),
    });
    let wake = Condvar::new();
    let mut found: Vec<Found> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..WALKERS)
            .map(|_| scope.spawn(|| walker(&queue, &wake)))
            .collect();
        let mut all = vec![walker(&queue, &wake)];
        all.extend(helpers.into_iter().filter_map(|h| h.join().ok()));
        all
    });
    let mut discovery = Discovery::default();
    for agent in found.iter().flat_map(|f| &f.unreadable) {
        discovery.dirs_unreadable[agent.index()] += 1;
    }
    // A walker that panicked leaves the others' listings usable.
    let jobs = queue
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .jobs;
    let mut listings: Vec<Option<Listing>> = (0..jobs).map(|_| None).collect();
    for found in &mut found {
        for (number, listing) in found.listings.drain(..) {
            if let Some(slot) = listings.get_mut(number) {
                *slot = Some(listing);
            }
        }
    }
    let mut files = Vec::new();
    for (root, &kind) in kinds.iter().enumerate() {
        put_in_order(root, kind, &mut listings, &mut files);
    }
    discovery.candidates = candidates(files);
    discovery
}

/// The directories the walk starts from, with their roots' kind, in path
/// order, so that the roots' files put one after the other are usually in
/// order already.
fn starts(roots: &Roots) -> Vec<(PathBuf, Agent)> {
    let mut starts = Vec::new();
    for agent in agents::ALL {
        for root in roots.of(agent) {
            for dir in agent.walked() {
                // An empty directory is the root itself (which may be a
                // file: see `read_one`).
                let start = if dir.is_empty() {
                    root.clone()
                } else {
                    root.join(dir)
                };
                starts.push((start, agent));
            }
        }
    }
    // A handful: sorted by insertion, which is stable (a root named twice
    // keeps its first kind) and adds no sort to the binary.
    fn path(start: &(PathBuf, Agent)) -> &[u8] {
        start.0.as_os_str().as_bytes()
    }
    for i in 1..starts.len() {
        let mut j = i;
        while j > 0 && byte_order(path(&starts[j - 1]), path(&starts[j])).is_gt() {
            starts.swap(j - 1, j);
            j -= 1;
        }
    }
    starts
}

/// The walked files as candidates: a `.jsonl.zst` with a plain `.jsonl`
/// sibling is left out.
fn candidates(files: Vec<(PathBuf, Stat, Agent)>) -> Vec<Candidate> {
    files
        .into_iter()
        .filter_map(|(path, stat, agent)| {
            let compressed = agent.compressed(&path);
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
        .collect()
}

/// `found` sorted by path bytes, the first of each path kept: the order
/// when roots overlap. A candidate is large (its metadata): their positions
/// are sorted, not they.
fn in_path_order(found: Vec<Candidate>) -> Vec<Candidate> {
    fn bytes(c: &Candidate) -> &[u8] {
        c.path.as_os_str().as_bytes()
    }
    let mut order: Vec<usize> = (0..found.len()).collect();
    // Position breaks ties: unstable and still deterministic.
    sort_positions(&mut order, &|a, b| {
        byte_order(bytes(&found[a]), bytes(&found[b])).then(a.cmp(&b))
    });
    order.dedup_by(|a, b| same_bytes(bytes(&found[*a]), bytes(&found[*b])));
    let mut slots: Vec<Option<Candidate>> = found.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}

/// `order` (positions) sorted by `cmp`: the one instance of the sort that
/// the walk's position sorts share (each instance is kilobytes of the
/// static binary, and a call through `cmp` costs little beside a
/// comparison of names or paths).
fn sort_positions(order: &mut [usize], cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering) {
    order.sort_unstable_by(|&a, &b| cmp(a, b));
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

    /// Writes an empty file at `path`, making its directories.
    fn touch(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, b"").unwrap();
    }

    fn paths(found: &Discovery) -> Vec<Vec<u8>> {
        let bytes = |c: &Candidate| c.path.as_os_str().as_bytes().to_vec();
        found.candidates.iter().map(bytes).collect()
    }

    #[test]
    fn every_registered_agent_s_transcripts_are_found_as_its_own() {
        // The contract, for every agent in the registry: below each of its
        // walked directories of a root, a file it names is found and
        // assigned to it, and a file of another extension is not.
        let dir = crate::base::scratch::ScratchDir::new("discover-registry");
        let mut roots = Roots::default();
        let mut want = Vec::new();
        for agent in agents::ALL {
            let root = dir.join(agent.name());
            for walked in agent.walked() {
                let file = root.join(walked).join(agent.example());
                touch(&file);
                touch(&file.with_extension("txt"));
                want.push((file.as_os_str().as_bytes().to_vec(), agent));
            }
            roots = roots.with(agent, vec![root]);
        }
        want.sort();
        let found = discover(&roots);
        let got: Vec<(Vec<u8>, Agent)> = found
            .candidates
            .iter()
            .map(|c| (c.path.as_os_str().as_bytes().to_vec(), c.agent))
            .collect();
        assert_eq!(got, want);
        for agent in agents::ALL {
            assert_eq!(found.dirs_unreadable(agent), 0);
        }
    }

    #[test]
    fn a_root_that_is_a_file_is_the_one_transcript_it_names() {
        // Copilot's export file (`COPILOT_OTEL_FILE_EXPORTER_PATH`): a
        // root walked as itself, whatever its name; a root gone is nothing
        // found, not a directory unreadable.
        let dir = crate::base::scratch::ScratchDir::new("discover-file-root");
        let file = dir.join("exports/cli.log");
        touch(&file);
        touch(&dir.join("exports/other.jsonl"));
        let gone = dir.join("exports/gone.jsonl");
        let roots = Roots::default().with(Agent::Copilot, vec![file.clone(), gone]);
        let found = discover(&roots);
        let got: Vec<&Path> = found.candidates.iter().map(|c| c.path.as_path()).collect();
        assert_eq!(got, [file.as_path()]);
        assert_eq!(found.candidates[0].agent, Agent::Copilot);
        assert_eq!(found.dirs_unreadable(Agent::Copilot), 0);
    }

    #[test]
    fn the_walk_lists_every_transcript_in_path_byte_order() {
        use std::os::unix::ffi::OsStrExt;
        let dir = crate::base::scratch::ScratchDir::new("discover-order");
        let claude = dir.join("claude");
        let codex = dir.join("codex");
        // Names that order differently by name than by path: a directory
        // and files that extend its name with bytes below and above `/`
        // ('-' and '.' are below it), nested subagent directories, upper
        // case, a multi-byte name and one that is not UTF-8.
        let p = claude.join("projects/p");
        let mut wanted = vec![
            p.join("a.jsonl"),
            p.join("a/x.jsonl"),
            p.join("a/sub/agent.jsonl"),
            p.join("a.b.jsonl"),
            p.join("a-b/y.jsonl"),
            p.join("a0.jsonl"),
            p.join("ab.jsonl"),
            p.join("A.jsonl"),
            p.join("\u{e9}.jsonl"),
            p.join(OsStr::from_bytes(b"\xff.jsonl")),
            claude.join("projects/p.q/z.jsonl"),
            claude.join("projects/p-q/z.jsonl"),
            claude.join("projects/p0/z.jsonl"),
            codex.join("sessions/2026/11/08/rollout-b.jsonl"),
            codex.join("sessions/2026/11/08/rollout-a.jsonl"),
            codex.join("sessions/2026/11/09/rollout-a.jsonl.zst"),
            codex.join("archived_sessions/rollout-c.jsonl"),
        ];
        for path in &wanted {
            touch(path);
        }
        // Not transcripts: another extension, a Codex name without the
        // prefix, an archive beside its plain file, a symbolic link to a
        // transcript listed already (one file, the first of its paths).
        touch(&p.join("notes.txt"));
        touch(&codex.join("sessions/2026/11/08/other.jsonl"));
        touch(&codex.join("archived_sessions/rollout-c.jsonl.zst"));
        std::os::unix::fs::symlink(p.join("a.jsonl"), p.join("link.jsonl")).unwrap();
        let found = discover(
            &Roots::default()
                .with(Agent::Claude, vec![claude.clone()])
                .with(Agent::Codex, vec![codex.clone()]),
        );
        // Oracle: the slice order of the paths' bytes.
        let mut want: Vec<Vec<u8>> = wanted
            .drain(..)
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .collect();
        want.sort();
        assert_eq!(paths(&found), want);
        // In order as walked, without the general sort (the walk lists the
        // link too; `discover` keeps the first path of the file).
        let walked = walk(
            &Roots::default()
                .with(Agent::Claude, vec![claude.clone()])
                .with(Agent::Codex, vec![codex.clone()]),
        );
        let mut with_link = want.clone();
        with_link.push(p.join("link.jsonl").as_os_str().as_bytes().to_vec());
        with_link.sort();
        assert_eq!(paths(&walked), with_link);

        // A root named twice, and one inside another: each path once, in
        // order still.
        let inner = p.join("a");
        touch(&inner.join("projects/deep.jsonl"));
        want.push(
            inner
                .join("projects/deep.jsonl")
                .as_os_str()
                .as_bytes()
                .to_vec(),
        );
        want.sort();
        let found = discover(
            &Roots::default()
                .with(Agent::Claude, vec![inner, claude.clone(), claude])
                .with(Agent::Codex, vec![codex]),
        );
        assert_eq!(paths(&found), want);
    }

    #[test]
    fn linked_directories_and_files_are_followed_once_without_loops() {
        use std::os::unix::fs::symlink;
        let dir = crate::base::scratch::ScratchDir::new("discover-links");
        let claude = dir.join("claude");
        let projects = claude.join("projects");
        // A project moved to another disk and linked back, twice; a link
        // back to `projects` inside it and one to itself (loops); a
        // transcript linked from elsewhere; a link to nothing.
        let moved = dir.join("disk/p-moved");
        touch(&moved.join("s1.jsonl"));
        touch(&moved.join("s1/subagents/agent-a.jsonl"));
        touch(&projects.join("p-real/x.jsonl"));
        touch(&dir.join("disk/lone.jsonl"));
        symlink(&moved, projects.join("p-moved")).unwrap();
        symlink(&moved, projects.join("p-again")).unwrap();
        symlink(&projects, moved.join("loop")).unwrap();
        symlink(&moved, moved.join("s1/self")).unwrap();
        symlink(
            dir.join("disk/lone.jsonl"),
            projects.join("p-real/lone.jsonl"),
        )
        .unwrap();
        symlink(dir.join("gone"), projects.join("p-real/gone.jsonl")).unwrap();
        let roots = Roots::default()
            .with(Agent::Claude, vec![claude.clone()])
            .with(Agent::Codex, Vec::new());
        // Each file once, at the first of its paths in byte order
        // (`p-again` before `p-moved`; `s1.` before `s1/`).
        let at = |rel: &str| projects.join(rel).as_os_str().as_bytes().to_vec();
        let want = [
            at("p-again/s1.jsonl"),
            at("p-again/s1/subagents/agent-a.jsonl"),
            at("p-real/lone.jsonl"),
            at("p-real/x.jsonl"),
        ];
        let found = discover(&roots);
        assert_eq!(paths(&found), want);
        // The walk itself never went round a loop: both linked copies of
        // the project, and no path through `loop` or `self`.
        let walked = paths(&walk(&roots));
        assert_eq!(walked.len(), 2 + 2 + 2, "{walked:?}");
        let through = |name: &[u8]| {
            walked
                .iter()
                .any(|p| p.windows(name.len()).any(|w| w == name))
        };
        assert!(!through(b"/loop/") && !through(b"/self/"), "{walked:?}");
        // A file is the target's: its size, not the link's.
        fs::write(dir.join("disk/lone.jsonl"), b"0123456789").unwrap();
        let found = discover(&roots);
        let lone = found
            .candidates
            .iter()
            .find(|c| c.path.ends_with("lone.jsonl"));
        assert_eq!(lone.and_then(|c| c.stat).map(|s| s.size), Some(10));
    }

    #[test]
    fn names_order_as_the_paths_that_start_with_them() {
        // Oracle: the slice order of the names with `/x` after a
        // directory's (its paths), for names that start one another.
        let names: [&[u8]; 8] = [b"", b"a", b"a-", b"a.", b"a0", b"ab", b"abc", b"b"];
        for a in names {
            for b in names {
                for (a_dir, b_dir) in [(false, false), (false, true), (true, false), (true, true)] {
                    let path = |name: &[u8], dir: bool| {
                        let mut p = name.to_vec();
                        if dir {
                            p.extend(b"/x");
                        }
                        p
                    };
                    if a == b && a_dir != b_dir {
                        continue; // one directory cannot hold both
                    }
                    assert_eq!(
                        name_order(a, a_dir, b, b_dir),
                        path(a, a_dir).cmp(&path(b, b_dir)),
                        "{a:?} {a_dir} {b:?} {b_dir}"
                    );
                }
            }
        }
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
        let found = discover(
            &Roots::default()
                .with(Agent::Claude, vec![claude])
                .with(Agent::Codex, vec![codex]),
        );
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(found.dirs_unreadable(Agent::Claude), u64::from(denied));
        assert_eq!(found.dirs_unreadable(Agent::Codex), 0);
        assert_eq!(found.candidates.len(), if denied { 1 } else { 2 });
    }
}
