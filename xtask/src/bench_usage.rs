//! `cargo xtask bench-usage`: Usage speed on a synthetic corpus.
//!
//! Generates (once, deterministically) Claude Code and Codex transcripts
//! over 30 days — by default 5,000 Claude and 2,000 Codex files, about 1 GB,
//! a fifth of the Codex files zstd-compressed like Codex's cold archives —
//! then times the release `heeler` binary: a cold scan (empty cache), a
//! warm refresh (nothing changed), a one-file-append refresh and a warm
//! query. When `ccusage` is installed (on PATH or `CCUSAGE=/path`) it runs
//! on the same Claude corpus and the ratio is printed. Figures only: no
//! budget is asserted here.
//!
//! Memory: every refresh's peak RSS (`wait4`'s `ru_maxrss`) is printed,
//! also for two inputs that must not be held whole: a 2 GiB file that is
//! one line without a newline (sparse, reported as `lines_oversized`) and a
//! 2 GiB file of tiny lines, each written under `target/` and deleted after.
//! `--memory` runs only the cold and warm refreshes and these two.
//!
//! Views: each view for people (`heeler usage`, `daily`, …, `statusline`)
//! is timed warm, right after a refresh so none starts a worker (median of
//! 21 runs; the issue's budget is 50 ms per view and 5 ms for the
//! statusline). `--views` runs only the cold and warm refreshes and these.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use heeler::base::json::{self, Value};
use heeler::usage::parse::scan::MAX_LINE;
use heeler::usage::time::format_timestamp;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn text(&mut self, len: usize) -> String {
        const WORDS: &[&str] = &[
            "the", "usage", "token", "cache", "file", "error", "build", "test", "function",
            "return", "value", "struct", "impl", "async", "await", "config", "herdr", "pane",
        ];
        let mut s = String::with_capacity(len + 16);
        while s.len() < len {
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
            s.push(' ');
        }
        s
    }
}

fn ts(unix: i64) -> String {
    format_timestamp(unix).replace('Z', ".000Z")
}

fn set_mtime(path: &Path, unix: i64) -> std::io::Result<()> {
    let f = fs::File::options().write(true).open(path)?;
    f.set_modified(UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64))
}

const CLAUDE_MODELS: &[&str] = &["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"];
const CODEX_MODELS: &[&str] = &["gpt-5.5", "gpt-5.3-codex"];

fn claude_record(rng: &mut Rng, at: i64, n: u64, file: usize, cwd: &str, model: &str) -> String {
    let msg = format!("msg_{file:05}_{n:04}");
    let req = format!("req_{file:05}_{n:04}");
    let (input, read, w5, w1, output) = (
        rng.below(50) + 1,
        rng.below(80_000),
        rng.below(2000),
        rng.below(6000),
        rng.below(2000) + 1,
    );
    let mut out = String::new();
    // Two content blocks, each repeating the usage (the first partial).
    for (block, out_tokens) in [(0, output / 3), (1, output)] {
        let text = rng.text(250);
        out.push_str(&format!(
            r#"{{"parentUuid":"p","isSidechain":false,"userType":"external","cwd":"{cwd}","sessionId":"s{file}","version":"2.1.300","gitBranch":"main","type":"assistant","message":{{"id":"{msg}","type":"message","role":"assistant","model":"{model}","content":[{{"type":"text","text":"{text}"}}],"stop_reason":null,"usage":{{"input_tokens":{input},"cache_creation_input_tokens":{},"cache_read_input_tokens":{read},"cache_creation":{{"ephemeral_5m_input_tokens":{w5},"ephemeral_1h_input_tokens":{w1}}},"output_tokens":{out_tokens},"service_tier":"standard"}}}},"requestId":"{req}","uuid":"u{file}-{n}-{block}","timestamp":"{}"}}"#,
            w5 + w1,
            ts(at)
        ));
        out.push('\n');
    }
    let len = 500 + rng.below(600) as usize;
    let tool = rng.text(len);
    out.push_str(&format!(
        r#"{{"parentUuid":"u","isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":"{tool}"}}]}},"cwd":"{cwd}","timestamp":"{}"}}"#,
        ts(at + 5)
    ));
    out.push('\n');
    out
}

