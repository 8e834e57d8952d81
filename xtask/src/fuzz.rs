//! `cargo xtask fuzz --time S [--runs N] [target…]`: builds the cargo-fuzz
//! targets (`fuzz/`, libFuzzer with AddressSanitizer and debug assertions,
//! nightly features through `RUSTC_BOOTSTRAP=1` on the stable toolchain)
//! and runs each for `S` seconds (or `N` executions, whichever comes
//! first) under libFuzzer's 256 MiB memory limits (ASan's quarantine of
//! freed memory held to 16 MiB, so that the limit measures what the target
//! holds), then prints per target
//! the executions, the coverage (libFuzzer's final `cov` and `ft`) and the
//! crashes, and fails if any target crashed.
//!
//! Each target runs on a work corpus (`fuzz/corpus-work/<target>`, not
//! checked in) that it grows, beside the checked-in seeds
//! (`fuzz/corpus/<target>`), which it only reads. Before the runs the work
//! corpora also get seeds made here, at run time, from outside data that
//! must not be copied into the repository: the app's vectors
//! (`../shared/heeler-vectors`, when present), ours (`test-vectors/`) and
//! the system's zoneinfo. Crash inputs land in `fuzz/artifacts/<target>/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use heeler::base::base64;
use heeler::base::json::{self, Value};

const USAGE: &str = "usage: cargo xtask fuzz --time SECONDS [--runs N] [target…]";
/// libFuzzer's memory limits (RSS and a single allocation), in MiB.
const MEMORY_LIMIT_MB: u32 = 256;
/// AddressSanitizer's quarantine (the freed memory it holds back to
/// catch a use after free), in MiB. Its default, 256 MiB, counts in the
/// resident size, so a target that frees often reached the 256 MiB limit
/// on memory it had freed (usage_state: 139 MB quarantined, 25 MB live,
/// in 2 s): the limit then caught nothing of the target's own. 16 MiB
/// keeps a freed block poisoned for thousands of executions.
const QUARANTINE_MB: u32 = 16;
/// The longest a single input may take, in seconds, before it counts as a
/// crash (a hang).
const INPUT_TIMEOUT_S: u32 = 10;
/// Zones whose TZif files seed the `tzif` target when the system has them.
const ZONES: &[&str] = &[
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Sao_Paulo",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "Africa/Casablanca",
    "America/Nuuk",
    "Antarctica/Troll",
];

/// What one target's run gave.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stats {
    executions: u64,
    cov: u64,
    ft: u64,
    crashes: usize,
}

pub fn run(args: &[String]) -> crate::Result {
    let time: u64 = crate::flag(args, "--time")
        .ok_or(USAGE)?
        .parse()
        .map_err(|_| USAGE)?;
    let runs: Option<u64> = match crate::flag(args, "--runs") {
        Some(n) => Some(n.parse().map_err(|_| USAGE)?),
        None => None,
    };
    let root = crate::project_root();
    let fuzz = root.join("fuzz");
    let chosen = chosen_targets(targets(&fuzz)?, named_targets(args))?;

    let started = Instant::now();
    build_targets(&root, &chosen)?;
    println!("fuzz: built in {} s", started.elapsed().as_secs());

    let vectors = root.join("../shared/heeler-vectors");
    let mut failed = Vec::new();
    println!(
        "{:<20} {:>12} {:>7} {:>7} {:>8}",
        "target", "executions", "cov", "ft", "crashes"
    );
    for name in &chosen {
        let work = fuzz.join("corpus-work").join(name);
        fs::create_dir_all(&work)?;
        for (i, seed) in runtime_seeds(name, &root, &vectors).iter().enumerate() {
            fs::write(work.join(format!("runtime-{i}")), seed)?;
        }
        let stats = run_target(&fuzz, name, &work, time, runs)?;
        println!(
            "{:<20} {:>12} {:>7} {:>7} {:>8}",
            name, stats.executions, stats.cov, stats.ft, stats.crashes
        );
        if stats.crashes > 0 {
            failed.push(name.clone());
        }
    }
    println!(
        "fuzz: {} targets in {} s",
        chosen.len(),
        started.elapsed().as_secs()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "crashes in {} (inputs in fuzz/artifacts/)",
            failed.join(", ")
        )
        .into())
    }
}

/// The targets to run: the ones named (each must be one of `all`), or
/// every target when none is named.
fn chosen_targets(all: Vec<String>, wanted: Vec<String>) -> crate::Result<Vec<String>> {
    for name in &wanted {
        if !all.contains(name) {
            return Err(format!("no fuzz target {name} (targets: {})", all.join(" ")).into());
        }
    }
    Ok(if wanted.is_empty() { all } else { wanted })
}

