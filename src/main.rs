//! `heeler`: one static binary that is the whole herdr plugin.
//!
//! `main` only parses arguments, dispatches, and turns a command's failure
//! into one stderr line and an exit status. See ARCHITECTURE.md.
//!
//! Before anything else, every command turns core dumps off for its
//! process. Most of them hold a secret (the popup and `pair --no-ui` a
//! Bootstrap Key seed, the hooks, `doctor` and `wire` Notification Keys and
//! tokens, `accept` the pending ceremony), a panic aborts, and a core file
//! would keep those secrets on disk. One rule for every command is simpler
//! than a list to keep in step, and harmless: nobody debugs heeler from a
//! core, the dumpable flag ends at the `exec` of a child, and children get
//! only a lower soft core limit, which they may raise again.

use std::process::ExitCode;

use heeler::{cli, doctor, exit, hooks, link, pair, usage, wire};

fn main() -> ExitCode {
    // A failure leaves the system's default, which is no reason to stop.
    let _ = heeler::base::disable_core_dumps();
    let args = match cli::from_env() {
        Ok(args) => args,
        Err(cli::EarlyExit::Help(text)) => {
            return finish(exit::write_stdout(&format!("{text}\n")));
        }
        Err(cli::EarlyExit::Usage(text)) => {
            return finish(Err(exit::Failure::new(text, cli::USAGE_ERROR_STATUS)));
        }
    };
    let result = match args.command {
        cli::Command::Version => {
            exit::write_stdout(concat!("heeler ", env!("CARGO_PKG_VERSION"), "\n"))
        }
        cli::Command::Wire(wire_args) => wire::command::run(wire_args),
        cli::Command::Accept(accept_args) => return pair::accept::run(accept_args),
        // A config-only code needs no popup: it is printed and done.
        cli::Command::Pair(pair_args) if !pair_args.no_ui && !pair_args.config_only => {
            pair::popup::event_loop::run(pair_args)
        }
        cli::Command::Pair(pair_args) => pair::headless::run(pair_args),
        cli::Command::NotifyHook(hook_args) => hooks::worker::notify_hook(hook_args),
        cli::Command::ActivityHook(hook_args) => hooks::worker::activity_hook(hook_args),
        cli::Command::HookWorker(worker_args) => hooks::worker::run(worker_args),
        cli::Command::SidebarHook(hook_args) => hooks::startup::run(hook_args),
        cli::Command::Usage(usage_args) => usage::command::run(usage_args),
        cli::Command::UsagePlumbing(command) => usage::command::run_plumbing(command),
        cli::Command::PairAction(_) => pair::action::run(),
        cli::Command::Doctor(doctor_args) => doctor::run(doctor_args),
        cli::Command::Link(_) => link::run(),
        cli::Command::Nothing => Err(exit::Failure::new(
            "heeler: no command given; see heeler --help",
            cli::USAGE_ERROR_STATUS,
        )),
    };
    finish(result)
}

/// Prints a failure's line; the exit status of a command's result.
fn finish(result: Result<(), exit::Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            exit::write_stderr_line(&failure.line);
            ExitCode::from(failure.status)
        }
    }
}
