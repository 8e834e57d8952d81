//! Every wire vector, the app's (read in place from `../shared/heeler-vectors`)
//! and this project's own (`test-vectors/`), through the `heeler wire`
//! commands exactly as the app's developers would run them.
//!
//! The test prints how many vectors it ran from each place; a missing shared
//! directory is reported, never hidden.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use heeler::base::json::{self, Object, Value};

struct Output {
    status: i32,
    stdout: String,
    stderr: String,
}

fn heeler(args: &[&str], stdin: &str) -> Output {
    // HEELER_TEST_BINARY / HEELER_TEST_RUNNER: a release target's binary
    // (e.g. aarch64 under qemu-user), always with an empty environment.
    let mut child = common::heeler_command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that rejects its arguments exits without reading stdin: a
    // broken pipe here is expected, the exit status is what counts.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    Output {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout)
            .unwrap()
            .trim_end_matches('\n')
            .to_owned(),
        stderr: String::from_utf8(out.stderr)
            .unwrap()
            .trim_end_matches('\n')
            .to_owned(),
    }
}

fn load(path: &Path) -> Value {
    json::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn list<'a>(file: &'a Value, key: &str) -> &'a [Value] {
    file.get(key).and_then(Value::as_array).unwrap_or(&[])
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("vector field {key} missing in {}", v.to_json()))
}

fn shared_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("HEELER_VECTORS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/heeler-vectors"),
    };
    dir.is_dir().then_some(dir)
}

fn own_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-vectors")
}

fn expect_rejected(out: &Output, error: &str, what: &str) {
    assert_eq!(out.status, 1, "{what}: exit status (stderr {})", out.stderr);
    assert_eq!(out.stdout, "", "{what}: nothing on stdout");
    assert_eq!(out.stderr, format!("error: {error}"), "{what}");
}

/// The app-model payload of a pairing vector as wire JSON.
fn pairing_wire(payload: &Value) -> Value {
    let mut wire = Object::new()
        .with("addrs", payload.get("addresses").unwrap().clone())
        .with("port", payload.get("port").unwrap().clone())
        .with("user", s(payload, "username"))
        .with("fp", s(payload, "hostKeyFingerprint"));
    for (app, key) in [("socketPath", "sock"), ("herdrPath", "herdr")] {
        if let Some(v) = payload.get(app) {
            wire.insert(key, v.clone());
        }
    }
    if let Some(seed) = payload.get("bootstrapSeed") {
        wire.insert("seed", seed.clone());
        wire.insert("exp", payload.get("expiresAt").unwrap().clone());
    }
    Value::Object(wire)
}

fn notification_wire(payload: &Value) -> Value {
    let mut wire = Object::new()
        .with("pane", s(payload, "paneId"))
        .with("kind", s(payload, "agentKind"))
        .with("status", s(payload, "status"))
        .with("ts", payload.get("timestamp").unwrap().clone());
    for key in ["project", "title"] {
        if let Some(v) = payload.get(key) {
            wire.insert(key, v.clone());
        }
    }
    Value::Object(wire)
}

fn is_decode_only(v: &Value) -> bool {
    v.get("decodeOnly").and_then(Value::as_bool) == Some(true)
}

fn nonce_of(envelope: &str) -> String {
    s(&json::parse(envelope).unwrap(), "n").to_owned()
}

fn pairing_v1(path: &Path) -> usize {
    let file = load(path);
    let mut ran = 0;
    for v in list(&file, "valid") {
        let name = s(v, "name");
        let wire = pairing_wire(v.get("payload").unwrap());
        let decoded = heeler(&["wire", "pairing", "decode", s(v, "code")], "");
        assert_eq!(decoded.status, 0, "{name}: {}", decoded.stderr);
        assert_eq!(decoded.stdout, wire.to_json(), "{name}: decode");
        if !is_decode_only(v) {
            let encoded = heeler(&["wire", "pairing", "encode"], &wire.to_json());
            assert_eq!(encoded.stdout, s(v, "code"), "{name}: canonical encode");
        }
        ran += 1;
    }
    for v in list(&file, "invalid") {
        expect_rejected(
            &heeler(&["wire", "pairing", "decode", s(v, "code")], ""),
            s(v, "error"),
            s(v, "name"),
        );
        ran += 1;
    }
    ran
}

