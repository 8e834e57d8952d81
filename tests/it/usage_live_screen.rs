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
    fn start(name: &str, args: &[&str], size: (u16, u16)) -> Live {
        let first_at = heeler::base::clock::unix_seconds() - 120;
        Live::start_with(name, args, size, first_at, &first_request(first_at), None)
    }

    /// [`Live::start`] over the transcript `text` (its first request at
    /// `first_at`), and, with `limits`, Claude Code's limits as read just
    /// now (the app's toggle on, so the views show them).
    fn start_with(
        name: &str,
        args: &[&str],
        (width, height): (u16, u16),
        first_at: i64,
        text: &str,
        limits: Option<&str>,
    ) -> Live {
        let scratch = temp_dir(name);
        let home = scratch.join("home");
        write(&transcript(&home), text);
        let worker = Command::new(HEELER)
            .args(["usage", "worker"])
            .env_clear()
            .envs(env(&home).iter().filter_map(|kv| kv.split_once('=')))
            .output()
            .unwrap();
        assert!(worker.status.success(), "{worker:?}");
        if let Some(limits) = limits {
            let usage = home.join(".local/state/herdr/plugins/heeler/usage");
            std::fs::write(usage.join("claude-limits.wanted"), "").unwrap();
            std::fs::write(usage.join("limits-claude.json"), limits).unwrap();
        }
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
        screen
            .lines()
            .filter(|l| l.starts_with(agent))
            .map(|line| {
                line.split_whitespace()
                    .filter(|c| c.starts_with('$'))
                    .map(str::to_string)
                    .collect::<Vec<String>>()
            })
            .find(|cells| cells.len() == 3 && line_is_costs(cells))
    }

    /// Waits until the table shows `cost` in 7 and in 30 days for Claude
    /// Code (today's cell depends on the day the requests fell on).
    fn wait_for_cost(&self, cost: &str) -> String {
        self.pane.wait_for(&format!("Claude Code at {cost}"), |s| {
            Live::costs(s, "Claude Code ").is_some_and(|c| c[1] == cost && c[2] == cost)
        })
    }
}

