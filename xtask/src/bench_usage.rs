//! `cargo xtask bench-usage`: Usage speed on a synthetic corpus.
//!
//! Generates (once, deterministically) Claude Code and Codex transcripts
//! over 30 days — by default 5,000 Claude and 2,000 Codex files, about 1 GB,
//! a fifth of the Codex files zstd-compressed like Codex's cold archives —
//! then times the release `heeler` binary: a cold scan (empty cache), a
//! warm refresh (nothing changed), a one-file-append refresh and a warm
//! query. The cold scan runs `--rounds` times (5), each beside the `cat`
//! floor of the same files (`--bin <heeler>` times another build than
//! this checkout's release binary: the static one users run, say; and
//! `--baseline <heeler>`, an older build, or
//! `--baseline-rev <commit>`, that commit's release build, made once under
//! `target/bench-baseline/`, when given), and the medians are printed as
//! ratios of wall and CPU time; the
//! one-file append beside its floor, the walk that stats every file.
//! Each round also runs the exact-scan floor (`scan_floor.rs`: the least
//! work any exact cold scan does, stage by stage), printed against `cat`,
//! the budget and the cold scan; `--floor` runs only `cat` and that floor. When
//! `ccusage` is installed (on PATH, `CCUSAGE=/path` or under
//! `target/ccusage`) it runs on the same Claude corpus interleaved with
//! heeler's cold scan of that tree, then (`ccusage daily`) on Claude and
//! Codex beside heeler's cold scan of both (at least 5 pairs each,
//! medians). Figures only: no budget is asserted here.
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
//!
//! History: `--history-days N` (N > 30) adds files older than 30 days, as
//! dense per day as the default corpus's, so the corpus spans N days; the
//! default corpus is the same either way. Then, for each retention of 30,
//! 60, 90 (and 365 when N reaches it) days (`usage.toml`), the cache's
//! size on disk and its cold, warm and one-file-append refreshes are
//! printed, with the cost of each extra 30 days, and the views are timed
//! at the default retention (90 days).

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use heeler::base::json::{self, Value};
use heeler::usage::parse::scan::MAX_LINE;
use heeler::usage::time::format_timestamp;

use crate::scan_floor;

pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub(crate) fn text(&mut self, len: usize) -> String {
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

pub(crate) fn ts(unix: i64) -> String {
    format_timestamp(unix).replace('Z', ".000Z")
}

pub(crate) fn set_mtime(path: &Path, unix: i64) -> std::io::Result<()> {
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

pub(crate) struct Corpus {
    home: PathBuf,
    pub(crate) bytes: u64,
    claude_files: usize,
    codex_files: usize,
    newest_claude: PathBuf,
}

pub(crate) fn generate(
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

/// Wall time, CPU time (user + system) and peak RSS of one run.
#[derive(Clone, Copy, Default)]
pub(crate) struct Run {
    pub(crate) took: Duration,
    pub(crate) cpu: Duration,
    pub(crate) rss_kib: i64,
}

fn cpu_of(usage: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs `command` to its end (stdout discarded) and measures it.
pub(crate) fn measure(mut command: Command) -> Result<Run, String> {
    command.stdout(Stdio::null());
    measure_output(command).map(|(run, _)| run)
}

/// Runs `command` to its end and measures it, returning what it printed
/// (nothing when its stdout was set elsewhere); its stderr is part of the
/// error when it fails.
fn measure_output(mut command: Command) -> Result<(Run, String), String> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // stderr is drained beside stdout, so neither pipe fills and blocks.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    });
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut stdout);
    }
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let (status, usage) =
        crate::bench_accept::wait_with_rusage(child.id()).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("{command:?} failed ({status}): {stderr}"));
    }
    let run = Run {
        took,
        cpu: cpu_of(&usage),
        rss_kib: crate::bench_accept::max_rss_kib(&usage),
    };
    Ok((run, stdout))
}

