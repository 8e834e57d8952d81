//! Development tasks (matklad's xtask pattern): `cargo xtask <task>`.
//!
//! Tasks are Rust, run with xshell (processes without a shell), so they work
//! the same on every developer machine and in CI. None of this ships.

mod static_build;

use std::process::ExitCode;

use xshell::{Shell, cmd};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  vectors    regenerate test-vectors/ with the independent Python generator
  static     build x86_64-unknown-linux-musl statically here (toolchain.md §3.1) and check it
             [--target <arch>-unknown-linux-musl]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("vectors") => vectors(),
        Some("static") => static_build::run(&args[1..]).map_err(Into::into),
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

fn project_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default()
}

/// Regenerates our own vectors with Python's `cryptography`, never with
/// heeler itself, then shows what changed.
fn vectors() -> Result {
    let sh = Shell::new()?;
    sh.change_dir(project_root());
    cmd!(sh, "python3 test-vectors/generate.py").run()?;
    cmd!(sh, "git diff --stat -- test-vectors").run()?;
    Ok(())
}
