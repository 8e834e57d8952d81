//! The live usage screen (`heeler usage live`, `heeler usage --watch`, and
//! herdr's `heeler.usage` popup): the summary's numbers, the active 5-hour
//! blocks, the limits as bars with their reset countdowns and a 30-day
//! cost sparkline, kept up to date in one full-screen terminal.
//!
//! - `frame.rs`: the screen as lines, pure (data, request, window size,
//!   tab, glyphs and colour in): what fits by priority, warnings first,
//!   and the "too small" message below the minimum.
//! - `watch.rs`: the transcripts written to lately, as the worker saw
//!   them, which the screen `stat`s every second to see new spend.
//! - `action.rs`: `heeler usage live-action`, herdr's `heeler.usage`
//!   action, which opens the `usage` popup pane running this screen.
//! - `mod.rs` (this file): the thin loop. It reads the cache the way every
//!   view does (`views::load`, so a stale cache starts the same background
//!   worker the app's query starts), repaints every second (the countdowns
//!   move) and at once on a key or a new window size, checks the watched
//!   transcripts every [`CHECK`] and starts a refresh when one changed,
//!   reads the cache again as soon as a refresh it waits on has ended (and
//!   every [`RELOAD`] regardless), and decides what a key does with the
//!   pure [`on_key`].
//!
//! Invariants: only this loop and `base::terminal` touch the terminal; the
//! screen never waits on the worker (a first run shows "scanning…" and
//! fills in when the worker ends); every way out (a key, a signal, a
//! closed stdin) restores the terminal; a termination signal (SIGINT,
//! SIGTERM, SIGHUP, SIGQUIT) exits 128 + the signal, as `heeler pair`
//! does.

pub mod action;
pub(crate) mod frame;
pub mod watch;

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::base::keys::{self, Key};
use crate::base::sys;
use crate::base::terminal::{self, PopupTerminal};
use crate::cli::UsageViewFlags;
use crate::exit::Failure;
use crate::usage::live::frame::Tab;
use crate::usage::live::watch::Watch;
use crate::usage::paths::UsageDir;
use crate::usage::query::RefreshMode;
use crate::usage::views::picture::Glyphs;
use crate::usage::views::render::View;
use crate::usage::views::{self, LoadMode, Loaded};
use crate::usage::worker;

/// How often the screen reads the cache again when nothing it watches
/// changed (a refresh someone else started, the cache's age).
pub(crate) const RELOAD: Duration = Duration::from_secs(10);
/// How often the watched transcripts are checked, and a refresh the screen
/// waits on is looked at.
pub(crate) const CHECK: Duration = Duration::from_secs(1);
/// How often a refresh the screen waits on is looked at (a lock probe), so
/// its result is on screen soon after it ends.
const WAIT_CHECK: Duration = Duration::from_millis(200);
/// How long the loop waits for a key before it looks at the clock, the
/// window size and signals again.
const TICK: Duration = Duration::from_millis(100);
/// How often the screen is repainted without a key or a new size (the
/// countdowns and the block's time move).
const REPAINT: Duration = Duration::from_secs(1);
const NAME: &str = "heeler usage live";

/// What a key asks of the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Quit,
    /// Show this tab.
    Show(Tab),
    /// Read the cache now and refresh it in the background.
    Refresh,
    Nothing,
}

/// What `key` does on `tab` (pure).
pub(crate) fn on_key(key: Key, tab: Tab) -> Action {
    match key {
        Key::Char('q') | Key::Escape | Key::CtrlC => Action::Quit,
        Key::Tab => Action::Show(tab.next()),
        Key::Char('r') => Action::Refresh,
        _ => Action::Nothing,
    }
}

