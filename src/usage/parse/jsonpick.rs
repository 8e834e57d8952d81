//! Picking a few fields out of a large JSON line without building it.
//!
//! A transcript line that carries usage also carries the response's text,
//! tool output or base instructions (kilobytes to megabytes); Usage needs a
//! dozen numbers and strings from it. This walker visits an object's
//! members, lets the caller read the ones it wants, and skips everything
//! else a token at a time (strings by a vectorised search), allocating only
//! for the strings it returns. What it skips is checked as what it reads
//! is, as `JSON.parse` (the spec's reader) checks a line: the structure
//! (keys, colons, commas, matching brackets), the number grammar, the
//! literals, string escapes and control bytes, and nothing after the value.
//! A line `JSON.parse` refuses makes it return `None`, which the parsers
//! count as malformed.

use std::borrow::Cow;

use crate::base::sys::next_string_stop;

/// Whether `text` is one complete JSON object (with JSON white space
/// around it at most), as `JSON.parse` would read it: what makes a last
/// line without its newline a line, not a torn one.
pub(crate) fn is_complete_object(text: &[u8]) -> bool {
    let mut c = Cursor::new(text);
    c.raw_is_object() && c.skip().is_some() && c.at_end()
}

/// A position in one JSON text (copied to try a reading and come back).
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(b: &'a [u8]) -> Cursor<'a> {
        Cursor { b, i: 0 }
    }

    // Called before every token: inlined, as a call would cost more than
    // the check (the release build optimises for size). Transcripts are
    // compact JSON, so the first byte is almost always past white space
    // (every JSON white space byte is at most a space).
    #[inline(always)]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if c > b' ' || !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return;
            }
            self.i += 1;
        }
    }

    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// Whether only whitespace remains.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Skips a string starting at `"`; returns its raw contents (escapes
    /// undecoded) and whether it has escapes. Inlined: it runs for every
    /// key and string value, most of them a few bytes long.
    #[inline(always)]
    fn raw_string(&mut self) -> Option<(&'a [u8], bool)> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        let mut escaped = false;
        // The next quote, backslash or control byte (which JSON forbids in
        // a string): a vectorised search (`base::sys`).
        loop {
            j = next_string_stop(self.b, j)?;
            match self.b[j] {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    j += escape_len(self.b.get(j + 1..)?)?;
                }
                _ => return None,
            }
        }
        self.i = j + 1;
        Some((&self.b[start..j], escaped))
    }

    /// Skips one value of any kind, checked as a full parse checks it:
    /// a line that `JSON.parse` (the spec's reader) refuses is refused
    /// here too, whether the refused part is read or skipped.
    pub fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(|_| ()),
            b'{' | b'[' => self.skip_container(),
            _ => self.scalar(),
        }
    }

    /// Skips a number or a literal (`true`, `false`, `null`) at the cursor.
    /// Only the token's own grammar is checked: what may follow it (a
    /// comma, a closing bracket, the end) is the caller's to check, as a
    /// number ends at the first byte that cannot continue it (`012` is the
    /// number `0` followed by a stray `1`).
    #[inline(always)]
    fn scalar(&mut self) -> Option<()> {
        let rest = self.b.get(self.i..)?;
        let len = match rest.first()? {
            b't' => rest.starts_with(b"true").then_some(4)?,
            b'f' => rest.starts_with(b"false").then_some(5)?,
            b'n' => rest.starts_with(b"null").then_some(4)?,
            _ => number_len(rest)?,
        };
        self.i += len;
        Some(())
    }

    /// Skips the object or array at the cursor, checking its structure on
    /// the way: a key and a colon before every member's value, a comma
    /// between items and none after the last, brackets that match, and
    /// every string, number and literal (a token at a time, strings by the
    /// vectorised search). Iterative, so nesting as deep as the line goes
    /// costs no stack (`JSON.parse` has no depth limit either).
    fn skip_container(&mut self) -> Option<()> {
        let mut open = Nesting::default();
        // At the start of a value, white space skipped.
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.raw_string()?;
                }
                c @ (b'{' | b'[') => {
                    self.i += 1;
                    self.ws();
                    let object = c == b'{';
                    let close = if object { b'}' } else { b']' };
                    if self.b.get(self.i) == Some(&close) {
                        self.i += 1;
                    } else {
                        open.push(object);
                        if object {
                            self.member_key()?;
                        }
                        continue;
                    }
                }
                _ => self.scalar()?,
            }
            // After a value: the next item, or the end of its container
            // (and then of every container that ends there).
            loop {
                let Some(object) = open.top() else {
                    // The outermost container was empty.
                    return Some(());
                };
                self.ws();
                match (*self.b.get(self.i)?, object) {
                    (b',', _) => {
                        self.i += 1;
                        self.ws();
                        if object {
                            self.member_key()?;
                        }
                        break;
                    }
                    (b'}', true) | (b']', false) => {
                        self.i += 1;
                        if !open.pop() {
                            return Some(());
                        }
                    }
                    _ => return None,
                }
            }
        }
    }

    /// Skips a member's key and its colon (white space before the key
    /// already skipped), and the white space before its value.
    #[inline(always)]
    fn member_key(&mut self) -> Option<()> {
        self.raw_string()?;
        if self.peek()? != b':' {
            return None;
        }
        self.i += 1;
        self.ws();
        Some(())
    }

    /// Visits every member of the object at the cursor. `f` gets the raw key
    /// and must consume the value (read it or [`Cursor::skip`] it).
    pub fn object(
        &mut self,
        mut f: impl FnMut(&[u8], &mut Cursor<'a>) -> Option<()>,
    ) -> Option<()> {
        if self.peek()? != b'{' {
            return None;
        }
        self.i += 1;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let (raw, escaped) = self.raw_string()?;
            // A key spelled with escapes (`"t\u0079pe"`) is the same key:
            // decoded (rarely needed) before the caller compares it.
            let decoded;
            let key = if escaped {
                decoded = decode(raw)?;
                decoded.as_bytes()
            } else {
                raw
            };
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.ws();
            f(key, self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Visits every element of the array at the cursor; `f` must consume it.
    pub fn array(&mut self, mut f: impl FnMut(&mut Cursor<'a>) -> Option<()>) -> Option<()> {
        if self.peek()? != b'[' {
            return None;
        }
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            f(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Visits every member of the object at the cursor, as
    /// [`Cursor::object`] does, and returns its raw text.
    pub(crate) fn raw_object(
        &mut self,
        f: impl FnMut(&[u8], &mut Cursor<'a>) -> Option<()>,
    ) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.object(f)?;
        Some(&self.b[start..self.i])
    }

    /// Whether the value at the cursor is an object.
    pub(crate) fn raw_is_object(&mut self) -> bool {
        self.peek() == Some(b'{')
    }

    /// Whether the value at the cursor is an array.
    pub(crate) fn raw_is_array(&mut self) -> bool {
        self.peek() == Some(b'[')
    }

    /// The raw text of the value at the cursor (then skipped).
    pub fn raw(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.skip()?;
        Some(&self.b[start..self.i])
    }

    /// A string value (decoded), or `None` for any other value (skipped).
    /// Bytes that are not UTF-8 are read as U+FFFD, as the spec's reader
    /// reads them (Node decodes the file as UTF-8 before `JSON.parse`, so
    /// such a line is not malformed).
    pub fn string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? != b'"' {
            self.skip()?;
            return Some(None);
        }
        let (raw, escaped) = self.raw_string()?;
        if !escaped {
            return Some(Some(String::from_utf8_lossy(raw)));
        }
        Some(Some(Cow::Owned(decode(raw)?)))
    }

    /// A string's bytes, escapes decoded: what [`Cursor::string`] reads
    /// (bytes that are not UTF-8 read as U+FFFD), without making it a `str`
    /// (a check a word at a time where it is ASCII, as nearly every id,
    /// model and directory is). `Some(None)` for any other value (skipped),
    /// `None` for malformed JSON.
    pub fn text(&mut self) -> Option<Option<Cow<'a, [u8]>>> {
        Some(self.bytes()?.map(|b| {
            if b.is_ascii() || std::str::from_utf8(&b).is_ok() {
                b
            } else {
                Cow::Owned(String::from_utf8_lossy(&b).into_owned().into_bytes())
            }
        }))
    }

    /// A string's bytes, escapes decoded, not checked as UTF-8: for a
    /// value only compared with ASCII text or parsed as ASCII, where the
    /// check would change no outcome. `Some(None)` for a value that is not
    /// a string (skipped), `None` for malformed JSON.
    pub fn bytes(&mut self) -> Option<Option<Cow<'a, [u8]>>> {
        if self.peek()? != b'"' {
            self.skip()?;
            return Some(None);
        }
        let (raw, escaped) = self.raw_string()?;
        if !escaped {
            return Some(Some(Cow::Borrowed(raw)));
        }
        Some(Some(Cow::Owned(decode(raw)?.into_bytes())))
    }

    /// A non-negative integer (JS `Number.isInteger` semantics, so `12.0`
    /// counts), or `None` for any other value (skipped).
    pub fn count(&mut self) -> Option<Option<u64>> {
        // Fast path: up to 19 plain digits (which cannot overflow a u64)
        // followed by a delimiter; anything else takes the full reading.
        self.ws();
        let start = self.i;
        let digits = self.b.get(start..).unwrap_or_default();
        let (mut n, mut len) = (0u64, 0);
        while len < 19 {
            match digits.get(len) {
                Some(&d) if d.is_ascii_digit() => {
                    n = n * 10 + u64::from(d - b'0');
                    len += 1;
                }
                _ => break,
            }
        }
        // A leading zero is a number of its own (`012` is malformed): the
        // full reading refuses it.
        if (len == 1 || (len > 1 && digits[0] != b'0'))
            && matches!(
                digits.get(len),
                None | Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            )
        {
            self.i = start + len;
            return Some(Some(n));
        }
        self.i = start;
        let raw = self.raw()?;
        // A negative spelling counts only when it is zero (`-0`, `-0.0`,
        // `-1e-400`): JavaScript's -0 is an integer and not below 0.
        if raw.first() == Some(&b'-') {
            let f: Option<f64> = std::str::from_utf8(raw).ok().and_then(|s| s.parse().ok());
            return Some(f.filter(|f| *f == 0.0).map(|_| 0));
        }
        if raw.first().is_some_and(u8::is_ascii_digit) {
            if raw.iter().all(u8::is_ascii_digit) {
                return Some(std::str::from_utf8(raw).ok().and_then(|s| s.parse().ok()));
            }
            let f: Option<f64> = std::str::from_utf8(raw).ok().and_then(|s| s.parse().ok());
            return Some(
                f.filter(|f| f.fract() == 0.0 && *f < 9.0e18)
                    .map(|f| f as u64),
            );
        }
        Some(None)
    }

    /// A boolean, or `None` for any other value (skipped).
    pub fn bool(&mut self) -> Option<Option<bool>> {
        let raw = self.raw()?;
        Some(match raw {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        })
    }
}

/// The open containers of a skipped value, innermost last: one bit each
/// (set for an object), the innermost 64 in a word and any deeper in
/// words spilled to the heap, so the nesting is bounded by the line only
/// (a 64 MiB line of brackets spills 8 MiB) and a usual line allocates
/// nothing.
#[derive(Default)]
struct Nesting {
    depth: usize,
    bits: u64,
    deeper: Vec<u64>,
}

impl Nesting {
    #[inline(always)]
    fn push(&mut self, object: bool) {
        if self.depth != 0 && self.depth.is_multiple_of(64) {
            self.deeper.push(self.bits);
            self.bits = 0;
        }
        self.bits = self.bits << 1 | u64::from(object);
        self.depth += 1;
    }

    /// Closes the innermost container; whether any is still open.
    #[inline(always)]
    fn pop(&mut self) -> bool {
        self.bits >>= 1;
        self.depth -= 1;
        if self.depth != 0 && self.depth.is_multiple_of(64) {
            self.bits = self.deeper.pop().unwrap_or(0);
        }
        self.depth != 0
    }

    /// Whether the innermost open container is an object (`None`: none is
    /// open).
    #[inline(always)]
    fn top(&self) -> Option<bool> {
        (self.depth != 0).then_some(self.bits & 1 == 1)
    }
}

/// The length of the JSON number at the start of `b` (`-`, then `0` or a
/// digit run not starting with `0`, then optionally `.` and digits, then
/// optionally `e` or `E`, a sign and digits), or `None` when `b` does not
/// start with one (`+1`, `.5`, `1.`, `1e`, `-`).
#[inline(always)]
fn number_len(b: &[u8]) -> Option<usize> {
    let digits = |from: usize| {
        from + b
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|d| d.is_ascii_digit())
            .count()
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    i = match b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i + 1),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

/// The length of the escape whose backslash comes just before `after`
/// (`\n` is 2, `\u00e9` is 6), or `None` when JSON has no such escape: a
/// string is checked this way even when it is only skipped, as a full
/// parse checks it.
fn escape_len(after: &[u8]) -> Option<usize> {
    match after {
        [b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't', ..] => Some(2),
        [b'u', a, b, c, d, ..] => [a, b, c, d]
            .iter()
            .all(|h| h.is_ascii_hexdigit())
            .then_some(6),
        _ => None,
    }
}

/// The text of a string's raw contents with escapes, decoded by the full
/// parser (rare: transcripts escape little beyond quotes and newlines),
/// bytes that are not UTF-8 read as U+FFFD (as [`Cursor::string`] reads
/// them). `None` for an escaped lone surrogate (`\ud800`), which
/// `JSON.parse` reads but a Rust string cannot hold.
fn decode(raw: &[u8]) -> Option<String> {
    let mut quoted = String::with_capacity(raw.len() + 2);
    quoted.push('"');
    quoted.push_str(&String::from_utf8_lossy(raw));
    quoted.push('"');
    match crate::base::json::parse(&quoted) {
        Ok(crate::base::json::Value::String(s)) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_a_string_s_bytes_with_what_is_not_utf8_as_u_fffd() {
        let read = |json: &[u8]| {
            let mut c = Cursor::new(json);
            let got = c.text().map(|t| t.map(Cow::into_owned));
            (got, c.at_end())
        };
        assert_eq!(read(br#""msg_01""#), (Some(Some(b"msg_01".to_vec())), true));
        assert_eq!(
            read("\"h\u{e9}\"".as_bytes()),
            (Some(Some("h\u{e9}".into())), true)
        );
        // Escapes decoded, as `string` decodes them.
        assert_eq!(
            read(br#""a\u00e9\n""#),
            (Some(Some("a\u{e9}\n".into())), true)
        );
        // Not UTF-8 (a lone continuation byte, a truncated sequence): read
        // as U+FFFD, as Node reads the file before `JSON.parse`.
        assert_eq!(read(b"\"a\x80b\""), (Some(Some("a\u{fffd}b".into())), true));
        assert_eq!(read(b"\"\xc3\""), (Some(Some("\u{fffd}".into())), true));
        assert_eq!(
            read(b"\"\xc3\\n\""),
            (Some(Some("\u{fffd}\n".into())), true)
        );
        // Another kind of value is skipped; broken JSON is malformed.
        assert_eq!(read(b"12"), (Some(None), true));
        assert_eq!(read(b"\"open"), (None, false));
    }

    #[test]
    fn picks_members_and_skips_the_rest() {
        let text = br#"{"a":{"x":[1,{"y":"}]\"{"}],"n":12.0},"s":"h\u00e9\n","t":true,"z":null,"big":-1.5e3}"#;
        let mut c = Cursor::new(text);
        let (mut n, mut s, mut t) = (None, None, None);
        c.object(|k, c| match k {
            b"a" => c.object(|k, c| match k {
                b"n" => {
                    n = c.count()?;
                    Some(())
                }
                _ => c.skip(),
            }),
            b"s" => {
                s = c.string()?.map(|s| s.into_owned());
                Some(())
            }
            b"t" => {
                t = c.bool()?;
                Some(())
            }
            _ => c.skip(),
        })
        .unwrap();
        assert!(c.at_end());
        assert_eq!(n, Some(12));
        assert_eq!(s.as_deref(), Some("hé\n"));
        assert_eq!(t, Some(true));
    }

    #[test]
    fn escaped_keys_are_the_keys_they_spell() {
        let text = br#"{ "t\u0079pe" : "a" , "\u006e":7,"plain":1}"#;
        let mut seen = Vec::new();
        Cursor::new(text)
            .object(|k, c| {
                seen.push(String::from_utf8_lossy(k).into_owned());
                c.skip()
            })
            .unwrap();
        assert_eq!(seen, ["type", "n", "plain"]);
    }

    #[test]
    fn counts_in_arrays() {
        let mut got = Vec::new();
        Cursor::new(b"[ 0, 12 ,7.0, 99999999999999999999, -3, \"9\", 1e3]")
            .array(|c| {
                got.push(c.count()?);
                Some(())
            })
            .unwrap();
        assert_eq!(
            got,
            vec![Some(0), Some(12), Some(7), None, None, None, Some(1000)]
        );
    }

    #[test]
    fn counts_agree_with_the_exact_parser_at_every_length() {
        // Integers of 1 to 22 digits (the fast path takes up to 19, which
        // cannot overflow), around u64::MAX, with fractions and exponents,
        // negative, and after each delimiter; the exact parser's reading is
        // the oracle (an unsigned integer, or an integral float below
        // 9e18, as the parsers' exact paths count them).
        let mut numbers: Vec<String> = (1..=22)
            .flat_map(|n| ["9".repeat(n), format!("1{}", "0".repeat(n - 1))])
            .collect();
        numbers.extend(
            [
                "0",
                "18446744073709551615",
                "18446744073709551616",
                "12.0",
                "12.5",
                "1e3",
                "1.5e1",
                "-1",
                "-0",
                "-0.0",
                "-1e-400",
                "-1e-3",
                "0.0",
                "8999999999999999999.0",
            ]
            .map(String::from),
        );
        let oracle = |text: &str| match crate::base::json::parse(text) {
            Ok(crate::base::json::Value::Number(crate::base::json::Number::Unsigned(n))) => Some(n),
            Ok(crate::base::json::Value::Number(crate::base::json::Number::Signed(0))) => Some(0),
            Ok(crate::base::json::Value::Number(crate::base::json::Number::Float(f)))
                if f.fract() == 0.0 && (0.0..9.0e18).contains(&f) =>
            {
                Some(f as u64)
            }
            _ => None,
        };
        for n in &numbers {
            let want = oracle(n);
            for (before, after) in [("[", "]"), ("[", " ]"), ("[", ",1]"), ("[\n", "\r\n,\t1]")] {
                let text = format!("{before}{n}{after}");
                let mut got = Vec::new();
                Cursor::new(text.as_bytes())
                    .array(|c| {
                        got.push(c.count()?);
                        Some(())
                    })
                    .unwrap();
                assert_eq!(got[0], want, "{text:?}");
            }
            let object = format!(r#"{{"n":{n}}}"#);
            let mut got = None;
            Cursor::new(object.as_bytes())
                .object(|_, c| {
                    got = c.count()?;
                    Some(())
                })
                .unwrap();
            assert_eq!(got, want, "{object}");
        }
    }

    #[test]
    fn control_bytes_in_strings_fail_wherever_they_are() {
        // Short and long strings, the byte in a 32-byte block, in a word
        // after the blocks and in the last bytes; skipped and read values.
        for len in [0usize, 5, 31, 32, 40, 70, 200] {
            for at in [0, len / 2, len.saturating_sub(1)] {
                for bad in [0x00, 0x09, 0x0a, 0x1f] {
                    let mut body = vec![b'a'; len.max(1)];
                    body[at.min(len.max(1) - 1)] = bad;
                    let text = [&b"{\"k\":\""[..], &body, b"\"}"].concat();
                    assert_eq!(Cursor::new(&text).object(|_, c| c.skip()), None);
                    let read = Cursor::new(&text).object(|_, c| c.string().map(|_| ()));
                    assert_eq!(read, None, "{len} {at} {bad}");
                }
            }
            // The same strings without the byte (or with 0x20 and 0x7f,
            // the bytes next to the range) are read whole.
            let mut body = vec![b' '; len];
            if len > 2 {
                body[len / 2] = 0x7f;
            }
            let text = [&b"{\"k\":\""[..], &body, b"\"}"].concat();
            let mut got = None;
            Cursor::new(&text)
                .object(|_, c| {
                    got = c.string()?.map(|s| s.len());
                    Some(())
                })
                .unwrap();
            assert_eq!(got, Some(len));
        }
    }

    #[test]
    fn strings_agree_with_the_exact_parser_at_every_length_and_place() {
        // Oracle: the crate's exact JSON parser. A string of every length
        // up to three 16-byte blocks and then some, with an escape, a
        // control byte or a lone backslash at every place (across every
        // block edge), read as a member and skipped inside an array, with
        // and without bytes after it on the line.
        let exact = |text: &[u8]| match std::str::from_utf8(text).ok().map(crate::base::json::parse)
        {
            Some(Ok(crate::base::json::Value::Object(o))) => match o.get("k") {
                Some(crate::base::json::Value::String(s)) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        };
        for len in 0..=52usize {
            for at in 0..=len {
                for insert in [
                    &b"\\\""[..],
                    b"\\\\",
                    b"\\n",
                    b"\\u00e9",
                    b"\x01",
                    b"\x1f",
                    b"\\",
                    b"\"",
                ] {
                    let mut body = vec![b'y'; len];
                    body.splice(at..at, insert.iter().copied());
                    for tail in [&b""[..], b",\"pad\":\"0123456789abcdef0123\""] {
                        let text = [&b"{\"k\":\""[..], &body, b"\"", tail, b"}"].concat();
                        let mut got = None;
                        let read = Cursor::new(&text).object(|k, c| {
                            if k == b"k" {
                                got = c.string()?.map(|s| s.into_owned());
                                Some(())
                            } else {
                                c.skip()
                            }
                        });
                        let want = exact(&text);
                        assert_eq!(read.and(got), want, "{}", String::from_utf8_lossy(&text));
                        let array = [&b"{\"k\":[\""[..], &body, b"\"]", tail, b"}"].concat();
                        let skipped = Cursor::new(&array).object(|_, c| c.skip());
                        assert_eq!(
                            skipped.is_some(),
                            want.is_some(),
                            "{}",
                            String::from_utf8_lossy(&array)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn escapes_anywhere_in_a_long_string_are_stepped_over() {
        let long = "x".repeat(100);
        let text = format!(r#"{{"k":"{long}\"{long}\\{long}\u00e9","n":1}}"#);
        let (mut s, mut n) = (None, None);
        Cursor::new(text.as_bytes())
            .object(|k, c| {
                match k {
                    b"k" => s = c.string()?.map(|s| s.into_owned()),
                    _ => n = c.count()?,
                }
                Some(())
            })
            .unwrap();
        assert_eq!(s, Some(format!("{long}\"{long}\\{long}é")));
        assert_eq!(n, Some(1));
    }

    /// Values `JSON.parse` refuses (checked with Node 20) and ones it
    /// reads, each skipped inside an object and an array, read as a count
    /// and a flag where that applies, and nested deeper.
    #[test]
    fn skipped_and_read_values_are_checked_as_json_parse_checks_them() {
        let refused: &[&[u8]] = &[
            b"012",
            b"-012",
            b"01.5",
            b"+1",
            b"1.",
            b".5",
            b"-",
            b"-.5",
            b"1e",
            b"1e+",
            b"1E-",
            b"1.e3",
            b"0x1F",
            b"1_000",
            b"Infinity",
            b"NaN",
            b"--1",
            b"1.2.3",
            b"tru",
            b"True",
            b"truee",
            b"nul",
            b"nulll",
            b"fals",
            b"[1,]",
            b"[1 2]",
            b"[,1]",
            b"[1,,2]",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{\"a\"::1}",
            b"{\"a\":}",
            b"{\"a\",1}",
            b"{a:1}",
            b"{1:1}",
            b"{\"a\":1 \"b\":2}",
            b"[}",
            b"{]",
            b"[[1]",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"\\u12G4\"",
            b"\"a\tb\"",
            b"\"\x00\"",
            b"[\x0c1]",
            b"[1\x0b]",
            b"[\xc2\xa01]",
        ];
        let read: &[&[u8]] = &[
            b"0",
            b"-0",
            b"10",
            b"0.5",
            b"-0.0e-0",
            b"1E+2",
            b"1e400",
            b"true",
            b"false",
            b"null",
            b"[]",
            b"{}",
            b"[ 1 , [ ] , { } ]",
            b"{ \"a\" : [ true , null ] , \"b\" : { } }",
            b"\"\\ud800\"",
            b"\"\xff\"",
            b"[\"\\u00e9\\n\\/\"]",
        ];
        for (values, ok) in [(refused, false), (read, true)] {
            for value in values {
                let shown = String::from_utf8_lossy(value);
                for [before, after] in [
                    [&b"{\"k\":"[..], b"}"],
                    [b"{\"k\":", b",\"z\":1}"],
                    [b"{\"k\":[", b"]}"],
                    [b"{\"k\":[2,", b",3]}"],
                    [b"{\"k\":{\"x\":[{\"y\":", b"}]}}"],
                ] {
                    let text = [before, value, after].concat();
                    let skipped = Cursor::new(&text).object(|_, c| c.skip());
                    assert_eq!(skipped.is_some(), ok, "skipped: {shown}");
                    let counted = Cursor::new(&text).object(|_, c| c.count().map(|_| ()));
                    assert_eq!(counted.is_some(), ok, "count: {shown}");
                    let flag = Cursor::new(&text).object(|_, c| c.bool().map(|_| ()));
                    assert_eq!(flag.is_some(), ok, "bool: {shown}");
                }
            }
        }
        // Nesting deeper than a word of the skipper's stack, and unmatched
        // at every depth.
        for depth in [1, 63, 64, 65, 128, 129, 1000] {
            let open = "[{\"a\":".repeat(depth);
            let close = "}]".repeat(depth);
            let good = format!("{{\"k\":{open}1{close}}}");
            assert!(
                Cursor::new(good.as_bytes())
                    .object(|_, c| c.skip())
                    .is_some(),
                "{depth}"
            );
            let bad = format!("{{\"k\":{open}1{}}}", &close[1..]);
            assert!(
                Cursor::new(bad.as_bytes())
                    .object(|_, c| c.skip())
                    .is_none(),
                "{depth}"
            );
        }
    }

    #[test]
    fn torn_and_garbled_lines_fail() {
        for bad in [
            &br#"{"a":1"#[..],
            br#"{"a":[1,2}"#,
            br#"{"a" 1}"#,
            br#"{"a":"unterminated}"#,
            br#"{"a":tru}"#,
            br#"{a:1}"#,
        ] {
            let mut c = Cursor::new(bad);
            assert_eq!(
                c.object(|_, c| c.skip()),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
