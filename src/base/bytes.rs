//! A bounded cursor over bytes: the one way heeler reads binary formats
//! (its own cache files and the system's TZif zone files); and the order of
//! byte strings, compared a word at a time; and the printable part of a
//! peer's line, for a report or a screen.
//!
//! Every read checks the bytes that remain first, so a truncated or
//! corrupt input yields `None` instead of a panic, and a length read from
//! the input is never trusted to size an allocation: [`Reader::count32`]
//! and [`Reader::count64`] refuse counts that the remaining bytes cannot
//! hold. Integers are little-endian unless the name says `be`.

/// A read position in a byte string.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// How many bytes have been read.
    #[cfg(test)]
    pub(crate) fn position(&self) -> usize {
        self.at
    }

    /// How many bytes are left.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// Whether every byte has been read.
    pub(crate) fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// The bytes after the read position (not consumed).
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.array()?))
    }

    /// A big-endian signed 32-bit integer.
    pub(crate) fn i32_be(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.array()?))
    }

    /// A big-endian signed 64-bit integer.
    pub(crate) fn i64_be(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.array()?))
    }

    /// An unsigned LEB128 varint of at most ten bytes.
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// A `u32` count of items that take at least `min_item` bytes each,
    /// refused when the remaining bytes cannot hold that many.
    pub(crate) fn count32(&mut self, min_item: usize) -> Option<usize> {
        let n = usize::try_from(self.u32()?).ok()?;
        self.fits(n, min_item)
    }

    /// [`Reader::count32`] for a `u64` count.
    pub(crate) fn count64(&mut self, min_item: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.fits(n, min_item)
    }

    fn fits(&self, n: usize, min_item: usize) -> Option<usize> {
        (n.checked_mul(min_item)? <= self.remaining()).then_some(n)
    }

    /// The next `n` bytes as UTF-8 text.
    pub(crate) fn utf8(&mut self, n: usize) -> Option<String> {
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

/// `a.cmp(b)`, compared eight bytes at a time. Usage merges thousands of
/// transcript paths that share long prefixes (the root, the project
/// directory) with its index on every refresh, and the static build's
/// `memcmp` goes a byte at a time.
pub(crate) fn byte_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (mut a, mut b) = (a, b);
    while let (Some((x, a_rest)), Some((y, b_rest))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        if x != y {
            // Big-endian: the first byte that differs decides, as in `cmp`.
            return u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y));
        }
        (a, b) = (a_rest, b_rest);
    }
    a.cmp(b)
}

/// `a == b`, compared eight bytes at a time (see [`byte_order`]; the static
/// build's `bcmp` is byte-wise too).
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && byte_order(a, b).is_eq()
}

/// At most 60 printable ASCII characters of a peer's line or a file's
/// value, so that the report stays one line and shows no control bytes.
pub(crate) fn printable(line: &str) -> String {
    line.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(60)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every prefix of a 40-byte string (so every length around a word),
    /// and each with one byte changed to the lowest, a middle and the
    /// highest value at every third position (every position in a word):
    /// strings equal up to any point, then differing or ending.
    fn strings_around_words() -> Vec<Vec<u8>> {
        let base: Vec<u8> = (0..40).map(|i| b'a' + (i % 7) as u8).collect();
        let mut strings: Vec<Vec<u8>> = Vec::new();
        for len in 0..=base.len() {
            strings.push(base[..len].to_vec());
            for at in (0..len).step_by(3) {
                for byte in [0x00, 0x61, 0xff] {
                    let mut s = base[..len].to_vec();
                    s[at] = byte;
                    strings.push(s);
                }
            }
        }
        strings
    }

    #[test]
    fn byte_order_is_the_order_of_byte_strings() {
        // Oracle: the slice order.
        let strings = strings_around_words();
        for a in &strings {
            for b in &strings {
                assert_eq!(byte_order(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn equality_agrees_with_the_slice_equality() {
        let strings = strings_around_words();
        for a in &strings {
            for b in &strings {
                assert_eq!(same_bytes(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn integers_read_in_their_byte_order() {
        let bytes = [
            0x01, // u8
            0x04, 0x03, 0x02, 0x01, // u32 LE 0x01020304
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // i64 LE -1
            0xff, 0xff, 0xff, 0xfe, // i32 BE -2
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, // i64 BE 256
        ];
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u8(), Some(1));
        assert_eq!(r.u32(), Some(0x0102_0304));
        assert_eq!(r.i64(), Some(-1));
        assert_eq!(r.i32_be(), Some(-2));
        assert_eq!(r.i64_be(), Some(256));
        assert!(r.at_end());
        assert_eq!(r.position(), bytes.len());
    }

    #[test]
    fn a_short_input_is_none_and_consumes_nothing() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u32(), None);
        assert_eq!(r.position(), 0);
        assert_eq!(r.take(4), None);
        assert_eq!(r.take(usize::MAX), None);
        assert_eq!(r.take(3), Some(&[1u8, 2, 3][..]));
        assert_eq!(r.u8(), None);
        assert_eq!(r.take(0), Some(&[][..]));
    }

    #[test]
    fn varints_are_leb128_and_at_most_ten_bytes() {
        // 300 = 0b1_0010_1100: low seven bits 0x2c with the continuation
        // bit, then 0x02.
        let mut r = Reader::new(&[0xac, 0x02, 0x00, 0x7f]);
        assert_eq!(r.varint(), Some(300));
        assert_eq!(r.varint(), Some(0));
        assert_eq!(r.varint(), Some(127));
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(Reader::new(&max).varint(), Some(u64::MAX));
        assert_eq!(Reader::new(&[0x80; 11]).varint(), None);
        assert_eq!(Reader::new(&[0x80, 0x80]).varint(), None);
    }

    #[test]
    fn counts_the_rest_cannot_hold_are_refused() {
        // Two items of eight bytes need sixteen; only eight follow.
        let mut bytes = 2u32.to_le_bytes().to_vec();
        bytes.extend([0; 8]);
        assert_eq!(Reader::new(&bytes).count32(8), None);
        assert_eq!(Reader::new(&bytes).count32(4), Some(2));
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.push(0);
        assert_eq!(Reader::new(&huge).count64(1), None);
        let mut zero = 0u64.to_le_bytes().to_vec();
        zero.push(9);
        let mut r = Reader::new(&zero);
        assert_eq!(r.count64(usize::MAX), Some(0));
        assert_eq!(r.rest(), &[9]);
        assert_eq!(r.remaining(), 1);
    }

    #[test]
    fn text_must_be_utf8() {
        assert_eq!(Reader::new(b"abc").utf8(3).as_deref(), Some("abc"));
        assert_eq!(Reader::new(&[0xff, 0xfe]).utf8(2), None);
        assert_eq!(Reader::new(b"ab").utf8(3), None);
    }
}