/// The command. Bad options fail before the terminal changes.
pub(crate) fn run(flags: &UsageViewFlags) -> Result<(), Failure> {
    if !terminal::is_terminal() {
        return Err(Failure::new(
            format!("{NAME} must run in a terminal (for one look, run heeler usage)"),
            1,
        ));
    }
    let auto = LoadMode {
        wait_first_run: false,
        refresh: RefreshMode::Auto,
    };
    let mut cache = Cache::open(views::load(View::Summary, flags, NAME, auto)?);
    let no_color = views::no_color();
    let glyphs = Glyphs::from_env(no_color);
    let mut term = PopupTerminal::enter()
        .map_err(|e| Failure::new(format!("{NAME}: cannot set up the terminal: {e}"), 1))?;
    sys::catch_termination_signals()
        .map_err(|e| Failure::new(format!("{NAME}: cannot catch signals: {e}"), 1))?;
    let keys = terminal::key_reader();
    let mut tab = Tab::Daily;
    let mut painted: Option<(Instant, (usize, usize))> = None;
    let mut result = Ok(());
    loop {
        let size = PopupTerminal::size();
        let due = painted.is_none_or(|(at, was)| was != size || at.elapsed() >= REPAINT);
        if due {
            let Loaded { data, req, .. } = &mut cache.loaded;
            data.now = crate::base::clock::unix_seconds();
            let lines = frame::frame(data, req, size, tab, glyphs, !no_color);
            let _ = term.redraw(&lines, size.0);
            painted = Some((Instant::now(), size));
        }
        if let Some(signal) = sys::termination_signal() {
            result = Err(Failure::new(
                format!("{NAME}: stopped by signal {signal}"),
                crate::exit::signal_status(signal),
            ));
            break;
        }
        let mut refresh = None;
        match keys.recv_timeout(TICK) {
            Ok(bytes) => {
                for key in keys::decode(&bytes) {
                    match on_key(key, tab) {
                        Action::Quit => {
                            drop(term);
                            return result;
                        }
                        Action::Show(next) => tab = next,
                        Action::Refresh => refresh = Some(RefreshMode::Force),
                        Action::Nothing => continue,
                    }
                    painted = None;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if let Some(mode) = refresh.or_else(|| cache.due()) {
            if let Err(e) = cache.read(flags, mode) {
                result = Err(e);
                break;
            }
            painted = None;
        }
    }
    drop(term);
    result
}

/// What the screen shows and how it keeps it fresh: the cache as last
/// read, the transcripts it watches, and whether a refresh it waits on is
/// running.
struct Cache {
    loaded: Loaded,
    dir: Option<UsageDir>,
    watch: Watch,
    /// A refresh is running that the screen waits on (its own, or the one
    /// the first reading found).
    waiting: bool,
    loaded_at: Instant,
    checked_at: Instant,
}

impl Cache {
    fn open(loaded: Loaded) -> Cache {
        let dir = UsageDir::from_env().ok();
        let watch = dir
            .as_ref()
            .map(|d| Watch::read(&d.active()))
            .unwrap_or_default();
        Cache {
            waiting: loaded.data.refresh == "running",
            loaded,
            dir,
            watch,
            loaded_at: Instant::now(),
            checked_at: Instant::now(),
        }
    }

    /// Whether to read the cache now, and how: at each [`CHECK`], what
    /// [`next_reading`] decides; else every [`RELOAD`].
    fn due(&mut self) -> Option<RefreshMode> {
        let every = if self.waiting { WAIT_CHECK } else { CHECK };
        if self.checked_at.elapsed() >= every {
            self.checked_at = Instant::now();
            let running = self.dir.as_ref().is_some_and(worker::is_running);
            // A refresh someone else started (the app's query, a hook) is
            // read as soon as it ends too.
            self.waiting |= running;
            let watch = &self.watch;
            match next_reading(self.waiting, running, || watch.changed(watch::seen)) {
                Reading::Refresh => return Some(RefreshMode::Force),
                Reading::Read => return Some(RefreshMode::Auto),
                Reading::Wait => {}
            }
        }
        (self.loaded_at.elapsed() >= RELOAD).then_some(RefreshMode::Auto)
    }

    /// Reads the cache through `views::load` (`Force` starts a refresh
    /// first); once no refresh runs, the worker's list of active
    /// transcripts too.
    fn read(&mut self, flags: &UsageViewFlags, refresh: RefreshMode) -> Result<(), Failure> {
        let mode = LoadMode {
            wait_first_run: false,
            refresh,
        };
        self.loaded = views::load(View::Summary, flags, NAME, mode)?;
        self.waiting = self.loaded.data.refresh == "running";
        if !self.waiting
            && let Some(dir) = &self.dir
        {
            self.watch = Watch::read(&dir.active());
        }
        self.loaded_at = Instant::now();
        Ok(())
    }
}

/// What the screen does at a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Start a refresh now and read the cache (a watched transcript moved).
    Refresh,
    /// Read the cache (the refresh waited on has ended).
    Read,
    Wait,
}

/// The check's decision (pure but for `moved`, asked only when it counts):
/// while a refresh the screen waits on runs, wait; when it has ended, read
/// its result; otherwise start one when a watched transcript moved.
pub(crate) fn next_reading(
    waiting: bool,
    worker_running: bool,
    moved: impl FnOnce() -> bool,
) -> Reading {
    match (waiting, worker_running) {
        (true, true) => Reading::Wait,
        (true, false) => Reading::Read,
        (false, true) => Reading::Wait,
        (false, false) if moved() => Reading::Refresh,
        (false, false) => Reading::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_escape_and_ctrl_c_quit_tab_cycles_and_r_refreshes() {
        for key in [Key::Char('q'), Key::Escape, Key::CtrlC] {
            assert_eq!(on_key(key, Tab::Models), Action::Quit);
        }
        assert_eq!(on_key(Key::Tab, Tab::Daily), Action::Show(Tab::Models));
        assert_eq!(on_key(Key::Tab, Tab::Models), Action::Show(Tab::Dirs));
        assert_eq!(on_key(Key::Tab, Tab::Dirs), Action::Show(Tab::Daily));
        assert_eq!(on_key(Key::Char('r'), Tab::Dirs), Action::Refresh);
        for key in [Key::Enter, Key::Up, Key::Char('x'), Key::Other, Key::Space] {
            assert_eq!(on_key(key, Tab::Daily), Action::Nothing);
        }
    }

    #[test]
    fn a_moved_transcript_starts_a_refresh_whose_end_is_read_at_once() {
        // (waiting, worker running, moved) → decision, every case.
        let cases = [
            ((true, true, true), Reading::Wait),
            ((true, true, false), Reading::Wait),
            ((true, false, true), Reading::Read),
            ((true, false, false), Reading::Read),
            ((false, true, true), Reading::Wait),
            ((false, true, false), Reading::Wait),
            ((false, false, true), Reading::Refresh),
            ((false, false, false), Reading::Wait),
        ];
        for ((waiting, running, moved), want) in cases {
            assert_eq!(
                next_reading(waiting, running, || moved),
                want,
                "{waiting} {running} {moved}"
            );
        }
    }
}
