//! Developer tasks that are not tests: `cargo xtask <task>`.
//!
//! Tasks: `bench-accept` (CPU time and peak RSS of `heeler accept`),
//! `bench-popup` (start to first painted checklist of `heeler pair`).

mod bench_accept;
mod bench_popup;

fn main() -> std::process::ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let result = match task.as_str() {
        "bench-accept" => bench_accept::run(),
        "bench-popup" => bench_popup::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        _ => Err(format!("unknown task {task:?}; tasks: bench-accept, bench-popup").into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
