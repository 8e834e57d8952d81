//! The Pairing Code as a QR drawn with text: two modules per text row using
//! half blocks, inside a light quiet zone.
//!
//! The colours are explicit (xterm-256 cube black 16 on white 231, which no
//! theme remaps) so the code scans on dark and light themes alike. The
//! renderer only produces lines; whether they fit is the caller's decision
//! (`Qr::rows`, `Qr::columns`), because a clipped QR never scans.

use qrcodegen::{QrCode, QrCodeEcc};

/// Light modules around the symbol. The Node plugin used 1 and the app scans
/// it; more would cost rows in small popups.
pub(crate) const QUIET_ZONE: usize = 1;

/// Dark modules in the foreground colour over a light background.
const COLOURS: &str = "\x1b[38;5;16m\x1b[48;5;231m";
const RESET: &str = "\x1b[0m";

/// Why a code has no QR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

/// A rendered QR: its module grid with the quiet zone included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qr {
    /// Side length in modules, quiet zone included.
    side: usize,
    /// Row-major; `true` is dark.
    modules: Vec<bool>,
}

impl Qr {
    /// Encodes `text` at error correction level M (or better when it fits in
    /// the same version), automatic version and mask.
    pub fn encode(text: &str) -> Result<Qr, TooLong> {
        let code = QrCode::encode_text(text, QrCodeEcc::Medium).map_err(|_| TooLong)?;
        Ok(Qr::from_code(&code))
    }

    fn from_code(code: &QrCode) -> Qr {
        let size = usize::try_from(code.size()).unwrap_or(0);
        let side = size + 2 * QUIET_ZONE;
        let mut modules = vec![false; side * side];
        for y in 0..size {
            for x in 0..size {
                // Both fit in i32: `size` came from one.
                let dark = code.get_module(x as i32, y as i32);
                modules[(y + QUIET_ZONE) * side + x + QUIET_ZONE] = dark;
            }
        }
        Qr { side, modules }
    }

    /// Modules per side, quiet zone included.
    pub fn side(&self) -> usize {
        self.side
    }

    /// Whether the module at column `x`, row `y` is dark (false outside).
    pub fn dark(&self, x: usize, y: usize) -> bool {
        x < self.side && y < self.side && self.modules[y * self.side + x]
    }

    /// Text rows the QR takes.
    pub fn rows(&self) -> usize {
        self.side.div_ceil(2)
    }

    /// Text columns the QR takes.
    pub fn columns(&self) -> usize {
        self.side
    }

    /// The QR's lines, each with its colours set and reset.
    pub fn lines(&self) -> Vec<String> {
        (0..self.rows())
            .map(|row| {
                let mut line = String::with_capacity(self.side * 3 + 24);
                line.push_str(COLOURS);
                for x in 0..self.side {
                    line.push(half_block(self.dark(x, 2 * row), self.dark(x, 2 * row + 1)));
                }
                line.push_str(RESET);
                line
            })
            .collect()
    }
}

/// The character showing a dark/light `top` and `bottom` module.
pub(crate) fn half_block(top: bool, bottom: bool) -> char {
    match (top, bottom) {
        (true, true) => '█',
        (true, false) => '▀',
        (false, true) => '▄',
        (false, false) => ' ',
    }
}

/// The two modules a half-block character shows, `None` for anything else.
pub fn modules_of(c: char) -> Option<(bool, bool)> {
    match c {
        '█' => Some((true, true)),
        '▀' => Some((true, false)),
        '▄' => Some((false, true)),
        ' ' => Some((false, false)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_escapes(line: &str) -> String {
        let mut out = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn lines_round_trip_to_the_module_grid() {
        let text = "HERDR-PAIR:1:eyJhZGRycyI6WyIxOTIuMTY4LjEuNSJdfQ";
        let qr = Qr::encode(text).unwrap();
        let code = QrCode::encode_text(text, QrCodeEcc::Medium).unwrap();
        assert_eq!(qr.side(), code.size() as usize + 2);
        let lines = qr.lines();
        assert_eq!(lines.len(), qr.rows());
        for (row, line) in lines.iter().enumerate() {
            assert!(line.starts_with(COLOURS) && line.ends_with(RESET));
            let text = strip_escapes(line);
            assert_eq!(text.chars().count(), qr.columns());
            for (x, c) in text.chars().enumerate() {
                let (top, bottom) = modules_of(c).unwrap();
                let module = |y: usize| {
                    let (xi, yi) = (x as i32 - 1, y as i32 - 1);
                    code.get_module(xi, yi)
                };
                assert_eq!(top, module(2 * row), "row {row} col {x}");
                assert_eq!(bottom, module(2 * row + 1), "row {row} col {x}");
            }
        }
    }

    #[test]
    fn quiet_zone_is_light() {
        let qr = Qr::encode("HERDR-PAIR:1:x").unwrap();
        for i in 0..qr.side() {
            assert!(!qr.dark(i, 0) && !qr.dark(0, i));
            assert!(!qr.dark(i, qr.side() - 1) && !qr.dark(qr.side() - 1, i));
        }
        assert!(qr.dark(1, 1), "finder pattern corner");
    }

    #[test]
    fn sizes_follow_the_payload() {
        let small = Qr::encode("HERDR-PAIR:1:x").unwrap();
        assert_eq!(small.side(), 21 + 2);
        assert_eq!(small.rows(), 12);
        let long = Qr::encode(&"A".repeat(255)).unwrap();
        assert!(long.side() > small.side());
        assert!(Qr::encode(&"x".repeat(5000)).is_err());
    }
}
