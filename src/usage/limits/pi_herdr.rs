//! pi-herdr's `limits` document: the Claude and Codex subscription windows
//! every pi process folds in from its responses' headers and publishes to
//! herdr-core, read here as a second source for the views' limits.
//!
//! - [`parse`]: the document (schema 1: accounts keyed
//!   `<provider>.<account>`, windows `5h`, `7d`, … with `used` percent,
//!   `resets_at` and `at`) to one limits value per agent, in the shape the
//!   query reports our own probes in (`state`, `source`, `fetched_at`,
//!   `windows` with `window_minutes`, `used_percent`, `resets_at`).
//! - [`freshest`]: which of our probe's value and the document's wins
//!   (the one read most recently, ours on a tie).
//! - [`fetch`]: `doc.get {name: "limits"}` over herdr-core's JSON-RPC
//!   socket (`HC_TERMINAL_SOCKET`), one request line and one response line.
//!   The framing is an assumption (newline-delimited JSON-RPC 2.0): pi-herdr
//!   documents the method, not the wire. A `result` that is the document,
//!   or holds it as `doc` or `value`, is accepted.
//!
//! Invariants: pure but for [`fetch`], which is bounded (one overall
//! deadline, a capped read) and turns every failure into "no document": the
//! document never fails a view and never reaches the app's query.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::base::json::{self, Object, Value};
use crate::usage::event::Agent;

/// The environment variable naming herdr-core's socket in its terminals.
pub(crate) const SOCKET_ENV: &str = "HC_TERMINAL_SOCKET";
/// The whole exchange's deadline.
pub(crate) const DEADLINE: Duration = Duration::from_millis(200);
/// The longest response read.
pub(crate) const MAX_RESPONSE: usize = 64 * 1024;

/// The document's schema this reader knows.
const SCHEMA: i64 = 1;

/// One agent's limits from the document, as our probes report them
/// (`source` `pi-herdr`, `fetched_at` the newest `at`); `None` when the
/// document has no window for that agent. Of several accounts of one
/// provider, the one read most recently. A window whose reset is at or
/// before `now` is marked `reset_since_observed`, as the query marks ours.
pub fn parse(doc: &Value, agent: Agent, now: i64) -> Option<Value> {
    if doc.get("schema").and_then(Value::as_i64) != Some(SCHEMA) {
        return None;
    }
    let provider = agent.name();
    let accounts = doc.get("accounts").and_then(Value::as_object)?;
    accounts
        .iter()
        .filter(|(key, a)| {
            key.split_once('.').map(|(p, _)| p) == Some(provider)
                && a.get("provider")
                    .and_then(Value::as_str)
                    .is_none_or(|p| p == provider)
        })
        .filter_map(|(_, account)| account_limits(account, now))
        .max_by_key(|(at, _)| *at)
        .map(|(_, limits)| limits)
}

/// An account's windows and the newest `at` among them and the account.
fn account_limits(account: &Value, now: i64) -> Option<(i64, Value)> {
    let windows = account.get("windows").and_then(Value::as_object)?;
    let mut newest = account.get("at").and_then(Value::as_i64).unwrap_or(0);
    let mut list = Vec::new();
    for (id, w) in windows.iter() {
        let Some(used) = w.get("used").and_then(Value::as_f64) else {
            continue;
        };
        let at = w.get("at").and_then(Value::as_i64);
        newest = newest.max(at.unwrap_or(0));
        let minutes = w
            .get("window_s")
            .and_then(Value::as_i64)
            .map(|s| s / 60)
            .or_else(|| minutes_of(id));
        let resets_at = w.get("resets_at").and_then(Value::as_i64);
        let id = w.get("id").and_then(Value::as_str).unwrap_or(id);
        list.push(Value::Object(
            Object::new()
                .with("id", id)
                .with("window_minutes", minutes.map_or(Value::Null, Value::from))
                .with("used_percent", used)
                .with("resets_at", resets_at.map_or(Value::Null, Value::from))
                .with("reset_since_observed", resets_at.is_some_and(|r| r <= now)),
        ));
    }
    if list.is_empty() {
        return None;
    }
    let plan = account.get("plan").and_then(Value::as_str);
    let limits = Object::new()
        .with("state", "ok")
        .with("source", "pi-herdr")
        .with("fetched_at", newest)
        .with("plan", plan.map_or(Value::Null, Value::from))
        .with("windows", Value::Array(list));
    Some((newest, Value::Object(limits)))
}

/// A window id's length when the window carries no `window_s`: `5h`,
/// `7d`, `7d_opus`, `codex.5h` (a family's window).
fn minutes_of(id: &str) -> Option<i64> {
    let id = id.rsplit('.').next().unwrap_or(id);
    let head = id.split('_').next().unwrap_or(id);
    let (n, unit) = head.split_at(head.len().checked_sub(1)?);
    let n: i64 = n.parse().ok()?;
    match unit {
        "h" => Some(n * 60),
        "d" => Some(n * 1440),
        _ => None,
    }
}

