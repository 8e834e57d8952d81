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
