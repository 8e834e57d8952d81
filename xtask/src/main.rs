//! `cargo xtask <task>`: project automation that is not part of the shipped
//! binary. Each task is one match arm; keep them small (a larger task gets
//! its own module).

use std::process::ExitCode;

use xshell::{Shell, cmd};

mod bench_hooks;

const TASKS: &str = "tasks:\n  bench-sidebar            sidebar refresh cost when nothing changed (release build)\n  bench-hooks [--runs N]   CPU time and peak RSS of the event hooks (release build)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench-sidebar") => bench_sidebar(),
        Some("bench-hooks") => bench_hooks::run(&args[1..]),
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

/// Runs `examples/bench_sidebar.rs` in release mode from the workspace root.
fn bench_sidebar() -> Result<(), String> {
    let sh = Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    cmd!(sh, "cargo run --release --quiet --example bench_sidebar")
        .run()
        .map_err(|e| e.to_string())
}
