//! The live usage screen as a person sees it: `heeler usage live` runs in a
//! real tmux pane over a scratch home whose cache the worker built from a
//! Claude Code transcript written by the test; the tests type keys and read
//! the screen back. The costs expected are the bundled prices of the
//! requests written (Opus 4.6: $5 per million input tokens, $25 per
//! million output tokens). Skips (saying so) where tmux is missing.

use crate::tmux::{Pane, require_tmux, sh_quote};
use crate::usage_fixture::{Claude, TempDir, temp_dir, write};

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const HEELER: &str = env!("CARGO_BIN_EXE_heeler");

/// A scratch home with one transcript, and the live screen over it.
struct Live {
    pane: Pane,
    home: PathBuf,
    /// When the first request was made (two minutes before the start).
    first_at: i64,
    _scratch: TempDir,
}

fn transcript(home: &Path) -> PathBuf {
    home.join(".claude/projects/-home-dev-alpha/s.jsonl")
}

/// 100,000 input and 40,000 output tokens of Opus 4.6 at `at`: $0.50 +
/// $1.00.
fn first_request(at: i64) -> String {
    Claude {
        at,
        msg: "m1",
        req: "r1",
        input: 100_000,
        output: 40_000,
        ..Claude::default()
    }
    .line()
        + "\n"
}

/// 200,000 input tokens of Opus 4.6 at `at`: $1.00.
fn second_request(at: i64) -> String {
    Claude {
        at,
        msg: "m2",
        req: "r2",
        input: 200_000,
        output: 0,
        ..Claude::default()
    }
    .line()
        + "\n"
}

fn env(home: &Path) -> Vec<String> {
    [
        format!("HOME={}", home.display()),
        "PATH=/usr/bin:/bin".into(),
        "TERM=xterm-256color".into(),
        "TZ=UTC".into(),
        "LANG=C.UTF-8".into(),
    ]
    .into()
}

