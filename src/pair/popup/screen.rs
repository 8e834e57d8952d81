//! What each screen of the pairing popup shows, as lines of text with their
//! styles. Pure: the popup's loop decides which screen and writes the lines.
//!
//! The wording is the plugin's (users and the app's docs quote it); the
//! styling is ours.

use crate::pair::popup::checklist::Checklist;
use crate::pair::popup::qr::Qr;
use crate::pair::preflight::Level;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const REVERSE: &str = "\x1b[7m";
const RESET: &str = "\x1b[0m";

/// `text` in bold, reset after.
pub fn bold(text: &str) -> String {
    format!("{BOLD}{text}{RESET}")
}

fn dim(text: &str) -> String {
    format!("{DIM}{text}{RESET}")
}

/// The message shown when Enter finds nothing checked.
pub(crate) const SELECT_AT_LEAST_ONE: &str = "Select at least one address.";

/// Everything the checklist screen shows besides the checklist itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChecklistNotes {
    /// Where the phone should find this machine, e.g. its host name.
    pub machine: String,
    pub port: u16,
    /// pair.json warnings (bold), one per line.
    pub warnings: Vec<String>,
    /// The Tailscale SSH conflict (bold), empty or three lines.
    pub tailscale: Vec<String>,
    /// `Endpoint … via …`, a refusal or a shared-config warning.
    pub endpoint: Vec<String>,
    /// The SSH preflight's rows (empty when skipped).
    pub ssh: Vec<String>,
    /// A transient message under the key help.
    pub message: Option<String>,
}

pub fn checklist(list: &Checklist, notes: &ChecklistNotes) -> Screen {
    let head = vec![
        bold("Pair a Heeler device"),
        String::new(),
        format!(
            "Select the addresses the phone can reach {} on:",
            notes.machine
        ),
    ];
    let mut body = vec![String::new()];
    let focus = body.len() + list.cursor.min(list.candidates.len().saturating_sub(1));
    for (index, candidate) in list.candidates.iter().enumerate() {
        let cursor = if index == list.cursor {
            format!("{REVERSE}>{RESET}")
        } else {
            " ".to_owned()
        };
        let mark = if list.checked.get(index).copied().unwrap_or(false) {
            "[x]"
        } else {
            "[ ]"
        };
        body.push(format!(
            " {cursor} {mark} {} {}",
            candidate.address,
            dim(&format!("({})", candidate.note()))
        ));
    }
    body.push(String::new());
    body.push(format!(
        "SSH port {} {}",
        bold(&notes.port.to_string()),
        dim("(pair.json ssh_port)")
    ));
    body.extend(notes.ssh.iter().cloned());
    body.extend(notes.warnings.iter().map(|w| bold(w)));
    body.extend(notes.tailscale.iter().map(|w| bold(w)));
    body.extend(notes.endpoint.iter().cloned());
    let mut tail = vec![dim(
        "up/down move, space toggle, a all, enter confirm, q quit",
    )];
    if let Some(message) = &notes.message {
        tail.push(String::new());
        tail.push(bold(message));
    }
    Screen {
        head,
        body,
        focus: (!list.candidates.is_empty()).then_some(focus),
        tail,
    }
}

/// The SSH preflight's rows on the checklist: what answered on the port
/// (as `heeler doctor` words it) and, when it did not pass, the fix.
pub(crate) fn ssh_rows(level: Level, summary: &str, fix: Option<&str>) -> Vec<String> {
    let mut rows = match level {
        Level::Pass => vec![dim(&format!("[ok] SSH server: {summary}"))],
        Level::Warn => vec![bold(&format!("[warn] SSH server: {summary}"))],
        Level::Fail => vec![bold(&format!("[FAIL] SSH server: {summary}"))],
    };
    if let Some(fix) = fix {
        rows.push(format!("Fix: {fix}"));
    }
    rows
}

/// The checklist row while the preflight runs.
pub(crate) fn ssh_checking_row(port: u16) -> String {
    dim(&format!("Checking for OpenSSH on port {port}…"))
}

/// What the QR screen says under the QR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrDetails {
    pub user: String,
    pub port: u16,
    pub fingerprint: String,
    pub addresses: Vec<String>,
    /// `exp` as local wall-clock time.
    pub(crate) valid_until: String,
    /// `Endpoint … via …` for a v2 code.
    pub endpoint: Option<String>,
}

/// How the QR screen's first text line reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hint {
    Scan,
    Copied,
}

