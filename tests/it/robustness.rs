//! Decoders and openers never panic: random and mutated inputs (mutations
//! of valid codes, envelopes and plaintexts from the vectors) must come back
//! as a typed error or a success. Each test runs [`rounds`] inputs: 3,000
//! by default, 100,000 under `HEELER_DEEP=1` (`fuzz/` holds the
//! coverage-guided targets for the long campaign).
//!
//! Mutated plaintexts are sealed with the right key before opening, so the
//! mutations reach the plaintext validators, not just the AEAD check.

use crate::depth;
use crate::fuzz_support;
use fuzz_support::Rng;

use std::path::Path;

use heeler::base::base64;
use heeler::base::json::{self, Value};
use heeler::wire::envelope::{self, Domain, NotificationKey};
use heeler::wire::live_activity::Content;
use heeler::wire::notification::Notification;
use heeler::wire::pairing_code;

/// Inputs per test.
fn rounds() -> usize {
    depth::rounds(3_000, 100_000)
}

const INTERESTING: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"null",
    b"true",
    b"-",
    b"0",
    b"1e999",
    b"9999999999999999999999",
    b"-0.0",
    b"=",
    b"_",
    b"-",
    b"+",
    b"/",
    b"\xff",
    b"\xe2\x80\xa6",
    b"\0",
    b" ",
    b"\n",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(8) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 => out.insert(at, rng.next() as u8),
            2 if at < out.len() => {
                let end = (at + rng.below(16)).min(out.len());
                out.drain(at..end);
            }
            3 => out.truncate(at),
            4 => {
                let token = INTERESTING[rng.below(INTERESTING.len())];
                out.splice(at..at, token.iter().copied());
            }
            5 if !out.is_empty() => {
                let start = rng.below(out.len());
                let end = (start + rng.below(32)).min(out.len());
                let copy = out[start..end].to_vec();
                out.splice(at..at, copy);
            }
            6 => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(other.len() + 1);
                out.truncate(at);
                out.extend_from_slice(&other[cut..]);
            }
            _ => {
                let len = rng.below(64);
                out = (0..len).map(|_| rng.next() as u8).collect();
            }
        }
    }
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn vectors(file: &str) -> Value {
    let own = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-vectors")
        .join(file);
    json::parse(&std::fs::read_to_string(own).unwrap()).unwrap()
}

fn strings_at(file: &Value, list: &str, key: &str) -> Vec<Vec<u8>> {
    file.get(list)
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(|v| v.get(key)?.as_str())
        .map(|s| s.as_bytes().to_vec())
        .collect()
}

#[test]
fn pairing_code_decoder_never_panics() {
    let file = vectors("pairing-code-v2.json");
    let mut corpus = strings_at(&file, "valid", "code");
    let v1 = "HERDR-PAIR:1:eyJhZGRycyI6WyIxMC4wLjAuNyJdLCJwb3J0IjoyMiwidXNlciI6ImxpbiIsImZwIjoiU0hBMjU2OjYram5jTmRpYnNHMmNxdmZvTEFwR3JPOEN2SXdBRU16c0IrSWlsT3M4dGciLCJzZWVkIjoiQUFFQ0F3UUZCZ2NJQ1FvTERBME9EeEFSRWhNVUZSWVhHQmthR3h3ZEhoOCIsImV4cCI6MTc1MzMwNTYwMH0";
    corpus.push(v1.as_bytes().to_vec());
    let payload = base64::decode_url(v1.strip_prefix("HERDR-PAIR:1:").unwrap()).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut rejected) = (0, 0);
    for round in 0..rounds() {
        let code = if round % 2 == 0 {
            {
                let pick = rng.below(corpus.len());
                text(&mutate(&mut rng, &corpus[pick], &corpus))
            }
        } else {
            // Mutate the JSON payload and frame it validly, to reach the validator.
            let body = mutate(&mut rng, &payload, &corpus);
            format!("HERDR-PAIR:1:{}", base64::encode_url(&body))
        };
        match pairing_code::decode(&code) {
            Ok(decoded) => {
                accepted += 1;
                // Whatever decodes must re-encode and decode to the same payload.
                let again = pairing_code::encode_v1(&decoded).unwrap();
                assert_eq!(pairing_code::decode(&again).unwrap(), decoded);
            }
            Err(_) => rejected += 1,
        }
    }
    println!(
        "pairing decode: {} inputs, {accepted} accepted, {rejected} rejected with a typed error",
        rounds()
    );
    assert_eq!(accepted + rejected, rounds());
}

