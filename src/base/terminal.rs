//! The terminal of a full-screen program (the pairing popup, the live
//! usage screen): raw mode on the alternate screen with the cursor hidden,
//! keys from a reader thread, and a guard that puts everything back.
//!
//! The guard restores the terminal when it is dropped, so every way out of
//! the program (a key, a signal, an error) leaves the user's terminal as it
//! was; a panic hook does the same where no destructor runs (release builds
//! abort on panic). The alternate screen keeps an ordinary terminal's
//! scrollback intact when the program runs outside herdr.
//!
//! [`inert`] is the one rule for text that came from outside (a transcript's
//! model name, directory or session id, a file's value) on its way to a
//! terminal: every view calls it where such a string enters it.

use std::borrow::Cow;
use std::io::{self, Read, Stdout, Write};
use std::os::fd::AsFd;
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver};

use termion::raw::{IntoRawMode, RawTerminal};
use termion::screen::ToAlternateScreen;

use crate::base::sys::{self, TerminalModes};

/// Clears the screen and its scrollback, cursor home.
const CLEAR: &str = "\x1b[2J\x1b[3J\x1b[H";
/// Styles off, cursor shown, main screen back.
const RESTORE: &str = "\x1b[0m\x1b[?25h\x1b[?1049l";

/// The terminal's modes before the popup changed them, for the panic hook.
static ORIGINAL_MODES: OnceLock<TerminalModes> = OnceLock::new();

/// On a panic: put the terminal back first, then report as usual.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let mut out = io::stdout();
        let _ = out.write_all(RESTORE.as_bytes());
        let _ = out.flush();
        if let Some(modes) = ORIGINAL_MODES.get() {
            let _ = sys::restore_terminal_modes(out.as_fd(), modes);
        }
        previous(info);
    }));
}

/// The terminal in popup mode; dropping it restores the cursor, the main
/// screen and the modes.
pub(crate) struct PopupTerminal {
    out: RawTerminal<Stdout>,
}

impl PopupTerminal {
    /// Enters raw mode and the alternate screen and hides the cursor.
    pub(crate) fn enter() -> io::Result<PopupTerminal> {
        if let Ok(modes) = sys::terminal_modes(io::stdout().as_fd())
            && ORIGINAL_MODES.set(modes).is_ok()
        {
            install_panic_hook();
        }
        let mut out = io::stdout().into_raw_mode()?;
        write!(out, "{ToAlternateScreen}{}", termion::cursor::Hide)?;
        out.flush()?;
        Ok(PopupTerminal { out })
    }

    /// `(rows, columns)`, or a conventional 24×80 if the size is unknown.
    pub(crate) fn size() -> (usize, usize) {
        termion::terminal_size()
            .map(|(columns, rows)| (usize::from(rows), usize::from(columns)))
            .unwrap_or((24, 80))
    }

    /// Replaces the screen with `lines` (no final newline, so nothing
    /// scrolls).
    pub(crate) fn paint(&mut self, lines: &[String]) -> io::Result<()> {
        let mut frame = String::from(CLEAR);
        frame.push_str(&lines.join("\r\n"));
        self.out.write_all(frame.as_bytes())?;
        self.out.flush()
    }

    /// Replaces the screen with `lines` row by row, each row cleared just
    /// before it is written and the rows below the last line cleared too,
    /// so a screen repainted every second does not flicker (nothing is
    /// cleared that is not rewritten at once). `rows` is the window's
    /// height; lines past it are not written.
    pub(crate) fn redraw(&mut self, lines: &[String], rows: usize) -> io::Result<()> {
        let mut frame = String::new();
        for row in 0..rows {
            frame.push_str(&format!("\x1b[{};1H\x1b[2K", row + 1));
            if let Some(line) = lines.get(row) {
                frame.push_str(line);
            }
        }
        self.out.write_all(frame.as_bytes())?;
        self.out.flush()
    }