fn hint_line(hint: Hint) -> String {
    match hint {
        Hint::Scan => format!(
            "{} -- c: copy pairing code, any other key close",
            bold("Scan with Heeler")
        ),
        Hint::Copied => format!("{} -- any other key close", bold("copied")),
    }
}

/// The line that must stay on the QR screen whatever its size.
fn expiry_line(details: &QrDetails) -> String {
    format!("Code valid until {}, single use", details.valid_until)
}

/// The details under the expiry, in the order they give way (last first).
fn detail_lines(details: &QrDetails) -> Vec<String> {
    let mut lines = vec![
        format!("{} on port {}", details.user, details.port),
        format!("Host key {}", details.fingerprint),
        format!("Addresses: {}", details.addresses.join(", ")),
    ];
    lines.extend(details.endpoint.iter().cloned());
    lines
}

/// Text rows a line of `chars` characters takes in `columns` columns.
fn wrapped_rows(chars: usize, columns: usize) -> usize {
    chars.div_ceil(columns.max(1)).max(1)
}

/// Text rows a styled line takes once the terminal wraps it.
#[cfg(test)]
fn rows_of(line: &str, columns: usize) -> usize {
    wrapped_rows(plain(line).chars().count(), columns)
}

/// Whether `escape` (a whole SGR sequence) turns every style off.
fn is_reset(escape: &str) -> bool {
    escape == "\x1b[0m" || escape == "\x1b[m"
}

/// A styled line as its visible characters, each with the escapes written
/// just before it, and the escapes after the last one.
fn split_styled(line: &str) -> (Vec<(String, char)>, String) {
    let mut cells = Vec::new();
    let mut pending = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            pending.push(c);
            for c in chars.by_ref() {
                pending.push(c);
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            cells.push((std::mem::take(&mut pending), c));
        }
    }
    (cells, pending)
}

/// The rows of a greedy word wrap of `text` in `columns`: ranges of
/// character indices, breaking after the last space that fits (the space
/// itself is dropped) and splitting only a word longer than a row.
fn word_wrap_ranges(text: &[char], columns: usize) -> Vec<std::ops::Range<usize>> {
    let columns = columns.max(1);
    let mut rows = Vec::new();
    let mut start = 0;
    loop {
        if text.len() - start <= columns {
            rows.push(start..text.len());
            return rows;
        }
        let limit = start + columns;
        match (start + 1..=limit).rev().find(|&i| text[i] == ' ') {
            Some(space) => {
                let mut end = space;
                while end > start && text[end - 1] == ' ' {
                    end -= 1;
                }
                rows.push(start..end);
                start = space;
                while start < text.len() && text[start] == ' ' {
                    start += 1;
                }
                if start == text.len() {
                    return rows;
                }
            }
            None => {
                rows.push(start..limit);
                start = limit;
            }
        }
    }
}

/// A styled line wrapped at word boundaries into rows of at most `columns`
/// visible characters. Each row carries the styles active at its start and
/// resets them at its end, so a row never bleeds into the next.
pub(crate) fn wrap(line: &str, columns: usize) -> Vec<String> {
    let (cells, trailing) = split_styled(line);
    let text: Vec<char> = cells.iter().map(|(_, c)| *c).collect();
    let ranges = word_wrap_ranges(&text, columns);
    if ranges.len() == 1 {
        return vec![line.to_owned()];
    }
    let mut active = String::new();
    let mut consumed = 0;
    let mut rows = Vec::with_capacity(ranges.len());
    let last = ranges.len() - 1;
    for (index, range) in ranges.into_iter().enumerate() {
        // The styles of the characters dropped at the previous break.
        for (escapes, _) in &cells[consumed..range.start] {
            apply(&mut active, escapes);
        }
        let mut row = active.clone();
        for (escapes, c) in &cells[range.clone()] {
            apply(&mut active, escapes);
            row.push_str(escapes);
            row.push(*c);
        }
        consumed = range.end;
        if index == last {
            for (escapes, _) in &cells[consumed..] {
                row.push_str(escapes);
            }
            row.push_str(&trailing);
        } else if !active.is_empty() {
            row.push_str(RESET);
        }
        rows.push(row);
    }
    rows
}

fn apply(active: &mut String, escapes: &str) {
    let mut rest = escapes;
    while let Some(end) = rest.find(|c: char| c.is_ascii_alphabetic()) {
        let escape = &rest[..=end];
        if is_reset(escape) {
            active.clear();
        } else {
            active.push_str(escape);
        }
        rest = &rest[end + 1..];
    }
}

