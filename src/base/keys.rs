//! Keypresses of the full-screen programs (the pairing popup, the live
//! usage screen), decoded from the raw bytes a terminal in raw mode sends.
//!
//! They need only a handful of keys, so a small pure decoder over one
//! read's bytes is clearer than a general input library: arrows (CSI and SS3
//! forms), Enter, Tab, space, Escape, Ctrl-C and printable characters.

/// A key the programs react to; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Enter,
    Tab,
    Space,
    Escape,
    CtrlC,
    Char(char),
    Other,
}

/// Decodes the bytes of one read into keys, in order.
///
/// A lone ESC (nothing after it in the same read) is Escape; ESC followed by
/// `[` or `O` starts an escape sequence, consumed whole.
pub(crate) fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        i += 1;
        let key = match byte {
            0x1b => match bytes.get(i) {
                Some(b'[') => {
                    i += 1;
                    let start = i;
                    while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                        i += 1;
                    }
                    let final_byte = bytes.get(i).copied();
                    i = (i + 1).min(bytes.len());
                    match (final_byte, i - start) {
                        (Some(b'A'), 1) => Key::Up,
                        (Some(b'B'), 1) => Key::Down,
                        _ => Key::Other,
                    }
                }
                Some(b'O') => {
                    let final_byte = bytes.get(i + 1).copied();
                    i = (i + 2).min(bytes.len());
                    match final_byte {
                        Some(b'A') => Key::Up,
                        Some(b'B') => Key::Down,
                        Some(b'M') => Key::Enter,
                        _ => Key::Other,
                    }
                }
                _ => Key::Escape,
            },
            0x03 => Key::CtrlC,
            b'\r' | b'\n' => Key::Enter,
            b'\t' => Key::Tab,
            b' ' => Key::Space,
            0x00..=0x1f | 0x7f => Key::Other,
            _ => {
                let width = utf8_width(byte);
                let end = (i - 1 + width).min(bytes.len());
                let decoded = std::str::from_utf8(&bytes[i - 1..end])
                    .ok()
                    .and_then(|s| s.chars().next());
                i = end;
                decoded.map_or(Key::Other, Key::Char)
            }
        };
        keys.push(key);
    }
    keys
}

fn utf8_width(first: u8) -> usize {
    match first {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys() {
        assert_eq!(
            decode(b"jk a\rq\x03"),
            vec![
                Key::Char('j'),
                Key::Char('k'),
                Key::Space,
                Key::Char('a'),
                Key::Enter,
                Key::Char('q'),
                Key::CtrlC
            ]
        );
    }

    #[test]
    fn arrows_in_both_forms() {
        assert_eq!(
            decode(b"\x1b[A\x1b[B\x1bOA\x1bOB"),
            vec![Key::Up, Key::Down, Key::Up, Key::Down]
        );
        assert_eq!(decode(b"\x1b[C\x1b[1;5A"), vec![Key::Other, Key::Other]);
    }

    #[test]
    fn escape_alone_or_before_a_key() {
        assert_eq!(decode(b"\x1b"), vec![Key::Escape]);
        assert_eq!(decode(b"\x1bq"), vec![Key::Escape, Key::Char('q')]);
    }

    #[test]
    fn truncated_sequences_and_utf8_never_panic() {
        assert_eq!(decode(b"\x1b["), vec![Key::Other]);
        assert_eq!(decode(b"\x1bO"), vec![Key::Other]);
        assert_eq!(decode("é".as_bytes()), vec![Key::Char('é')]);
        assert_eq!(decode(&[0xe2, 0x82]), vec![Key::Other]);
        assert_eq!(decode(&[0xff]), vec![Key::Other]);
        assert_eq!(decode(b"\x7f\x01"), vec![Key::Other, Key::Other]);
        assert_eq!(decode(b"\tq"), vec![Key::Tab, Key::Char('q')]);
    }
}