    /// Writes raw bytes (an OSC request) without repainting.
    pub(crate) fn send(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}

impl Drop for PopupTerminal {
    fn drop(&mut self) {
        // Best effort: the terminal may already be gone. The main screen
        // is back before this returns (termion's `AlternateScreen` leaves
        // it in stdout's buffer until exit), so a line the command prints
        // on stderr next lands on it.
        let _ = write!(self.out, "{CLEAR}{RESTORE}");
        let _ = self.out.flush();
        // `out` drops next: raw mode off.
    }
}

/// Spawns the thread that reads stdin; each message is one read's bytes.
/// The channel disconnects when stdin reaches its end or fails.
pub(crate) fn key_reader() -> Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = io::stdin();
        let mut buffer = [0u8; 256];
        loop {
            match stdin.read(&mut buffer) {
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sender.send(buffer[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    receiver
}

/// Whether both stdin and stdout are terminals.
pub(crate) fn is_terminal() -> bool {
    termion::is_tty(&io::stdin()) && termion::is_tty(&io::stdout())
}

/// What stands in for a character [`inert`] replaces.
pub(crate) const REPLACEMENT: char = '\u{fffd}';

/// Whether `c` could act on a terminal or reorder what is drawn: C0
/// controls (tab and newline too: a view's line is one line), DEL, C1
/// controls (an 8-bit CSI or OSC), the bidirectional embeddings, overrides,
/// isolates and marks, and the line and paragraph separators.
fn acts(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `text` safe to draw: every character that could act on a terminal
/// ([`acts`]: an escape sequence's ESC, a C1 control, a bidi override) is
/// replaced by U+FFFD, so a hostile string is shown, never executed. The
/// one owner of that rule: the usage views, the live screen, the
/// statusline and doctor's report all call it. Borrowed when nothing needs
/// replacing (the common case costs one scan).
pub(crate) fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if acts(c) { REPLACEMENT } else { c })
            .collect(),
    )
}

/// A JSON document safe to print to a terminal with its strings exact:
/// every character [`inert`] would replace that a JSON encoder leaves raw
/// (DEL, the C1 controls, the bidi controls, the line separators; C0 is
/// already escaped inside strings, and outside them is the document's own
/// white space) written as a `\uXXXX` escape, which decodes to the same
/// string.
pub(crate) fn inert_json(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| c >= '\u{7f}' && acts(c);
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_json_escapes_what_json_leaves_raw_and_decodes_to_the_same_strings() {
        use crate::base::json::{self, Value};
        let hostile = "a\u{1b}]52;c;x\u{7}\u{7f}\u{9b}31m\u{85}\u{202e}\u{2066}\u{2028}z é";
        let doc = Value::from(hostile).to_json() + "\n";
        let safe = inert_json(&doc);
        assert!(
            !safe
                .chars()
                .any(|c| c != '\n' && (c < ' ' || ('\u{7f}'..='\u{9f}').contains(&c) || acts(c))),
            "{safe:?}"
        );
        // Oracle: the JSON parser reads back the exact string.
        let back = json::parse(safe.trim_end()).unwrap();
        assert_eq!(back.as_str(), Some(hostile));
        assert!(matches!(inert_json("{\"a\":\"é\"}\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn inert_replaces_every_control_c1_and_bidi_character_and_nothing_else() {
        // Oracle: the Unicode general category Cc (U+0000–U+001F,
        // U+007F–U+009F) and the Bidi_Control property's twelve characters
        // (UAX #9), plus U+2028/U+2029; every other scalar up to U+3000
        // passes through.
        let bidi = [
            0x61c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
            0x2069,
        ];
        for code in 0u32..0x3000 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let replaced = code < 0x20
                || (0x7f..=0x9f).contains(&code)
                || bidi.contains(&code)
                || code == 0x2028
                || code == 0x2029;
            let s = c.to_string();
            let out = inert(&s);
            if replaced {
                assert_eq!(out, "\u{fffd}", "U+{code:04X}");
            } else {
                assert!(matches!(out, Cow::Borrowed(_)), "U+{code:04X}");
            }
        }
        assert_eq!(
            inert("opus\x1b]52;c;aGk=\x07\u{202e}gnp.exe"),
            "opus\u{fffd}]52;c;aGk=\u{fffd}\u{fffd}gnp.exe"
        );
        assert_eq!(inert("/home/dev/α β"), "/home/dev/α β");
    }
}