/// Our probe's value or the document's, whichever was read more recently
/// (`fetched_at`); ours when it is as recent, and the document's when ours
/// has no windows to show (pending, disabled, failed). A reading is a
/// reading whoever took it: the newest says most about now.
pub(crate) fn freshest(ours: Value, theirs: Option<Value>) -> Value {
    let Some(theirs) = theirs else {
        return ours;
    };
    let ok = ours.get("state").and_then(Value::as_str) == Some("ok");
    let at = |v: &Value| v.get("fetched_at").and_then(Value::as_i64).unwrap_or(0);
    if !ok || at(&theirs) > at(&ours) {
        theirs
    } else {
        ours
    }
}

/// The document from the response line of `doc.get`: the `result` itself,
/// or its `doc` or `value` member, when that is a schema-1 document.
pub(crate) fn document_of(response: &Value) -> Option<Value> {
    let result = response.get("result")?;
    [result.get("doc"), result.get("value"), Some(result)]
        .into_iter()
        .flatten()
        .find(|v| v.get("schema").is_some() && v.get("accounts").is_some())
        .cloned()
}

/// The request line of `doc.get {name: "limits"}`.
pub(crate) const REQUEST: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"doc.get","params":{"name":"limits"}}"#;

/// Asks herdr-core at `socket` for the document; `None` on any failure
/// (no socket, a slow or malformed answer, an error response), within
/// `deadline` overall: the connect and every read wait only for what is
/// left of it.
pub(crate) fn fetch_from(socket: &Path, deadline: Duration) -> Option<Value> {
    let end = Instant::now() + deadline;
    let left = || {
        end.checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    let mut stream = crate::herdr::client::connect_within(socket, left()?).ok()?;
    stream.set_write_timeout(left()).ok()?;
    stream.write_all(format!("{REQUEST}\n").as_bytes()).ok()?;
    let mut line = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        stream.set_read_timeout(Some(left()?)).ok()?;
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        line.extend_from_slice(&buf[..n]);
        if let Some(at) = line.iter().position(|&b| b == b'\n') {
            line.truncate(at);
            break;
        }
        if line.len() > MAX_RESPONSE {
            return None;
        }
    }
    if line.len() > MAX_RESPONSE {
        return None;
    }
    let response = json::parse(std::str::from_utf8(&line).ok()?).ok()?;
    document_of(&response)
}