fn codex_file(rng: &mut Rng, start: i64, file: usize, cwd: &str) -> (String, i64) {
    let model = CODEX_MODELS[file % CODEX_MODELS.len()];
    let mut out = format!(
        r#"{{"timestamp":"{}","type":"session_meta","payload":{{"id":"thread-{file}","timestamp":"{}","cwd":"{cwd}","originator":"codex_cli_rs","cli_version":"0.160.1","instructions":"{}"}}}}"#,
        ts(start),
        ts(start),
        rng.text(2000)
    );
    out.push('\n');
    out.push_str(&format!(
        r#"{{"timestamp":"{}","type":"turn_context","payload":{{"cwd":"{cwd}","model":"{model}","effort":"medium"}}}}"#,
        ts(start)
    ));
    out.push('\n');
    let turns = 30 + rng.below(30);
    let mut total = [0u64; 4];
    let mut at = start;
    for _ in 0..turns {
        at += 30;
        let last = [
            rng.below(60_000) + 1000,
            0,
            rng.below(3000) + 10,
            rng.below(500),
        ];
        let last = [last[0], last[0] / 2, last[2], last[3].min(last[2])];
        for i in 0..4 {
            total[i] += last[i];
        }
        let len = 1500 + rng.below(1500) as usize;
        out.push_str(&format!(
            r#"{{"timestamp":"{}","type":"response_item","payload":{{"type":"function_call_output","call_id":"c","output":"{}"}}}}"#,
            ts(at),
            rng.text(len)
        ));
        out.push('\n');
        let usage = |u: [u64; 4]| {
            format!(
                r#"{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}}"#,
                u[0],
                u[1],
                u[2],
                u[3],
                u[0] + u[2]
            )
        };
        // Codex re-emits the same totals: write each token_count twice.
        for _ in 0..2 {
            out.push_str(&format!(
                r#"{{"timestamp":"{}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{},"model_context_window":258400}},"rate_limits":{{"limit_id":"codex","primary":{{"used_percent":10.0,"window_minutes":300,"resets_at":{}}},"secondary":null,"credits":null,"plan_type":"plus"}}}}}}"#,
                ts(at + 1),
                usage(total),
                usage(last),
                at + 18_000
            ));
            out.push('\n');
        }
    }
    (out, at)
}

struct Corpus {
    home: PathBuf,
    bytes: u64,
    claude_files: usize,
    codex_files: usize,
    newest_claude: PathBuf,
}

fn generate(
    home: &Path,
    claude_files: usize,
    codex_files: usize,
    now: i64,
) -> Result<Corpus, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let span = 30 * 86_400 - 3600;
    let mut bytes = 0u64;
    let mut newest = (0i64, PathBuf::new());
    for i in 0..claude_files {
        let project = i % 40;
        let cwd = format!("/home/bench/project-{project:02}");
        let dir = home.join(format!(".claude/projects/-home-bench-project-{project:02}"));
        fs::create_dir_all(&dir).map_err(io)?;
        let start = now - span + (i as i64 * span) / claude_files as i64;
        let model = CLAUDE_MODELS[i % CLAUDE_MODELS.len()];
        let records = 25 + rng.below(40);
        let mut text = String::new();
        let mut at = start;
        for n in 0..records {
            at += 20;
            text.push_str(&claude_record(&mut rng, at, n, i, &cwd, model));
        }
        let path = if i % 10 == 0 {
            let sub = dir.join(format!("session-{i:05}/subagents"));
            fs::create_dir_all(&sub).map_err(io)?;
            sub.join(format!("agent-{i:05}.jsonl"))
        } else {
            dir.join(format!("session-{i:05}.jsonl"))
        };
        fs::write(&path, &text).map_err(io)?;
        set_mtime(&path, at).map_err(io)?;
        bytes += text.len() as u64;
        if at > newest.0 {
            newest = (at, path);
        }
    }
    for i in 0..codex_files {
        let start = now - span + (i as i64 * span) / codex_files as i64;
        let cwd = format!("/home/bench/project-{:02}", i % 40);
        let (text, end) = codex_file(&mut rng, start, i, &cwd);
        let date = format_timestamp(start);
        let (y, m, d) = (&date[0..4], &date[5..7], &date[8..10]);
        let dir = home.join(format!(".codex/sessions/{y}/{m}/{d}"));
        fs::create_dir_all(&dir).map_err(io)?;
        let name = format!("rollout-{}-thread-{i}.jsonl", &date[..19].replace(':', "-"));
        let old = now - end > 7 * 86_400;
        let path = if old && i % 5 == 0 {
            let path = dir.join(format!("{name}.zst"));
            let packed = ruzstd::encoding::compress_to_vec(
                text.as_bytes(),
                ruzstd::encoding::CompressionLevel::Fastest,
            );
            fs::write(&path, &packed).map_err(io)?;
            bytes += packed.len() as u64;
            path
        } else {
            fs::write(dir.join(&name), &text).map_err(io)?;
            bytes += text.len() as u64;
            dir.join(&name)
        };
        set_mtime(&path, end).map_err(io)?;
    }
    Ok(Corpus {
        home: home.to_path_buf(),
        bytes,
        claude_files,
        codex_files,
        newest_claude: newest.1,
    })
}

