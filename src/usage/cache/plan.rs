//! What a refresh does with one transcript, decided from facts given as
//! values: the index's entry for the path (if any), what `stat` says now,
//! and — only when the rules need them — the hash of the file's head and
//! whether the entry's stored events could be loaded. Nothing here opens a
//! file; [`decide`] asks for a fact it lacks ([`Decision::ReadHead`],
//! [`Decision::LoadEvents`]) and the refresh loop gathers it and asks again.
//!
//! The rules, in the order they apply:
//! 1. `stat` failed (the file vanished): its entry is dropped.
//! 2. The mtime is before the window start: skipped without opening, its
//!    entry dropped (an append-only file cannot hold records newer than
//!    its mtime).
//! 3. No entry: parsed from the start.
//! 4. Same identity (device, inode, agent), size, mtime and ctime: reused.
//! 5. Another identity, a file read whole (a compressed archive, a
//!    document its agent rewrites whole, or a database, whose stat
//!    includes its `-wal` file's: reused only unchanged), an entry whose last read failed (retried only once
//!    the file changed), a smaller file, or a file of the same size whose
//!    mtime or ctime moved (rewritten in place: an editor, or a tool that
//!    sets the mtime back, which still moves the ctime): reparsed from the
//!    start.
//! 6. The head the entry hashed (its first `head_len` bytes) differs or
//!    cannot be read: the file was replaced or rewritten, reparsed.
//! 7. Grown with the same head: the new lines are read from the entry's
//!    offset, which needs its stored events loaded; if they cannot be, it
//!    is reparsed.

use crate::usage::event::Agent;

/// A file's identity and extent, as `stat` reports it now or as an entry
/// recorded it when the file was last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub(crate) mtime_ns: i64,
    /// The inode's change time (moved by every write, and by the `utimes`
    /// that sets an mtime back).
    pub(crate) ctime_ns: i64,
}

/// What the index remembers of a file, as far as the decision needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Known {
    pub agent: Agent,
    /// The file is read whole (a compressed archive or a document), never
    /// from an offset.
    pub whole: bool,
    /// The last read failed.
    pub unreadable: bool,
    pub stat: Stat,
    /// Bytes of the head that `head_hash` covers.
    pub(crate) head_len: u32,
    pub(crate) head_hash: u64,
}

/// The hash of the file's first `head_len` bytes now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// Not read yet.
    Unread,
    Hash(u64),
    /// The file could not be opened or is shorter than `head_len`.
    Unreadable,
}

/// Whether the entry's stored events are loaded (resuming needs them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Events {
    /// Not tried yet.
    Unchecked,
    Loaded,
    /// The events file is missing or damaged.
    Unreadable,
}

/// What is known of the candidate now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The agent whose transcript tree the file was found in.
    pub agent: Agent,
    /// `None` when `stat` failed.
    pub stat: Option<Stat>,
    pub head: Head,
    pub events: Events,
}

impl Facts {
    /// What discovery and `stat` tell, before any file is opened.
    pub fn stated(agent: Agent, stat: Option<Stat>) -> Facts {
        Facts {
            agent,
            stat,
            head: Head::Unread,
            events: Events::Unchecked,
        }
    }
}

/// What to do with one candidate path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Neither indexed nor readable: nothing to do.
    Ignore,
    /// Indexed but vanished: the entry is dropped.
    Drop,
    /// Older than the window: skipped, its entry (if any) dropped.
    TooOld,
    /// Not indexed: parsed from the start.
    Parse,
    /// Unchanged: the entry is kept as it is.
    Reuse,
    /// Grown: the lines after the entry's offset are parsed.
    Append,
    /// Changed otherwise: parsed again from the start.
    Reparse,
}

/// The answer of [`decide`]: a plan, or the fact it needs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Do(Plan),
    /// Hash the file's first `len` bytes into [`Facts::head`].
    ReadHead {
        len: u32,
    },
    /// Load the entry's stored events and say how that went in
    /// [`Facts::events`].
    LoadEvents,
}

