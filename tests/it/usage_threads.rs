//! A refresh parsed on one thread and on several gives the same snapshot
//! and the same index, byte for byte: cold, and after appends that an
//! incremental refresh applies. Files of very different sizes, duplicates
//! across files, forks and a zstd archive make the threads finish in
//! different orders.

use crate::usage_fixture;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use heeler::usage::aggregate::incremental::State;
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::worker::{self, Roots};
use usage_fixture::*;

fn claude_file(home: &Path, n: usize) -> PathBuf {
    home.join(format!(
        ".claude/projects/-home-dev-p{}/s{n:03}.jsonl",
        n % 4
    ))
}

fn codex_file(home: &Path, n: usize) -> PathBuf {
    home.join(format!(
        ".codex/sessions/2026/11/29/rollout-2026-11-29T08-00-{n:02}-x{n}.jsonl"
    ))
}

fn claude_records(n: usize, records: std::ops::Range<usize>, at: i64) -> String {
    let mut out = String::new();
    for r in records {
        // Every seventh message of every fifth file is shared by a few
        // files (a duplicate the aggregate must count once, whichever file
        // a thread read first).
        let id = if n.is_multiple_of(5) && r.is_multiple_of(7) {
            format!("shared{}", r % 5)
        } else {
            format!("m{n}-{r}")
        };
        let line = Claude {
            at: at + r as i64,
            msg: &id,
            req: &id,
            model: ["claude-opus-4-6", "claude-sonnet-4-5"][(n + r) % 2],
            cwd: ["/home/dev/alpha", "/home/dev/beta"][n % 2],
            sidechain: r.is_multiple_of(11),
            input: (n * 31 + r) as u64 % 97,
            output: 1 + (n * 17 + r) as u64 % 500,
            read: (r as u64 % 3) * 1000,
            split: r.is_multiple_of(3).then_some((r as u64, n as u64)),
            write: 40,
            speed: None,
        }
        .line();
        out.push_str(&line);
        out.push('\n');
        out.push_str(&user_line(at + r as i64));
        out.push('\n');
    }
    out
}

fn codex_text(n: usize, turns: usize, at: i64) -> String {
    let fork = if n % 3 == 1 {
        r#","forked_from_id":"x0""#
    } else {
        ""
    };
    let mut list = vec![
        session_meta(at, &format!("x{n}"), fork),
        turn_context(at + 1, "gpt-5.5", "/home/dev/gamma"),
    ];
    let mut total = [0u64; 4];
    for t in 0..turns {
        let last = [100 + (t * n) as u64 % 900, t as u64 % 100, 10 + n as u64, 0];
        for i in 0..4 {
            total[i] += last[i];
        }
        list.push(token_count(at + 10 + t as i64 * 60, total, last, ""));
    }
    lines(&list)
}

fn append(path: &Path, text: &str) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

#[test]
fn one_thread_and_several_write_the_same_snapshot() {
    // Removed when the test ends, also on a panic.
    let tree = temp_dir("usage-threads");
    let home = tree.join("home");
    write_tree(&home);
    // Sizes from one record to hundreds, so some threads draw one big file
    // and others many small ones.
    for n in 0..40 {
        let count = [1, 3, 300, 20, 2, 150, 7][n % 7];
        write(
            &claude_file(&home, n),
            &claude_records(n, 0..count, NOW - 3 * HOUR),
        );
    }
    for n in 0..9 {
        write(
            &codex_file(&home, n),
            &codex_text(n, 2 + n * 9, NOW - 5 * HOUR),
        );
    }
    let archive = home.join(".codex/sessions/2026/11/28/rollout-2026-11-28T08-00-00-z9.jsonl.zst");
    fs::create_dir_all(archive.parent().unwrap()).unwrap();
    fs::write(&archive, zstd(&codex_text(9, 40, NOW - 20 * HOUR))).unwrap();

    let roots = Roots::resolve(&home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let counts = [1usize, 2, 3, 8];
    let mut runs: Vec<(Index, Option<State>)> = Vec::new();
    let mut cold = Vec::new();
    for &threads in &counts {
        let (mut index, mut state) = (Index::default(), None);
        let options = worker::ScanOptions {
            threads,
            ..worker::ScanOptions::new(&prices, NOW)
        };
        let result = worker::scan_with_state(
            &mut index,
            &mut state,
            &roots,
            worker::discover(&roots),
            &options,
        );
        assert!(result.stats.reparsed > 50, "{:?}", result.stats);
        cold.push((
            result.snapshot.to_json(),
            index.to_bytes(),
            result.changed_keys,
        ));
        runs.push((index, state));
    }
    for (i, run) in cold.iter().enumerate().skip(1) {
        assert!(run.0 == cold[0].0, "cold snapshot, {} threads", counts[i]);
        assert!(run.1 == cold[0].1, "cold index, {} threads", counts[i]);
        assert_eq!(run.2, cold[0].2, "cold changes, {} threads", counts[i]);
    }

    // Appends to many files (none with a shared message: the aggregate is
    // then updated, not rebuilt), then an incremental refresh of each run.
    for n in (1..40).step_by(3).filter(|n: &usize| !n.is_multiple_of(5)) {
        append(
            &claude_file(&home, n),
            &claude_records(n + 100, 1..5, NOW - HOUR),
        );
    }
    // Each rollout's response is its own (one response in three files
    // would be a shared key). Unterminated, as these were written: a last
    // line that is a whole object counts without its newline.
    for n in [2u64, 5, 8] {
        let more = [500 + n, 20, 60, 0];
        append(
            &codex_file(&home, n as usize),
            &token_count(NOW - 60, [9000 + n, 0, 900, 0], more, ""),
        );
    }
    let mut warm = Vec::new();
    for (&threads, (index, state)) in counts.iter().zip(runs.iter_mut()) {
        let options = worker::ScanOptions {
            threads,
            ..worker::ScanOptions::new(&prices, NOW + 60)
        };
        let result =
            worker::scan_with_state(index, state, &roots, worker::discover(&roots), &options);
        assert!(result.incremental, "{threads} threads: incremental");
        assert!(result.stats.appended > 10, "{:?}", result.stats);
        let detailed = state.as_ref().map(|s| s.fingerprint);
        warm.push((
            result.snapshot.to_json(),
            index.to_bytes(),
            result.changed_keys,
            detailed,
        ));
    }
    for (i, run) in warm.iter().enumerate().skip(1) {
        assert!(
            run.0 == warm[0].0,
            "snapshot after appends, {} threads",
            counts[i]
        );
        assert!(
            run.1 == warm[0].1,
            "index after appends, {} threads",
            counts[i]
        );
        assert_eq!(
            run.2, warm[0].2,
            "changes after appends, {} threads",
            counts[i]
        );
        assert_eq!(
            run.3, warm[0].3,
            "aggregate after appends, {} threads",
            counts[i]
        );
    }
    assert!(warm[0].0 != cold[0].0, "the appends changed the snapshot");
}