fn pairing_v2(path: &Path) -> usize {
    let file = load(path);
    let mut ran = 0;
    for v in list(&file, "valid") {
        let wire = pairing_wire(v.get("payload").unwrap());
        let encoded = heeler(&["wire", "pairing", "encode", "--v2"], &wire.to_json());
        assert_eq!(
            encoded.stdout,
            s(v, "code"),
            "{}: {}",
            s(v, "name"),
            encoded.stderr
        );
        // The plugin never decodes v2.
        expect_rejected(
            &heeler(&["wire", "pairing", "decode", s(v, "code")], ""),
            "unsupported_version",
            s(v, "name"),
        );
        ran += 1;
    }
    for v in list(&file, "invalid") {
        let out = heeler(
            &["wire", "pairing", "encode", "--v2"],
            &v.get("wire").unwrap().to_json(),
        );
        expect_rejected(&out, s(v, "error"), s(v, "name"));
        ran += 1;
    }
    ran
}

fn notification_payload(path: &Path) -> usize {
    let file = load(path);
    let mut ran = 0;
    for v in list(&file, "valid") {
        let name = s(v, "name");
        let key = s(v, "key");
        let envelope = s(v, "envelope");
        let wire = notification_wire(v.get("payload").unwrap());
        let opened = heeler(&["wire", "notify", "open", "--key", key], envelope);
        assert_eq!(opened.status, 0, "{name}: {}", opened.stderr);
        assert_eq!(opened.stdout, wire.to_json(), "{name}: open");
        assert_eq!(
            heeler(&["wire", "kid", "--key", key], "").stdout,
            s(v, "keyId"),
            "{name}: kid"
        );
        if !is_decode_only(v) {
            let input = v.get("input").map(notification_wire).unwrap_or(wire);
            let sealed = heeler(
                &[
                    "wire",
                    "notify",
                    "seal",
                    "--key",
                    key,
                    "--nonce",
                    &nonce_of(envelope),
                ],
                &input.to_json(),
            );
            assert_eq!(
                sealed.stdout, envelope,
                "{name}: byte-exact seal ({})",
                sealed.stderr
            );
        }
        if let Some(collapse) = v.get("collapse") {
            let out = heeler(
                &[
                    "wire",
                    "collapse",
                    "--key",
                    key,
                    "--pane",
                    s(collapse, "pane"),
                ],
                "",
            );
            assert_eq!(out.stdout, s(collapse, "key"), "{name}: collapse key");
        }
        ran += 1;
    }
    ran + rejected_envelopes(&file, "notify")
}

fn live_activity(path: &Path) -> usize {
    let file = load(path);
    let mut ran = 0;
    for v in list(&file, "valid") {
        let name = s(v, "name");
        let key = s(v, "key");
        let envelope = s(v, "envelope");
        let payload = v.get("payload").unwrap();
        let opened = heeler(&["wire", "activity", "open", "--key", key], envelope);
        assert_eq!(opened.status, 0, "{name}: {}", opened.stderr);
        assert_eq!(opened.stdout, payload.to_json_sorted(), "{name}: open");
        if !is_decode_only(v) {
            let sealed = heeler(
                &[
                    "wire",
                    "activity",
                    "seal",
                    "--key",
                    key,
                    "--nonce",
                    &nonce_of(envelope),
                ],
                &payload.to_json(),
            );
            assert_eq!(
                sealed.stdout, envelope,
                "{name}: byte-exact seal ({})",
                sealed.stderr
            );
        }
        if let Some(inventory) = v.get("inventory") {
            let mut args = vec!["wire", "activity", "build", "--host", s(payload, "host")];
            let pins = v.get("pinned_pane_ids").map(Value::to_json);
            if let Some(pins) = &pins {
                args.extend(["--pins", pins]);
            }
            let built = heeler(&args, &inventory.to_json());
            let mut expected = payload.as_object().unwrap().clone();
            expected.insert("counts", v.get("counts").unwrap().clone());
            assert_eq!(
                built.stdout,
                Value::Object(expected).to_json_sorted(),
                "{name}: built from inventory"
            );
        }
        ran += 1;
    }
    ran + rejected_envelopes(&file, "activity")
}

/// Every `invalid` envelope of a vector file fails `heeler wire <domain>
/// open` with its typed error.
fn rejected_envelopes(file: &Value, domain: &str) -> usize {
    let invalid = list(file, "invalid");
    for v in invalid {
        let out = heeler(
            &["wire", domain, "open", "--key", s(v, "key")],
            s(v, "envelope"),
        );
        expect_rejected(&out, s(v, "error"), s(v, "name"));
    }
    invalid.len()
}

