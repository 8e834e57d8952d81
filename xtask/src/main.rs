//! `cargo xtask <task>`: developer tasks that are programs, not tests
//! (benchmarks, release helpers). One module per task; `main` only dispatches.

use std::process::ExitCode;

mod bench_hooks;

const USAGE: &str = "usage: cargo xtask <task>\n\ntasks:\n  bench-hooks [--runs N]   CPU time and peak RSS of the event hooks";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench-hooks") => bench_hooks::run(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
