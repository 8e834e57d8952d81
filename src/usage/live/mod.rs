//! The live usage screen (`heeler usage live`, `heeler usage --watch`, and
//! herdr's `heeler.usage` popup): the summary's numbers, the active 5-hour
//! blocks, the limits as bars with their reset countdowns and a 30-day
//! cost sparkline, kept up to date in one full-screen terminal.
//!
//! - `frame.rs`: the screen as lines, pure (data, request, window size,
//!   tab and glyphs in), with the "too small" message.
//! - `action.rs`: `heeler usage live-action`, herdr's `heeler.usage`
//!   action, which opens the `usage` popup pane running this screen.
//! - `mod.rs` (this file): the thin loop. It reads the cache the way every
//!   view does (`views::load`, so a stale cache starts the same background
//!   worker the app's query starts), repaints every second (the countdowns
//!   move) and at once on a key or a new window size, reads the cache
//!   again every [`RELOAD`], and decides what a key does with the pure
//!   [`on_key`].
//!
//! Invariants: only this loop and `base::terminal` touch the terminal; the
//! screen never waits on the worker (a first run shows "no data yet" and
//! fills in at the next reading); every way out (a key, a signal, a closed
//! stdin) restores the terminal; a termination signal exits 128 + the
//! signal, as `heeler pair` does.

pub mod action;
pub(crate) mod frame;

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::base::keys::{self, Key};
use crate::base::sys;
use crate::base::terminal::{self, PopupTerminal};
use crate::cli::UsageViewFlags;
use crate::exit::Failure;
use crate::usage::live::frame::Tab;
use crate::usage::query::RefreshMode;
use crate::usage::views::picture::Glyphs;
use crate::usage::views::render::View;
use crate::usage::views::{self, LoadMode, Loaded};

/// How often the screen reads the cache again.
pub(crate) const RELOAD: Duration = Duration::from_secs(3);
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
    let mut loaded = views::load(View::Summary, flags, NAME, auto)?;
    let glyphs = Glyphs::from_env(views::no_color());
    let mut term = PopupTerminal::enter()
        .map_err(|e| Failure::new(format!("{NAME}: cannot set up the terminal: {e}"), 1))?;
    sys::catch_termination_signals()
        .map_err(|e| Failure::new(format!("{NAME}: cannot catch signals: {e}"), 1))?;
    let keys = terminal::key_reader();
    let mut tab = Tab::Daily;
    let mut loaded_at = Instant::now();
    let mut painted: Option<(Instant, (usize, usize))> = None;
    let mut result = Ok(());
    loop {
        let size = PopupTerminal::size();
        let due = painted.is_none_or(|(at, was)| was != size || at.elapsed() >= REPAINT);
        if due {
            let Loaded { data, req, .. } = &mut loaded;
            data.now = crate::base::clock::unix_seconds();
            let _ = term.redraw(&frame::frame(data, req, size, tab, glyphs), size.0);
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
        if refresh.is_none() && loaded_at.elapsed() >= RELOAD {
            refresh = Some(RefreshMode::Auto);
        }
        if let Some(mode) = refresh {
            let mode = LoadMode {
                wait_first_run: false,
                refresh: mode,
            };
            match views::load(View::Summary, flags, NAME, mode) {
                Ok(next) => loaded = next,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            loaded_at = Instant::now();
            painted = None;
        }
    }
    drop(term);
    result
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
}
