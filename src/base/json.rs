//! JSON as the Node plugin and the Heeler app write it.
//!
//! Why our own value type: the registration file must survive a rewrite with
//! every field we do not understand kept *in its original order*, and several
//! wire formats are byte-exact (Node's `JSON.stringify`: compact, insertion
//! order, non-ASCII unescaped, `/` unescaped), and numbers must parse exactly
//! as `JSON.parse` does (a cached `mtime_ms` of 1757039000123.4567 must read
//! back bit-for-bit). `miniserde` sorts object keys and rounds some 17-digit
//! floats wrongly (measured: 18% of random 13-digit-integer-part doubles), so
//! this module has its own small parser: insertion-ordered objects, floats
//! through the standard library's correctly rounded `f64::from_str`.
//!
//! Parsing never panics: input nested deeper than [`MAX_DEPTH`] is refused,
//! which also bounds recursion when values are dropped or serialized.

use std::fmt::Write as _;

/// Deepest array/object nesting [`parse`] accepts.
pub const MAX_DEPTH: usize = 128;

/// A JSON number as parsed: integers keep full 64-bit precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

/// A JSON value whose objects keep their members in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Object),
}

/// An object: members in insertion order, keys unique (a repeated key keeps
/// its first position and takes the last value, as `JSON.parse` does).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    members: Vec<(String, Value)>,
}

/// Why a text is not acceptable JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not well-formed JSON.
    Syntax,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Syntax => f.write_str("not well-formed JSON"),
            ParseError::TooDeep => write!(f, "JSON nested deeper than {MAX_DEPTH} levels"),
        }
    }
}

impl std::error::Error for ParseError {}

impl Object {
    pub fn new() -> Object {
        Object::default()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.members
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Sets `key`, keeping its position when it already exists.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        #[cfg(test)]
        tests::MEMBERS_SCANNED.with(|n| n.set(n.get() + self.members.len()));
        match self.get_mut(&key) {
            Some(slot) => *slot = value,
            None => self.members.push((key, value)),
        }
    }

    /// Builder form of [`Object::insert`].
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Object {
        self.insert(key, value.into());
        self
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let index = self.members.iter().position(|(k, _)| k == key)?;
        Some(self.members.remove(index).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.members.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

/// Members an object holds before the parser indexes its keys: below it a
/// scan is cheaper than hashing.
const INDEX_FROM: usize = 16;

/// An object being parsed. [`Object::insert`] scans for a repeated key,
/// which makes a parse quadratic in the member count; past
/// [`INDEX_FROM`] members the builder finds repeated keys through a hash
/// index instead, with the same rule (first position, last value).
#[derive(Default)]
struct ObjectBuilder {
    object: Object,
    index: std::collections::HashMap<String, usize>,
}

impl ObjectBuilder {
    fn insert(&mut self, key: String, value: Value) {
        let members = &mut self.object.members;
        if members.len() < INDEX_FROM {
            self.object.insert(key, value);
            return;
        }
        if self.index.is_empty() {
            self.index = members
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect();
        }
        match self.index.get(&key) {
            Some(&i) => members[i].1 = value,
            None => {
                self.index.insert(key.clone(), members.len());
                members.push((key, value));
            }
        }
    }

    fn finish(self) -> Object {
        self.object
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Number(Number::Unsigned(n))
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Value {
        if n >= 0 {
            Value::Number(Number::Unsigned(n as u64))
        } else {
            Value::Number(Number::Signed(n))
        }
    }
}
impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::from(u64::from(n))
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Number(Number::Float(n))
    }
}
impl From<Object> for Value {
    fn from(o: Object) -> Value {
        Value::Object(o)
    }
}
impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}

impl Value {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.get(key)
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A string with at least one character.
    pub(crate) fn as_nonempty_str(&self) -> Option<&str> {
        self.as_str().filter(|s| !s.is_empty())
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// An integral number, as JavaScript's `Number.isInteger` sees it
    /// (`22.0` counts), within `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Unsigned(n)) => i64::try_from(*n).ok(),
            Value::Number(Number::Signed(n)) => Some(*n),
            Value::Number(Number::Float(f)) => {
                (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18).then_some(*f as i64)
            }
            _ => None,
        }
    }