fn open_mutations(domain: Domain, file: &str, open: &dyn Fn(&NotificationKey, &str) -> bool) {
    let vectors = vectors(file);
    let envelopes = strings_at(&vectors, "valid", "envelope");
    let key =
        NotificationKey::from_base64url("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
    let plaintexts: Vec<Vec<u8>> = vectors
        .get("valid")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter(|v| {
            v.get("key").and_then(Value::as_str)
                == Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
        })
        .map(|v| {
            envelope::open(domain, &key, v.get("envelope").unwrap().as_str().unwrap()).unwrap()
        })
        .collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut opened, mut rejected) = (0, 0);
    for round in 0..rounds() {
        let input = if round % 2 == 0 {
            {
                let pick = rng.below(envelopes.len());
                text(&mutate(&mut rng, &envelopes[pick], &envelopes))
            }
        } else {
            let pick = rng.below(plaintexts.len());
            let plaintext = mutate(&mut rng, &plaintexts[pick], &plaintexts);
            envelope::seal(domain, &key, [7; 12], &plaintext)
        };
        if open(&key, &input) {
            opened += 1
        } else {
            rejected += 1
        }
    }
    println!(
        "{file} open: {} inputs, {opened} opened, {rejected} rejected with a typed error",
        rounds()
    );
    assert_eq!(opened + rejected, rounds());
}

#[test]
fn notification_opener_never_panics() {
    open_mutations(
        Domain::Notification,
        "notification-payload-v1.json",
        &|key, input| {
            match Notification::open(key, input) {
                Ok(n) => {
                    // An accepted payload re-seals and re-opens to itself.
                    let again = Notification::open(key, &n.seal(key, [1; 12])).unwrap();
                    assert_eq!(again, n.trimmed_for_display());
                    true
                }
                Err(_) => false,
            }
        },
    );
}

#[test]
fn activity_opener_never_panics() {
    open_mutations(
        Domain::Activity,
        "live-activity-content-v1.json",
        &|key, input| match Content::open(key, input) {
            Ok(content) => {
                let again = Content::open(key, &content.seal(key, [1; 12])).unwrap();
                assert_eq!(again, content, "{}", content.canonical_json());
                true
            }
            Err(_) => false,
        },
    );
}

#[test]
fn json_parser_never_panics_and_round_trips() {
    let mut corpus = Vec::new();
    for file in [
        "pairing-code-v2.json",
        "notification-payload-v1.json",
        "live-activity-content-v1.json",
    ] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("test-vectors")
                .join(file),
        )
        .unwrap();
        corpus.push(text.into_bytes());
    }
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let (mut parsed, mut rejected) = (0, 0);
    for _ in 0..rounds() {
        let source = &corpus[rng.below(corpus.len())];
        let start = rng.below(source.len());
        let window = &source[start..(start + 1 + rng.below(400)).min(source.len())];
        let input = text(&mutate(&mut rng, window, &corpus));
        match json::parse(&input) {
            Ok(value) => {
                parsed += 1;
                let printed = value.to_json();
                assert_eq!(
                    json::parse(&printed).unwrap().to_json(),
                    printed,
                    "parse then print is stable"
                );
            }
            Err(_) => rejected += 1,
        }
    }
    println!(
        "json parse: {} inputs, {parsed} parsed, {rejected} rejected with a typed error",
        rounds()
    );
}
