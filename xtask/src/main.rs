//! `cargo xtask <task>`: the project's developer tasks, written in Rust so they
//! run the same on every machine (the matklad xtask pattern).
//!
//! Each task lives in its own module and is one arm of [`TASKS`]; add yours
//! there. Tasks print what they did and the figures they measured, and exit
//! non-zero with one `xtask <task>: ...` line when something fails.

mod static_build;

use std::process::ExitCode;

/// A task's name, its one-line help and its entry point (arguments after the name).
type Task = (
    &'static str,
    &'static str,
    fn(&[String]) -> Result<(), String>,
);

const TASKS: &[Task] = &[(
    "static",
    "build x86_64-unknown-linux-musl statically (toolchain.md §3.1) and check it",
    static_build::run,
)];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        print_help();
        return ExitCode::from(2);
    };
    if name == "help" || name == "--help" {
        print_help();
        return ExitCode::SUCCESS;
    }
    let Some((_, _, run)) = TASKS.iter().find(|(task, _, _)| task == name) else {
        eprintln!("xtask: unknown task `{name}`; run `cargo xtask help`");
        return ExitCode::from(2);
    };
    match run(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(line) => {
            eprintln!("xtask {name}: {line}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    println!("usage: cargo xtask <task> [args]\n\ntasks:");
    for (name, help, _) in TASKS {
        println!("  {name:<10} {help}");
    }
}