    /// Any finite number as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::Unsigned(n)) => Some(*n as f64),
            Value::Number(Number::Signed(n)) => Some(*n as f64),
            Value::Number(Number::Float(f)) => f.is_finite().then_some(*f),
            _ => None,
        }
    }

    /// Compact JSON exactly as `JSON.stringify` writes it.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_value(&mut out, self, false);
        out
    }

    /// Compact JSON with the keys of every object sorted (the canonical form
    /// of the Live Activity plaintext).
    pub fn to_json_sorted(&self) -> String {
        let mut out = String::new();
        write_value(&mut out, self, true);
        out
    }
}

/// Reads and parses a JSON file: `None` when it is missing, unreadable,
/// not UTF-8 or not valid JSON. For state heeler itself wrote, where any of
/// those means "start over". Read through [`crate::base::state_file`], so
/// a link, a FIFO or an oversized file is such a failure too.
pub(crate) fn read_file(path: &std::path::Path) -> Option<Value> {
    use crate::base::state_file;
    parse(&state_file::read_text(path, state_file::MAX_BYTES)?).ok()
}

/// Parses one JSON document (RFC 8259; surrounding white space allowed).
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.at != parser.bytes.len() {
        return Err(ParseError::Syntax);
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn expect_literal(&mut self, literal: &[u8], value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.at..].starts_with(literal) {
            self.at += literal.len();
            Ok(value)
        } else {
            Err(ParseError::Syntax)
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        match self.peek().ok_or(ParseError::Syntax)? {
            b'n' => self.expect_literal(b"null", Value::Null),
            b't' => self.expect_literal(b"true", Value::Bool(true)),
            b'f' => self.expect_literal(b"false", Value::Bool(false)),
            b'"' => Ok(Value::String(self.string()?)),
            b'[' => self.array(depth + 1),
            b'{' => self.object(depth + 1),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(ParseError::Syntax),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        self.at += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(ParseError::Syntax),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        self.at += 1;
        let mut object = ObjectBuilder::default();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(object.finish()));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(ParseError::Syntax);
            }
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(ParseError::Syntax);
            }
            self.at += 1;
            self.skip_whitespace();
            let value = self.value(depth)?;
            object.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(object.finish()));
                }
                _ => return Err(ParseError::Syntax),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .bytes
            .get(self.at..self.at + 4)
            .ok_or(ParseError::Syntax)?;
        let text = std::str::from_utf8(digits).map_err(|_| ParseError::Syntax)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(ParseError::Syntax);
        }
        self.at += 4;
        u32::from_str_radix(text, 16).map_err(|_| ParseError::Syntax)
    }

    /// A string literal; the cursor is on its opening quote. Lone UTF-16
    /// surrogates are refused: a Rust string cannot hold them, and a file we
    /// cannot represent must never be rewritten.
    fn string(&mut self) -> Result<String, ParseError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            // The input is a &str and we stopped on ASCII: a char boundary.
            out.push_str(
                std::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| ParseError::Syntax)?,
            );
            match self.peek().ok_or(ParseError::Syntax)? {
                b'"' => {
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.at += 1;
                    let escape = self.peek().ok_or(ParseError::Syntax)?;
                    self.at += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            let code = match unit {
                                0xD800..=0xDBFF => {
                                    if !self.bytes[self.at..].starts_with(b"\\u") {
                                        return Err(ParseError::Syntax);
                                    }
                                    self.at += 2;
                                    let low = self.hex4()?;
                                    if !(0xDC00..=0xDFFF).contains(&low) {
                                        return Err(ParseError::Syntax);
                                    }
                                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                }
                                0xDC00..=0xDFFF => return Err(ParseError::Syntax),
                                unit => unit,
                            };
                            out.push(char::from_u32(code).ok_or(ParseError::Syntax)?);
                        }
                        _ => return Err(ParseError::Syntax),
                    }
                }
                _ => return Err(ParseError::Syntax),
            }
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.skip_digits(),
            _ => return Err(ParseError::Syntax),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.at += 1;
            if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return Err(ParseError::Syntax);
            }
            self.skip_digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            integral = false;
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return Err(ParseError::Syntax);
            }
            self.skip_digits();
        }
        let text =
            std::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| ParseError::Syntax)?;
        if integral {
            if let Ok(n) = text.parse::<u64>() {
                return Ok(Value::Number(Number::Unsigned(n)));
            }
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Value::Number(Number::Signed(n)));
            }
        }
        // Correctly rounded, like JSON.parse; out-of-range becomes ±inf.
        text.parse::<f64>()
            .map(|f| Value::Number(Number::Float(f)))
            .map_err(|_| ParseError::Syntax)
    }

    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }
}

