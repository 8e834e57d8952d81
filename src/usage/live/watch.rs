//! `active-v1.json`: the transcripts written to in the last hours, which
//! the worker lists beside each snapshot with the size and modification
//! time it read them at, so the live screen can tell within a second that
//! one grew (a few `stat`s, not a walk of every transcript tree) and start
//! a refresh at once, instead of waiting for the cache to be a minute old.
//!
//! The directories holding those files are listed too, with their times:
//! a new session in an active project (a new file there) changes its
//! directory's time. A transcript in a directory idle for longer than
//! [`SPAN`] is seen at the next refresh the cache's age starts.
//!
//! Derived and best effort: written atomically after the snapshot, read
//! through `base::state_file` (a regular file, capped); a missing or
//! damaged file means nothing is watched.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::base::json::{self, Object, Value};
use crate::usage::agents::Form;
use crate::usage::cache::Candidate;

/// Schema version of the file.
pub const VERSION: i64 = 1;
/// How recently a transcript was written to for it to be watched.
pub const SPAN: i64 = 6 * 3600;
/// The most transcripts watched (the newest first).
pub const MOST: usize = 64;
/// The file's cap when read: [`MOST`] files and their directories with
/// paths of up to 4 KiB each.
const CAP: u64 = 2 * 1024 * 1024;

/// What the screen compares: a file's size and modification time (a
/// directory's size is not compared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub size: u64,
    /// Nanoseconds since the epoch.
    pub mtime_ns: i64,
}

/// The watched files and directories as the worker last saw them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watch {
    pub files: Vec<(PathBuf, Seen)>,
    pub dirs: Vec<(PathBuf, Seen)>,
}

/// The file's text for the transcripts `found` at `now` (pure but for the
/// directories' times, read by `dir_seen`): those written to in the last
/// [`SPAN`], newest first, at most [`MOST`], and their directories.
pub fn encode(found: &[Candidate], now: i64, dir_seen: impl Fn(&Path) -> Option<Seen>) -> String {
    let since = (now - SPAN).saturating_mul(1_000_000_000);
    let mut recent: Vec<(PathBuf, Seen)> = Vec::new();
    for c in found {
        let Some(stat) = c.stat else { continue };
        let seen = Seen {
            size: stat.size,
            mtime_ns: stat.mtime_ns,
        };
        // A database's commits go to its `-wal` file, which is watched
        // beside it (read as `dir_seen` reads a path).
        let wal = (c.agent.form() == Form::Database)
            .then(|| {
                let mut wal = c.path.clone().into_os_string();
                wal.push("-wal");
                let wal = PathBuf::from(wal);
                dir_seen(&wal).map(|seen| (wal, seen))
            })
            .flatten();
        let newest = wal
            .as_ref()
            .map_or(seen.mtime_ns, |(_, w)| w.mtime_ns.max(seen.mtime_ns));
        if newest >= since && c.path.to_str().is_some() {
            recent.push((c.path.clone(), seen));
            recent.extend(wal);
        }
    }
    recent.sort_by(|a, b| b.1.mtime_ns.cmp(&a.1.mtime_ns).then(a.0.cmp(&b.0)));
    recent.truncate(MOST);
    let mut dirs: Vec<&Path> = recent.iter().filter_map(|(p, _)| p.parent()).collect();
    dirs.sort_unstable();
    dirs.dedup();
    let entry = |path: &Path, seen: Seen| {
        Value::Array(vec![
            Value::from(path.to_str().unwrap_or_default()),
            Value::from(seen.size),
            Value::from(seen.mtime_ns),
        ])
    };
    let files: Vec<Value> = recent.iter().map(|(p, s)| entry(p, *s)).collect();
    let dirs: Vec<Value> = dirs
        .into_iter()
        .filter_map(|d| Some(entry(d, dir_seen(d)?)))
        .collect();
    Value::Object(
        Object::new()
            .with("v", VERSION)
            .with("files", Value::Array(files))
            .with("dirs", Value::Array(dirs)),
    )
    .to_json()
}

/// The file's lists, or an empty watch when it is missing, damaged or of
/// another version (pure).
pub fn decode(text: &str) -> Watch {
    let Ok(doc) = json::parse(text) else {
        return Watch::default();
    };
    if doc.get("v").and_then(Value::as_i64) != Some(VERSION) {
        return Watch::default();
    }
    let list = |key: &str| -> Vec<(PathBuf, Seen)> {
        doc.get(key)
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|e| {
                let e = e.as_array()?;
                let n = |i: usize| e.get(i).and_then(Value::as_i64);
                Some((
                    PathBuf::from(e.first()?.as_str()?),
                    Seen {
                        size: u64::try_from(n(1)?).ok()?,
                        mtime_ns: n(2)?,
                    },
                ))
            })
            .take(MOST)
            .collect()
    };
    Watch {
        files: list("files"),
        dirs: list("dirs"),
    }
}

/// The size and time of `path` now, following no link (`None` when it is
/// gone or unreadable).
pub fn seen(path: &Path) -> Option<Seen> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(Seen {
        size: meta.size(),
        mtime_ns: meta
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.mtime_nsec()),
    })
}

impl Watch {
    /// The watch the worker wrote at `path` (empty when there is none).
    pub fn read(path: &Path) -> Watch {
        crate::base::state_file::read_text(path, CAP)
            .map(|text| decode(&text))
            .unwrap_or_default()
    }