/// Lines wrapped at word boundaries, one entry per row.
fn wrap_all(lines: &[String], columns: usize) -> Vec<String> {
    lines.iter().flat_map(|l| wrap(l, columns)).collect()
}

/// The narrowest window any screen is laid out for.
pub(crate) const MIN_COLUMNS: usize = 24;

/// The message of a window smaller than a screen needs, wrapped to it.
pub(crate) fn too_small(
    (columns, rows): (usize, usize),
    (have_rows, have_columns): (usize, usize),
) -> Vec<String> {
    let text = format!("Window too small: needs {columns}×{rows}. Enlarge it, or press q to quit.");
    let mut lines = wrap(&bold(&text), have_columns.max(1));
    lines.truncate(have_rows.max(1));
    lines
}

/// A screen as it is laid out: a head and a tail that always show, and a
/// body between them that scrolls to keep the `focus` line (the checklist
/// cursor) in view. Without a focus the body shows whole or not at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Screen {
    pub head: Vec<String>,
    pub body: Vec<String>,
    pub focus: Option<usize>,
    pub tail: Vec<String>,
}

impl Screen {
    /// A screen of plain lines: the first is its title, the last its keys.
    pub fn fixed(mut lines: Vec<String>) -> Screen {
        let tail = lines.pop().into_iter().collect();
        let head = if lines.is_empty() {
            Vec::new()
        } else {
            vec![lines.remove(0)]
        };
        Screen {
            head,
            body: lines,
            focus: None,
            tail,
        }
    }

    /// The rows it needs at `columns`: head, tail and the body (or, when it
    /// scrolls, its focus line).
    fn rows_needed(&self, columns: usize) -> usize {
        let fixed = wrap_all(&self.head, columns).len() + wrap_all(&self.tail, columns).len();
        let body = match self.focus.and_then(|f| self.body.get(f)) {
            Some(line) => wrap(line, columns).len(),
            None => wrap_all(&self.body, columns).len(),
        };
        fixed + body
    }
}

/// A screen laid out in `(rows, columns)`: every line wrapped at word
/// boundaries, one string per row, never more rows than the window has.
/// A window too small for the head, the tail and the focus line (or the
/// whole body) gets the "too small" message with the size it needs.
pub fn fit(screen: &Screen, (rows, columns): (usize, usize)) -> Vec<String> {
    if columns < MIN_COLUMNS || screen.rows_needed(columns) > rows {
        let width = columns.max(MIN_COLUMNS);
        return too_small((width, screen.rows_needed(width)), (rows, columns));
    }
    let head = wrap_all(&screen.head, columns);
    let tail = wrap_all(&screen.tail, columns);
    let budget = rows - head.len() - tail.len();
    let mut body = Vec::new();
    let mut focus_end = 0;
    for (index, line) in screen.body.iter().enumerate() {
        body.extend(wrap(line, columns));
        if Some(index) == screen.focus {
            focus_end = body.len();
        }
    }
    let start = focus_end.saturating_sub(budget);
    let mut lines = head;
    lines.extend(body.into_iter().skip(start).take(budget));
    lines.extend(tail);
    lines
}

/// The leading lines that fit in `budget` rows once wrapped.
fn fit_rows(lines: &[String], budget: usize, columns: usize) -> Vec<String> {
    let mut rows = wrap_all(lines, columns);
    rows.truncate(budget);
    rows
}

