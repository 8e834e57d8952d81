//! Reading transcripts line by line from a byte offset, plain or zstd.
//!
//! Transcripts are append-only JSONL that may be mid-write: only complete
//! lines (ending in `\n`) are handed to a parser and counted in the resume
//! offset, so a torn last line is read again, whole, on the next refresh.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Lines longer than this are skipped unparsed (counted as malformed by
/// callers via the returned count): Codex tool output reaches ~12 MB.
pub const MAX_LINE: usize = 64 << 20;

/// Outcome of one read pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pass {
    /// Bytes of complete lines consumed (the next resume offset is
    /// `start + consumed`).
    pub consumed: u64,
    /// Lines over [`MAX_LINE`] that were skipped.
    pub oversized: u64,
}

/// Calls `f` with every complete line (without its `\n`) of `reader`.
pub fn for_each_line<R: Read>(reader: R, mut f: impl FnMut(&[u8])) -> io::Result<Pass> {
    let mut reader = BufReader::with_capacity(256 * 1024, reader);
    let mut line = Vec::with_capacity(64 * 1024);
    let mut pass = Pass::default();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok(pass);
        }
        pass.consumed += n as u64;
        if line.len() > MAX_LINE {
            pass.oversized += 1;
            continue;
        }
        f(&line[..line.len() - 1]);
    }
}

/// Reads a plain file from `offset`.
pub fn read_plain(path: &Path, offset: u64, f: impl FnMut(&[u8])) -> io::Result<Pass> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    for_each_line(file, f)
}

/// Reads a whole `.zst` file (offsets count decompressed bytes).
pub fn read_zstd(path: &Path, f: impl FnMut(&[u8])) -> io::Result<Pass> {
    let file = BufReader::new(File::open(path)?);
    let decoder = ruzstd::decoding::StreamingDecoder::new(file)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    for_each_line(decoder, f)
}

/// Position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut start = 0;
    while start + needle.len() <= hay.len() {
        let at = start
            + hay[start..=hay.len() - needle.len()]
                .iter()
                .position(|&b| b == first)?;
        if hay[at + 1..at + needle.len()] == *rest {
            return Some(at);
        }
        start = at + 1;
    }
    None
}

/// Trims ASCII whitespace (including a `\r` before the newline).
pub fn trim(line: &[u8]) -> &[u8] {
    let start = line.iter().position(|b| !b.is_ascii_whitespace());
    match start {
        None => &[],
        Some(s) => {
            let end = line
                .iter()
                .rposition(|b| !b.is_ascii_whitespace())
                .unwrap_or(s);
            &line[s..=end]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_complete_lines_are_consumed() {
        let mut seen = Vec::new();
        let pass = for_each_line(&b"a\nbb\r\ntorn"[..], |l| seen.push(l.to_vec())).unwrap();
        assert_eq!(seen, vec![b"a".to_vec(), b"bb\r".to_vec()]);
        assert_eq!(pass.consumed, 6);
    }

    #[test]
    fn find_and_trim() {
        assert_eq!(find(b"xx\"usage\":{", b"\"usage\""), Some(2));
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find(b"aab", b"ab"), Some(1));
        assert_eq!(trim(b"  {} \r"), b"{}");
        assert_eq!(trim(b"   "), b"");
    }
}