/// The plan for a candidate whose index entry is `known` (`None`: not
/// indexed), given `facts`; files whose mtime is before `window_start_ns`
/// are out of the window. Asks for the head or the events only when the
/// rules cannot decide without them (see the module doc).
pub(crate) fn decide(known: Option<&Known>, facts: &Facts, window_start_ns: i64) -> Decision {
    let Some(now) = facts.stat else {
        return Decision::Do(match known {
            Some(_) => Plan::Drop,
            None => Plan::Ignore,
        });
    };
    if now.mtime_ns < window_start_ns {
        return Decision::Do(Plan::TooOld);
    }
    let Some(old) = known else {
        return Decision::Do(Plan::Parse);
    };
    let same_file = old.stat.dev == now.dev && old.stat.ino == now.ino && old.agent == facts.agent;
    let same_times = old.stat.mtime_ns == now.mtime_ns && old.stat.ctime_ns == now.ctime_ns;
    if same_file && old.stat.size == now.size && same_times {
        return Decision::Do(Plan::Reuse);
    }
    if !same_file || old.whole || old.unreadable || now.size <= old.stat.size {
        return Decision::Do(Plan::Reparse);
    }
    match facts.head {
        Head::Unread => return Decision::ReadHead { len: old.head_len },
        Head::Hash(hash) if hash == old.head_hash => {}
        Head::Hash(_) | Head::Unreadable => return Decision::Do(Plan::Reparse),
    }
    match facts.events {
        Events::Unchecked => Decision::LoadEvents,
        Events::Loaded => Decision::Do(Plan::Append),
        Events::Unreadable => Decision::Do(Plan::Reparse),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: i64 = 1_000;

    /// A stat whose ctime is its mtime (as after a plain write).
    fn stat(size: u64, mtime_ns: i64) -> Stat {
        Stat {
            dev: 1,
            ino: 10,
            size,
            mtime_ns,
            ctime_ns: mtime_ns,
        }
    }

    /// A plain Claude transcript of 500 bytes at mtime 2000 whose first
    /// 400 bytes hashed to 77.
    fn known() -> Known {
        Known {
            agent: Agent::Claude,
            whole: false,
            unreadable: false,
            stat: stat(500, 2_000),
            head_len: 400,
            head_hash: 77,
        }
    }

    fn found(now: Stat) -> Facts {
        Facts::stated(Agent::Claude, Some(now))
    }

    fn with_head(now: Stat, head: Head) -> Facts {
        Facts { head, ..found(now) }
    }

    fn plan(d: Decision) -> Plan {
        match d {
            Decision::Do(plan) => plan,
            other => panic!("expected a plan, got {other:?}"),
        }
    }

    #[test]
    fn a_new_file_is_parsed_without_asking_for_its_head() {
        assert_eq!(
            decide(None, &found(stat(10, 2_000)), WINDOW),
            Decision::Do(Plan::Parse)
        );
    }

    #[test]
    fn an_unchanged_file_is_reused_without_opening_it() {
        assert_eq!(
            decide(Some(&known()), &found(stat(500, 2_000)), WINDOW),
            Decision::Do(Plan::Reuse)
        );
        // Even an unreadable or compressed entry: retried only on change.
        for old in [
            Known {
                unreadable: true,
                ..known()
            },
            Known {
                whole: true,
                ..known()
            },
        ] {
            assert_eq!(
                plan(decide(Some(&old), &found(stat(500, 2_000)), WINDOW)),
                Plan::Reuse
            );
        }
    }

    #[test]
    fn a_vanished_file_is_dropped_and_an_unknown_one_ignored() {
        let gone = Facts::stated(Agent::Claude, None);
        assert_eq!(plan(decide(Some(&known()), &gone, WINDOW)), Plan::Drop);
        assert_eq!(plan(decide(None, &gone, WINDOW)), Plan::Ignore);
    }

    #[test]
    fn a_file_older_than_the_window_is_skipped_unopened() {
        // Even if it changed: its mtime proves it holds nothing newer.
        let old_mtime = stat(900, WINDOW - 1);
        assert_eq!(
            plan(decide(Some(&known()), &found(old_mtime), WINDOW)),
            Plan::TooOld
        );
        assert_eq!(plan(decide(None, &found(old_mtime), WINDOW)), Plan::TooOld);
        // At the window start it is in.
        assert_eq!(
            plan(decide(None, &found(stat(1, WINDOW)), WINDOW)),
            Plan::Parse
        );
    }

    #[test]
    fn a_grown_file_with_the_same_head_is_appended_once_its_events_load() {
        let now = stat(800, 3_000);
        assert_eq!(
            decide(Some(&known()), &found(now), WINDOW),
            Decision::ReadHead { len: 400 }
        );
        let same = with_head(now, Head::Hash(77));
        assert_eq!(decide(Some(&known()), &same, WINDOW), Decision::LoadEvents);
        let loaded = Facts {
            events: Events::Loaded,
            ..same
        };
        assert_eq!(plan(decide(Some(&known()), &loaded, WINDOW)), Plan::Append);
        // Stored events that cannot be read leave nothing to resume from.
        let lost = Facts {
            events: Events::Unreadable,
            ..same
        };
        assert_eq!(plan(decide(Some(&known()), &lost, WINDOW)), Plan::Reparse);
    }

    #[test]
    fn a_grown_file_whose_head_changed_or_cannot_be_read_is_reparsed() {
        let now = stat(800, 3_000);
        for head in [Head::Hash(78), Head::Unreadable] {
            assert_eq!(
                plan(decide(Some(&known()), &with_head(now, head), WINDOW)),
                Plan::Reparse
            );
        }
    }

    #[test]
    fn a_file_of_the_same_size_whose_times_moved_is_reparsed_unopened() {
        // A rewrite in place can change any byte past the head, so neither
        // the head nor the size proves the contents: the file is read
        // again. That holds when only the ctime moved too (a rewrite that
        // set the mtime back with `touch -d` or `utimes`).
        let mtime_moved = stat(500, 3_000);
        let ctime_moved = Stat {
            ctime_ns: 3_000,
            ..stat(500, 2_000)
        };
        for now in [mtime_moved, ctime_moved] {
            assert_eq!(
                decide(Some(&known()), &found(now), WINDOW),
                Decision::Do(Plan::Reparse),
                "{now:?}"
            );
        }
    }

    #[test]
    fn a_shrunk_file_is_reparsed_without_reading_its_head() {
        for mtime in [2_000, 3_000] {
            assert_eq!(
                decide(Some(&known()), &found(stat(499, mtime)), WINDOW),
                Decision::Do(Plan::Reparse)
            );
        }
    }

    #[test]
    fn another_identity_is_another_file() {
        let moved_inode = Stat {
            ino: 11,
            ..stat(500, 2_000)
        };
        let other_device = Stat {
            dev: 2,
            ..stat(800, 3_000)
        };
        for now in [moved_inode, other_device] {
            assert_eq!(
                decide(Some(&known()), &found(now), WINDOW),
                Decision::Do(Plan::Reparse)
            );
        }
        // The same path now found as the other agent's transcript.
        let codex = Facts::stated(Agent::Codex, Some(stat(500, 2_000)));
        assert_eq!(plan(decide(Some(&known()), &codex, WINDOW)), Plan::Reparse);
    }

    #[test]
    fn a_changed_archive_or_unreadable_entry_is_reparsed_whole() {
        let now = stat(800, 3_000);
        for old in [
            Known {
                whole: true,
                ..known()
            },
            Known {
                unreadable: true,
                ..known()
            },
        ] {
            // Touched only, or grown: an archive has no resumable offset
            // and a failed read no state to resume.
            for now in [now, stat(500, 3_000)] {
                assert_eq!(
                    decide(Some(&old), &found(now), WINDOW),
                    Decision::Do(Plan::Reparse)
                );
            }
        }
    }

    #[test]
    fn an_empty_head_matches_any_growth() {
        // A file that was empty when parsed hashed zero bytes; whatever was
        // appended, the (empty) head is the same, so it is resumed.
        let empty = Known {
            stat: stat(0, 2_000),
            head_len: 0,
            head_hash: 9,
            ..known()
        };
        let now = stat(40, 2_500);
        assert_eq!(
            decide(Some(&empty), &found(now), WINDOW),
            Decision::ReadHead { len: 0 }
        );
        let facts = Facts {
            head: Head::Hash(9),
            events: Events::Loaded,
            ..found(now)
        };
        assert_eq!(plan(decide(Some(&empty), &facts, WINDOW)), Plan::Append);
    }
}
