//! Development tasks (matklad's xtask pattern): `cargo xtask <task>`.
//!
//! Tasks are Rust, run with xshell (processes without a shell), so they work
//! the same on every developer machine and in CI. None of this ships. One
//! task per file; this file only dispatches.

mod bench_accept;
mod bench_agents;
mod bench_hooks;
mod bench_popup;
mod bench_sidebar;
mod bench_usage;
mod dist;
mod dist_layout;
mod fuzz;
mod pricing;
mod scan_floor;
mod test;
mod vectors;

use std::process::ExitCode;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  test            cargo test --workspace [its arguments], then the list of skipped tests and why
  vectors         regenerate test-vectors/ with the independent Python generator
  bench-sidebar   sidebar refresh cost when nothing changed (release build)
  bench-accept    CPU time and peak RSS of one `heeler accept` (release build; --static)
  bench-hooks     CPU time and peak RSS of the event hooks (release build; [--runs N])
  bench-popup     start to first painted checklist of `heeler pair` (release build; --debug, --runs N)
  bench-usage     usage cold scan, warm query, one-file append and peak RSS on a synthetic corpus
                  [--scale 1.0] [--memory: only the refreshes' peak RSS] [--floor: only the cat and exact-scan floors]
                  [--agents: every agent's cold scan and warm views against Claude Code + Codex's]
  scan-floor      one pass of bench-usage's exact-scan floor (the least work of any exact scan):
                  read|decode|pick|validate THREADS HOME (run by bench-usage's release build)
  fuzz            build the cargo-fuzz targets and run each: --time SECONDS [--runs N] [target…]
  pricing         regenerate pricing.json from a price source and pricing-overrides.json:
                  --input FILE --date YYYY-MM-DD [--source litellm|models-dev] [--version V]
  dist            build, check and package the release targets into target/dist/
                  (CONTRIBUTING.md: Release builds) [--target T]... [--native] [--out DIR]
                  | --checksums DIR";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let result = match args.first().map(String::as_str) {
        // Its exit status is cargo test's.
        Some("test") => return test::run(rest),
        Some("vectors") => vectors::run(rest),
        Some("bench-sidebar") => bench_sidebar::run(rest),
        Some("bench-accept") => bench_accept::run(),
        Some("bench-hooks") => bench_hooks::run(rest).map_err(Into::into),
        Some("bench-popup") => bench_popup::run(rest),
        Some("bench-usage") => bench_usage::run(rest).map_err(Into::into),
        Some("scan-floor") => scan_floor::run(rest).map_err(Into::into),
        Some("fuzz") => fuzz::run(rest),
        Some("pricing") => pricing::run(rest).map_err(Into::into),
        Some("dist") => dist::run(rest).map_err(Into::into),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of `xtask/`).
fn project_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default()
}

/// The value after `--name` in a task's arguments.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}