/// The median wall and CPU times of `runs`, and their peak RSS.
pub(crate) fn median(runs: &[Run]) -> Run {
    let pick = |f: fn(&Run) -> Duration| {
        let mut v: Vec<Duration> = runs.iter().map(f).collect();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    Run {
        took: pick(|r| r.took),
        cpu: pick(|r| r.cpu),
        rss_kib: runs.iter().map(|r| r.rss_kib).max().unwrap_or(0),
    }
}

/// The floor of a cold scan: `cat` of every file to /dev/null (in batches
/// of 500 arguments; the times summed).
fn cat_floor(files: &[PathBuf]) -> Result<Run, String> {
    let mut total = Run::default();
    for batch in files.chunks(500) {
        let mut c = Command::new("cat");
        c.args(batch);
        let run = measure(c)?;
        total.took += run.took;
        total.cpu += run.cpu;
        total.rss_kib = total.rss_kib.max(run.rss_kib);
    }
    Ok(total)
}

/// The floor of a refresh: the walk of the transcript trees with a `stat`
/// of every file (`find -printf` of size and mtime).
fn walk_floor(home: &Path) -> Result<Run, String> {
    let mut c = Command::new("find");
    c.arg(home.join(".claude/projects"))
        .arg(home.join(".codex/sessions"))
        .args(["-type", "f", "-printf", "%s %T@\\n"]);
    measure(c)
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

pub(crate) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

pub(crate) fn time(command: Command) -> Result<Duration, String> {
    measure(command).map(|run| run.took)
}

pub(crate) fn heeler(bin: &Path, home: &Path, state: &Path, args: &[&str]) -> Command {
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

pub(crate) fn mib(kib: i64) -> String {
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

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// What `cargo xtask bench-usage` was asked for.
struct Options<'a> {
    scale: f64,
    memory_only: bool,
    views_only: bool,
    floor_only: bool,
    /// Only the other agents' cold scans and warm views
    /// (`bench_agents`).
    agents: bool,
    /// How many days the corpus spans (30 to 400); over 30, only the
    /// retention table runs.
    history_days: i64,
    rounds: usize,
    /// Another heeler binary (an older build) timed side by side.
    baseline: Option<PathBuf>,
    /// A commit whose release build is the baseline.
    baseline_rev: Option<&'a str>,
    /// Another build to time (the static release binary, say: what users
    /// run), else this checkout's release build.
    bin: Option<&'a str>,
}

fn options(args: &[String]) -> Result<Options<'_>, String> {
    let scale: f64 = crate::flag(args, "--scale")
        .map(|s| s.parse().map_err(|_| "--scale takes a number"))
        .transpose()?
        .unwrap_or(1.0);
    let history_days: i64 = crate::flag(args, "--history-days")
        .map(|s| {
            s.parse()
                .map_err(|_| "--history-days takes a number of days")
        })
        .transpose()?
        .unwrap_or(30)
        .clamp(30, 400);
    let rounds: usize = crate::flag(args, "--rounds")
        .map(|s| s.parse().map_err(|_| "--rounds takes a count"))
        .transpose()?
        .unwrap_or(5)
        .max(1);
    Ok(Options {
        scale,
        memory_only: args.iter().any(|a| a == "--memory"),
        views_only: args.iter().any(|a| a == "--views"),
        floor_only: args.iter().any(|a| a == "--floor"),
        agents: args.iter().any(|a| a == "--agents"),
        history_days,
        rounds,
        baseline: crate::flag(args, "--baseline").map(PathBuf::from),
        baseline_rev: crate::flag(args, "--baseline-rev"),
        bin: crate::flag(args, "--bin"),
    })
}

/// The binary to time: `--bin`'s, else this checkout's release build,
/// built now.
fn binary_to_time(sh: &xshell::Shell, root: &Path, bin: Option<&str>) -> Result<PathBuf, String> {
    match bin {
        Some(path) => fs::canonicalize(path).map_err(|e| format!("--bin {path}: {e}")),
        None => {
            println!("building the release binary…");
            xshell::cmd!(sh, "cargo build --release --quiet --bin heeler")
                .run()
                .map_err(|e| e.to_string())?;
            Ok(root.join("target/release/heeler"))
        }
    }
}

/// The directory of a corpus of this size and span, with its states.
fn work_dir(root: &Path, claude_files: usize, codex_files: usize, history_days: i64) -> PathBuf {
    match history_days {
        30 => root.join(format!("target/bench-usage/{claude_files}-{codex_files}")),
        days => root.join(format!(
            "target/bench-usage/{claude_files}-{codex_files}-{days}d"
        )),
    }
}

/// The time now, in Unix seconds.
pub(crate) fn unix_now() -> Result<i64, String> {
    Ok(SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs() as i64)
}

/// A fresh corpus under `home` spanning `history_days`, announced with
/// its size and how long it took to write.
fn fresh_corpus(
    home: &Path,
    claude_files: usize,
    codex_files: usize,
    now: i64,
    history_days: i64,
) -> Result<Corpus, String> {
    let started = Instant::now();
    let mut corpus = generate(home, claude_files, codex_files, now)?;
    if history_days > 30 {
        corpus.bytes += generate_older(home, claude_files, codex_files, now, history_days)?;
    }
    println!(
        "corpus: {} Claude + {} Codex files, {:.0} MB on disk, generated in {:.1} s",
        corpus.claude_files,
        corpus.codex_files,
        corpus.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(corpus)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let opts = options(args)?;
    let mut baseline = opts.baseline.clone();
    let claude_files = ((5000.0 * opts.scale) as usize).max(1);
    let codex_files = ((2000.0 * opts.scale) as usize).max(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let sh = xshell::Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(&root);
    let bin = binary_to_time(&sh, &root, opts.bin)?;
    println!("timing {}", bin.display());
    if opts.agents {
        return agents(args, &opts, &root, &bin);
    }
    let scan = ScanFloor::build(&sh, &root)?;
    if let Some(rev) = opts.baseline_rev {
        baseline = Some(build_rev(&sh, &root, rev)?);
    }
    let work = work_dir(&root, claude_files, codex_files, opts.history_days);
    let now = unix_now()?;
    let home = work.join("home");
    let _ = fs::remove_dir_all(&work);
    let corpus = fresh_corpus(&home, claude_files, codex_files, now, opts.history_days)?;
    if opts.floor_only {
        return floors_only(&scan, &corpus, opts.rounds);
    }
    let state = work.join("state");
    if opts.history_days > 30 {
        return history(&bin, &corpus, &state, now, opts.history_days);
    }
    let cold = cold_scans(
        &bin,
        baseline.as_deref(),
        &scan,
        &corpus,
        &work,
        &state,
        opts.rounds,
    )?;
    let index_bytes = dir_bytes(&state);
    let warm = measure(heeler(&bin, &corpus.home, &state, &["usage", "worker"]))?;
    println!(
        "warm refresh (no change):     {:>12}   peak RSS {}",
        ms(warm.took),
        mib(warm.rss_kib)
    );
    let mut peak = cold.rss_kib.max(warm.rss_kib);
    // Whether the incremental cache answered as a cold rebuild does; a
    // build that does not (an older baseline, say) is still timed, and the
    // run fails at the end.
    let mut exact = true;
    if opts.views_only {
        views(&bin, &corpus.home, &state, peer(baseline.as_deref(), &work))?;
        return live_screen(&bin, &corpus.home, &state);
    }
    if !opts.memory_only {
        peak = peak.max(timings(&Timings {
            bin: &bin,
            baseline: peer(baseline.as_deref(), &work),
            corpus: &corpus,
            work: &work,
            state: &state,
            now,
            warm: warm.took,
            rounds: opts.rounds,
        })?);
        exact = incremental_equals_rebuild(&bin, &corpus.home, &work, &state, now)?;
        views(&bin, &corpus.home, &state, peer(baseline.as_deref(), &work))?;
        live_screen(&bin, &corpus.home, &state)?;
    }
    println!(
        "usage state (index, aggregate, snapshot): {:.1} MiB on disk",
        index_bytes as f64 / f64::from(1 << 20)
    );
    memory_cases(&bin, &work, peak)?;
    if !exact {
        return Err("the incremental cache differed from a cold rebuild (see above)".into());
    }
    Ok(())
}

/// `--agents`: every agent's cold scan and the warm views against Claude
/// Code + Codex's, at a fifth of the corpus unless `--scale` says.
fn agents(args: &[String], opts: &Options, root: &Path, bin: &Path) -> Result<(), String> {
    let work = root.join("target/bench-usage/agents");
    let scale = if args.iter().any(|a| a == "--scale") {
        opts.scale
    } else {
        0.2
    };
    crate::bench_agents::run(bin, &work, scale, opts.rounds)
}

/// The inputs that must not be held whole, each a cold refresh of that
/// file alone, and the memory bound the corpus refreshes (peak RSS
/// `peak`) are held to.
fn memory_cases(bin: &Path, work: &Path, peak: i64) -> Result<(), String> {
    println!("inputs that must not be held whole (each a cold refresh of that file alone):");
    memory_case(bin, work, "2 GiB, one line, no newline", one_line_file)?;
    memory_case(bin, work, "2 GiB of 16-byte lines", tiny_lines_file)?;
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

/// The release binary of commit `rev` (a build the issue's budgets are
/// relative to, say): its tree exported with `git archive` (no worktree
/// left registered) and built under `target/bench-baseline/<commit>/`,
/// kept for the next run.
fn build_rev(sh: &xshell::Shell, root: &Path, rev: &str) -> Result<PathBuf, String> {
    let spec = format!("{rev}^{{commit}}");
    let commit = xshell::cmd!(sh, "git rev-parse --verify {spec}")
        .read()
        .map_err(|e| format!("--baseline-rev {rev}: {e}"))?;
    let dir = root.join("target/bench-baseline").join(commit.trim());
    let bin = dir.join("target/release/heeler");
    if bin.is_file() {
        return Ok(bin);
    }
    let tree = dir.join("tree");
    let _ = fs::remove_dir_all(&tree);
    fs::create_dir_all(&tree).map_err(|e| e.to_string())?;
    let archive = xshell::cmd!(sh, "git archive --format=tar {commit}")
        .output()
        .map_err(|e| e.to_string())?
        .stdout;
    xshell::cmd!(sh, "tar -xf - -C {tree}")
        .stdin(archive)
        .run()
        .map_err(|e| e.to_string())?;
    println!("building the baseline {rev} ({})…", commit.trim());
    let target = dir.join("target");
    xshell::cmd!(
        sh,
        "cargo build --release --quiet --bin heeler --manifest-path {tree}/Cargo.toml --target-dir {target}"
    )
    .run()
    .map_err(|e| e.to_string())?;
    Ok(bin)
}

/// Files from 30 to `days` days old, as many per day as [`generate`]
/// writes for the last 30 days (distinct names, their own seed); returns
/// their bytes on disk.
fn generate_older(
    home: &Path,
    claude_files: usize,
    codex_files: usize,
    now: i64,
    days: i64,
) -> Result<u64, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let month = 30 * 86_400;
    let span = (days - 30) * 86_400;
    let scaled = |n: usize| (n as i64 * (days - 30) / 30) as usize;
    let (claude_files, codex_files) = (scaled(claude_files), scaled(codex_files));
    let mut bytes = 0u64;
    for i in 0..claude_files {
        let project = i % 40;
        let cwd = format!("/home/bench/project-{project:02}");
        let dir = home.join(format!(".claude/projects/-home-bench-project-{project:02}"));
        fs::create_dir_all(&dir).map_err(io)?;
        let start = now - month - span + (i as i64 * span) / claude_files.max(1) as i64;
        let model = CLAUDE_MODELS[i % CLAUDE_MODELS.len()];
        let mut text = String::new();
        let mut at = start;
        for n in 0..25 + rng.below(40) {
            at += 20;
            text.push_str(&claude_record(&mut rng, at, n, 50_000 + i, &cwd, model));
        }
        let path = dir.join(format!("older-{i:06}.jsonl"));
        fs::write(&path, &text).map_err(io)?;
        set_mtime(&path, at).map_err(io)?;
        bytes += text.len() as u64;
    }
    for i in 0..codex_files {
        let start = now - month - span + (i as i64 * span) / codex_files.max(1) as i64;
        let cwd = format!("/home/bench/project-{:02}", i % 40);
        let (text, end) = codex_file(&mut rng, start, 50_000 + i, &cwd);
        let date = format_timestamp(start);
        let (y, m, d) = (&date[0..4], &date[5..7], &date[8..10]);
        let dir = home.join(format!(".codex/sessions/{y}/{m}/{d}"));
        fs::create_dir_all(&dir).map_err(io)?;
        let name = format!(
            "rollout-{}-thread-older-{i}.jsonl",
            &date[..19].replace(':', "-")
        );
        // Old rollouts are archived like the default corpus's: a fifth.
        let path = if i % 5 == 0 {
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
    Ok(bytes)
}

/// Sets `usage.toml`'s `retention_days` in the corpus home's config dir
/// (where `heeler` looks without `HERDR_PLUGIN_CONFIG_DIR`).
fn set_retention(home: &Path, days: i64) -> Result<(), String> {
    let dir = home.join(".config/herdr/plugins/config/heeler");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    fs::write(dir.join("usage.toml"), format!("retention_days = {days}\n"))
        .map_err(|e| e.to_string())
}

/// One retention's cache: its size on disk and its refreshes.
struct Kept {
    days: i64,
    bytes: u64,
    cold: Run,
    warm: Run,
    append: Run,
}

/// The cache at each retention the corpus spans (30, 60, 90, 365 days):
/// size and refresh costs, the cost of each extra 30 days over 30, and
/// the views at the default retention.
fn history(bin: &Path, corpus: &Corpus, state: &Path, now: i64, days: i64) -> Result<(), String> {
    let retentions: Vec<i64> = [30, 60, 90, 365]
        .into_iter()
        .filter(|&r| r <= days)
        .collect();
    let mut kept: Vec<Kept> = Vec::new();
    for &r in &retentions {
        let k = kept_at(bin, corpus, state, now, r)?;
        println!(
            "retention {:>3} days: cache {:>8.1} MiB   cold {:>7.2} s wall {:>7.2} s CPU   warm {:>9}   one-file append {:>9} (median of 5)   peak RSS {}",
            k.days,
            k.bytes as f64 / f64::from(1 << 20),
            secs(k.cold.took),
            secs(k.cold.cpu),
            ms(k.warm.took),
            ms(k.append.took),
            mib(k.cold.rss_kib.max(k.append.rss_kib))
        );
        kept.push(k);
    }
    per_extra_30_days(&kept);
    let default = heeler::usage::config::DEFAULT_RETENTION_DAYS;
    println!("views at the default retention ({default} days):");
    set_retention(&corpus.home, default)?;
    time(heeler(bin, &corpus.home, state, &["usage", "worker"]))?;
    views(bin, &corpus.home, state, None)?;
    // The app's query reads the aggregate's slots for a zone the worker
    // did not render ahead (its 30 days of them, whatever the retention).
    other_zones(bin, &corpus.home, state)
}

/// The cache at a retention of `days`: built cold, refreshed warm three
/// times, and refreshed after each of five one-file appends.
fn kept_at(bin: &Path, corpus: &Corpus, state: &Path, now: i64, days: i64) -> Result<Kept, String> {
    set_retention(&corpus.home, days)?;
    let _ = fs::remove_dir_all(state);
    let cold = measure(heeler(bin, &corpus.home, state, &["usage", "worker"]))?;
    let bytes = dir_bytes(state);
    let warm = median(
        &(0..3)
            .map(|_| measure(heeler(bin, &corpus.home, state, &["usage", "worker"])))
            .collect::<Result<Vec<_>, _>>()?,
    );
    let mut appends = Vec::new();
    for round in 0..5u64 {
        append_records(corpus, 70, round, now)?;
        appends.push(measure(heeler(
            bin,
            &corpus.home,
            state,
            &["usage", "worker"],
        ))?);
    }
    Ok(Kept {
        days,
        bytes,
        cold,
        warm,
        append: median(&appends),
    })
}

/// What each retention beyond the first costs per extra 30 days over the
/// first.
fn per_extra_30_days(kept: &[Kept]) {
    let Some(base) = kept.first() else {
        return;
    };
    for k in kept.iter().skip(1) {
        let months = (k.days - base.days) as f64 / 30.0;
        let per = |a: f64, b: f64| (a - b) / months;
        println!(
            "per extra 30 days (from {} to {} days): cache {:+.1} MiB, cold {:+.2} s, warm {:+.1} ms, one-file append {:+.1} ms",
            base.days,
            k.days,
            per(k.bytes as f64, base.bytes as f64) / f64::from(1 << 20),
            per(secs(k.cold.took), secs(base.cold.took)),
            per(secs(k.warm.took), secs(base.warm.took)) * 1000.0,
            per(secs(k.append.took), secs(base.append.took)) * 1000.0,
        );
    }
}

/// The app's query in zones the worker did not render ahead: the slots
/// are read from the aggregate state (the first query only; it asks for
/// the zone to be rendered ahead by the next refresh, which this
/// benchmark never runs).
fn other_zones(bin: &Path, home: &Path, state: &Path) -> Result<(), String> {
    let mut other = ask_other_zones(bin, home, state)?;
    other.sort();
    println!(
        "query, zone not rendered ahead: {:>10}   (median of 21; max {})",
        ms(other[10]),
        ms(other[20])
    );
    Ok(())
}

/// Each view's warm latency, right after a refresh (so the snapshot is
/// fresh and no view starts a worker).
/// Where the baseline's cold scans leave its cache.
fn baseline_state(work: &Path) -> PathBuf {
    work.join("state-baseline")
}

/// The baseline binary and its cache, when a baseline is timed.
fn peer(baseline: Option<&Path>, work: &Path) -> Option<(PathBuf, PathBuf)> {
    baseline.map(|b| (b.to_path_buf(), baseline_state(work)))
}

/// `runs` of `ours` and, when given, of `theirs`, interleaved (so both
/// see the same load): each one's sorted times.
fn interleaved(
    runs: usize,
    ours: impl Fn() -> Command,
    theirs: Option<&dyn Fn() -> Command>,
) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        a.push(time(ours())?);
        if let Some(theirs) = theirs {
            b.push(time(theirs())?);
        }
    }
    a.sort();
    b.sort();
    Ok((a, b))
}

/// "baseline X ms, this / baseline R" for a median pair, or nothing.
fn versus(ours: Duration, theirs: &[Duration]) -> String {
    match theirs.get(theirs.len() / 2) {
        Some(&t) => format!(
            "   baseline {}, this / baseline {:.2}x",
            ms(t),
            ratio(ours, t)
        ),
        _ => String::new(),
    }
}

fn views(
    bin: &Path,
    home: &Path,
    state: &Path,
    baseline: Option<(PathBuf, PathBuf)>,
) -> Result<(), String> {
    time(heeler(bin, home, state, &["usage", "worker"]))?;
    if let Some((old, old_state)) = &baseline {
        time(heeler(old, home, old_state, &["usage", "worker"]))?;
    }
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
        let theirs = baseline
            .as_ref()
            .map(|(old, old_state)| move || heeler(old, home, old_state, args));
        let (runs, old_runs) = interleaved(
            21,
            || heeler(bin, home, state, args),
            theirs.as_ref().map(|f| f as &dyn Fn() -> Command),
        )?;
        println!(
            "view {:<34} {:>12}   (median of 21; max {}){}",
            format!("heeler {}:", args.join(" ")),
            ms(runs[10]),
            ms(runs[20]),
            versus(runs[10], &old_runs)
        );
    }
    Ok(())
}

/// The live screen (`heeler usage live`, the `heeler.usage` popup) on the
/// corpus's warm cache, on a pseudo-terminal of 120x40 (`script`): start
/// to its first painted frame (21 runs, less the harness's own time, as
/// `bench-popup` measures the pairing popup), and its CPU over 12 s of
/// showing (a cache reload every 3 s, a repaint every second) per reload.
fn live_screen(bin: &Path, home: &Path, state: &Path) -> Result<(), String> {
    let env = [
        ("HOME", home.display().to_string()),
        ("HERDR_PLUGIN_STATE_DIR", state.display().to_string()),
        ("PATH", "/usr/bin:/bin".to_string()),
        ("TZ", "UTC".to_string()),
        ("TERM", "xterm-256color".to_string()),
    ];
    let marker = "Usage in ";
    let command = format!("stty cols 120 rows 40; exec '{}' usage live", bin.display());
    let harness = format!("stty cols 120 rows 40; printf '{marker}'; cat >/dev/null");
    let paint = |command: &str| {
        crate::bench_popup::time_to_marker(command, &env, marker).map_err(|e| e.to_string())
    };
    paint(&command)?;
    let (mut screen, mut alone) = (Vec::new(), Vec::new());
    for _ in 0..21 {
        screen.push(paint(&command)?);
        alone.push(paint(&harness)?);
    }
    let (p50, p90, _) = crate::bench_popup::stats(&mut screen);
    let (h50, _, _) = crate::bench_popup::stats(&mut alone);
    println!(
        "live screen, first paint:      {:.1} ms (median of 21, p90 {p90:.1} ms; the harness alone {h50:.1} ms, so heeler's share {:.1} ms)",
        p50,
        p50 - h50
    );
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let showing = Duration::from_secs(12);
    std::thread::sleep(showing);
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"q");
    }
    let (_, usage) =
        crate::bench_accept::wait_with_rusage(child.id()).map_err(|e| e.to_string())?;
    let cpu = cpu_of(&usage);
    let reloads = showing.as_secs() / 3;
    println!(
        "live screen, 12 s shown:       {} CPU in all (script included), {} per reload of the cache ({reloads} reloads, 12 repaints)",
        ms(cpu),
        ms(cpu / reloads as u32)
    );
    Ok(())
}

/// After the one-file appends (rounds 2 to 9 each append into a slot the
/// file already holds, refreshed incrementally), the cache must answer
/// exactly what a cold rebuild of the same transcripts answers: every
/// period, session, model and directory view over the 30 days, as JSON,
/// with the members that name when each cache was made (`now`,
/// `generated_at`, `refresh`) left out. `false` (and a line saying which
/// view) on a difference, which fails the benchmark once it has printed
/// its figures.
fn incremental_equals_rebuild(
    bin: &Path,
    home: &Path,
    work: &Path,
    state: &Path,
    now: i64,
) -> Result<bool, String> {
    let rebuilt = work.join("state-rebuilt");
    let _ = fs::remove_dir_all(&rebuilt);
    measure(heeler(bin, home, &rebuilt, &["usage", "worker"]))?;
    let today = now.div_euclid(86_400);
    let since = heeler::usage::time::format_date(today - 29);
    let until = heeler::usage::time::format_date(today);
    let views: [&[&str]; 7] = [
        &["daily"],
        &["daily", "--breakdown"],
        &["weekly"],
        &["monthly"],
        &["session"],
        &["models"],
        &["dirs"],
    ];
    let document = |state: &Path, view: &[&str]| -> Result<Value, String> {
        let mut args = vec!["usage"];
        args.extend_from_slice(view);
        args.extend_from_slice(&["--json", "--since", &since, "--until", &until]);
        let mut command = heeler(bin, home, state, &args);
        command.stdout(Stdio::piped());
        let (_, text) = measure_output(command)?;
        let mut doc = json::parse(text.trim_end()).map_err(|_| format!("{view:?}: not JSON"))?;
        if let Value::Object(o) = &mut doc {
            for key in ["now", "generated_at", "refresh"] {
                o.remove(key);
            }
        }
        Ok(doc)
    };
    for view in views {
        let (live, cold) = (document(state, view)?, document(&rebuilt, view)?);
        if live != cold {
            println!(
                "incremental != rebuild: after appends into existing slots, `heeler usage {}` differs from a cold rebuild's",
                view.join(" ")
            );
            let _ = fs::remove_dir_all(&rebuilt);
            return Ok(false);
        }
    }
    let _ = fs::remove_dir_all(&rebuilt);
    println!(
        "incremental = rebuild: after 9 appends (8 into a slot the file held), {} views' JSON \
         identical to a cold rebuild's",
        views.len()
    );
    Ok(true)
}

/// Cold scans (empty cache) of the whole corpus, interleaved with the
/// `cat` floor of the same files and, when given, the baseline binary's
/// cold scan: `rounds` of each, medians printed with their ratios. The
/// last scan's state is left in `state`.
fn cold_scans(
    bin: &Path,
    baseline: Option<&Path>,
    scan: &ScanFloor,
    corpus: &Corpus,
    work: &Path,
    state: &Path,
    rounds: usize,
) -> Result<Run, String> {
    let mut files = Vec::new();
    scan_floor::files_under(&corpus.home, &mut files);
    files.sort();
    let (mut floor, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    let mut exact = vec![Vec::new(); scan_floor::Stage::ALL.len()];
    // One untimed read first, so every timed run finds the files cached.
    cat_floor(&files)?;
    for _ in 0..rounds {
        floor.push(cat_floor(&files)?);
        exact_passes(scan, &corpus.home, &mut exact)?;
        let _ = fs::remove_dir_all(state);
        ours.push(measure(heeler(
            bin,
            &corpus.home,
            state,
            &["usage", "worker"],
        ))?);
        if let Some(old) = baseline {
            let old_state = baseline_state(work);
            let _ = fs::remove_dir_all(&old_state);
            theirs.push(measure(heeler(
                old,
                &corpus.home,
                &old_state,
                &["usage", "worker"],
            ))?);
        }
    }
    let (floor, cold) = (median(&floor), median(&ours));
    println!(
        "cat floor ({} files):        {:>8.3} s wall  {:>8.3} s CPU   (median of {rounds})",
        files.len(),
        secs(floor.took),
        secs(floor.cpu)
    );
    println!(
        "cold scan (empty cache):      {:>8.3} s wall  {:>8.3} s CPU   ({:.0} MB/s; median of {rounds})   peak RSS {}",
        secs(cold.took),
        secs(cold.cpu),
        corpus.bytes as f64 / 1e6 / secs(cold.took),
        mib(cold.rss_kib)
    );
    println!(
        "cold scan / cat floor:        {:>8.2}x wall {:>8.2}x CPU",
        ratio(cold.took, floor.took),
        ratio(cold.cpu, floor.cpu)
    );
    exact_floor(&exact, scan.threads, floor, Some(cold));
    if let Some(old) = baseline {
        let old_run = median(&theirs);
        println!(
            "baseline cold ({}): {:.3} s wall  {:.3} s CPU; this build / baseline: {:.2}x wall {:.2}x CPU",
            old.display(),
            secs(old_run.took),
            secs(old_run.cpu),
            ratio(cold.took, old_run.took),
            ratio(cold.cpu, old_run.cpu)
        );
    }
    Ok(cold)
}

/// The threads of the exact-scan floor: as many as heeler's parsing
/// threads (the cores, at most 4).
fn floor_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
}

/// One pass of each stage of the exact-scan floor, each a process of the
/// release build of xtask (`scan_floor`), added to that stage's runs.
fn exact_passes(
    floor: &ScanFloor,
    home: &Path,
    runs: &mut [Vec<(Run, scan_floor::Pass)>],
) -> Result<(), String> {
    for (runs, stage) in runs.iter_mut().zip(scan_floor::Stage::ALL) {
        let mut c = Command::new(&floor.bin);
        c.stdout(Stdio::piped())
            .args(["scan-floor", stage.name(), &floor.threads.to_string()])
            .arg(home);
        let (run, out) = measure_output(c)?;
        let seen = scan_floor::parse_counts(out.trim())
            .ok_or_else(|| format!("scan-floor printed {out:?}"))?;
        runs.push((run, seen));
    }
    Ok(())
}

/// The release build of xtask that runs the exact-scan floor's passes, and
/// their thread count.
struct ScanFloor {
    bin: PathBuf,
    threads: usize,
}

impl ScanFloor {
    fn build(sh: &xshell::Shell, root: &Path) -> Result<ScanFloor, String> {
        xshell::cmd!(sh, "cargo build --release --quiet --package xtask")
            .run()
            .map_err(|e| e.to_string())?;
        Ok(ScanFloor {
            bin: root.join("target/release/xtask"),
            threads: floor_threads(),
        })
    }
}

/// `--floor`: the `cat` floor and the exact-scan floor only, interleaved.
fn floors_only(floor: &ScanFloor, corpus: &Corpus, rounds: usize) -> Result<(), String> {
    let mut files = Vec::new();
    scan_floor::files_under(&corpus.home, &mut files);
    files.sort();
    let mut cat = Vec::new();
    let mut exact = vec![Vec::new(); scan_floor::Stage::ALL.len()];
    cat_floor(&files)?;
    for _ in 0..rounds {
        cat.push(cat_floor(&files)?);
        exact_passes(floor, &corpus.home, &mut exact)?;
    }
    let cat = median(&cat);
    println!(
        "cat floor ({} files):        {:>8.3} s wall  {:>8.3} s CPU   (median of {rounds})",
        files.len(),
        secs(cat.took),
        secs(cat.cpu)
    );
    exact_floor(&exact, floor.threads, cat, None);
    Ok(())
}

/// Prints the exact-scan floor (`scan_floor`), stage by stage (medians),
/// against the `cat` floor and, when given, the cold scan of the same
/// rounds.
fn exact_floor(
    stages: &[Vec<(Run, scan_floor::Pass)>],
    threads: usize,
    cat: Run,
    cold: Option<Run>,
) {
    println!(
        "exact-scan floor, {threads} threads (each stage adds to the one before; xtask scan-floor):"
    );
    let mut last = None;
    for (runs, stage) in stages.iter().zip(scan_floor::Stage::ALL) {
        let times: Vec<Run> = runs.iter().map(|r| r.0).collect();
        let m = median(&times);
        let seen = runs.last().map(|r| r.1).unwrap_or_default();
        let seen = match stage {
            scan_floor::Stage::Read | scan_floor::Stage::Decode => format!("{} lines", seen.lines),
            scan_floor::Stage::Pick => format!("{} of {} lines", seen.picked, seen.lines),
            scan_floor::Stage::Validate => format!("{} invalid", seen.invalid),
        };
        println!(
            "  {:<48} {:>7.3} s wall {:>7.3} s CPU  {:>5.2}x cat CPU   ({seen})",
            stage.label(),
            secs(m.took),
            secs(m.cpu),
            ratio(m.cpu, cat.cpu)
        );
        last = Some(m);
    }
    let Some(least) = last else {
        return;
    };
    let budget = cat.cpu.mul_f64(1.5);
    println!(
        "the budget (1.5x cat, {:.3} s CPU) is {:.2}x the exact-scan floor's CPU",
        secs(budget),
        ratio(budget, least.cpu)
    );
    if let Some(cold) = cold {
        println!(
            "cold scan / exact-scan floor:  {:>8.2}x wall {:>8.2}x CPU",
            ratio(cold.took, least.took),
            ratio(cold.cpu, least.cpu)
        );
    }
}

/// Five Claude records appended to the corpus's newest Claude file, as a
/// session writing on would; `seed` and `round` make each append's
/// records distinct.
fn append_records(corpus: &Corpus, seed: u64, round: u64, now: i64) -> Result<(), String> {
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&corpus.newest_claude)
        .map_err(|e| e.to_string())?;
    let mut rng = Rng(seed + round);
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
    file.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// What the append, query and ccusage timings run on.
struct Timings<'a> {
    bin: &'a Path,
    /// A baseline binary and its own state directory, timed side by side.
    baseline: Option<(PathBuf, PathBuf)>,
    corpus: &'a Corpus,
    work: &'a Path,
    state: &'a Path,
    now: i64,
    /// The warm refresh's wall time, for the ccusage ratio.
    warm: Duration,
    rounds: usize,
}

