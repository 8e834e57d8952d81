//! The least CPU an exact cold scan can take: `cargo xtask scan-floor`.
//!
//! `cat` is the floor, but it does less than any exact reader must:
//! it neither decodes the `.zst` archives nor looks at a line. This floor
//! does, cumulatively, only the stages every exact scan of the corpus has to
//! pay, each as a full pass over the page-cached files on every core:
//!
//! 1. every file read by heeler's own line reader (`usage::parse::scan`:
//!    256 KiB `read`s, lines split at `\n`), the archives as stored;
//! 2. the archives decoded instead, by heeler's own zstd reader (ruzstd,
//!    one decoder kept per thread in its `Buffers`);
//! 3. the lines an exact reader must parse picked out: Claude's by heeler's
//!    own prefilter (`claude::may_hold_usage`), Codex's by substring, those
//!    that hold one of the line types it reads or a `\u` escape;
//! 4. each picked line validated as JSON by serde_json (`IgnoredAny`), an
//!    independent validator: the spec's reader (`JSON.parse`) refuses a
//!    malformed line, so an exact reader checks every line it counts.
//!
//! No stage extracts a member, dedupes, prices, aggregates or writes the
//! cache, so a real cold scan costs more than stage 4 whatever its design,
//! unless it validates JSON faster than serde_json.
//!
//! `bench-usage` runs each pass as a process of the release build of this
//! crate (`scan-floor STAGE THREADS HOME`, which walks the transcript trees
//! under HOME like heeler and prints what it saw), measured by `wait4` like
//! `cat` and heeler: its code and serde_json are built at opt-level 3 for
//! that (`Cargo.toml`), so the floor is not raised by the size setting of
//! heeler's profile, nor by `cargo xtask`'s unoptimised build.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use heeler::usage::parse::{claude, scan};
use memchr::memmem::Finder;

/// One cumulative stage of the floor.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Read,
    Decode,
    Pick,
    Validate,
}

impl Stage {
    pub const ALL: [Stage; 4] = [Stage::Read, Stage::Decode, Stage::Pick, Stage::Validate];

    /// The stage's name on `scan-floor`'s command line.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Decode => "decode",
            Stage::Pick => "pick",
            Stage::Validate => "validate",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Stage::Read => "read every file (256 KiB reads, lines split)",
            Stage::Decode => "+ the .zst archives decoded (ruzstd)",
            Stage::Pick => "+ the lines an exact reader parses picked out",
            Stage::Validate => "+ those lines validated (serde_json)",
        }
    }
}

/// What one pass saw.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Pass {
    pub lines: u64,
    pub picked: u64,
    pub invalid: u64,
}

/// One pass of `stage` over `files` on `threads` threads, largest files
/// first, each thread taking the next file when it is done.
pub fn pass(files: &[PathBuf], stage: Stage, threads: usize) -> Result<Pass, String> {
    let mut order: Vec<(u64, &Path)> = files
        .iter()
        .map(|p| (p.metadata().map(|m| m.len()).unwrap_or(0), p.as_path()))
        .collect();
    order.sort_by_key(|&(size, _)| std::cmp::Reverse(size));
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut worker = Worker::new(stage);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(_, path)) = order.get(i) else {
                            return Ok::<Pass, String>(worker.counts);
                        };
                        worker
                            .file(path)
                            .map_err(|e| format!("{}: {e}", path.display()))?;
                    }
                })
            })
            .collect();
        let mut total = Pass::default();
        for w in workers {
            let c: Pass = w
                .join()
                .map_err(|_| "a floor thread panicked".to_string())??;
            total.lines += c.lines;
            total.picked += c.picked;
            total.invalid += c.invalid;
        }
        Ok::<Pass, String>(total)
    })
}

/// `cargo xtask scan-floor STAGE THREADS HOME`: one pass over the
/// transcripts under HOME (`.claude/projects`, `.codex/sessions`), whose
/// counts it prints as `lines picked invalid`.
pub fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: scan-floor read|decode|pick|validate THREADS HOME";
    let [stage, threads, home] = args else {
        return Err(usage.to_string());
    };
    let stage = Stage::ALL
        .into_iter()
        .find(|s| s.name() == stage)
        .ok_or(usage)?;
    let threads: usize = threads.parse().map_err(|_| usage)?;
    let home = Path::new(home);
    let mut files = Vec::new();
    for tree in [".claude/projects", ".codex/sessions"] {
        files_under(&home.join(tree), &mut files);
    }
    let seen = pass(&files, stage, threads)?;
    println!("{} {} {}", seen.lines, seen.picked, seen.invalid);
    Ok(())
}