impl Live {
    /// Builds the cache with `heeler usage worker`, then starts `heeler
    /// usage <args>` in a `width`×`height` pane.
    fn start(name: &str, args: &[&str], (width, height): (u16, u16)) -> Live {
        let scratch = temp_dir(name);
        let home = scratch.join("home");
        let first_at = heeler::base::clock::unix_seconds() - 120;
        write(&transcript(&home), &first_request(first_at));
        let worker = Command::new(HEELER)
            .args(["usage", "worker"])
            .env_clear()
            .envs(env(&home).iter().filter_map(|kv| kv.split_once('=')))
            .output()
            .unwrap();
        assert!(worker.status.success(), "{worker:?}");
        let root = scratch.join("pane");
        std::fs::create_dir_all(&root).unwrap();
        let script = format!(
            "#!/bin/sh\nenv -i {vars} {heeler} usage {args}\necho $? > {exit}\nexec sleep 600\n",
            vars = env(&home)
                .iter()
                .map(|kv| sh_quote(kv))
                .collect::<Vec<_>>()
                .join(" "),
            heeler = sh_quote(HEELER),
            args = args
                .iter()
                .map(|a| sh_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
            exit = sh_quote(&root.join("exit").to_string_lossy()),
        );
        let pane = Pane::start(root, &script, width, height);
        Live {
            pane,
            home,
            first_at,
            _scratch: scratch,
        }
    }

    /// The cost cells of the table row starting with `agent`.
    fn costs(screen: &str, agent: &str) -> Option<Vec<String>> {
        let line = screen.lines().find(|l| l.starts_with(agent))?;
        let cells: Vec<String> = line
            .split_whitespace()
            .filter(|c| c.starts_with('$'))
            .map(str::to_string)
            .collect();
        (cells.len() == 3).then_some(cells)
    }

    /// Waits until the table shows `cost` in 7 and in 30 days for Claude
    /// Code (today's cell depends on the day the requests fell on).
    fn wait_for_cost(&self, cost: &str) -> String {
        self.pane.wait_for(&format!("Claude Code at {cost}"), |s| {
            Live::costs(s, "Claude Code ").is_some_and(|c| c[1] == cost && c[2] == cost)
        })
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // The worker a refresh started writes into the home: let it end.
        let dir = heeler::usage::paths::UsageDir(
            self.home.join(".local/state/herdr/plugins/heeler/usage"),
        );
        self.pane
            .wait_for("no worker", |_| !heeler::usage::worker::is_running(&dir));
    }
}

#[test]
fn the_first_paint_shows_the_cache_and_r_shows_a_grown_transcript() {
    require_tmux!();
    let live = Live::start("live-refresh", &["live"], (100, 40));
    let screen = live.wait_for_cost("$1.50");
    assert!(screen.contains("[Daily]  Models   Dirs"), "{screen}");
    assert!(screen.contains("Claude Code block  "), "{screen}");
    assert!(
        screen.contains("$1.50 so far; one request so far, no burn rate yet"),
        "{screen}"
    );
    assert!(
        screen.contains("Coverage: Claude Code 1 file, Codex 0 files"),
        "{screen}"
    );
    assert!(
        screen
            .trim_end()
            .ends_with("q close · Tab daily/models/dirs · r refresh"),
        "{screen}"
    );

    let mut file = OpenOptions::new()
        .append(true)
        .open(transcript(&live.home))
        .unwrap();
    file.write_all(second_request(live.first_at + 60).as_bytes())
        .unwrap();
    drop(file);
    live.pane.keys(&["r"]);
    let screen = live.wait_for_cost("$2.50");
    // Two requests a minute apart: $2.50 over 60 s is $150.00 an hour.
    assert!(
        screen.contains("$2.50 so far, $150.00/h, projected "),
        "{screen}"
    );
    live.pane.keys(&["q"]);
    assert_eq!(live.pane.exit_status(), 0);
}

#[test]
fn tab_cycles_the_tables_and_escape_closes_the_screen() {
    require_tmux!();
    let live = Live::start("live-keys", &["--watch"], (100, 40));
    live.wait_for_cost("$1.50");
    live.pane.keys(&["Tab"]);
    let screen = live.pane.wait_for_text(" Daily  [Models]  Dirs");
    assert!(screen.contains("Model usage, "), "{screen}");
    assert!(screen.contains("claude-opus-4-6"), "{screen}");
    live.pane.keys(&["Tab"]);
    let screen = live.pane.wait_for_text(" Daily   Models  [Dirs]");
    assert!(screen.contains("Directory usage, "), "{screen}");
    assert!(screen.contains("/home/dev/alpha"), "{screen}");
    live.pane.keys(&["Tab"]);
    let screen = live.pane.wait_for_text("[Daily]  Models   Dirs");
    assert!(screen.contains("Daily usage, "), "{screen}");
    live.pane.keys(&["Escape"]);
    assert_eq!(live.pane.exit_status(), 0);
    // The alternate screen is gone: the pane shows the shell's screen.
    let screen = live
        .pane
        .wait_for("the screen restored", |s| !s.contains("Usage in UTC"));
    assert!(!screen.contains("q close"), "{screen}");
}

/// A termination signal ends the screen as it ends `heeler pair`: the
/// terminal restored, exit 128 + the signal.
#[test]
fn termination_signals_restore_the_terminal_and_exit_128_plus_the_signal() {
    require_tmux!();
    for (signal, number) in [("TERM", 15), ("HUP", 1), ("INT", 2)] {
        let live = Live::start(&format!("live-sig{signal}"), &["live"], (100, 40));
        live.wait_for_cost("$1.50");
        live.pane.signal_child("heeler", signal);
        assert_eq!(live.pane.exit_status(), 128 + number, "SIG{signal}");
        let screen = live
            .pane
            .wait_for("the screen restored", |s| !s.contains("Usage in UTC"));
        assert!(
            screen.contains(&format!("heeler usage live: stopped by signal {number}")),
            "{screen}"
        );
    }
}

#[test]
fn too_small_says_what_it_needs_then_lays_out_on_resize() {
    require_tmux!();
    let live = Live::start("live-small", &["live"], (50, 12));
    let screen = live.pane.wait_for_text("Window too small: needs 60×");
    let text = screen.replace('\n', " ");
    let (width, height) = text
        .split("Window too small: needs ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .and_then(|size| size.split_once('×'))
        .map(|(w, h)| (w.parse::<u16>().unwrap(), h.parse::<u16>().unwrap()))
        .unwrap();
    assert_eq!(width, 60);
    assert!(height > 12, "{screen}");
    live.pane.tmux(&[
        "resize-window",
        "-x",
        &width.to_string(),
        "-y",
        &height.to_string(),
    ]);
    let screen = live.wait_for_cost("$1.50");
    assert_eq!(screen.lines().count(), usize::from(height), "{screen}");
    assert!(screen.contains("q close"), "{screen}");
    live.pane
        .tmux(&["resize-window", "-x", "59", "-y", &height.to_string()]);
    live.pane.wait_for_text("Window too small: needs 60×");
    live.pane.keys(&["q"]);
    assert_eq!(live.pane.exit_status(), 0);
}

/// A shell prompt runs the statusline with the terminal as its stdin: it
/// must answer without reading it (a read would wait for a key forever;
/// the pane's script records the exit only once the statusline is done).
#[test]
fn the_statusline_never_reads_a_terminal_stdin() {
    require_tmux!();
    let scratch = temp_dir("live-statusline-tty");
    let home = scratch.join("home");
    write(
        &transcript(&home),
        &first_request(heeler::base::clock::unix_seconds() - 120),
    );
    let root = scratch.join("pane");
    std::fs::create_dir_all(&root).unwrap();
    let script = format!(
        "#!/bin/sh\nenv -i {vars} {heeler} usage statusline\necho $? > {exit}\nexec sleep 600\n",
        vars = env(&home)
            .iter()
            .map(|kv| sh_quote(kv))
            .collect::<Vec<_>>()
            .join(" "),
        heeler = sh_quote(HEELER),
        exit = sh_quote(&root.join("exit").to_string_lossy()),
    );
    let pane = Pane::start(root, &script, 100, 10);
    assert_eq!(pane.exit_status(), 0);
    let screen = pane.wait_for_text(" today");
    assert!(!screen.contains("session"), "{screen}");
    let dir = heeler::usage::paths::UsageDir(home.join(".local/state/herdr/plugins/heeler/usage"));
    pane.wait_for("no worker", |_| !heeler::usage::worker::is_running(&dir));
}