/// `cargo fuzz build` of the chosen targets, with debug assertions.
fn build_targets(root: &Path, chosen: &[String]) -> crate::Result {
    // `cargo fuzz build` takes one target or none (all of them).
    let one = match chosen {
        [only] => Some(only.as_str()),
        _ => None,
    };
    let mut build = Command::new("cargo");
    // What `cargo run` set for this task is not the build's: without it
    // the build reuses what `cargo fuzz build` run by hand compiled.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name == "CARGO" || name == "LD_LIBRARY_PATH" || is_cargo_run_var(&name) {
            build.env_remove(&*name);
        }
    }
    let status = build
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["fuzz", "build", "--debug-assertions"])
        .args(one)
        .status()
        .map_err(|e| format!("cargo fuzz (install it: cargo install cargo-fuzz --locked): {e}"))?;
    if !status.success() {
        return Err("cargo fuzz build failed".into());
    }
    Ok(())
}

/// The variables `cargo run` sets for the program it runs (those of the
/// package and the binary), as opposed to the user's `CARGO_HOME` and
/// build settings.
fn is_cargo_run_var(name: &str) -> bool {
    [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
        "CARGO_PRIMARY_",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

/// The arguments that are not flags or flag values: target names.
fn named_targets(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for arg in args {
        if skip {
            skip = false;
        } else if arg.starts_with("--") {
            skip = true;
        } else {
            out.push(arg.clone());
        }
    }
    out
}

/// Every target: the files of `fuzz/fuzz_targets/`, sorted.
fn targets(fuzz: &Path) -> crate::Result<Vec<String>> {
    let mut out: Vec<String> = fs::read_dir(fuzz.join("fuzz_targets"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    out.sort();
    Ok(out)
}

fn run_target(
    fuzz: &Path,
    name: &str,
    work: &Path,
    time: u64,
    runs: Option<u64>,
) -> crate::Result<Stats> {
    let binary = fuzz
        .join("target/x86_64-unknown-linux-gnu/release")
        .join(name);
    let artifacts = fuzz.join("artifacts").join(name);
    fs::create_dir_all(&artifacts)?;
    let before = count_files(&artifacts);
    let mut command = Command::new(&binary);
    // Options given in the environment come after (ASan's last wins).
    let asan = match std::env::var("ASAN_OPTIONS") {
        Ok(given) if !given.is_empty() => format!("quarantine_size_mb={QUARANTINE_MB}:{given}"),
        _ => format!("quarantine_size_mb={QUARANTINE_MB}"),
    };
    command
        .env("ASAN_OPTIONS", asan)
        .arg(work)
        .arg(fuzz.join("corpus").join(name))
        .arg(format!("-max_total_time={time}"))
        .arg(format!("-rss_limit_mb={MEMORY_LIMIT_MB}"))
        .arg(format!("-malloc_limit_mb={MEMORY_LIMIT_MB}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_S}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1");
    if let Some(runs) = runs {
        command.arg(format!("-runs={runs}"));
    }
    let output = command
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let log = String::from_utf8_lossy(&output.stderr);
    fs::write(fuzz.join("corpus-work").join(format!("{name}.log")), &*log)?;
    let mut stats = parse_stats(&log);
    stats.crashes = count_files(&artifacts).saturating_sub(before);
    if !output.status.success() {
        stats.crashes = stats.crashes.max(1);
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        for line in tail.into_iter().rev() {
            eprintln!("  {name}: {line}");
        }
    }
    Ok(stats)
}

fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |entries| entries.count())
}

/// The final figures in a libFuzzer log: `stat::number_of_executed_units`
/// and the `cov:`/`ft:` of the last status line.
fn parse_stats(log: &str) -> Stats {
    let mut stats = Stats::default();
    for line in log.lines() {
        if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            stats.executions = n.trim().parse().unwrap_or(0);
        }
        if line.starts_with('#') {
            if let Some(cov) = field(line, "cov:") {
                stats.cov = cov;
            }
            if let Some(ft) = field(line, "ft:") {
                stats.ft = ft;
            }
        }
    }
    stats
}

/// The number after `name` in a libFuzzer status line.
fn field(line: &str, name: &str) -> Option<u64> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == name)?;
    words.next()?.parse().ok()
}