/// [`fetch_from`] the socket `HC_TERMINAL_SOCKET` names, only when set.
pub(crate) fn fetch() -> Option<Value> {
    let socket = std::env::var_os(SOCKET_ENV).filter(|s| !s.is_empty())?;
    fetch_from(Path::new(&socket), DEADLINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi-herdr README's example, as written there.
    const EXAMPLE: &str = r#"{
  "schema": 1,
  "updated_at": 1794310000,
  "accounts": {
    "claude.1a2b3c4d": {
      "provider": "claude", "account": "1a2b3c4d", "plan": "max",
      "status": "ok", "binding": "5h", "source": "header", "host": "mentoair", "at": 1794310000,
      "windows": {
        "5h": { "id": "5h", "label": "5 hours", "window_s": 18000, "used": 67, "resets_at": 1794321600, "status": "ok", "at": 1794310000 },
        "7d": { "id": "7d", "label": "7 days", "window_s": 604800, "used": 36, "resets_at": 1794571200, "status": "ok", "at": 1794310000 }
      }
    }
  }
}"#;

    fn example() -> Value {
        json::parse(EXAMPLE).unwrap()
    }

    #[test]
    fn the_readme_example_is_claude_s_5_hour_and_7_day_windows() {
        let now = 1_794_310_060;
        let limits = parse(&example(), Agent::Claude, now).unwrap();
        assert_eq!(
            limits.to_json(),
            concat!(
                r#"{"state":"ok","source":"pi-herdr","fetched_at":1794310000,"plan":"max","windows":["#,
                r#"{"id":"5h","window_minutes":300,"used_percent":67,"resets_at":1794321600,"reset_since_observed":false},"#,
                r#"{"id":"7d","window_minutes":10080,"used_percent":36,"resets_at":1794571200,"reset_since_observed":false}]}"#
            )
        );
        // No Codex account in it.
        assert_eq!(parse(&example(), Agent::Codex, now), None);
        // After the 5-hour reset, that window is marked as passed.
        let later = parse(&example(), Agent::Claude, 1_794_321_600).unwrap();
        let w = later.get("windows").unwrap().as_array().unwrap();
        assert_eq!(w[0].get("reset_since_observed"), Some(&Value::Bool(true)));
    }

    #[test]
    fn the_freshest_account_wins_and_other_schemas_are_not_read() {
        let doc = json::parse(
            r#"{"schema":1,"accounts":{
              "codex.aaaaaaaa":{"provider":"codex","at":100,"windows":{"5h":{"used":10,"at":100}}},
              "codex.bbbbbbbb":{"provider":"codex","at":90,"windows":{"5h":{"used":20,"at":200},"pro.7d":{"used":5}}},
              "claude.cccccccc":{"provider":"claude","windows":{}}}}"#,
        )
        .unwrap();
        let codex = parse(&doc, Agent::Codex, 0).unwrap();
        assert_eq!(codex.get("fetched_at").and_then(Value::as_i64), Some(200));
        let w = codex.get("windows").unwrap().as_array().unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].get("used_percent").and_then(Value::as_f64), Some(20.0));
        assert_eq!(
            w[0].get("window_minutes").and_then(Value::as_i64),
            Some(300)
        );
        assert_eq!(w[1].get("id").and_then(Value::as_str), Some("pro.7d"));
        assert_eq!(
            w[1].get("window_minutes").and_then(Value::as_i64),
            Some(10_080)
        );
        // An account without windows is no reading.
        assert_eq!(parse(&doc, Agent::Claude, 0), None);
        let v2 = json::parse(&EXAMPLE.replace("\"schema\": 1", "\"schema\": 2")).unwrap();
        assert_eq!(parse(&v2, Agent::Claude, 0), None);
    }

    #[test]
    fn the_reading_taken_last_wins_and_ours_on_a_tie() {
        let v = |text: &str| json::parse(text).unwrap();
        let ours = v(r#"{"state":"ok","fetched_at":100}"#);
        let older = v(r#"{"state":"ok","source":"pi-herdr","fetched_at":99}"#);
        let newer = v(r#"{"state":"ok","source":"pi-herdr","fetched_at":101}"#);
        let tie = v(r#"{"state":"ok","source":"pi-herdr","fetched_at":100}"#);
        assert_eq!(freshest(ours.clone(), Some(older)), ours);
        assert_eq!(freshest(ours.clone(), Some(tie)), ours);
        assert_eq!(freshest(ours.clone(), Some(newer.clone())), newer);
        assert_eq!(freshest(ours.clone(), None), ours);
        let pending = v(r#"{"state":"pending"}"#);
        assert_eq!(freshest(pending, Some(newer.clone())), newer);
    }

    #[test]
    fn a_response_s_result_is_the_document_or_holds_it() {
        let doc = example();
        for shape in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{EXAMPLE}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"doc":{EXAMPLE}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"name":"limits","value":{EXAMPLE}}}}}"#),
        ] {
            assert_eq!(
                document_of(&json::parse(&shape).unwrap()),
                Some(doc.clone())
            );
        }
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#;
        assert_eq!(document_of(&json::parse(error).unwrap()), None);
        let null = r#"{"jsonrpc":"2.0","id":1,"result":null}"#;
        assert_eq!(document_of(&json::parse(null).unwrap()), None);
    }

    /// A loopback stand-in for herdr-core: answers one connection with
    /// `answer` (after checking the request line), or stalls, holding the
    /// connection silent until released (or 30 s have passed).
    fn stand_in(
        name: &str,
        answer: Option<Vec<u8>>,
    ) -> (
        crate::base::scratch::ScratchDir,
        std::path::PathBuf,
        std::thread::JoinHandle<String>,
        std::sync::mpsc::Sender<()>,
    ) {
        let dir = crate::base::scratch::ScratchDir::new(name);
        let path = dir.0.join("hc.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while conn.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
                request.push(byte[0]);
            }
            match answer {
                Some(bytes) => {
                    let _ = conn.write_all(&bytes);
                }
                None => {
                    let _ = released.recv_timeout(Duration::from_secs(30));
                }
            }
            String::from_utf8(request).unwrap()
        });
        (dir, path, handle, release)
    }

    #[test]
    fn fetch_asks_doc_get_and_reads_one_line() {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}}\n",
            example().to_json()
        );
        let (_dir, path, server, _) = stand_in("pi-herdr-fetch", Some(line.into_bytes()));
        assert_eq!(fetch_from(&path, DEADLINE), Some(example()));
        assert_eq!(server.join().unwrap(), REQUEST);
    }

    #[test]
    fn fetch_gives_up_at_its_deadline_on_a_silent_socket() {
        let (_dir, path, server, release) = stand_in("pi-herdr-silent", None);
        assert_eq!(fetch_from(&path, Duration::from_millis(100)), None);
        // The stand-in still holds the connection silent: the deadline
        // ended the fetch, not the end of the stream.
        assert!(!server.is_finished(), "the fetch waited for the stand-in");
        release.send(()).unwrap();
        server.join().unwrap();
    }

    #[test]
    fn fetch_refuses_an_oversized_or_malformed_answer_and_a_missing_socket() {
        let big = vec![b'x'; MAX_RESPONSE + 10];
        let (_dir, path, server, _) = stand_in("pi-herdr-big", Some(big));
        assert_eq!(fetch_from(&path, DEADLINE), None);
        server.join().unwrap();
        let (_dir, path, server, _) = stand_in("pi-herdr-bad", Some(b"{not json\n".to_vec()));
        assert_eq!(fetch_from(&path, DEADLINE), None);
        server.join().unwrap();
        let nowhere = std::env::temp_dir().join("heeler-no-such-hc.sock");
        assert_eq!(fetch_from(&nowhere, DEADLINE), None);
    }
}
