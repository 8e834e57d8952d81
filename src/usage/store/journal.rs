//! The append-only journal both usage stores keep beside a base file
//! (`usage::store::index`, `usage::store::state`): a refresh appends what it
//! changed instead of rewriting the base.
//!
//! A journal starts with a header naming the base it extends (magic, the
//! base's device, inode, size and mtime, and the layout versions), then
//! holds records `[u32 length][u64 FNV-1a of the payload][payload]`. A
//! reader replays the intact records in order; a torn or damaged record
//! ends the replay, and a journal whose header names another base is
//! ignored whole.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::usage::event::fnv1a;

/// Where a loaded base and its journal stood, needed to append to the
/// journal later: what an aggregate state carries from load to save.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// Bytes of the base as loaded.
    pub(crate) base_len: u64,
    /// Bytes of the journal as loaded (0: none).
    pub(crate) journal_len: u64,
    /// Every record of the journal was intact and replayed.
    pub(crate) journal_valid: bool,
    /// The header a journal extending this base starts with.
    pub header: Vec<u8>,
}

impl Origin {
    /// Whether records may be appended: the journal is absent or fully
    /// replayed (appending after a torn record would hide the new ones).
    pub(crate) fn extendable(&self) -> bool {
        self.journal_valid || self.journal_len == 0
    }
}

/// The header of a journal extending the base with metadata `base`.
pub fn header(magic: &[u8; 4], base: &fs::Metadata, versions: &[u64]) -> Vec<u8> {
    let mut h = magic.to_vec();
    let mtime = (base.mtime() as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(base.mtime_nsec() as u64);
    for n in [base.dev(), base.ino(), base.size(), mtime]
        .into_iter()
        .chain(versions.iter().copied())
    {
        h.extend(n.to_le_bytes());
    }
    h
}

/// Appends `payload` to `out` as one record.
pub fn frame(payload: &[u8], out: &mut Vec<u8>) {
    out.extend((payload.len() as u32).to_le_bytes());
    out.extend(fnv1a(&[payload]).to_le_bytes());
    out.extend(payload);
}

/// The intact records of `journal` after `header`, and whether they reach
/// its end (a journal that does not is never appended to). A journal of
/// another base yields nothing.
pub fn records<'a>(journal: &'a [u8], header: &[u8]) -> (Vec<&'a [u8]>, bool) {
    let Some(mut rest) = journal.strip_prefix(header) else {
        return (Vec::new(), false);
    };
    let mut out = Vec::new();
    while let Some(payload) = record(rest) {
        out.push(payload);
        rest = &rest[12 + payload.len()..];
    }
    (out, rest.is_empty())
}

/// The payload of the record at the start of `bytes`, if complete and
/// intact.
fn record(bytes: &[u8]) -> Option<&[u8]> {
    let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(bytes.get(4..12)?.try_into().ok()?);
    let payload = bytes.get(12..12usize.checked_add(len)?)?;
    (fnv1a(&[payload]) == sum).then_some(payload)
}

/// Appends framed `records` to the journal at `path`; a fresh journal
/// (`header` given) replaces whatever was there.
pub fn append(path: &Path, header: Option<&[u8]>, records: &[u8]) -> io::Result<()> {
    let fresh = header.is_some();
    let (mut file, _) = crate::base::state_file::open_with(
        OpenOptions::new()
            .create(true)
            .write(true)
            .append(!fresh)
            .truncate(fresh)
            .mode(0o600),
        path,
    )?;
    let mut out = Vec::with_capacity(records.len() + 128);
    out.extend(header.unwrap_or_default());
    out.extend(records);
    file.write_all(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_replay_up_to_the_first_damage() {
        let mut journal = b"HEAD".to_vec();
        for payload in [&b"one"[..], b"", b"three"] {
            frame(payload, &mut journal);
        }
        let (all, whole) = records(&journal, b"HEAD");
        assert_eq!((all, whole), (vec![&b"one"[..], b"", b"three"], true));
        let (torn, whole) = records(&journal[..journal.len() - 1], b"HEAD");
        assert_eq!((torn, whole), (vec![&b"one"[..], b""], false));
        let mut flipped = journal.clone();
        flipped[4 + 12] ^= 1;
        assert_eq!(records(&flipped, b"HEAD"), (Vec::new(), false));
        assert_eq!(records(&journal, b"OTHER"), (Vec::new(), false));
    }
}