/// The QR screen for a terminal of `rows` × `columns`.
///
/// The QR is drawn only when it fits whole with its hint and the expiry;
/// otherwise the screen says the size it needs and `c` still copies. With
/// `show_code` (a copy that could not reach a clipboard) the exact code
/// follows as one line (the terminal wraps it, so a selection copies it
/// whole), taking the QR's place when both do not fit; when even the code
/// does not fit, the screen says how large the window must be. The expiry
/// stays whenever anything but the size message shows; the other details
/// give way first, and nothing is drawn past the last row (which would
/// scroll the screen away).
pub(crate) fn qr_screen(
    qr: &Qr,
    code: &str,
    details: &QrDetails,
    hint: Hint,
    show_code: bool,
    (rows, columns): (usize, usize),
) -> Vec<String> {
    let columns = columns.max(1);
    let hint = wrap(&hint_line(hint), columns);
    let expiry = wrap(&expiry_line(details), columns);
    let code_rows = if show_code {
        wrapped_rows(code.chars().count(), columns)
    } else {
        0
    };
    let essential = hint.len() + expiry.len() + code_rows;
    let mut lines = Vec::new();
    if qr.columns() <= columns && qr.rows() + essential <= rows {
        lines.extend(qr.lines());
        lines.extend(hint);
        lines.extend(expiry);
        let room = rows - qr.rows() - essential;
        lines.extend(fit_rows(&detail_lines(details), room, columns));
    } else if show_code {
        let label_line = bold("Pairing Code (select and copy it):");
        let rows_at = |width: usize| {
            wrapped_rows(code.chars().count(), width)
                + wrap(&expiry_line(details), width).len()
                + wrap(&label_line, width).len()
        };
        let label = wrap(&label_line, columns);
        let needed = rows_at(columns);
        if needed > rows {
            // The narrowest window of this height that shows the code whole.
            let widest = code.chars().count().max(MIN_COLUMNS) + 80;
            let width = (columns.max(MIN_COLUMNS)..=widest)
                .find(|&width| rows_at(width) <= rows)
                .unwrap_or(widest);
            return too_small((width, rows_at(width)), (rows, columns));
        }
        if needed + hint.len() <= rows {
            lines.extend(hint);
        }
        lines.extend(label);
        lines.push(code.to_owned());
        lines.extend(expiry);
        return lines;
    } else {
        let needed_rows = qr.rows()
            + wrap(&hint_line(Hint::Scan), qr.columns()).len()
            + wrap(&expiry_line(details), qr.columns()).len();
        let mut text = wrap(
            &bold(&format!(
                "Window too small for the QR: needs {}×{needed_rows}.",
                qr.columns()
            )),
            columns,
        );
        text.extend(wrap(
            "Enlarge the window, or press c to copy the Pairing Code.",
            columns,
        ));
        if text.len() + hint.len() + expiry.len() > rows {
            text.truncate(rows.max(1));
            return text;
        }
        let room = rows - text.len() - hint.len() - expiry.len();
        lines.extend(text);
        lines.extend(hint);
        lines.extend(expiry);
        lines.extend(fit_rows(&detail_lines(details), room, columns));
        return lines;
    }
    if show_code {
        lines.push(code.to_owned());
    }
    lines
}

pub fn expired() -> Vec<String> {
    vec![
        bold("Pairing Code expired"),
        String::new(),
        "The Bootstrap Key was removed; the old QR is now useless.".to_owned(),
        String::new(),
        dim("enter generate a new code, any other key close"),
    ]
}

fn label_text(label: Option<&str>) -> String {
    match label {
        Some(label) if !label.is_empty() => label.to_owned(),
        _ => dim("(no label)"),
    }
}

pub fn enrolled(machine: &str, fingerprint: &str, label: Option<&str>) -> Vec<String> {
    let label = label_text(label);
    vec![
        bold("Device paired"),
        String::new(),
        format!("A device just enrolled its Device Key on {machine}:"),
        String::new(),
        format!("  Fingerprint  {fingerprint}"),
        format!("  Label        {label}"),
        String::new(),
        "If this was not you, revoke it now to lock that device out.".to_owned(),
        String::new(),
        dim("r revoke this device, any other key close"),
    ]
}

/// A device completed the ceremony with a Device Key that authorized_keys
/// already held: nothing was added, so there is nothing to revoke here.
pub(crate) fn already_authorized(
    machine: &str,
    fingerprint: &str,
    label: Option<&str>,
) -> Vec<String> {
    let label = label_text(label);
    vec![
        bold("Device Key already authorized"),
        String::new(),
        format!("A device paired with a Device Key {machine} already authorizes;"),
        "nothing was added to authorized_keys:".to_owned(),
        String::new(),
        format!("  Fingerprint  {fingerprint}"),
        format!("  Label        {label}"),
        String::new(),
        "To remove that key, edit ~/.ssh/authorized_keys by hand.".to_owned(),
        String::new(),
        dim("Press any key to close."),
    ]
}

pub fn revoked(fingerprint: &str) -> Vec<String> {
    vec![
        bold("Device Key revoked"),
        String::new(),
        dim(fingerprint),
        "was removed from authorized_keys; that device can no longer connect.".to_owned(),
        String::new(),
        dim("Press any key to close."),
    ]
}

pub(crate) fn revoke_failed(error: &str) -> Vec<String> {
    vec![
        bold("Could not revoke the Device Key"),
        String::new(),
        error.to_owned(),
        String::new(),
        "Remove the enrolled line from ~/.ssh/authorized_keys by hand.".to_owned(),
        String::new(),
        dim("Press any key to close."),
    ]
}