fn notification_session(path: &Path) -> usize {
    let file = load(path);
    let mut ran = 0;
    for v in list(&file, "names") {
        let name = s(v, "name");
        let valid = v.get("valid").and_then(Value::as_bool).unwrap();
        let socket = format!("/home/ada/.config/herdr/sessions/{name}/herdr.sock");
        let derived = heeler(&["wire", "session", &socket], "").stdout;
        assert_eq!(derived == json::quote(name), valid, "session name {name:?}");
        assert_eq!(
            heeler::herdr::session::is_valid_name(name),
            valid,
            "session name {name:?}"
        );
        ran += 1;
    }
    for v in list(&file, "derivation") {
        let mut args = vec!["wire", "session"];
        if let Some(path) = v.get("socketPath").and_then(Value::as_str) {
            args.push(path);
        }
        let expected = v.get("session").unwrap().to_json();
        assert_eq!(heeler(&args, "").stdout, expected, "{}", s(v, "name"));
        ran += 1;
    }
    for v in list(&file, "delivery") {
        let own = match v.get("ownSession").and_then(Value::as_str) {
            None => heeler::herdr::session::Session::Unknown,
            Some("") => heeler::herdr::session::Session::Default,
            Some(name) => heeler::herdr::session::Session::Named(name.to_owned()),
        };
        let delivered: Vec<i64> = list(v, "entries")
            .iter()
            .enumerate()
            .filter(|(_, entry)| own.delivers_to(entry))
            .map(|(i, _)| i as i64)
            .collect();
        let expected: Vec<i64> = list(v, "delivered")
            .iter()
            .filter_map(Value::as_i64)
            .collect();
        assert_eq!(delivered, expected, "{}", s(v, "name"));
        ran += 1;
    }
    ran
}

fn version_tuple(version: &str) -> Vec<u64> {
    version.split('.').map(|p| p.parse().unwrap()).collect()
}

#[test]
fn every_vector_passes_through_heeler_wire() {
    println!("vectors: heeler is {}", common::describe_under_test());
    let own = own_dir();
    let own_counts = [
        (
            "pairing-code-v2.json",
            pairing_v2(&own.join("pairing-code-v2.json")),
        ),
        (
            "notification-payload-v1.json",
            notification_payload(&own.join("notification-payload-v1.json")),
        ),
        (
            "live-activity-content-v1.json",
            live_activity(&own.join("live-activity-content-v1.json")),
        ),
    ];
    let total: usize = own_counts.iter().map(|(_, n)| n).sum();
    println!("vectors: ran {total} from test-vectors/: {own_counts:?}");
    assert!(total > 0);

    let Some(shared) = shared_dir() else {
        common::skip(
            "shared vectors: ../shared/heeler-vectors not found (set HEELER_VECTORS_DIR); ran only this project's own vectors",
        );
        return;
    };
    let shared_counts = [
        (
            "pairing-code-v1.json",
            pairing_v1(&shared.join("pairing-code-v1.json")),
        ),
        (
            "alternates/pairing-code-v1.mainline-b03f2ee.json",
            pairing_v1(&shared.join("alternates/pairing-code-v1.mainline-b03f2ee.json")),
        ),
        (
            "notification-payload-v1.json",
            notification_payload(&shared.join("notification-payload-v1.json")),
        ),
        (
            "notification-session-v1.json",
            notification_session(&shared.join("notification-session-v1.json")),
        ),
        (
            "live-activity-content-v1.json",
            live_activity(&shared.join("live-activity-content-v1.json")),
        ),
    ];
    let total: usize = shared_counts.iter().map(|(_, n)| n).sum();
    println!(
        "vectors: ran {total} from {}: {shared_counts:?}",
        shared.display()
    );
    for (file, n) in shared_counts {
        assert!(n > 0, "{file}: no vectors found");
    }
}

#[test]
fn version_agrees_with_the_vectors_and_the_manifest() {
    let ours = load(&own_dir().join("plugin-version-v1.json"));
    assert_eq!(
        s(&ours, "version"),
        env!("CARGO_PKG_VERSION"),
        "Cargo.toml vs test-vectors/plugin-version-v1.json"
    );
    assert!(
        version_tuple(env!("CARGO_PKG_VERSION")) >= vec![0, 7, 1],
        "the app replaces plugins older than 0.7.1"
    );
    assert_eq!(
        heeler(&["--version"], "").stdout,
        format!("heeler {}", env!("CARGO_PKG_VERSION"))
    );
    if let Some(shared) = shared_dir() {
        let upstream = load(&shared.join("plugin-version-v1.json"));
        assert!(version_tuple(env!("CARGO_PKG_VERSION")) >= version_tuple(s(&upstream, "version")));
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("herdr-plugin.toml");
    match std::fs::read_to_string(&manifest) {
        Ok(text) => {
            let table: toml::Table = text.parse().unwrap();
            assert_eq!(
                table.get("version").and_then(|v| v.as_str()),
                Some(env!("CARGO_PKG_VERSION")),
                "herdr-plugin.toml version"
            );
        }
        Err(_) => println!(
            "version: herdr-plugin.toml does not exist yet; checked Cargo.toml and test-vectors only"
        ),
    }
}