/// The append, query and ccusage timings; returns the appends' peak RSS.
fn timings(t: &Timings) -> Result<i64, String> {
    let peak = append_timings(t)?;
    warm_query_timings(t)?;
    other_zones(t.bin, &t.corpus.home, t.state)?;
    // The baseline is asked for the same zones and refreshed, so both
    // snapshots render as many zones ahead: the views and the statusline
    // that follow read snapshots of one size.
    if let Some((old, old_state)) = &t.baseline {
        ask_other_zones(old, &t.corpus.home, old_state)?;
        measure(heeler(old, &t.corpus.home, old_state, &["usage", "worker"]))?;
    }
    match find_ccusage() {
        Some(cc) => versus_ccusage(t, &cc)?,
        None => println!(
            "ccusage: SKIPPED (not installed: npm install --prefix target/ccusage ccusage@20.0.24, or CCUSAGE=path)"
        ),
    }
    Ok(peak)
}

/// One-file appends: five records to the newest Claude file, then a
/// refresh; repeated so the figure is a median, not one sample. Returns
/// the appends' peak RSS.
fn append_timings(t: &Timings) -> Result<i64, String> {
    let (bin, corpus, state) = (t.bin, t.corpus, t.state);
    let mut appends: Vec<Run> = Vec::new();
    let mut old_appends: Vec<Run> = Vec::new();
    let mut walks: Vec<Run> = Vec::new();
    let mut peak = 0;
    for round in 0..9u64 {
        append_records(corpus, 7, round, t.now)?;
        let run = measure(heeler(bin, &corpus.home, state, &["usage", "worker"]))?;
        peak = peak.max(run.rss_kib);
        appends.push(run);
        if let Some((old, old_state)) = &t.baseline {
            old_appends.push(measure(heeler(
                old,
                &corpus.home,
                old_state,
                &["usage", "worker"],
            ))?);
        }
        walks.push(walk_floor(&corpus.home)?);
    }
    let first_append = appends[0].took;
    let (append, walk) = (median(&appends), median(&walks));
    let mut took: Vec<Duration> = appends.iter().map(|r| r.took).collect();
    took.sort();
    println!(
        "one-file append refresh:      {:>12} wall {:>9} CPU   (median of 9; min {}, max {}, first {})   peak RSS {}",
        ms(append.took),
        ms(append.cpu),
        ms(took[0]),
        ms(took[8]),
        ms(first_append),
        mib(peak)
    );
    println!(
        "  its floor, the walk (find -printf size, mtime): {} wall {} CPU; append / walk {:.2}x wall {:.2}x CPU",
        ms(walk.took),
        ms(walk.cpu),
        ratio(append.took, walk.took),
        ratio(append.cpu, walk.cpu)
    );
    if !old_appends.is_empty() {
        let old = median(&old_appends);
        println!(
            "  baseline one-file append: {} wall {} CPU; this / baseline {:.2}x wall {:.2}x CPU",
            ms(old.took),
            ms(old.cpu),
            ratio(append.took, old.took),
            ratio(append.cpu, old.cpu)
        );
    }
    Ok(peak)
}

