//! Reading transcripts line by line from a byte offset, plain or zstd.
//!
//! Transcripts are append-only JSONL that may be mid-write: only complete
//! lines are handed to a parser and counted in the resume offset, so a torn
//! last line is read again, whole, on the next refresh. A line is complete
//! when it ends in `\n`, or when it is the last and holds one complete JSON
//! object (a session that ended without its newline, which the spec's
//! reader counts): no proper prefix of a one-object line is one, so such a
//! line cannot be torn. Its newline, if it comes later, starts the next
//! read as a blank line, so the line counts once either way.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use crate::usage::parse::jsonpick::is_complete_object;

/// Lines longer than this (newline included) are skipped unparsed as they
/// stream, never held whole, and counted ([`Pass::oversized`]; coverage's
/// `lines_oversized`): Codex tool output reaches ~12 MB.
pub const MAX_LINE: usize = 64 << 20;

/// Documents (`agents::Form::Document`) longer than this are not parsed
/// and count as one oversized line: a document is held whole to be parsed.
pub const MAX_DOCUMENT: u64 = 64 << 20;

/// A line buffer's usual size, and what it shrinks back to after a long
/// line.
const LINE_BUFFER: usize = 64 * 1024;

/// Held while a thread buffers a line longer than a sixteenth of the cap
/// (4 MiB): one such line at a time in the process, so the line buffers of
/// a refresh stay under [`MAX_LINE`] plus a sixteenth of it per other
/// parsing thread, however many there are. Long lines are rare (tool
/// output); waiting for one costs little.
static LONG_LINE: Mutex<()> = Mutex::new(());

/// Outcome of one read pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pass {
    /// Bytes of complete lines consumed (the next resume offset is
    /// `start + consumed`).
    pub(crate) consumed: u64,
    /// Lines over [`MAX_LINE`] that were skipped.
    pub oversized: u64,
}

/// Bytes read from a file at a time.
const READ_BUFFER: usize = 256 * 1024;

/// The buffers a line reader works in, kept by a parsing thread from one
/// file to the next: allocating a 256 KiB read buffer per file costs a
/// fresh mapping, its page faults and its unmapping under musl's allocator
/// (the release builds'), thousands of times in a cold scan.
pub struct Buffers {
    read: Vec<u8>,
    line: Vec<u8>,
    /// The zstd decoder, whose window (up to the decoder's limit) and
    /// tables are reset, not reallocated, for the next archive: a decoder
    /// per archive grew its window buffer from empty, copying it at each
    /// step into fresh pages (73,000 page faults a cold scan against
    /// 49,000 this way).
    zstd: ruzstd::decoding::FrameDecoder,
}

impl Buffers {
    pub fn new() -> Buffers {
        Buffers {
            read: vec![0; READ_BUFFER],
            line: Vec::with_capacity(LINE_BUFFER),
            zstd: ruzstd::decoding::FrameDecoder::new(),
        }
    }
}

impl Default for Buffers {
    fn default() -> Buffers {
        Buffers::new()
    }
}

/// Calls `f` with the whole of `file`, a document, when it holds at most
/// `cap` bytes (read into the thread's line buffer, which shrinks back
/// after a long document under the same one-at-a-time rule as a long
/// line); a longer one is left unread and counted as oversized.
pub fn read_document(
    file: File,
    cap: u64,
    buffers: &mut Buffers,
    f: impl FnOnce(&[u8]),
) -> io::Result<Pass> {
    let line = &mut buffers.line;
    line.clear();
    let mut pass = Pass::default();
    let long = (file.metadata()?.len() > (cap / 16).max(LINE_BUFFER as u64))
        .then(|| LONG_LINE.lock().unwrap_or_else(PoisonError::into_inner));
    // One byte past the cap tells a document over it, even one that grew
    // after its length was read.
    let read = file.take(cap.saturating_add(1)).read_to_end(line)?;
    if read as u64 > cap {
        pass.oversized = 1;
    } else {
        pass.consumed = read as u64;
        f(line);
    }
    if line.capacity() > LINE_BUFFER {
        *line = Vec::with_capacity(LINE_BUFFER);
    }
    drop(long);
    Ok(pass)
}