/// Why the popup cannot pair at all; any key closes it with status 1.
pub fn fatal(message: &[String]) -> Vec<String> {
    let mut lines = vec![bold("Pairing cannot start"), String::new()];
    lines.extend(message.iter().cloned());
    lines.push(String::new());
    lines.push(dim("Press any key to close."));
    lines
}

/// The fatal message when `/etc/ssh` has no host key.
pub(crate) fn no_host_key_message(ssh_dir: &str) -> Vec<String> {
    vec![
        format!("No SSH host key found under {ssh_dir}."),
        String::new(),
        "Enable Remote Login (System Settings > General > Sharing), or run:".to_owned(),
        "  sudo ssh-keygen -A".to_owned(),
        "Then invoke pairing again.".to_owned(),
    ]
}

pub(crate) const NO_ADDRESS: &str =
    "No routable network address found. Connect to a LAN or VPN and retry.";

/// Removes the style escapes, leaving what a reader sees.
pub fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::addresses::{Candidate, Origin};

    fn plain_all(lines: &[String]) -> Vec<String> {
        lines.iter().map(|l| plain(l)).collect()
    }

    fn sample_list() -> Checklist {
        let mut list = Checklist::new(vec![
            Candidate {
                address: "192.168.1.5".into(),
                origin: Origin::Interface("eth0".into()),
                pre_checked: true,
            },
            Candidate {
                address: "nas.example.com".into(),
                origin: Origin::PairJson,
                pre_checked: false,
            },
        ]);
        list.cursor = 1;
        list
    }

    #[test]
    fn checklist_wording() {
        let notes = ChecklistNotes {
            machine: "box".into(),
            port: 2222,
            warnings: vec!["pair.json is not valid JSON. Advertising 22.".into()],
            tailscale: vec![],
            endpoint: vec!["Endpoint /s/herdr/herdr.sock via /c/launcher".into()],
            message: Some(SELECT_AT_LEAST_ONE.into()),
            ssh: Vec::new(),
        };
        assert_eq!(
            plain_all(&fit(&checklist(&sample_list(), &notes), (24, 80))),
            vec![
                "Pair a Heeler device",
                "",
                "Select the addresses the phone can reach box on:",
                "",
                "   [x] 192.168.1.5 (eth0, IPv4)",
                " > [ ] nas.example.com (pair.json, host name)",
                "",
                "SSH port 2222 (pair.json ssh_port)",
                "pair.json is not valid JSON. Advertising 22.",
                "Endpoint /s/herdr/herdr.sock via /c/launcher",
                "up/down move, space toggle, a all, enter confirm, q quit",
                "",
                "Select at least one address.",
            ]
        );
    }

    fn details() -> QrDetails {
        QrDetails {
            user: "ada".into(),
            port: 22,
            fingerprint: "SHA256:x".into(),
            addresses: vec!["10.0.0.1".into(), "10.0.0.2".into()],
            valid_until: "12:34:56".into(),
            endpoint: None,
        }
    }

    #[test]
    fn qr_screen_shows_the_qr_then_the_details() {
        let code = "HERDR-PAIR:1:abc";
        let qr = Qr::encode(code).unwrap();
        let lines = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Scan,
            false,
            (50, 100),
        ));
        assert_eq!(lines.len(), qr.rows() + 5);
        assert_eq!(
            &lines[qr.rows()..],
            &[
                "Scan with Heeler -- c: copy pairing code, any other key close",
                "Code valid until 12:34:56, single use",
                "ada on port 22",
                "Host key SHA256:x",
                "Addresses: 10.0.0.1, 10.0.0.2",
            ]
        );
        let copied = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Copied,
            false,
            (50, 100),
        ));
        assert_eq!(copied[qr.rows()], "copied -- any other key close");
    }

    #[test]
    fn trailing_text_gives_way_before_the_qr() {
        let code = "HERDR-PAIR:1:abc";
        let qr = Qr::encode(code).unwrap();
        let rows = qr.rows() + 3;
        let lines = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Scan,
            false,
            (rows, 100),
        ));
        assert_eq!(lines.len(), rows);
        assert_eq!(lines[rows - 2], "Code valid until 12:34:56, single use");
        assert_eq!(lines[rows - 1], "ada on port 22");
    }

    #[test]
    fn too_small_says_what_it_needs_and_keeps_copy() {
        let code = "HERDR-PAIR:1:abc";
        let qr = Qr::encode(code).unwrap();
        let lines = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Scan,
            false,
            (10, 30),
        ));
        // At the QR's 27 columns the hint wraps into 3 rows ("Scan with
        // Heeler -- c: copy" / "pairing code, any other key" / "close") and
        // the expiry into 2 ("Code valid until 12:34:56," / "single use").
        assert_eq!(qr.columns(), 27);
        let needs = format!(
            "Window too small for the QR: needs 27×{}.",
            qr.rows() + 3 + 2
        );
        assert_eq!(
            lines.join(" ").split(" Enlarge").next(),
            Some(needs.as_str())
        );
        assert!(lines.join(" ").contains("c: copy pairing code"));
        assert!(lines.iter().any(|l| l.starts_with("Code valid until")));
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        assert!(lines.len() <= 10);
        assert!(lines.iter().all(|l| !l.contains('▀') && !l.contains('█')));
    }

    #[test]
    fn copy_fallback_prints_the_exact_code() {
        let code = "HERDR-PAIR:1:abc";
        let qr = Qr::encode(code).unwrap();
        let roomy = qr_screen(&qr, code, &details(), Hint::Scan, true, (50, 100));
        assert_eq!(roomy.last().map(String::as_str), Some(code));
        assert_eq!(roomy.len(), qr.rows() + 6);
        let roomy = plain_all(&roomy);
        assert_eq!(
            roomy[qr.rows() + 1],
            "Code valid until 12:34:56, single use"
        );
        let tight = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Scan,
            true,
            (qr.rows() + 1, 100),
        ));
        assert!(tight.contains(&code.to_owned()), "{tight:?}");
        assert_eq!(
            tight.last().map(String::as_str),
            Some("Code valid until 12:34:56, single use")
        );
        assert!(tight.iter().all(|l| !l.contains('█')));
    }

    #[test]
    fn wrapped_text_never_pushes_the_qr_off_screen() {
        let code = "HERDR-PAIR:1:abc";
        let qr = Qr::encode(code).unwrap();
        let mut long = details();
        long.addresses = (0..40).map(|i| format!("10.0.0.{i}")).collect();
        let (rows, columns) = (qr.rows() + 4, 64);
        let lines = qr_screen(&qr, code, &long, Hint::Scan, false, (rows, columns));
        let used: usize = lines.iter().map(|l| rows_of(l, columns)).sum();
        assert!(used <= rows, "{used} rows in {rows}");
        assert_eq!(lines.len(), qr.rows() + 4, "the addresses line gave way");
        assert!(plain(&lines[qr.rows() + 1]).starts_with("Code valid until"));
    }

    #[test]
    fn other_screens() {
        assert_eq!(plain(&expired()[0]), "Pairing Code expired");
        let ok = plain_all(&enrolled("box", "SHA256:f", Some("iPhone")));
        assert_eq!(ok[2], "A device just enrolled its Device Key on box:");
        assert_eq!(ok[4], "  Fingerprint  SHA256:f");
        assert_eq!(ok[5], "  Label        iPhone");
        assert_eq!(
            plain_all(&enrolled("b", "f", None))[5],
            "  Label        (no label)"
        );
        let known = plain_all(&already_authorized("box", "SHA256:f", None));
        assert_eq!(known[0], "Device Key already authorized");
        assert_eq!(
            known[2],
            "A device paired with a Device Key box already authorizes;"
        );
        assert_eq!(known[5], "  Fingerprint  SHA256:f");
        assert_eq!(known[6], "  Label        (no label)");
        assert!(!known.iter().any(|l| l.contains("revoke")), "{known:?}");
        assert_eq!(
            known.last().map(String::as_str),
            Some("Press any key to close.")
        );
        assert_eq!(plain_all(&revoked("SHA256:f"))[2], "SHA256:f");
        assert_eq!(plain_all(&revoke_failed("boom"))[2], "boom");
        let fatal = plain_all(&fatal(&no_host_key_message("/etc/ssh")));
        assert_eq!(fatal[0], "Pairing cannot start");
        assert_eq!(fatal[2], "No SSH host key found under /etc/ssh.");
        assert_eq!(
            fatal.last().map(String::as_str),
            Some("Press any key to close.")
        );
    }

    /// Every row of a laid-out screen, plain, for a window of `size`.
    fn rows_fit(lines: &[String], (rows, columns): (usize, usize)) {
        let used: usize = lines.iter().map(|l| rows_of(l, columns)).sum();
        assert!(used <= rows, "{used} rows in {rows}: {lines:?}");
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_only_splits_overlong_words() {
        let rows = plain_all(&wrap("the window has 20 rows and 50 columns", 12));
        assert_eq!(rows, ["the window", "has 20 rows", "and 50", "columns"]);
        assert_eq!(
            plain_all(&wrap("abcdefghij xy", 4)),
            ["abcd", "efgh", "ij", "xy"]
        );
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("fits", 4), ["fits"]);
        // Leading indentation is kept; trailing spaces at a break go.
        assert_eq!(
            plain_all(&wrap("   [x] 10.0.0.1 (eth0)", 15)),
            ["   [x] 10.0.0.1", "(eth0)"]
        );
    }

    #[test]
    fn wrapped_rows_keep_their_style_and_reset_it() {
        let rows = wrap(&bold("aa bb"), 2);
        assert_eq!(
            rows,
            [format!("{BOLD}aa{RESET}"), format!("{BOLD}bb{RESET}")]
        );
        let mixed = wrap(&format!("x {} y", dim("dd ee")), 4);
        assert_eq!(plain_all(&mixed), ["x dd", "ee y"]);
        assert_eq!(mixed[0], format!("x {DIM}dd{RESET}"));
        assert_eq!(mixed[1], format!("{DIM}ee{RESET} y"));
    }

    /// Words never split across rows: each row's words are words of the line.
    #[test]
    fn random_lines_wrap_at_word_boundaries_only() {
        let mut seed: u64 = 0x5eed_0032;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for case in 0..500 {
            let words: Vec<String> = (0..next(12))
                .map(|_| "w".repeat(1 + next(9) as usize))
                .collect();
            let line = words.join(" ");
            let columns = 10 + next(20) as usize;
            let rows = wrap(&line, columns);
            let rewrapped: Vec<&str> = rows.iter().flat_map(|r| r.split(' ')).collect();
            let original: Vec<&str> = line.split(' ').collect();
            assert_eq!(
                rewrapped, original,
                "case {case}: wrap({line:?}, {columns})"
            );
            assert!(
                rows.iter().all(|r| r.chars().count() <= columns),
                "case {case}"
            );
        }
    }

    fn long_list(rows: usize) -> Checklist {
        Checklist::new(
            (0..rows)
                .map(|i| Candidate {
                    address: format!("10.0.0.{i}"),
                    origin: Origin::Interface("eth0".into()),
                    pre_checked: i == 0,
                })
                .collect(),
        )
    }

    fn notes() -> ChecklistNotes {
        ChecklistNotes {
            machine: "box".into(),
            port: 22,
            warnings: vec!["pair.json addresses is not a list of strings; ignoring it.".into()],
            endpoint: vec![
                "Endpoint /run/user/1000/herdr/herdr.sock via /home/u/.config/herdr/launcher"
                    .into(),
            ],
            ssh: ssh_rows(
                Level::Fail,
                "no SSH server answers on 127.0.0.1:22 (connection refused)",
                Some("start OpenSSH on port 22"),
            ),
            message: Some(SELECT_AT_LEAST_ONE.into()),
            ..ChecklistNotes::default()
        }
    }

    #[test]
    fn the_checklist_keeps_its_title_cursor_and_keys_in_small_windows() {
        for (rows, columns) in [(10, 30), (12, 40), (14, 80), (24, 80), (50, 200)] {
            for cursor in [0, 3, 7] {
                let mut list = long_list(8);
                list.cursor = cursor;
                let lines = plain_all(&fit(&checklist(&list, &notes()), (rows, columns)));
                rows_fit(&lines, (rows, columns));
                assert_eq!(lines[0], "Pair a Heeler device", "{rows}x{columns}");
                let cursor_row = format!(
                    " > [{}] 10.0.0.{cursor}",
                    if cursor == 0 { 'x' } else { ' ' }
                );
                assert!(
                    lines.iter().any(|l| l.starts_with(&cursor_row)),
                    "{rows}x{columns} cursor {cursor}: {lines:?}"
                );
                assert_eq!(lines.last().map(String::as_str), Some(SELECT_AT_LEAST_ONE));
            }
        }
    }

    #[test]
    fn a_window_smaller_than_the_minimum_says_what_it_needs() {
        let screen = checklist(&long_list(3), &notes());
        let lines = plain_all(&fit(&screen, (5, 30)));
        rows_fit(&lines, (5, 30));
        let text = lines.join(" ");
        assert!(text.starts_with("Window too small: needs 30×"), "{text}");
        let needed: usize = text["Window too small: needs 30×".len()..]
            .split('.')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(plain_all(&fit(&screen, (needed, 30)))[0] == "Pair a Heeler device");
        assert!(plain_all(&fit(&screen, (needed - 1, 30)))[0].starts_with("Window too small"));
        let narrow = plain_all(&fit(&screen, (40, 10)));
        assert!(
            narrow
                .join(" ")
                .starts_with(&format!("Window too small: needs {MIN_COLUMNS}×"))
        );
        assert!(narrow.iter().all(|l| l.chars().count() <= 10));
        // The other screens show whole or say so.
        for lines in [
            expired(),
            enrolled("box", "SHA256:f", None),
            revoked("SHA256:f"),
        ] {
            let small = plain_all(&fit(&Screen::fixed(lines.clone()), (4, 40)));
            assert!(
                small[0].starts_with("Window too small: needs 40×"),
                "{small:?}"
            );
            let roomy = fit(&Screen::fixed(lines.clone()), (24, 80));
            assert_eq!(roomy, lines);
        }
    }

    #[test]
    fn the_printed_code_shows_whole_or_asks_for_a_wider_window() {
        let code = format!("HERDR-PAIR:1:{}", "A".repeat(200));
        let qr = Qr::encode(&code).unwrap();
        for size in [(10, 30), (12, 40), (14, 80), (24, 80), (50, 200)] {
            let lines = plain_all(&qr_screen(&qr, &code, &details(), Hint::Scan, true, size));
            rows_fit(&lines, size);
            if lines.contains(&code) {
                assert!(
                    lines.iter().any(|l| l.starts_with("Code valid until")),
                    "{size:?}"
                );
            } else {
                let text = lines.join(" ");
                assert!(
                    text.starts_with("Window too small: needs "),
                    "{size:?}: {text}"
                );
                let (width, height) = text["Window too small: needs ".len()..]
                    .split('.')
                    .next()
                    .and_then(|n| n.split_once('×'))
                    .map(|(w, h)| (w.parse::<usize>().unwrap(), h.parse::<usize>().unwrap()))
                    .unwrap();
                assert!(height <= size.0, "{size:?}: a wider window of this height");
                let there = plain_all(&qr_screen(
                    &qr,
                    &code,
                    &details(),
                    Hint::Scan,
                    true,
                    (size.0, width),
                ));
                assert!(there.contains(&code), "{size:?} at {width}: {there:?}");
            }
        }
        // 40×12 has room for the code: 213 characters in 6 rows.
        let at = plain_all(&qr_screen(
            &qr,
            &code,
            &details(),
            Hint::Scan,
            true,
            (12, 40),
        ));
        assert!(at.contains(&code), "{at:?}");
    }

    #[test]
    fn the_expiry_stays_on_every_qr_screen_that_shows_the_qr() {
        let code = format!("HERDR-PAIR:2:{}", "B".repeat(300));
        let qr = Qr::encode(&code).unwrap();
        let mut long = details();
        long.endpoint = Some(format!("Endpoint /run/{} via /x", "s".repeat(150)));
        for rows in qr.rows() + 2..qr.rows() + 12 {
            let lines = plain_all(&qr_screen(
                &qr,
                &code,
                &long,
                Hint::Scan,
                false,
                (rows, 200),
            ));
            rows_fit(&lines, (rows, 200));
            assert!(
                lines.iter().any(|l| l.starts_with("Code valid until")),
                "{rows} rows: {lines:?}"
            );
        }
    }

    #[test]
    fn the_ssh_rows_name_the_finding_and_its_fix_under_the_port() {
        let mut notes = notes();
        notes.warnings.clear();
        notes.endpoint.clear();
        notes.message = None;
        let lines = plain_all(&fit(&checklist(&long_list(1), &notes), (24, 100)));
        assert_eq!(
            &lines[lines.len() - 4..],
            [
                "SSH port 22 (pair.json ssh_port)",
                "[FAIL] SSH server: no SSH server answers on 127.0.0.1:22 (connection refused)",
                "Fix: start OpenSSH on port 22",
                "up/down move, space toggle, a all, enter confirm, q quit",
            ]
        );
        assert_eq!(
            plain_all(&ssh_rows(
                Level::Pass,
                "OpenSSH_9.6 answers on 127.0.0.1:22",
                None
            )),
            ["[ok] SSH server: OpenSSH_9.6 answers on 127.0.0.1:22"]
        );
        assert_eq!(
            plain(&ssh_checking_row(2222)),
            "Checking for OpenSSH on port 2222…"
        );
    }
}