/// 21 queries for three zones the worker does not render ahead, each
/// timed; the worker renders them ahead from its next refresh on.
fn ask_other_zones(bin: &Path, home: &Path, state: &Path) -> Result<Vec<Duration>, String> {
    (0..21)
        .map(|i| {
            let zone = ["Asia/Kathmandu", "America/St_Johns", "Australia/Eucla"][i % 3];
            time(heeler(
                bin,
                home,
                state,
                &["usage", "query", "--refresh", "never", "--tz", zone],
            ))
        })
        .collect()
}

/// The warm query, 21 times, interleaved with the baseline's when there
/// is one.
fn warm_query_timings(t: &Timings) -> Result<(), String> {
    let query = ["usage", "query", "--refresh", "never"];
    let home = &t.corpus.home;
    let theirs = t
        .baseline
        .as_ref()
        .map(|(old, old_state)| move || heeler(old, home, old_state, &query));
    let (queries, old_queries) = interleaved(
        21,
        || heeler(t.bin, home, t.state, &query),
        theirs.as_ref().map(|f| f as &dyn Fn() -> Command),
    )?;
    println!(
        "warm query (median of 21):    {:>12}   (max {}){}",
        ms(queries[10]),
        ms(queries[20]),
        versus(queries[10], &old_queries)
    );
    Ok(())
}