/// Whether the dollar cells are the cost table's three (a block's or a
/// limit's line has prose between them).
fn line_is_costs(cells: &[String]) -> bool {
    cells.iter().all(|c| {
        c[1..]
            .chars()
            .all(|ch| ch.is_ascii_digit() || ch == '.' || ch == ',')
    })
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
        screen.contains("$1.50 so far; no burn rate before 3 requests over 10 min"),
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
    // Two requests a minute apart are not a burn rate yet.
    assert!(
        screen.contains("$2.50 so far; no burn rate before 3 requests over 10 min"),
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
/// terminal restored, exit 128 + the signal (SIGQUIT too: it would
/// otherwise leave the terminal raw on the alternate screen).
#[test]
fn termination_signals_restore_the_terminal_and_exit_128_plus_the_signal() {
    require_tmux!();
    for (signal, number) in [("TERM", 15), ("HUP", 1), ("INT", 2), ("QUIT", 3)] {
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
fn below_the_minimum_it_names_the_window_then_lays_out_on_resize() {
    require_tmux!();
    let live = Live::start("live-small", &["live"], (30, 6));
    let screen = live.pane.wait_for_text("This window is 30×6;");
    let text = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    let (width, height) = text
        .split("needs at least ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .and_then(|size| size.split_once('×'))
        .map(|(w, h)| (w.parse::<u16>().unwrap(), h.parse::<u16>().unwrap()))
        .unwrap();
    assert!(width > 30 && height > 6, "{screen}");
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
    live.pane.tmux(&[
        "resize-window",
        "-x",
        &(width - 1).to_string(),
        "-y",
        &height.to_string(),
    ]);
    live.pane
        .wait_for_text(&format!("This window is {}×{height};", width - 1));
    live.pane.keys(&["q"]);
    assert_eq!(live.pane.exit_status(), 0);
}

/// Claude Code's 5-hour limit 50% used, resetting in 3 hours, read just
/// now (`attempted_at`: not due again during the test).
fn half_used_limits(now: i64) -> String {
    format!(
        r#"{{"state":"ok","attempted_at":{now},"observed_at":{now},"windows":[{{"id":"five_hour","window_minutes":300,"used_percent":50,"resets_at":{}}}]}}"#,
        now + 3 * 3600
    )
}

/// Three requests of $1.50 at 25, 20 and 15 minutes ago: a block with a
/// burn rate ($4.50 over 10 minutes, $27.00 an hour), whose projection
/// at the block's end is far past the 5-hour limit that is half used
/// now (50% × projected / $4.50 > 100% for any time left over 10 s).
fn busy_transcript(now: i64) -> (i64, String) {
    let first = now - 25 * 60;
    let mut text = String::new();
    for (n, at) in [first, now - 20 * 60, now - 15 * 60]
        .into_iter()
        .enumerate()
    {
        let (msg, req) = (format!("busy{n}"), format!("rbusy{n}"));
        text.push_str(
            &(Claude {
                at,
                msg: &msg,
                req: &req,
                input: 100_000,
                output: 40_000,
                ..Claude::default()
            }
            .line()
                + "\n"),
        );
    }
    (first, text)
}

/// Where `HEELER_CAPTURE_DIR` names a directory, the screen with its
/// colours (`capture-pane -e`) is saved there for the release notes.
fn save_capture(name: &str, pane: &crate::tmux::Pane) {
    if let Some(dir) = std::env::var_os("HEELER_CAPTURE_DIR") {
        let screen = pane.tmux(&["capture-pane", "-e", "-p"]);
        std::fs::write(Path::new(&dir).join(format!("{name}.txt")), screen).unwrap();
    }
}

/// The sizes people have: 80×24 (the program's size inside herdr's popup
/// in a 83×26 terminal, and the most common terminal), 60×20 and 200×50.
/// At each: the first paint, the warning whole and highlighted, and a
/// request appended to the transcript on screen with no key pressed (the
/// time it took is printed; the bound is the wait's).
#[test]
fn at_80x24_60x20_and_200x50_it_paints_warns_whole_and_shows_an_append() {
    require_tmux!();
    for (width, height) in [(80u16, 24u16), (60, 20), (200, 50)] {
        let now = heeler::base::clock::unix_seconds();
        let (first_at, text) = busy_transcript(now);
        let live = Live::start_with(
            &format!("live-{width}x{height}"),
            &["live"],
            (width, height),
            first_at,
            &text,
            Some(&half_used_limits(now)),
        );
        let screen = live.wait_for_cost("$4.50");
        let size = format!("{width}×{height}");
        assert_eq!(
            screen.lines().count(),
            usize::from(height),
            "{size}\n{screen}"
        );
        assert!(
            screen
                .lines()
                .all(|l| l.chars().count() <= usize::from(width)),
            "{size}\n{screen}"
        );
        // The warning, whole on one line or wrapped (never cut): its
        // percentage over 100 and the 50% used now.
        let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
        let warning = flat
            .split("Claude Code 5h limit projected ")
            .nth(1)
            .unwrap_or_else(|| panic!("{size}: no warning\n{screen}"));
        let percent: u64 = warning.split('%').next().unwrap().parse().unwrap();
        assert!(percent > 100, "{size}: {warning}");
        assert!(
            warning.contains("(50% used now)"),
            "{size}: the warning is cut\n{screen}"
        );
        assert!(!screen.contains("projected 1…"), "{size}\n{screen}");
        // Highlighted: the capture with attributes has bold red (SGR 1 and
        // 31, however tmux spells them) just before the warning.
        let coloured = live.pane.tmux(&["capture-pane", "-e", "-p"]);
        let before = coloured
            .split("Claude Code 5h limit projected")
            .next()
            .unwrap();
        let sgr = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
        assert!(
            sgr.contains("\x1b[") && sgr.contains("31") && sgr.contains('1'),
            "{size}: not highlighted: {sgr:?}"
        );
        // The tightest limit with its reset countdown, whole.
        assert!(flat.contains("50% used, resets "), "{size}\n{screen}");
        assert!(
            flat.contains("(in 2h 59m)") || flat.contains("(in 3h 00m)"),
            "{size}\n{screen}"
        );
        save_capture(&format!("live-{width}x{height}-first"), &live.pane);

        // A request appended while the screen is open: $1.00 more, shown
        // without a key.
        let appended = std::time::Instant::now();
        let mut file = OpenOptions::new()
            .append(true)
            .open(transcript(&live.home))
            .unwrap();
        file.write_all(second_request(now - 60).as_bytes()).unwrap();
        drop(file);
        live.wait_for_cost("$5.50");
        eprintln!(
            "live screen {size}: an appended request on screen after {} ms",
            appended.elapsed().as_millis()
        );
        save_capture(&format!("live-{width}x{height}-append"), &live.pane);
        live.pane.keys(&["q"]);
        assert_eq!(live.pane.exit_status(), 0);
    }
}

/// A model name, a directory and a session id that carry an OSC 52
/// clipboard write, an OSC 0 title, a screen clear, an 8-bit CSI and a
/// bidi override: the screen draws them inert (U+FFFD where each control
/// was) in every tab, and the pane's title is untouched.
#[test]
fn hostile_transcript_strings_are_drawn_inert() {
    require_tmux!();
    let now = heeler::base::clock::unix_seconds();
    // JSON escapes, so the parsed strings hold the raw controls.
    let evil = r"\u001b]52;c;cHduZWQ=\u0007\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eevil";
    let line = Claude {
        at: now - 120,
        msg: "m1",
        req: "r1",
        model: &format!("claude-opus-4-6{evil}"),
        cwd: &format!("/home/dev/{evil}"),
        input: 100_000,
        output: 40_000,
        ..Claude::default()
    }
    .line()
    .replace(r#""sessionId":"s""#, &format!(r#""sessionId":"s{evil}""#));
    let live = Live::start_with(
        "live-hostile",
        &["live"],
        (80, 24),
        now - 120,
        &(line + "\n"),
        None,
    );
    let title_before = live.pane.tmux(&["display-message", "-p", "#{pane_title}"]);
    live.pane.wait_for_text("Claude Code ");
    for tab in ["[Models]", "[Dirs]", "[Daily]"] {
        live.pane.keys(&["Tab"]);
        let screen = live.pane.wait_for_text(tab);
        if tab != "[Daily]" {
            assert!(screen.contains("\u{fffd}]52;c;cHduZWQ="), "{tab}\n{screen}");
            assert!(screen.contains("\u{fffd}evil"), "{tab}\n{screen}");
        }
        assert!(!screen.contains("pwned\u{7}"), "{screen}");
        // The screen was not cleared under the head by an ESC [2J.
        assert!(screen.contains("Usage in UTC"), "{tab}\n{screen}");
        save_capture(
            &format!("live-hostile-{}", tab.trim_matches(['[', ']'])),
            &live.pane,
        );
    }
    assert_eq!(
        live.pane.tmux(&["display-message", "-p", "#{pane_title}"]),
        title_before
    );
    assert_eq!(
        live.pane.tmux(&["list-buffers"]),
        "",
        "a clipboard write ran"
    );
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
