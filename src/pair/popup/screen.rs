//! What each screen of the pairing popup shows, as lines of text with their
//! styles. Pure: the popup's loop decides which screen and writes the lines.
//!
//! The wording is the plugin's (users and the app's docs quote it); the
//! styling is ours.

use crate::pair::popup::checklist::Checklist;
use crate::pair::popup::qr::Qr;

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
pub const SELECT_AT_LEAST_ONE: &str = "Select at least one address.";

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
    /// A transient message under the key help.
    pub message: Option<String>,
}

pub fn checklist(list: &Checklist, notes: &ChecklistNotes) -> Vec<String> {
    let mut lines = vec![
        bold("Pair a Heeler device"),
        String::new(),
        format!(
            "Select the addresses the phone can reach {} on:",
            notes.machine
        ),
        String::new(),
    ];
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
        lines.push(format!(
            " {cursor} {mark} {} {}",
            candidate.address,
            dim(&format!("({})", candidate.note()))
        ));
    }
    lines.push(String::new());
    lines.push(format!(
        "SSH port {} {}",
        bold(&notes.port.to_string()),
        dim("(pair.json ssh_port)")
    ));
    lines.extend(notes.warnings.iter().map(|w| bold(w)));
    lines.extend(notes.tailscale.iter().map(|w| bold(w)));
    lines.extend(notes.endpoint.iter().cloned());
    lines.push(dim(
        "up/down move, space toggle, a all, enter confirm, q quit",
    ));
    if let Some(message) = &notes.message {
        lines.push(String::new());
        lines.push(bold(message));
    }
    lines
}

/// What the QR screen says under the QR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrDetails {
    pub user: String,
    pub port: u16,
    pub fingerprint: String,
    pub addresses: Vec<String>,
    /// `exp` as local wall-clock time.
    pub valid_until: String,
    /// `Endpoint … via …` for a v2 code.
    pub endpoint: Option<String>,
}

/// How the QR screen's first text line reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
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

fn detail_lines(details: &QrDetails) -> Vec<String> {
    let mut lines = vec![
        format!("{} on port {}", details.user, details.port),
        format!("Host key {}", details.fingerprint),
        format!("Addresses: {}", details.addresses.join(", ")),
        format!("Code valid until {}, single use", details.valid_until),
    ];
    lines.extend(details.endpoint.iter().cloned());
    lines
}

/// Text rows a line of `chars` characters takes in `columns` columns.
fn wrapped_rows(chars: usize, columns: usize) -> usize {
    chars.div_ceil(columns.max(1)).max(1)
}

/// Text rows a styled line takes once the terminal wraps it.
fn rows_of(line: &str, columns: usize) -> usize {
    wrapped_rows(plain(line).chars().count(), columns)
}

/// The leading lines that fit in `budget` rows once wrapped.
fn fit(lines: Vec<String>, budget: usize, columns: usize) -> Vec<String> {
    let mut used = 0;
    lines
        .into_iter()
        .take_while(|line| {
            used += rows_of(line, columns);
            used <= budget
        })
        .collect()
}

/// The QR screen for a terminal of `rows` × `columns`.
///
/// The QR is drawn only when it fits whole with its hint; otherwise the
/// screen says how much room it needs and `c` still copies. With
/// `show_code` (a copy that could not reach a clipboard) the exact code
/// follows for manual selection, taking the QR's place when both do not
/// fit. Trailing text is what gives way to a small terminal, never the QR,
/// and nothing is drawn past the last row (which would scroll the QR away).
pub fn qr_screen(
    qr: &Qr,
    code: &str,
    details: &QrDetails,
    hint: Hint,
    show_code: bool,
    (rows, columns): (usize, usize),
) -> Vec<String> {
    let hint = hint_line(hint);
    let code_rows = if show_code {
        wrapped_rows(code.chars().count(), columns)
    } else {
        0
    };
    let needed_rows = qr.rows() + rows_of(&hint, columns.max(qr.columns()));
    let qr_fits = needed_rows <= rows && qr.columns() <= columns;
    let mut lines = Vec::new();
    if qr_fits && needed_rows + code_rows <= rows {
        lines.extend(qr.lines());
        let mut text = vec![hint];
        text.extend(detail_lines(details));
        lines.extend(fit(text, rows - qr.rows() - code_rows, columns));
    } else if show_code {
        let text = vec![hint, bold("Pairing Code (select and copy it):")];
        lines.extend(fit(text, rows.saturating_sub(code_rows), columns));
    } else {
        let mut text = vec![
            bold(&format!(
                "The QR needs {needed_rows} rows and {} columns; this window has {rows} rows and {columns} columns.",
                qr.columns()
            )),
            hint,
            "Enlarge the window, or press c to copy the Pairing Code.".to_owned(),
            String::new(),
        ];
        text.extend(detail_lines(details));
        lines.extend(fit(text, rows.max(1), columns));
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
pub fn already_authorized(machine: &str, fingerprint: &str, label: Option<&str>) -> Vec<String> {
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

pub fn revoke_failed(error: &str) -> Vec<String> {
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
pub fn no_host_key_message(ssh_dir: &str) -> Vec<String> {
    vec![
        format!("No SSH host key found under {ssh_dir}."),
        String::new(),
        "Enable Remote Login (System Settings > General > Sharing), or run:".to_owned(),
        "  sudo ssh-keygen -A".to_owned(),
        "Then invoke pairing again.".to_owned(),
    ]
}

pub const NO_ADDRESS: &str =
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
        };
        assert_eq!(
            plain_all(&checklist(&sample_list(), &notes)),
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
                "ada on port 22",
                "Host key SHA256:x",
                "Addresses: 10.0.0.1, 10.0.0.2",
                "Code valid until 12:34:56, single use",
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
        let rows = qr.rows() + 2;
        let lines = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Scan,
            false,
            (rows, 100),
        ));
        assert_eq!(lines.len(), rows);
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
            (10, 20),
        ));
        assert_eq!(
            lines[0],
            format!(
                "The QR needs {} rows and {} columns; this window has 10 rows and 20 columns.",
                qr.rows()
                    + "Scan with Heeler -- c: copy pairing code, any other key close"
                        .len()
                        .div_ceil(qr.columns()),
                qr.columns()
            ),
            "the hint wraps at the QR's width"
        );
        assert!(lines.iter().any(|l| l.contains("c: copy pairing code")));
        assert!(lines.iter().all(|l| !l.contains('▀') && !l.contains('█')));
    }

    #[test]
    fn copy_fallback_prints_the_exact_code() {
        let code = "HERDR-PAIR:1:abc";
        let qr = Qr::encode(code).unwrap();
        let roomy = qr_screen(&qr, code, &details(), Hint::Scan, true, (50, 100));
        assert_eq!(roomy.last().map(String::as_str), Some(code));
        assert_eq!(roomy.len(), qr.rows() + 6);
        let tight = plain_all(&qr_screen(
            &qr,
            code,
            &details(),
            Hint::Scan,
            true,
            (qr.rows() + 1, 100),
        ));
        assert_eq!(tight.last().map(String::as_str), Some(code));
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
        assert_eq!(lines.len(), qr.rows() + 3, "the addresses line gave way");
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
}