/// The ccusage to compare with: `$CCUSAGE`, else the first on `PATH`,
/// else the one installed under `target/ccusage`.
fn find_ccusage() -> Option<PathBuf> {
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/ccusage/node_modules/.bin/ccusage");
    std::env::var("CCUSAGE")
        .ok()
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var("PATH").ok().and_then(|p| {
                p.split(':')
                    .map(|d| Path::new(d).join("ccusage"))
                    .find(|c| c.is_file())
            })
        })
        .or_else(|| local.is_file().then_some(local))
}

/// ccusage's daily report against our cold scan of the same tree, for a
/// like-for-like ratio: Claude alone (`ccusage claude daily`), then Claude
/// and Codex (`ccusage daily`, which reads every agent it finds: here the
/// two); and against our warm refresh.
fn versus_ccusage(t: &Timings, cc: &Path) -> Result<(), String> {
    let corpus = t.corpus;
    let claude_only = t.work.join("claude-only");
    fs::create_dir_all(&claude_only).map_err(|e| e.to_string())?;
    let link = claude_only.join(".claude");
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink(corpus.home.join(".claude"), &link).map_err(|e| e.to_string())?;
    let claude = ccusage_pairs(t, cc, &["claude", "daily"], &claude_only)?;
    println!(
        "ccusage claude daily --json:  {:>8.3} s wall {:>8.3} s CPU   heeler cold (Claude only) {:.3} s wall {:.3} s CPU   (medians of {} interleaved pairs)",
        secs(claude.theirs.took),
        secs(claude.theirs.cpu),
        secs(claude.ours.took),
        secs(claude.ours.cpu),
        claude.pairs,
    );
    claude.print_ratios();
    let both = ccusage_pairs(t, cc, &["daily"], &corpus.home)?;
    println!(
        "ccusage daily --json:         {:>8.3} s wall {:>8.3} s CPU   heeler cold (Claude + Codex) {:.3} s wall {:.3} s CPU   (medians of {} interleaved pairs)",
        secs(both.theirs.took),
        secs(both.theirs.cpu),
        secs(both.ours.took),
        secs(both.ours.cpu),
        both.pairs,
    );
    both.print_ratios();
    println!(
        "ccusage (no cache) vs heeler warm refresh: ratio {:.0}x",
        ratio(claude.theirs.took, t.warm)
    );
    Ok(())
}

