//! Developer tasks that are not tests: `cargo xtask <task>`.
//!
//! Tasks: `bench-accept` (CPU time and peak RSS of `heeler accept`).

mod bench_accept;

fn main() -> std::process::ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let result = match task.as_str() {
        "bench-accept" => bench_accept::run(),
        _ => Err(format!("unknown task {task:?}; tasks: bench-accept").into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