/// The cases of a vectors file's `lists` (`valid`, `invalid`, …), in
/// order; none when the file is absent or not JSON.
fn vector_cases(file: &Path, lists: &[&str]) -> Vec<Value> {
    let Some(value) = fs::read_to_string(file)
        .ok()
        .and_then(|t| json::parse(&t).ok())
    else {
        return Vec::new();
    };
    lists
        .iter()
        .filter_map(|list| value.get(list).and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect()
}

/// The string field `key` of each case that has one, as bytes.
fn case_strings(cases: &[Value], key: &str) -> Vec<Vec<u8>> {
    cases
        .iter()
        .filter_map(|c| c.get(key).and_then(Value::as_str))
        .map(|s| s.as_bytes().to_vec())
        .collect()
}

/// The valid and invalid cases of both domains' envelope vectors whose
/// key is 32 bytes, as `envelope_open` inputs: a selector byte (bit 2:
/// the key travels in the input; bit 0: the Live Activity domain), the
/// key, the envelope.
fn envelope_seeds(vectors: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (file, selector) in [
        ("notification-payload-v1.json", 4u8),
        ("live-activity-content-v1.json", 5u8),
    ] {
        for case in vector_cases(&vectors.join(file), &["valid", "invalid"]) {
            let key = case
                .get("key")
                .and_then(Value::as_str)
                .and_then(|k| base64::decode_url(k).ok())
                .filter(|k| k.len() == 32);
            let envelope = match case.get("envelope") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_json(),
                None => continue,
            };
            if let Some(key) = key {
                let mut seed = vec![selector];
                seed.extend(key);
                seed.extend(envelope.as_bytes());
                out.push(seed);
            }
        }
    }
    out
}

/// Every case of the JSON vectors files of at most 4 KiB, as `json`
/// inputs.
fn json_seeds(vectors: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for file in [
        "notification-session-v1.json",
        "sidebar-layout-v1.json",
        "live-activity-content-v1.json",
    ] {
        for case in vector_cases(&vectors.join(file), &["valid", "invalid", "delivery"]) {
            let text = case.to_json();
            if text.len() <= 4096 {
                out.push(text.into_bytes());
            }
        }
    }
    out
}

/// Seeds made at run time from data that stays outside the repository.
fn runtime_seeds(target: &str, root: &Path, vectors: &Path) -> Vec<Vec<u8>> {
    let both = ["valid", "invalid"];
    match target {
        "pairing_code" => {
            let mut out = case_strings(
                &vector_cases(&vectors.join("pairing-code-v1.json"), &both),
                "code",
            );
            out.extend(case_strings(
                &vector_cases(&root.join("test-vectors/pairing-code-v2.json"), &both),
                "code",
            ));
            out
        }
        "envelope_open" => envelope_seeds(vectors),
        "sidebar_toml" => case_strings(
            &vector_cases(&vectors.join("sidebar-layout-v1.json"), &both),
            "toml",
        ),
        "notifications_json" => {
            vector_cases(&vectors.join("notification-session-v1.json"), &["delivery"])
                .iter()
                .filter_map(|c| c.get("entries"))
                .map(|entries| {
                    format!("{{\"v\":1,\"devices\":{}}}", entries.to_json()).into_bytes()
                })
                .collect()
        }
        "json" => json_seeds(vectors),
        "tzif" => ZONES
            .iter()
            .filter_map(|zone| fs::read(PathBuf::from("/usr/share/zoneinfo").join(zone)).ok())
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_stats_are_read_from_a_libfuzzer_log() {
        let log = "INFO: Seed: 1\n\
                   #2\tINITED cov: 10 ft: 11 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #5000\tDONE   cov: 343 ft: 805 corp: 145/2946b lim: 212 exec/s: 10671 rss: 87Mb\n\
                   Done 5000 runs in 5 second(s)\n\
                   stat::number_of_executed_units: 5000\n\
                   stat::peak_rss_mb:              87\n";
        assert_eq!(
            parse_stats(log),
            Stats {
                executions: 5000,
                cov: 343,
                ft: 805,
                crashes: 0
            }
        );
    }

    #[test]
    fn target_names_are_the_arguments_that_are_not_flags() {
        let args: Vec<String> = ["--time", "5", "json", "--runs", "9", "tzif"]
            .map(String::from)
            .to_vec();
        assert_eq!(named_targets(&args), ["json", "tzif"]);
    }

    #[test]
    fn no_named_target_chooses_every_target_and_an_unknown_one_is_refused() {
        let all = || vec!["json".to_owned(), "tzif".to_owned()];
        assert_eq!(chosen_targets(all(), Vec::new()).ok(), Some(all()));
        let tzif = vec!["tzif".to_owned()];
        assert_eq!(chosen_targets(all(), tzif.clone()).ok(), Some(tzif));
        let unknown = chosen_targets(all(), vec!["yaml".to_owned()]);
        assert_eq!(
            unknown.map_err(|e| e.to_string()).err().as_deref(),
            Some("no fuzz target yaml (targets: json tzif)")
        );
    }
}