/// Calls `f` with every complete line (without its `\n`) of `reader`.
pub fn for_each_line<R: Read>(
    reader: R,
    buffers: &mut Buffers,
    f: impl FnMut(&[u8]),
) -> io::Result<Pass> {
    lines_capped(reader, MAX_LINE, buffers, f)
}

/// [`for_each_line`] with the line cap `cap` (tests use small ones). A
/// line is handed over where it lies in the read buffer when it is wholly
/// in it; only a line a read cuts is gathered in the line buffer.
fn lines_capped<R: Read>(
    mut reader: R,
    cap: usize,
    buffers: &mut Buffers,
    mut f: impl FnMut(&[u8]),
) -> io::Result<Pass> {
    let Buffers { read, line, .. } = buffers;
    let mut pass = Pass::default();
    // Bytes of the current line so far, and whether it passed the cap.
    let (mut length, mut over) = (0u64, false);
    let mut long = None;
    line.clear();
    loop {
        let n = match reader.read(read) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if length > 0 && !over && is_complete_object(line) {
                pass.consumed += length;
                f(line);
            }
            return Ok(pass);
        }
        let mut data = &read[..n];
        while !data.is_empty() {
            if length == 0 {
                // No line under way: the lines wholly in the buffer are
                // handed over where they lie (no copy).
                let mut start = 0;
                while let Some(newline) = memchr::memchr(b'\n', &data[start..]) {
                    if newline >= cap {
                        pass.oversized += 1;
                    } else {
                        f(&data[start..start + newline]);
                    }
                    start += newline + 1;
                }
                pass.consumed += start as u64;
                data = &data[start..];
                if data.is_empty() {
                    break;
                }
            }
            let newline = memchr::memchr(b'\n', data);
            let chunk = &data[..newline.unwrap_or(data.len())];
            if !over && line.len() + chunk.len() >= cap {
                over = true;
                line.clear();
                line.shrink_to(LINE_BUFFER);
                long = None;
            }
            if !over {
                if long.is_none() && line.len() + chunk.len() > cap / 16 {
                    long = Some(LONG_LINE.lock().unwrap_or_else(PoisonError::into_inner));
                }
                line.extend_from_slice(chunk);
            }
            let used = chunk.len() + usize::from(newline.is_some());
            data = &data[used..];
            length += used as u64;
            if newline.is_some() {
                pass.consumed += length;
                if over {
                    pass.oversized += 1;
                } else {
                    f(line);
                }
                (length, over) = (0, false);
                line.clear();
                if long.take().is_some() {
                    line.shrink_to(LINE_BUFFER);
                }
            }
        }
    }
}

/// Reads a plain file from `offset`.
pub(crate) fn read_plain(
    path: &Path,
    offset: u64,
    buffers: &mut Buffers,
    f: impl FnMut(&[u8]),
) -> io::Result<Pass> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    for_each_line(file, buffers, f)
}

/// Whether a read of the plain file `path` from `offset` would continue a
/// line counted without its newline (see the module's doc): the byte
/// before `offset` is not a newline, and something other than JSON white
/// space follows it before the next newline. Its end (white space and a
/// newline, or nothing yet) is not a continuation.
pub(crate) fn continues_a_counted_line(path: &Path, offset: u64) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let Some(before) = offset.checked_sub(1) else {
        return Ok(false);
    };
    let file = File::open(path)?;
    let mut byte = [0u8; 1];
    if file.read_at(&mut byte, before)? == 0 || byte[0] == b'\n' {
        return Ok(false);
    }
    let mut chunk = [0u8; 512];
    let mut at = offset;
    loop {
        let n = match file.read_at(&mut chunk, at) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(false);
        }
        for &b in &chunk[..n] {
            match b {
                b'\n' => return Ok(false),
                b' ' | b'\t' | b'\r' => {}
                _ => return Ok(true),
            }
        }
        at += n as u64;
    }
}

