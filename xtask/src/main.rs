//! Developer tasks (`cargo xtask <task> …`): one module per task, dispatched
//! here by name. Add a task by adding a module and one match arm.

mod bench_usage;
mod pricing;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let result = match task.as_str() {
        "pricing" => pricing::run(&rest),
        "bench-usage" => bench_usage::run(&rest),
        _ => Err(concat!(
            "usage: cargo xtask <task> [args]\ntasks:\n",
            "  pricing --input FILE --date YYYY-MM-DD [--source litellm|models-dev] [--version V]\n",
            "  bench-usage [--scale 1.0]"
        )
        .to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// The value of `--name VALUE` in `args`.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}