fn write_value(out: &mut String, value: &Value, sorted: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, *n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, sorted);
            }
            out.push(']');
        }
        Value::Object(object) => {
            out.push('{');
            if sorted {
                let mut members: Vec<&(String, Value)> = object.members.iter().collect();
                members.sort_by(|a, b| a.0.cmp(&b.0));
                for (i, (key, item)) in members.into_iter().enumerate() {
                    write_member(out, i, key, item, sorted);
                }
            } else {
                for (i, (key, item)) in object.members.iter().enumerate() {
                    write_member(out, i, key, item, sorted);
                }
            }
            out.push('}');
        }
    }
}

fn write_member(out: &mut String, i: usize, key: &str, item: &Value, sorted: bool) {
    if i > 0 {
        out.push(',');
    }
    write_string(out, key);
    out.push(':');
    write_value(out, item, sorted);
}

/// A JSON string literal as `JSON.stringify` writes it: `"`, `\\` and the
/// control characters escaped (the short escapes where JSON has one),
/// everything else as it is. The runs between escapes are copied whole
/// (snapshots and views write thousands of strings, nearly all plain).
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut plain = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        // `i` is at an ASCII byte, so both ends of the run are character
        // boundaries.
        out.push_str(&s[plain..i]);
        if short.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(short);
        }
        plain = i + 1;
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

/// A JSON string literal as a new `String`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s);
    out
}

fn write_number(out: &mut String, n: Number) {
    match n {
        Number::Unsigned(n) => write_integer(out, false, n),
        Number::Signed(n) => write_integer(out, n < 0, n.unsigned_abs()),
        Number::Float(f) => out.push_str(&format_js_number(f)),
    }
}

