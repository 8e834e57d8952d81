//! The usage cache on disk: the one description of its files, their
//! headers and checksums, and the order in which they are replaced.
//!
//! Everything here is a cache of the transcripts, laid out so that a
//! refresh in which a few transcripts changed reads and writes little more
//! than those files' entries (a busy Host's index holds tens of MB of
//! events, its aggregate tens of thousands of slots). All files are in the
//! usage state directory (`usage::paths`), mode 0600; integers are
//! little-endian.
//!
//! # The per-file index (`index`; records in `entry`, encodings in `codec`)
//! - `index-v1.bin`, the base, replaced atomically: magic `HUIX`, the
//!   layout version and the Claude and Codex parser versions (a `u32`
//!   each), the entry count, the id of its events file (`u64`), then every
//!   entry in path order — identity, size, mtime, head length and hash,
//!   resume offset, parser state, string table and the list of segments of
//!   the events file that hold its events — and a trailing [`hash_words`]
//!   of everything before it. Another layout version discards the index;
//!   another parser version discards that agent's entries (reparsed).
//! - `index-v1.<id>.events`, the events file the base names: magic `HUIE`
//!   and its id, then encoded event streams (varints, timestamps
//!   delta-coded from zero), appended to and never rewritten in place. A
//!   refresh that read new lines of a transcript appends only their events
//!   as one more segment of its entry (merged into one past 32). Each
//!   segment reference carries offset, length, event count and the
//!   [`hash_words`] of its bytes.
//! - `index-v1.journal`, append-only (`journal`): a header naming the base
//!   it extends (its magic `HUIJ`, the base's device, inode, size and mtime,
//!   and the three versions), then records `[u32 length][u64 FNV-1a of the
//!   payload][payload]`, each an entry (`1`, then the entry as in the base)
//!   or a tombstone (`0`, then the path).
//!
//! Loading reads the base and replays the journal's intact records over
//! it; an entry's events are read from the events file only when
//! something needs them. Once the journal outgrows a quarter of the base
//! (and at least 1 MiB), or the events file holds more dead bytes than
//! live ones (and at least 8 MiB), the next save compacts: a new events
//! file (new id, one segment per entry), then a new base naming it, then
//! the journal and the old events file are removed — in that order, so a
//! crash at any point leaves a base whose events file exists.
//!
//! # The incremental aggregate (`state`, `owners`)
//! - `aggregate-v1.bin`, the base, replaced atomically: magic `HUAG`, its
//!   version and the length of each of its five sections, sealed by a
//!   [`hash_words`]; then the sections, each checked on its own so that a
//!   view reads and checks only what it decodes: the fingerprint of the
//!   index it aggregates, the history start (`usage.toml`'s retention),
//!   the price table's hash and three counters; the same three per file
//!   (owner id, in id order); the slots summed over sessions and the
//!   slots per session; and the reference to the owners table (its
//!   generation, size and the delta since it). The three small sections
//!   are sealed whole. Each table (`rows`) is a sealed head — its strings,
//!   its row count, and per block of 256 rows the key of its first row
//!   (the fence) and the [`hash_words`] of its rows — then fixed-size rows
//!   in key order naming the strings: a reader finds a key or a time by
//!   bisection over the fences and then in one block, and reads and
//!   checks only the blocks it uses. The worker so reads, of tens of
//!   thousands of rows, the blocks its changed keys fall in and those of
//!   the app's window; a view those from the first day it shows.
//! - `aggregate-v1.journal`: the same journal framing (magic `HUAJ`, the
//!   state version), each record the new fingerprint, history start and
//!   counters, the files whose counters changed (all zero: none left),
//!   then the slots, the per-session slots and the owner entries that
//!   changed.
//! - `owners-v1.<generation>.bin`: magic `HUAO`, version, generation, row
//!   count, then per block of 256 rows its first identifier (the fence) and
//!   the [`hash_words`] of its rows, the header sealed, then the rows
//!   (identifier, owner) sorted by identifier. A lookup reads the fences
//!   once and one block.
//!
//! Once the aggregate's journal outgrows a quarter of the base (and at
//! least 256 KiB), or the owners table gets a new generation (its delta
//! outgrew an eighth of it), the next save writes the new owners table
//! first, then a new base naming it, then removes the journal and then
//! the other owners generations.
//!
//! # Damage and durability
//! Every byte read back is checked: bases whole, journal records one by
//! one, each events segment, each owners block and header; and every file
//! names the one it extends (the events file's id, the journal's base
//! identity, the owners generation). A torn or damaged journal record ends
//! the replay (the cache then looks older, which the next refresh repairs
//! as any change); a damaged base or events segment makes those entries,
//! or the aggregate, absent, so they are reparsed or rebuilt (a damaged
//! block of a table is found when first read, and the aggregate is then
//! rebuilt, never answered from it). Because a
//! damaged or stale file can only cost a rescan, never a wrong total, the
//! files are replaced atomically but not `fsync`ed: a refresh stays cheap,
//! and a crash loses at most the work since the last save.
//!
//! [`hash_words`]: crate::usage::event::hash_words

pub mod codec;
pub mod entry;
pub mod index;
pub mod journal;
pub mod owners;
pub(crate) mod rows;
pub mod state;

/// The longest store file (a base or a journal) read whole. Every file
/// here is opened as `base::state_file` opens heeler's state (no final
/// link, no blocking, a regular file only), so a FIFO or a link to
/// `/dev/zero` is refused at once; this cap bounds a regular file too. A
/// busy Host's cache grows by about 33 MiB per 30 days kept
/// (docs/benchmarks.md), so years of history stay far below it.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 30;

use crate::usage::event::fnv1a;

/// A fresh generation (or file id) to succeed `previous`: a hash of the
/// clock, the process id and `previous`, never equal to `previous`, so the
/// new file's name and the references to it always change.
pub(crate) fn new_generation(previous: u64) -> u64 {
    let hashed = fnv1a(&[
        &crate::base::clock::unix_nanos().to_le_bytes(),
        &std::process::id().to_le_bytes(),
        &previous.to_le_bytes(),
    ]);
    distinct_from(previous, hashed)
}

/// `candidate`, or a neighbour of it when it equals `previous`.
fn distinct_from(previous: u64, candidate: u64) -> u64 {
    if candidate == previous {
        candidate ^ 1
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_generation_never_equals_the_previous() {
        assert_eq!(distinct_from(5, 5), 4);
        assert_eq!(distinct_from(4, 4), 5);
        assert_eq!(distinct_from(5, 9), 9);
        let mut previous = 0;
        for _ in 0..100 {
            let next = new_generation(previous);
            assert_ne!(next, previous);
            previous = next;
        }
    }
}