/// Reads `scan-floor`'s line back.
pub fn parse_counts(line: &str) -> Option<Pass> {
    let mut n = line.split_whitespace().map(|w| w.parse::<u64>().ok());
    let pass = Pass {
        lines: n.next()??,
        picked: n.next()??,
        invalid: n.next()??,
    };
    n.next().is_none().then_some(pass)
}

/// Every regular file under `dir`, in walk order, without following
/// links (`bench-usage` lists its corpus with it too).
pub fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&e.path(), out),
            Ok(t) if t.is_file() => out.push(e.path()),
            _ => {}
        }
    }
}

/// The Codex line types an exact reader parses, and the escape that could
/// spell any of them, as substrings (Claude's lines are picked by heeler's
/// own prefilter).
struct CodexPicks([Finder<'static>; 5]);

impl CodexPicks {
    fn new() -> CodexPicks {
        CodexPicks([
            Finder::new(b"\"token_count\""),
            Finder::new(b"\"session_meta\""),
            Finder::new(b"\"turn_context\""),
            Finder::new(b"\"token_usage_record\""),
            Finder::new(b"\\u"),
        ])
    }

    fn wanted(&self, codex: bool, line: &[u8]) -> bool {
        if codex {
            self.0.iter().any(|f| f.find(line).is_some())
        } else {
            claude::may_hold_usage(line)
        }
    }
}

/// A thread's buffers, kept from file to file as heeler keeps its own.
struct Worker {
    stage: Stage,
    buffers: scan::Buffers,
    picks: CodexPicks,
    counts: Pass,
}

impl Worker {
    fn new(stage: Stage) -> Worker {
        Worker {
            stage,
            buffers: scan::Buffers::new(),
            picks: CodexPicks::new(),
            counts: Pass::default(),
        }
    }

    fn file(&mut self, path: &Path) -> io::Result<()> {
        let codex = path.components().any(|c| c.as_os_str() == ".codex");
        let archive = path.extension().is_some_and(|e| e == "zst");
        let Worker {
            stage,
            buffers,
            picks,
            counts,
        } = self;
        let look = |line: &[u8]| look(*stage, picks, counts, codex, line);
        if archive && *stage >= Stage::Decode {
            scan::read_zstd(path, buffers, look)?;
        } else {
            scan::for_each_line(File::open(path)?, buffers, look)?;
        }
        Ok(())
    }
}

/// What `stage` does with one complete line.
fn look(stage: Stage, picks: &CodexPicks, counts: &mut Pass, codex: bool, line: &[u8]) {
    counts.lines += 1;
    if stage < Stage::Pick || !picks.wanted(codex, line) {
        return;
    }
    counts.picked += 1;
    if stage >= Stage::Validate && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err() {
        counts.invalid += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stage_sees_every_line_and_validates_only_the_picked_ones() {
        let dir = std::env::temp_dir().join(format!("heeler-scan-floor-{}", std::process::id()));
        let claude = dir.join(".claude/projects/p");
        let codex = dir.join(".codex/sessions");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::create_dir_all(&codex).unwrap();
        // A picked valid line, a picked broken one, and one not picked; the
        // last line is longer than a read, so it is carried across reads.
        let long = format!("{{\"type\":\"user\",\"text\":\"{}\"}}", "x".repeat(600_000));
        let claude_text = format!(
            "{{\"type\":\"assistant\",\"usage\":{{}}}}\n{{\"type\":\"assistant\",\"usage\":}}\n{long}\n"
        );
        std::fs::write(claude.join("a.jsonl"), &claude_text).unwrap();
        let codex_text = "{\"type\":\"turn_context\"}\n{\"type\":\"response_item\"}\n".repeat(3);
        let packed = ruzstd::encoding::compress_to_vec(
            codex_text.as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        std::fs::write(codex.join("r.jsonl.zst"), packed).unwrap();
        let files = vec![claude.join("a.jsonl"), codex.join("r.jsonl.zst")];
        let read = pass(&files, Stage::Read, 2).unwrap();
        let decoded = pass(&files, Stage::Decode, 2).unwrap();
        let picked = pass(&files, Stage::Pick, 2).unwrap();
        let validated = pass(&files, Stage::Validate, 2).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(parse_counts("9 5 1"), Some(validated));
        assert_eq!(parse_counts("9 5"), None);
        // Decoded, the archive has its six lines; the Claude file has three.
        assert_eq!(decoded.lines, 3 + 6);
        assert!(
            read.lines >= 3,
            "the raw archive adds its own bytes' newlines"
        );
        assert_eq!((picked.picked, picked.invalid), (2 + 3, 0));
        assert_eq!((validated.picked, validated.invalid), (2 + 3, 1));
    }
}