/// Wall time and peak RSS of one run.
struct Run {
    took: Duration,
    rss_kib: i64,
}

/// Runs `command` to its end (stdout discarded) and measures it.
fn measure(mut command: Command) -> Result<Run, String> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let (status, usage) =
        crate::bench_accept::wait_with_rusage(child.id()).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("{command:?} failed ({status}): {stderr}"));
    }
    Ok(Run {
        took,
        rss_kib: crate::bench_accept::max_rss_kib(&usage),
    })
}

fn time(command: Command) -> Result<Duration, String> {
    measure(command).map(|run| run.took)
}

fn heeler(bin: &Path, home: &Path, state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .env_clear()
        .env("HOME", home)
        .env("HERDR_PLUGIN_STATE_DIR", state)
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .env("HEELER_USAGE_BUDGET_MS", "3600000");
    c
}

fn mib(kib: i64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Bytes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// The Claude coverage member `key` of a query's answer.
fn claude_coverage(bin: &Path, home: &Path, state: &Path, key: &str) -> Result<i64, String> {
    let out = heeler(bin, home, state, &["usage", "query", "--refresh", "never"])
        .output()
        .map_err(|e| e.to_string())?;
    let answer =
        json::parse(&String::from_utf8_lossy(&out.stdout)).map_err(|e| format!("{e:?}"))?;
    ["coverage", "claude", key]
        .iter()
        .try_fold(&answer, |v, k| v.get(k))
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("no coverage.claude.{key} in the answer"))
}

/// A 2 GiB Claude transcript that is one line without a newline (a record's
/// start, then a sparse hole: nothing is written but the start).
fn one_line_file(path: &Path) -> std::io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(br#"{"type":"assistant","message":{"usage":{"input_tokens":1}},"text":""#)?;
    f.set_len(2 << 30)
}

/// A 2 GiB Claude transcript of 16-byte lines (134 M of them).
fn tiny_lines_file(path: &Path) -> std::io::Result<()> {
    let block = br#"{"type":"user"}
"#
    .repeat(1 << 16);
    let mut f = std::io::BufWriter::new(fs::File::create(path)?);
    for _ in 0..(2 << 30) / block.len() {
        f.write_all(&block)?;
    }
    f.flush()
}

