//! Development tasks (matklad's xtask pattern): `cargo xtask <task>`.
//!
//! Tasks are Rust, run with xshell (processes without a shell), so they work
//! the same on every developer machine and in CI. None of this ships. One
//! task per file; this file only dispatches.

mod bench_accept;
mod bench_popup;
mod bench_sidebar;
mod vectors;

use std::process::ExitCode;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  vectors         regenerate test-vectors/ with the independent Python generator
  bench-sidebar   sidebar refresh cost when nothing changed (release build)
  bench-accept    CPU time and peak RSS of one `heeler accept` (release build; --static)
  bench-popup     start to first painted checklist of `heeler pair` (release build; --debug, --runs N)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let result = match args.first().map(String::as_str) {
        Some("vectors") => vectors::run(rest),
        Some("bench-sidebar") => bench_sidebar::run(rest),
        Some("bench-accept") => bench_accept::run(),
        Some("bench-popup") => bench_popup::run(rest),
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
