//! `cargo xtask test [cargo test options] [-- test options]`: the whole
//! test suite, ending with the list of what it skipped and why.
//!
//! A test whose tool is missing passes after writing `SKIPPED <test>:
//! <why>` to its real stderr (`tests/it/common.rs`); `cargo test` shows
//! those lines where they happen, among hundreds of others. This task runs
//! `cargo test --workspace` with the same arguments, passes its output
//! through as it comes, and repeats the skip lines at the end with their
//! count, so a run on a machine without tmux or sshd says so last. Its exit
//! status is cargo's; under `HEELER_REQUIRE_ALL=1` (`.ci/run`) a skip is
//! already a failed test.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::process::{Command, ExitCode, Stdio};

/// The start of a skipped test's line.
const SKIPPED: &[u8] = b"SKIPPED ";
/// The start of a skipped part's line (allowed under HEELER_REQUIRE_ALL).
const SKIPPED_PART: &[u8] = b"SKIPPED (part, this machine) ";

/// What the skip lines of a run amount to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Skips {
    pub tests: Vec<String>,
    pub parts: Vec<String>,
}

impl Skips {
    /// Files one line of cargo's stderr (pure): a skip line is kept without
    /// its first words.
    pub fn note(&mut self, line: &[u8]) {
        let text = |rest: &[u8]| String::from_utf8_lossy(rest).trim_end().to_string();
        if let Some(rest) = line.strip_prefix(SKIPPED_PART) {
            self.parts.push(text(rest));
        } else if let Some(rest) = line.strip_prefix(SKIPPED) {
            self.tests.push(text(rest));
        }
    }

    /// The closing summary (pure).
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        if self.tests.is_empty() {
            out.push_str("== skipped: no tests\n");
        } else {
            out.push_str(&format!(
                "== skipped: {} test{} (each passed without running; .ci/run installs what they need, and HEELER_REQUIRE_ALL=1 fails them):\n",
                self.tests.len(),
                plural(self.tests.len())
            ));
            for line in &self.tests {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if !self.parts.is_empty() {
            out.push_str(&format!(
                "== skipped parts (a property of this machine, allowed everywhere): {}\n",
                self.parts.len()
            ));
            for line in &self.parts {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}

pub fn run(args: &[String]) -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(crate::project_root())
        .args(["test", "--workspace"])
        .args(args)
        .stderr(Stdio::piped());
    // `cargo run` gave this process the xtask package's variables; build
    // scripts that watch them (ring's watch CARGO_PKG_NAME) would rerun and
    // rebuild their dependents, unlike the developer's own `cargo test`.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_")
            || matches!(
                &*key,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "OUT_DIR"
            )
        {
            command.env_remove(&*key);
        }
    }
    // Cargo colours only a terminal; ours is one when the person's is.
    if std::io::stderr().is_terminal() && std::env::var_os("CARGO_TERM_COLOR").is_none() {
        command.env("CARGO_TERM_COLOR", "always");
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("xtask test: cannot run cargo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut skips = Skips::default();
    if let Some(stderr) = child.stderr.take() {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        let mut out = std::io::stderr();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let _ = out.write_all(&line);
            skips.note(&line);
            line.clear();
        }
    }
    let status = child.wait();
    let _ = std::io::stdout().flush();
    eprint!("\n{}", skips.summary());
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("== cargo test failed ({status})");
            ExitCode::from(
                status
                    .code()
                    .and_then(|c| u8::try_from(c).ok())
                    .unwrap_or(1),
            )
        }
        Err(e) => {
            eprintln!("xtask test: cargo test did not finish: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_lines_are_sorted_into_tests_and_parts_and_counted() {
        let mut skips = Skips::default();
        for line in [
            "     Running tests/it/main.rs (target/debug/deps/it-0123456789abcdef)\n",
            "SKIPPED popup_tmux::resizes: tmux is not installed\n",
            "SKIPPED: an old-style line is not one of ours\n",
            "SKIPPED (part, this machine) usage::mtime: coarse timestamps\n",
            "SKIPPED popup_tmux::quits: tmux is not installed\r\n",
            "test result: ok. 18 passed\n",
        ] {
            skips.note(line.as_bytes());
        }
        assert_eq!(
            skips.tests,
            [
                "popup_tmux::resizes: tmux is not installed",
                "popup_tmux::quits: tmux is not installed"
            ]
        );
        assert_eq!(skips.parts, ["usage::mtime: coarse timestamps"]);
        assert_eq!(
            skips.summary(),
            "== skipped: 2 tests (each passed without running; .ci/run installs what they need, and HEELER_REQUIRE_ALL=1 fails them):\n  popup_tmux::resizes: tmux is not installed\n  popup_tmux::quits: tmux is not installed\n== skipped parts (a property of this machine, allowed everywhere): 1\n  usage::mtime: coarse timestamps\n"
        );
        assert_eq!(Skips::default().summary(), "== skipped: no tests\n");
    }
}
