//! Copying the Pairing Code for a user who pastes it into the app instead
//! of scanning.
//!
//! macOS has `pbcopy`; elsewhere there is no clipboard a popup can rely on,
//! so the popup prints the code for manual selection and also sends an OSC 52
//! request, which terminals that allow it turn into a clipboard write.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::base::base64;

/// Copies `code` with `pbcopy` (exactly, no newline). `true` only when
/// pbcopy ran and exited 0; always `false` off macOS or for an empty code.
pub(crate) fn copy_with_pbcopy(code: &str) -> bool {
    if !cfg!(target_os = "macos") || code.is_empty() {
        return false;
    }
    let Ok(mut child) = Command::new("pbcopy")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(code.as_bytes()).is_ok());
    let exited_ok = child.wait().is_ok_and(|status| status.success());
    written && exited_ok
}

/// The OSC 52 sequence asking the terminal to put `code` on the clipboard.
pub(crate) fn osc52(code: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64::encode_standard(code.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_carries_the_exact_code() {
        assert_eq!(
            osc52("HERDR-PAIR:1:x"),
            "\x1b]52;c;SEVSRFItUEFJUjoxOng=\x07"
        );
    }

    #[test]
    fn empty_code_is_never_copied() {
        assert!(!copy_with_pbcopy(""));
    }
}
