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

/// The check every usage line parser's target makes: `data` line by line
/// through `parse` never panics, a line `JSON.parse` refuses counts
/// nothing, and the events it gives survive the cache's event encoding.
pub fn check_line_parser(data: &[u8], parse: fn(&mut heeler::usage::event::FileParse, &[u8])) {
    use heeler::usage::store::codec;
    let mut fp = heeler::usage::event::FileParse::default();
    for line in data.split(|&b| b == b'\n') {
        let before = fp.clone();
        parse(&mut fp, line);
        if !json_parse_accepts(line) {
            assert!(
                refused_line_changed_nothing(&before, &fp),
                "a line JSON.parse refuses changed the parse: {:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
    assert_eq!(lasts, fp.lasts);
}