    /// Whether a watched transcript or directory differs from what the
    /// worker saw (`now_seen` reads one: `seen` on a real system): a file
    /// grew, was rewritten or is gone, a directory gained or lost a file.
    pub fn changed(&self, now_seen: impl Fn(&Path) -> Option<Seen>) -> bool {
        let file_moved = self
            .files
            .iter()
            .any(|(path, was)| now_seen(path) != Some(*was));
        file_moved
            || self
                .dirs
                .iter()
                .any(|(path, was)| now_seen(path).is_none_or(|now| now.mtime_ns != was.mtime_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::cache::plan::Stat;
    use crate::usage::event::Agent;

    fn candidate(path: &str, size: u64, mtime: i64) -> Candidate {
        Candidate {
            path: PathBuf::from(path),
            agent: Agent::Claude,
            compressed: false,
            stat: Some(Stat {
                dev: 1,
                ino: 1,
                size,
                mtime_ns: mtime * 1_000_000_000 + 5,
                ctime_ns: mtime * 1_000_000_000 + 5,
            }),
        }
    }

    fn at(mtime: i64) -> Seen {
        Seen {
            size: 0,
            mtime_ns: mtime,
        }
    }

    #[test]
    fn a_database_is_watched_with_its_wal_where_its_commits_go() {
        let now = 100_000;
        let mut db = candidate("/r/opencode/opencode.db", 4096, now - SPAN - 10);
        db.agent = crate::usage::event::Agent::Opencode;
        // The database file is older than the span, its WAL is not.
        let wal = PathBuf::from("/r/opencode/opencode.db-wal");
        let seen_wal = Seen {
            size: 8_272,
            mtime_ns: (now - 7) * 1_000_000_000,
        };
        let text = encode(&[db], now, |p| (p == wal).then_some(seen_wal));
        let watch = decode(&text);
        let files: Vec<&Path> = watch.files.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(files, [wal.as_path(), Path::new("/r/opencode/opencode.db")]);
        assert_eq!(watch.files[0].1, seen_wal);
        // A commit grows the WAL: a change.
        let grown = Seen {
            size: 12_392,
            ..seen_wal
        };
        let db_seen = watch.files[1].1;
        assert!(!watch.changed(|p| Some(if p == wal { seen_wal } else { db_seen })));
        assert!(watch.changed(|p| Some(if p == wal { grown } else { db_seen })));
    }

    #[test]
    fn the_newest_recent_files_are_listed_with_their_directories() {
        let now = 100_000;
        let mut found = vec![
            candidate("/r/a/old.jsonl", 10, now - SPAN - 1),
            candidate("/r/a/new.jsonl", 20, now - 5),
            candidate("/r/b/mid.jsonl", 30, now - 600),
        ];
        for i in 0..MOST {
            found.push(candidate(&format!("/r/c/{i}.jsonl"), 1, now - 3600));
        }
        let text = encode(&found, now, |d| Some(at(d.as_os_str().len() as i64)));
        let watch = decode(&text);
        // Oracle: the list built by hand: the two newest, then 62 of c.
        assert_eq!(watch.files.len(), MOST);
        assert_eq!(watch.files[0].0, PathBuf::from("/r/a/new.jsonl"));
        assert_eq!(
            watch.files[0].1,
            Seen {
                size: 20,
                mtime_ns: (now - 5) * 1_000_000_000 + 5
            }
        );
        assert_eq!(watch.files[1].0, PathBuf::from("/r/b/mid.jsonl"));
        assert!(
            !watch
                .files
                .iter()
                .any(|(p, _)| p == Path::new("/r/a/old.jsonl"))
        );
        let dirs: Vec<&Path> = watch.dirs.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(
            dirs,
            [Path::new("/r/a"), Path::new("/r/b"), Path::new("/r/c")]
        );
        assert_eq!(watch.dirs[0].1, at(4));
    }

    #[test]
    fn a_grown_file_a_new_file_or_a_gone_file_is_a_change() {
        let watch = Watch {
            files: vec![(
                PathBuf::from("/r/a/s.jsonl"),
                Seen {
                    size: 10,
                    mtime_ns: 7,
                },
            )],
            dirs: vec![(PathBuf::from("/r/a"), at(3))],
        };
        let same = |p: &Path| {
            Some(if p.ends_with("s.jsonl") {
                watch.files[0].1
            } else {
                Seen { size: 99, ..at(3) }
            })
        };
        assert!(!watch.changed(same));
        let grown = |p: &Path| {
            Some(if p.ends_with("s.jsonl") {
                Seen {
                    size: 11,
                    ..watch.files[0].1
                }
            } else {
                at(3)
            })
        };
        assert!(watch.changed(grown));
        let new_file = |p: &Path| {
            Some(if p.ends_with("s.jsonl") {
                watch.files[0].1
            } else {
                at(4)
            })
        };
        assert!(watch.changed(new_file));
        assert!(watch.changed(|_| None));
        assert!(!Watch::default().changed(|_| None));
    }

    #[test]
    fn a_damaged_or_other_version_file_watches_nothing() {
        assert_eq!(decode("{"), Watch::default());
        assert_eq!(decode(r#"{"v":2,"files":[["/a",1,2]]}"#), Watch::default());
        assert_eq!(
            decode(r#"{"v":1,"files":[["/a",-1,2],["/b",1,2]]}"#).files,
            [(
                PathBuf::from("/b"),
                Seen {
                    size: 1,
                    mtime_ns: 2
                }
            )]
        );
    }
}