/// Interleaved runs of ccusage (`args`, then `--json --offline
/// --timezone UTC`, on the corpus) and heeler's cold scan of `home`.
struct Pairs {
    theirs: Run,
    ours: Run,
    pairs: usize,
    /// Per-pair wall ratios, sorted.
    ratios: Vec<f64>,
}

impl Pairs {
    fn print_ratios(&self) {
        println!(
            "ccusage / heeler:             {:>8.2}x wall {:>8.2}x CPU   (per-pair wall ratios {:.2}x to {:.2}x, median {:.2}x)",
            ratio(self.theirs.took, self.ours.took),
            ratio(self.theirs.cpu, self.ours.cpu),
            self.ratios[0],
            self.ratios[self.ratios.len() - 1],
            self.ratios[self.ratios.len() / 2]
        );
    }
}

fn ccusage_pairs(t: &Timings, cc: &Path, args: &[&str], home: &Path) -> Result<Pairs, String> {
    let corpus = t.corpus;
    let ours_state = t.work.join("state-versus-ccusage");
    // Interleaved, ccusage then heeler, so both see the same load.
    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    let pairs = t.rounds.max(5);
    for _ in 0..pairs {
        let mut c = Command::new(cc);
        c.args(args)
            .args(["--json", "--offline", "--timezone", "UTC"])
            .env("HOME", &corpus.home)
            .env("CLAUDE_CONFIG_DIR", corpus.home.join(".claude"))
            .env("CODEX_HOME", corpus.home.join(".codex"));
        theirs.push(measure(c)?);
        let _ = fs::remove_dir_all(&ours_state);
        ours.push(measure(heeler(
            t.bin,
            home,
            &ours_state,
            &["usage", "worker"],
        ))?);
    }
    let _ = fs::remove_dir_all(&ours_state);
    let mut ratios: Vec<f64> = theirs
        .iter()
        .zip(&ours)
        .map(|(c, h)| ratio(c.took, h.took))
        .collect();
    ratios.sort_by(f64::total_cmp);
    Ok(Pairs {
        theirs: median(&theirs),
        ours: median(&ours),
        pairs,
        ratios,
    })
}