/// An integer's decimal digits, put together on the stack (the formatter's
/// machinery costs more than the digits; a snapshot has thousands).
fn write_integer(out: &mut String, negative: bool, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// `Number.prototype.toString` for a double: the shortest round-trip digits,
/// laid out with ECMAScript's thresholds for exponent notation.
pub(crate) fn format_js_number(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_owned();
    }
    if f == 0.0 {
        return "0".to_owned();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exponent.parse::<i64>().unwrap_or(0) + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e >= 0 { "+" } else { "-" };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_insertion_order() {
        let text = r#"{"z":1,"a":[true,null,"s",1.5,-3],"m":{"y":"\u00e9/\n","b":{}}}"#;
        let value = parse(text).unwrap();
        assert_eq!(
            value.to_json(),
            r#"{"z":1,"a":[true,null,"s",1.5,-3],"m":{"y":"é/\n","b":{}}}"#
        );
        assert_eq!(
            value.to_json_sorted(),
            r#"{"a":[true,null,"s",1.5,-3],"m":{"b":{},"y":"é/\n"},"z":1}"#
        );
    }

    fn object_text(keys: usize) -> String {
        let members: Vec<String> = (0..keys).map(|i| format!(r#""k{i}":{i}"#)).collect();
        format!("{{{}}}", members.join(","))
    }

    thread_local! {
        /// How many members [`Object::insert`]'s scans have passed on
        /// this thread: the parser's work that grows with an object's size.
        pub(super) static MEMBERS_SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Parses `text` and returns how many members the insert scans passed.
    fn members_scanned(text: &str) -> usize {
        MEMBERS_SCANNED.with(|n| n.set(0));
        let value = parse(text).unwrap();
        assert!(value.as_object().is_some());
        MEMBERS_SCANNED.with(|n| n.get())
    }

    #[test]
    fn objects_parse_in_linear_time() {
        // A scan per insert passes every earlier member: n(n-1)/2 in all.
        // Past INDEX_FROM members the builder's hash index takes over, so
        // the scans stop at the first INDEX_FROM inserts whatever the size.
        let bound = INDEX_FROM * (INDEX_FROM - 1) / 2;
        assert_eq!(members_scanned(&object_text(INDEX_FROM)), bound);
        assert_eq!(members_scanned(&object_text(5_000)), bound);
        assert_eq!(members_scanned(&object_text(50_000)), bound);
        let large = parse(&object_text(50_000)).unwrap();
        assert_eq!(large.as_object().unwrap().len(), 50_000);
    }

    #[test]
    fn duplicate_keys_in_large_objects_keep_first_position_and_last_value() {
        let text = object_text(100);
        let text = format!(
            r#"{},"k3":"last","k99":"end","new":0}}"#,
            &text[..text.len() - 1]
        );
        let value = parse(&text).unwrap();
        let object = value.as_object().unwrap();
        assert_eq!(object.len(), 101);
        let keys: Vec<&str> = object.iter().map(|(k, _)| k).collect();
        assert_eq!(&keys[..4], ["k0", "k1", "k2", "k3"]);
        assert_eq!(keys[100], "new");
        assert_eq!(object.get("k3"), Some(&Value::from("last")));
        assert_eq!(object.get("k99"), Some(&Value::from("end")));
    }

    #[test]
    fn duplicate_keys_keep_first_position_and_last_value() {
        let value = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(value.to_json(), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn numbers_print_like_javascript() {
        let cases = [
            (22.0, "22"),
            (1.5, "1.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (-2.5e-8, "-2.5e-8"),
            (123.456, "123.456"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (f, s) in cases {
            assert_eq!(format_js_number(f), s);
        }
    }

    #[test]
    fn control_characters_are_escaped_like_javascript() {
        assert_eq!(
            quote("\u{1}\u{7f}\u{2028}\"\\"),
            "\"\\u0001\u{7f}\u{2028}\\\"\\\\\""
        );
    }

    #[test]
    fn strings_are_quoted_as_ecmascript_quotes_them() {
        // Oracle: ECMA-262's QuoteJSONString, a character at a time: the
        // short escapes, other code units below U+0020 as lowercase `\u`
        // escapes, everything else (U+007F, U+2028, astral) as it is.
        fn quote_json_string(s: &str) -> String {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '\u{8}' => out += "\\b",
                    '\t' => out += "\\t",
                    '\n' => out += "\\n",
                    '\u{c}' => out += "\\f",
                    '\r' => out += "\\r",
                    '"' => out += "\\\"",
                    '\\' => out += "\\\\",
                    c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
                    c => out.push(c),
                }
            }
            out + "\""
        }
        // Every ASCII character alone, at a run's start, middle and end, and
        // beside multi-byte characters.
        for b in 0u8..0x80 {
            let c = char::from(b);
            for s in [
                format!("{c}"),
                format!("{c}plain"),
                format!("pl{c}ain"),
                format!("plain{c}"),
                format!("é{c}€{c}😀"),
                format!("{c}{c}\u{2028}{c}"),
            ] {
                assert_eq!(quote(&s), quote_json_string(&s), "{s:?}");
            }
        }
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn integers_print_as_their_decimal_digits() {
        // Oracle: the standard formatter.
        let unsigned = [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX];
        for n in unsigned {
            assert_eq!(Value::from(n).to_json(), n.to_string());
        }
        let signed = [i64::MIN, i64::MIN + 1, -1_000_000, -10, -9, -1];
        for n in signed {
            assert_eq!(Value::Number(Number::Signed(n)).to_json(), n.to_string());
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(parse(&deep), Err(ParseError::TooDeep));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn floats_read_back_exactly() {
        for text in [
            "2093714812612.1375",
            "1757039000123.4567",
            "0.1",
            "5e-324",
            "1.7976931348623157e308",
        ] {
            let f: f64 = text.parse().unwrap();
            assert_eq!(
                parse(text).unwrap(),
                Value::Number(Number::Float(f)),
                "{text}"
            );
        }
    }

    #[test]
    fn grammar_edges() {
        for bad in [
            "",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "[1,]",
            "{\"a\":1,}",
            "\"\u{1}\"",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "nul",
            "[1 2]",
            "{1:2}",
            "\"\\x\"",
            "1 2",
        ] {
            assert_eq!(parse(bad), Err(ParseError::Syntax), "{bad:?}");
        }
        assert_eq!(parse(" [ ] ").unwrap(), Value::Array(vec![]));
        assert_eq!(
            parse("\"\\ud83d\\ude00\\u00e9\"").unwrap(),
            Value::from("😀é")
        );
        assert_eq!(parse("-0").unwrap().as_i64(), Some(0));
        assert_eq!(
            parse("18446744073709551616").unwrap(),
            Value::Number(Number::Float(18446744073709551616.0))
        );
    }

    #[test]
    fn integers_follow_number_is_integer() {
        assert_eq!(parse("22.0").unwrap().as_i64(), Some(22));
        assert_eq!(parse("22.5").unwrap().as_i64(), None);
        assert_eq!(parse("-7").unwrap().as_i64(), Some(-7));
    }
}