/// Peak RSS of a cold refresh of a tree holding only the file `write`
/// makes; the tree is deleted after, also when a step fails.
fn memory_case(
    bin: &Path,
    work: &Path,
    name: &str,
    write: fn(&Path) -> std::io::Result<()>,
) -> Result<(), String> {
    let dir = work.join(name);
    let _ = fs::remove_dir_all(&dir);
    let result = (|| {
        let home = dir.join("home");
        let project = home.join(".claude/projects/-home-bench-memory");
        fs::create_dir_all(&project).map_err(|e| e.to_string())?;
        write(&project.join("session.jsonl")).map_err(|e| e.to_string())?;
        let state = dir.join("state");
        let run = measure(heeler(bin, &home, &state, &["usage", "worker"]))?;
        let oversized = claude_coverage(bin, &home, &state, "lines_oversized")?;
        println!(
            "{name:<28} peak RSS {:>10}   {:>6.2} s   lines_oversized {oversized}",
            mib(run.rss_kib),
            run.took.as_secs_f64()
        );
        Ok(())
    })();
    let _ = fs::remove_dir_all(&dir);
    result
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let scale: f64 = crate::flag(args, "--scale")
        .map(|s| s.parse().map_err(|_| "--scale takes a number"))
        .transpose()?
        .unwrap_or(1.0);
    let memory_only = args.iter().any(|a| a == "--memory");
    let views_only = args.iter().any(|a| a == "--views");
    let claude_files = ((5000.0 * scale) as usize).max(1);
    let codex_files = ((2000.0 * scale) as usize).max(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let sh = xshell::Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(&root);
    println!("building the release binary…");
    xshell::cmd!(sh, "cargo build --release --quiet --bin heeler")
        .run()
        .map_err(|e| e.to_string())?;
    let bin = root.join("target/release/heeler");
    let work = root.join(format!("target/bench-usage/{claude_files}-{codex_files}"));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs() as i64;
    let home = work.join("home");
    let _ = fs::remove_dir_all(&work);
    let started = Instant::now();
    let corpus = generate(&home, claude_files, codex_files, now)?;
    println!(
        "corpus: {} Claude + {} Codex files, {:.0} MB on disk, generated in {:.1} s",
        corpus.claude_files,
        corpus.codex_files,
        corpus.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let state = work.join("state");
    // Drop the page cache influence as far as we can without root tricks:
    // the first run reads from disk or cache alike for both tools.
    let cold = measure(heeler(&bin, &corpus.home, &state, &["usage", "worker"]))?;
    println!(
        "cold scan (empty cache):      {:>10.2} s  ({:.0} MB/s)   peak RSS {}",
        cold.took.as_secs_f64(),
        corpus.bytes as f64 / 1e6 / cold.took.as_secs_f64(),
        mib(cold.rss_kib)
    );
    let index_bytes = dir_bytes(&state);
    let warm = measure(heeler(&bin, &corpus.home, &state, &["usage", "worker"]))?;
    println!(
        "warm refresh (no change):     {:>12}   peak RSS {}",
        ms(warm.took),
        mib(warm.rss_kib)
    );
    let mut peak = cold.rss_kib.max(warm.rss_kib);
    if views_only {
        return views(&bin, &corpus.home, &state);
    }
    if !memory_only {
        peak = peak.max(timings(&bin, &corpus, &work, &state, now, warm.took)?);
        views(&bin, &corpus.home, &state)?;
    }
    println!(
        "usage state (index, aggregate, snapshot): {:.1} MiB on disk",
        index_bytes as f64 / f64::from(1 << 20)
    );
    println!("inputs that must not be held whole (each a cold refresh of that file alone):");
    memory_case(&bin, &work, "2 GiB, one line, no newline", one_line_file)?;
    memory_case(&bin, &work, "2 GiB of 16-byte lines", tiny_lines_file)?;
    println!(
        "bound: the line buffers (one line of < {} MiB, MAX_LINE, at a time, and < {} MiB in each \
         other parsing thread, at most 3) plus the index and aggregate state; the corpus refreshes \
         peaked at {}",
        MAX_LINE >> 20,
        MAX_LINE >> 24,
        mib(peak)
    );
    Ok(())
}

/// Each view's warm latency, right after a refresh (so the snapshot is
/// fresh and no view starts a worker).
fn views(bin: &Path, home: &Path, state: &Path) -> Result<(), String> {
    time(heeler(bin, home, state, &["usage", "worker"]))?;
    let list: [&[&str]; 11] = [
        &["usage"],
        &["usage", "daily"],
        &["usage", "daily", "--breakdown"],
        &["usage", "weekly"],
        &["usage", "monthly"],
        &["usage", "session"],
        &["usage", "blocks"],
        &["usage", "models"],
        &["usage", "dirs"],
        &["usage", "daily", "--json"],
        &["usage", "statusline"],
    ];
    for args in list {
        let mut runs: Vec<Duration> = (0..21)
            .map(|_| time(heeler(bin, home, state, args)))
            .collect::<Result<_, _>>()?;
        runs.sort();
        println!(
            "view {:<34} {:>12}   (median of 21; max {})",
            format!("heeler {}:", args.join(" ")),
            ms(runs[10]),
            ms(runs[20])
        );
    }
    Ok(())
}

/// The append, query and ccusage timings; returns the appends' peak RSS.
fn timings(
    bin: &Path,
    corpus: &Corpus,
    work: &Path,
    state: &Path,
    now: i64,
    warm: Duration,
) -> Result<i64, String> {
    // One-file appends: five records to the newest Claude file, then a
    // refresh; repeated so the figure is a median, not one sample.
    let mut appends: Vec<Duration> = Vec::new();
    let mut peak = 0;
    for round in 0..9u64 {
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&corpus.newest_claude)
            .map_err(|e| e.to_string())?;
        let mut rng = Rng(7 + round);
        let mut text = String::new();
        for n in 0..5 {
            text.push_str(&claude_record(
                &mut rng,
                now - 60 + n,
                9000 + round * 10 + n as u64,
                99_999,
                "/home/bench/appended",
                "claude-opus-4-6",
            ));
        }
        file.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
        drop(file);
        let run = measure(heeler(bin, &corpus.home, state, &["usage", "worker"]))?;
        peak = peak.max(run.rss_kib);
        appends.push(run.took);
    }
    let first_append = appends[0];
    appends.sort();
    println!(
        "one-file append refresh:      {:>12}   (median of 9; min {}, max {}, first {})   peak RSS {}",
        ms(appends[4]),
        ms(appends[0]),
        ms(appends[8]),
        ms(first_append),
        mib(peak)
    );
    let mut queries: Vec<Duration> = (0..21)
        .map(|_| {
            time(heeler(
                bin,
                &corpus.home,
                state,
                &["usage", "query", "--refresh", "never"],
            ))
        })
        .collect::<Result<_, _>>()?;
    queries.sort();
    println!(
        "warm query (median of 21):    {:>12}   (max {})",
        ms(queries[10]),
        ms(queries[20])
    );
    // A zone the worker did not render ahead: the slots are read from the
    // aggregate state (the first query only; it asks for the zone to be
    // rendered ahead by the next refresh, which this benchmark never runs).
    let mut other: Vec<Duration> = (0..21)
        .map(|i| {
            let zone = ["Asia/Kathmandu", "America/St_Johns", "Australia/Eucla"][i % 3];
            time(heeler(
                bin,
                &corpus.home,
                state,
                &["usage", "query", "--refresh", "never", "--tz", zone],
            ))
        })
        .collect::<Result<_, _>>()?;
    other.sort();
    println!(
        "query, zone not rendered ahead: {:>10}   (median of 21; max {})",
        ms(other[10]),
        ms(other[20])
    );
    let ccusage = std::env::var("CCUSAGE")
        .ok()
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var("PATH").ok().and_then(|p| {
                p.split(':')
                    .map(|d| Path::new(d).join("ccusage"))
                    .find(|c| c.is_file())
            })
        });
    match ccusage {
        None => {
            println!("ccusage: SKIPPED (not installed; npm install ccusage, then CCUSAGE=path)")
        }
        Some(cc) => {
            let mut c = Command::new(&cc);
            c.args([
                "claude",
                "daily",
                "--json",
                "--offline",
                "--timezone",
                "UTC",
            ])
            .env("HOME", &corpus.home)
            .env("CLAUDE_CONFIG_DIR", corpus.home.join(".claude"));
            let theirs = time(c)?;
            // Our cold scan of the same Claude-only tree, for a like-for-like ratio.
            let claude_only = work.join("claude-only");
            fs::create_dir_all(&claude_only).map_err(|e| e.to_string())?;
            let link = claude_only.join(".claude");
            let _ = fs::remove_file(&link);
            std::os::unix::fs::symlink(corpus.home.join(".claude"), &link)
                .map_err(|e| e.to_string())?;
            let ours = time(heeler(
                bin,
                &claude_only,
                &work.join("state-claude"),
                &["usage", "worker"],
            ))?;
            println!(
                "ccusage claude daily --json:  {:>10.2} s   heeler cold (Claude only) {:.2} s   ratio {:.2}x",
                theirs.as_secs_f64(),
                ours.as_secs_f64(),
                theirs.as_secs_f64() / ours.as_secs_f64()
            );
            println!(
                "ccusage warm (no cache) vs heeler warm refresh: ratio {:.0}x",
                theirs.as_secs_f64() / warm.as_secs_f64()
            );
        }
    }
    Ok(peak)
}
