//! The per-file cache's records: one [`FileEntry`] per transcript (its
//! identity, extent, resume state, parser state and events) in an
//! [`Index`] keyed by path, and where the index store keeps an entry's
//! events ([`Segment`]s of an [`EventsFile`]).
//!
//! An entry loaded from disk holds its events lazily: `pending` names the
//! events file and `parse.events` stays empty until
//! [`FileEntry::materialize`] (in `usage::store::codec`, beside the
//! encoding it decodes) reads and checks them. The refresh rules that
//! change entries are `usage::cache`'s.

use std::collections::BTreeMap;
use std::fs::File;

use crate::usage::event::{Agent, FileParse};

/// One transcript's cached state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub agent: Agent,
    pub compressed: bool,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub(crate) mtime_ns: i64,
    /// The inode's change time: a rewrite in place that keeps the size
    /// and sets the mtime back still moves it.
    pub(crate) ctime_ns: i64,
    pub(crate) head_len: u32,
    pub(crate) head_hash: u64,
    /// Resume offset (plain files): bytes of complete lines parsed.
    pub offset: u64,
    /// Lines skipped for length.
    pub oversized: u64,
    /// The last read failed (open/read/decode error).
    pub unreadable: bool,
    pub parse: FileParse,
    /// Where the index store keeps this entry's events: segments of its
    /// events file, oldest first (a refresh that appended to the transcript
    /// adds one). Empty for an entry never stored.
    pub stored: Vec<Segment>,
    /// The events file while `parse.events` is not loaded yet (lazy load):
    /// `parse.events` is empty until [`FileEntry::materialize`].
    pub(crate) pending: Option<EventsFile>,
}

/// A run of encoded events in an index events file: a self-contained
/// stream (timestamps delta-coded from zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub len: u32,
    pub count: u32,
    /// [`hash_words`](crate::usage::event::hash_words) of the bytes: a
    /// damaged events file is never read as events.
    pub sum: u64,
}

/// An open events file, shared by the entries that point into it.
#[derive(Debug, Clone)]
pub struct EventsFile(pub std::sync::Arc<File>);

impl PartialEq for EventsFile {
    fn eq(&self, other: &EventsFile) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for EventsFile {}

impl FileEntry {
    /// Events the stored segments hold.
    pub(crate) fn stored_count(&self) -> u64 {
        self.stored.iter().map(|s| u64::from(s.count)).sum()
    }

    /// Whether `parse.events` is loaded (else only `stored` has them).
    pub fn is_loaded(&self) -> bool {
        self.pending.is_none()
    }
}

/// All cached files, keyed by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub files: BTreeMap<String, FileEntry>,
}

impl Index {
    /// A hash of every entry's identity and extent: what an aggregate kept
    /// beside the index (`usage::aggregate::incremental`) must match to be reused.
    pub fn fingerprint(&self) -> u64 {
        // Word at a time (thousands of entries, every refresh): a stable
        // multiply-xorshift mix, not a byte-wise hash of a serialisation.
        let mut h = 0x6865_656c_6572_0001_u64;
        for (path, e) in &self.files {
            h = mix_path(h, path.as_bytes());
            for n in [
                u64::from(e.agent.code()) | (u64::from(e.unreadable) << 1),
                e.dev,
                e.ino,
                e.size,
                e.mtime_ns as u64,
                e.ctime_ns as u64,
                e.head_hash,
                e.offset,
            ] {
                h = mix(h, n);
            }
        }
        h
    }
}

/// The fingerprint's mix of one word into the hash.
fn mix(h: u64, v: u64) -> u64 {
    let h = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

/// `h` with a path mixed in: its length, then its eight-byte words (little
/// endian), the last padded with zeros. Only that one is copied: a copy per
/// word is a `memcpy` call (7,000 paths, two fingerprints a refresh).
fn mix_path(h: u64, bytes: &[u8]) -> u64 {
    let mut h = mix(h, bytes.len() as u64);
    let mut rest = bytes;
    while let Some((word, after)) = rest.split_first_chunk::<8>() {
        h = mix(h, u64::from_le_bytes(*word));
        rest = after;
    }
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(word));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> FileEntry {
        FileEntry {
            agent: Agent::Claude,
            compressed: false,
            dev: 1,
            ino: 2,
            size: 300,
            mtime_ns: 4_000,
            ctime_ns: 4_000,
            head_len: 300,
            head_hash: 5,
            offset: 290,
            oversized: 0,
            unreadable: false,
            parse: FileParse::default(),
            stored: Vec::new(),
            pending: None,
        }
    }

    fn index_of(path: &str, e: FileEntry) -> Index {
        Index {
            files: [(path.to_string(), e)].into_iter().collect(),
        }
    }

    #[test]
    fn the_fingerprint_follows_identity_and_extent_only() {
        let base = index_of("/a", entry()).fingerprint();
        assert_eq!(index_of("/a", entry()).fingerprint(), base);
        let changed = [
            FileEntry { dev: 9, ..entry() },
            FileEntry { ino: 9, ..entry() },
            FileEntry { size: 9, ..entry() },
            FileEntry {
                mtime_ns: 9,
                ctime_ns: 9,
                ..entry()
            },
            FileEntry {
                head_hash: 9,
                ..entry()
            },
            FileEntry {
                offset: 9,
                ..entry()
            },
            FileEntry {
                agent: Agent::Codex,
                ..entry()
            },
            FileEntry {
                unreadable: true,
                ..entry()
            },
        ];
        for e in changed {
            assert_ne!(index_of("/a", e.clone()).fingerprint(), base, "{e:?}");
        }
        assert_ne!(index_of("/b", entry()).fingerprint(), base);
        assert_ne!(Index::default().fingerprint(), base);
        // What the lines contributed is not part of it: the extent is.
        let mut parsed = entry();
        parsed.parse.malformed = 3;
        assert_eq!(index_of("/a", parsed).fingerprint(), base);
    }

    #[test]
    fn a_path_mixes_in_as_its_length_and_zero_padded_words() {
        // The definition, a byte at a time: states persist the fingerprint,
        // so it must not change with how the words are read. Paths of every
        // length around a word.
        for len in 0..=25 {
            let path: Vec<u8> = (0..len).map(|i| b'a' + i as u8).collect();
            let mut h = mix(7, len as u64);
            for start in (0..len).step_by(8) {
                let mut word = 0u64;
                for (k, &b) in path[start..len.min(start + 8)].iter().enumerate() {
                    word |= u64::from(b) << (8 * k);
                }
                h = mix(h, word);
            }
            assert_eq!(mix_path(7, &path), h, "{path:?}");
        }
    }

    #[test]
    fn stored_count_sums_the_segments() {
        let mut e = entry();
        assert!(e.is_loaded());
        for count in [3, 4] {
            e.stored.push(Segment {
                offset: 0,
                len: 1,
                count,
                sum: 0,
            });
        }
        assert_eq!(e.stored_count(), 7);
    }
}