/// Reads a whole `.zst` file (offsets count decompressed bytes).
pub fn read_zstd(path: &Path, buffers: &mut Buffers, f: impl FnMut(&[u8])) -> io::Result<Pass> {
    zstd_lines(File::open(path)?, buffers, f)
}

/// [`for_each_line`] over the decompressed stream of a `.zst` file's bytes.
pub(crate) fn zstd_lines<R: Read>(
    reader: R,
    buffers: &mut Buffers,
    f: impl FnMut(&[u8]),
) -> io::Result<Pass> {
    // Taken out of `buffers` while the line reader borrows them (a move of
    // its handles, not of its buffers), and put back whatever happens.
    let mut frames = std::mem::take(&mut buffers.zstd);
    let pass = match ruzstd::decoding::StreamingDecoder::new_with_decoder(
        BufReader::new(reader),
        &mut frames,
    ) {
        Ok(decoder) => for_each_line(decoder, buffers, f),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
    };
    buffers.zstd = frames;
    pass
}

/// Trims JSON's white space (space, tab, `\r` before the newline, `\n`):
/// a line with nothing else is blank. Only these four: `JSON.parse` (the
/// spec's reader) refuses a line with a form feed before or after its
/// value, so such a line is malformed, not trimmed.
pub fn trim(line: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = line.iter().position(|b| !space(b));
    match start {
        None => &[],
        Some(s) => {
            let end = line.iter().rposition(|b| !space(b)).unwrap_or(s);
            &line[s..=end]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_read_whole_up_to_its_cap_and_counted_oversized_past_it() {
        let dir = std::env::temp_dir().join(format!("heeler-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("doc.json");
        let text = b"{\"a\":\n 1}\n";
        std::fs::write(&path, text).unwrap();
        let mut buffers = Buffers::new();
        for (cap, seen, pass) in [
            (text.len() as u64, Some(&text[..]), (text.len() as u64, 0)),
            (text.len() as u64 - 1, None, (0, 1)),
        ] {
            let mut got = None;
            let p = read_document(File::open(&path).unwrap(), cap, &mut buffers, |b| {
                got = Some(b.to_vec())
            })
            .unwrap();
            assert_eq!(got.as_deref(), seen);
            assert_eq!((p.consumed, p.oversized), pass);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_complete_lines_are_consumed() {
        let mut seen = Vec::new();
        let pass = for_each_line(&b"a\nbb\r\ntorn"[..], &mut Buffers::new(), |l| {
            seen.push(l.to_vec())
        })
        .unwrap();
        assert_eq!(seen, vec![b"a".to_vec(), b"bb\r".to_vec()]);
        assert_eq!(pass.consumed, 6);
    }

    fn lines_of(text: &[u8]) -> (Vec<String>, u64) {
        let mut seen = Vec::new();
        let pass = for_each_line(text, &mut Buffers::new(), |l| {
            seen.push(String::from_utf8_lossy(l).into_owned())
        })
        .unwrap();
        (seen, pass.consumed)
    }

    #[test]
    fn a_last_line_that_is_a_whole_object_is_complete_without_its_newline() {
        // The object is handed over and consumed: 3 + 12 bytes.
        let (seen, consumed) = lines_of(b"{}\n{\"a\":[1,{}]}");
        assert_eq!(seen, ["{}", "{\"a\":[1,{}]}"]);
        assert_eq!(consumed, 3 + 12);
        // White space around it is JSON's too: 1 + 7 + 3 bytes.
        let (seen, consumed) = lines_of(b" {\"a\":1}\r\t ");
        assert_eq!(seen, [" {\"a\":1}\r\t "]);
        assert_eq!(consumed, 11);
        // Torn: every proper prefix of the object, and what is not one
        // object (a value that is not an object, two objects, a bad one).
        let whole = b"{\"a\":\"}\",\"b\":{\"c\":[2]}}";
        for end in 1..whole.len() {
            let (seen, consumed) = lines_of(&whole[..end]);
            assert!(seen.is_empty(), "{:?}", &whole[..end]);
            assert_eq!(consumed, 0);
        }
        for tail in [&b"[1]"[..], b"{}{}", b"{\"a\":01}", b"\"s\"", b"{} x"] {
            let text = [&b"{}\n"[..], tail].concat();
            assert_eq!(lines_of(&text), (vec!["{}".to_owned()], 3), "{tail:?}");
        }
    }

    #[test]
    fn the_newline_of_a_counted_last_line_reads_as_a_blank_line() {
        // The first read consumes the object (7 bytes); the next, from
        // there, finds its newline and then a line of its own.
        let text = b"{\"a\":1}\n{\"b\":2}\n";
        let (first, consumed) = lines_of(&text[..7]);
        assert_eq!((first, consumed), (vec!["{\"a\":1}".to_owned()], 7));
        let (rest, more) = lines_of(&text[7..]);
        assert_eq!(rest, ["", "{\"b\":2}"]);
        assert_eq!(7 + more, text.len() as u64);
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_as_it_streams() {
        // A 10 MB line with no newline: never buffered, never consumed.
        let mut buffers = Buffers::new();
        let pass = lines_capped(io::repeat(b'x').take(10 << 20), 1024, &mut buffers, |_| {
            panic!("no complete line")
        })
        .unwrap();
        assert_eq!(pass, Pass::default());
        assert!(
            buffers.line.capacity() <= LINE_BUFFER,
            "{}",
            buffers.line.capacity()
        );
        // Then terminated, and followed by lines that fit.
        let long = io::repeat(b'x').take(10 << 20);
        let rest = &b"\n{}\nyy"[..];
        let mut seen = Vec::new();
        let pass = lines_capped(long.chain(rest), 1024, &mut buffers, |l| {
            seen.push(l.to_vec())
        })
        .unwrap();
        assert_eq!(seen, [b"{}".to_vec()]);
        assert_eq!(pass.consumed, (10 << 20) + 4);
        assert_eq!(pass.oversized, 1);
        assert!(
            buffers.line.capacity() <= LINE_BUFFER,
            "{}",
            buffers.line.capacity()
        );
    }

    #[test]
    fn a_long_line_is_buffered_under_the_process_wide_guard_then_released() {
        // With a 4 MiB cap, lines over 256 KiB are long: a 1 MiB line is
        // parsed holding the guard, a short one is not held back by it.
        let text = [
            vec![b'x'; 1 << 20],
            b"
{}
"
            .to_vec(),
        ]
        .concat();
        let mut buffers = Buffers::new();
        let mut seen = Vec::new();
        let pass = lines_capped(&text[..], 4 << 20, &mut buffers, |l| {
            if l.len() == 1 << 20 {
                assert!(LONG_LINE.try_lock().is_err(), "the guard is held");
            }
            seen.push(l.len());
        })
        .unwrap();
        assert_eq!(seen, [1 << 20, 2]);
        assert_eq!(pass.consumed, text.len() as u64);
        // The buffer went back to its usual size after the long line.
        assert!(
            buffers.line.capacity() <= LINE_BUFFER,
            "{}",
            buffers.line.capacity()
        );
        // Past the cap the line is dropped and the buffer shrinks at once.
        let over = [
            vec![b'y'; 5 << 20],
            b"
"
            .to_vec(),
        ]
        .concat();
        let pass =
            lines_capped(&over[..], 4 << 20, &mut buffers, |_| panic!("over the cap")).unwrap();
        assert_eq!(pass.oversized, 1);
        assert!(
            buffers.line.capacity() <= LINE_BUFFER,
            "{}",
            buffers.line.capacity()
        );
    }

    #[test]
    fn the_cap_counts_the_newline() {
        let text = b"aaa\naaaa\nbb\n";
        let mut seen = Vec::new();
        let pass =
            lines_capped(&text[..], 4, &mut Buffers::new(), |l| seen.push(l.to_vec())).unwrap();
        assert_eq!(seen, [b"aaa".to_vec(), b"bb".to_vec()]);
        assert_eq!(pass.oversized, 1);
        assert_eq!(pass.consumed, text.len() as u64);
    }

    /// A reader that hands out at most `step` bytes per read, so lines
    /// straddle every refill of the line reader's buffer.
    struct Trickle<'a> {
        text: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.text.len());
            out[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_are_whole_however_the_reads_cut_them() {
        // Lines of 0 to 3,000 bytes, over a megabyte: some wholly inside a
        // buffer, some cut by its end, some over a small cap.
        let mut text = Vec::new();
        let mut n = 1u64;
        while text.len() < 1 << 20 {
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let len = (n >> 33) as usize % 3000;
            text.extend(std::iter::repeat_n(b'a' + (len % 26) as u8, len));
            text.push(b'\n');
        }
        text.extend_from_slice(b"torn");
        let cap = 2500;
        let expected: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .filter(|l| l.len() < cap)
            .collect();
        let expected = &expected[..expected.len() - 1];
        let oversized = text
            .split(|&b| b == b'\n')
            .filter(|l| l.len() >= cap)
            .count();
        // One set of buffers for every pass, as a parsing thread keeps them.
        let mut buffers = Buffers::new();
        for step in [usize::MAX, 300_000, 4096, 7] {
            let mut seen: Vec<Vec<u8>> = Vec::new();
            let reader = Trickle { text: &text, step };
            let pass = lines_capped(reader, cap, &mut buffers, |l| seen.push(l.to_vec())).unwrap();
            assert!(
                seen.iter().map(Vec::as_slice).eq(expected.iter().copied()),
                "step {step}"
            );
            assert_eq!(pass.consumed, (text.len() - 4) as u64, "step {step}");
            assert_eq!(pass.oversized, oversized as u64, "step {step}");
        }
    }

    #[test]
    fn one_set_of_buffers_decodes_archive_after_archive() {
        // Two archives of different lines and sizes, a damaged one between
        // them, through the same buffers: each gives exactly its own lines,
        // as a fresh decoder does (nothing of the frame before is left).
        let text = |n: usize, tag: &str| {
            (0..n)
                .map(|i| format!("{{\"{tag}\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 300)))
                .collect::<String>()
        };
        let (a, b) = (text(2000, "a"), text(300, "b"));
        let pack = |t: &str| {
            ruzstd::encoding::compress_to_vec(
                t.as_bytes(),
                ruzstd::encoding::CompressionLevel::Fastest,
            )
        };
        let (packed_a, packed_b) = (pack(&a), pack(&b));
        let mut damaged = packed_a.clone();
        let middle = damaged.len() / 2;
        damaged.truncate(middle);
        let mut buffers = Buffers::new();
        let mut lines_of = |packed: &[u8]| {
            let mut seen = Vec::new();
            let pass = zstd_lines(packed, &mut buffers, |l| seen.extend_from_slice(l));
            (pass.map(|p| p.consumed).ok(), seen)
        };
        let flat = |t: &str| t.replace('\n', "").into_bytes();
        for _ in 0..2 {
            assert_eq!(lines_of(&packed_a), (Some(a.len() as u64), flat(&a)));
            assert!(lines_of(&damaged).0.is_none(), "a torn archive fails");
            assert_eq!(lines_of(&packed_b), (Some(b.len() as u64), flat(&b)));
        }
    }

    #[test]
    fn trim_strips_json_white_space_only() {
        assert_eq!(trim(b"  {} \r"), b"{}");
        assert_eq!(trim(b" \t\r\n "), b"");
        // A form feed is white space to ASCII, not to JSON.
        assert_eq!(trim(b"\x0c{}\x0c "), b"\x0c{}\x0c");
    }
}
