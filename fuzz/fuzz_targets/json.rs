//! The JSON parser against serde_json (insertion order kept, correctly
//! rounded floats, no depth limit): the same texts accepted, the same
//! values; and the printer's output parses and prints back to itself.
//!
//! Where the two differ by design: a number out of `f64`'s range is
//! `±inf` to us (as `JSON.parse` reads it) and an error to serde_json; the
//! integer `-0` is the integer 0 to us (printed `0`, as `JSON.stringify`
//! prints `-0`) and `-0.0` to serde_json; nesting deeper than
//! [`json::MAX_DEPTH`] is refused by us only.
#![no_main]
use heeler::base::json::{self, Number, ParseError, Value};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

fn same(ours: &Value, theirs: &serde_json::Value) -> bool {
    use serde_json::Value as S;
    match (ours, theirs) {
        (Value::Null, S::Null) => true,
        (Value::Bool(a), S::Bool(b)) => a == b,
        (Value::String(a), S::String(b)) => a == b,
        (Value::Number(n), S::Number(m)) => match *n {
            Number::Unsigned(u) => m.as_u64() == Some(u),
            Number::Signed(0) => m.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()),
            Number::Signed(i) => m.is_i64() && m.as_i64() == Some(i),
            Number::Float(f) => m.is_f64() && m.as_f64().map(f64::to_bits) == Some(f.to_bits()),
        },
        (Value::Array(a), S::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), S::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => false,
    }
}

fn has_infinity(value: &Value) -> bool {
    match value {
        Value::Number(Number::Float(f)) => f.is_infinite(),
        Value::Array(items) => items.iter().any(has_infinity),
        Value::Object(object) => object.iter().any(|(_, v)| has_infinity(v)),
        _ => false,
    }
}

fn theirs(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = serde_json::Value::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = json::parse(text);
    // Past our depth limit nothing is compared (serde_json would recurse
    // as deep as the input goes).
    if ours == Err(ParseError::TooDeep) {
        return;
    }
    match (&ours, theirs(text)) {
        (Ok(a), Ok(b)) => assert!(same(a, &b), "values differ: {a:?} vs {b:?}"),
        // A repeated key may have dropped the infinite number: the error
        // names it.
        (Ok(a), Err(e)) => assert!(
            has_infinity(a) || e.to_string().starts_with("number out of range"),
            "only we accept ({e}): {a:?}"
        ),
        (Err(_), Ok(b)) => panic!("only serde_json accepts: {b:?}"),
        (Err(_), Err(_)) => {}
    }
    if let Ok(value) = ours
        && !has_infinity(&value)
    {
        let printed = value.to_json();
        let again = json::parse(&printed).map(|v| v.to_json());
        assert_eq!(again.as_deref(), Ok(printed.as_str()));
    }
});
