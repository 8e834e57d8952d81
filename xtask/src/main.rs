//! `cargo xtask <task>`: project automation that is not part of the shipped
//! binary. Each task is one match arm; keep them small.

use std::process::ExitCode;

use xshell::{Shell, cmd};

const TASKS: &str =
    "tasks:\n  bench-sidebar   sidebar refresh cost when nothing changed (release build)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench-sidebar") => bench_sidebar(),
        Some(other) => Err(format!("unknown task {other:?}\n{TASKS}")),
        None => Err(TASKS.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `examples/bench_sidebar.rs` in release mode from the workspace root,
/// with the release `heeler` binary for the whole-process figure.
fn bench_sidebar() -> Result<(), String> {
    let sh = Shell::new().map_err(|e| e.to_string())?;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    sh.change_dir(root);
    cmd!(sh, "cargo build --release --quiet --bin heeler")
        .run()
        .map_err(|e| e.to_string())?;
    let _bin = sh.push_env("HEELER_BIN", format!("{root}/target/release/heeler"));
    cmd!(sh, "cargo run --release --quiet --example bench_sidebar")
        .run()
        .map_err(|e| e.to_string())
}
