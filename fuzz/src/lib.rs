//! Helpers the fuzz targets share: splitting one input into the parts a
//! target needs, so libFuzzer mutates them all.

/// Splits `data` at the first `0xff` byte: (before, after); no such byte
/// gives (`data`, empty).
pub fn split2(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// The parts of `data` between `0xff` separators.
pub fn parts(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == 0xff).collect()
}

/// The first byte of `data` (0 when empty) and the rest.
pub fn selector(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&b, rest)) => (b, rest),
        None => (0, &[]),
    }
}

/// Whether `JSON.parse` (the usage spec's reader) reads `line` as the spec
/// gives it one: decoded as UTF-8, U+FFFD for what is not, then checked
/// by serde_json's syntax check alone (`IgnoredAny`: no depth limit, a lone
/// surrogate escape and a number beyond `f64`'s range read, as
/// `JSON.parse` reads them). The unit tests check this model against
/// Node's own `JSON.parse` (`usage::parse::differential`).
pub fn json_parse_accepts(line: &[u8]) -> bool {
    use serde::Deserialize as _;
    let text = String::from_utf8_lossy(line);
    let mut de = serde_json::Deserializer::from_str(&text);
    serde::de::IgnoredAny::deserialize(&mut de).is_ok() && de.end().is_ok()
}

/// What a line `JSON.parse` refuses may change in a usage parse: its
/// malformed count and the Codex line number, nothing else.
pub fn refused_line_changed_nothing(
    before: &heeler::usage::event::FileParse,
    after: &heeler::usage::event::FileParse,
) -> bool {
    let mut after = after.clone();
    after.malformed = before.malformed;
    after.codex.lines = before.codex.lines;
    after == *before
}
