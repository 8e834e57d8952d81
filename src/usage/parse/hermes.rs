//! Hermes Agent's session totals to usage events.
//!
//! Hermes Agent (NousResearch/hermes-agent) keeps its sessions in the
//! SQLite database `state.db` in its home (`hermes_state.py` @00025f69,
//! WAL mode). It keeps totals, not calls: `update_token_counts`
//! (`hermes_state_usage.py` @0ebb0462) adds each API call's usage to its
//! session's row of `sessions` (`input_tokens`, `output_tokens`,
//! `cache_read_tokens`, `cache_write_tokens`, `reasoning_tokens`), or, on
//! the gateway's path, sets them to the agent's running totals. The CLI's
//! path also adds each call to `session_model_usage`, one row per session,
//! model, billing provider, base URL, mode and `task` (`''` the main loop,
//! `voice_chat` a per-turn route), which the gateway's totals never reach;
//! and `record_auxiliary_usage` adds an auxiliary call (`task` `vision`,
//! `compression`, `title_generation`, …) to `session_model_usage` only.
//!
//! The buckets are `normalize_usage`'s (`agent/usage_pricing.py`
//! @00fb0f9c): `input_tokens` without the cached tokens (it subtracts the
//! cache reads and writes from an OpenAI-style prompt total), the two cache
//! counts, and `output_tokens` the completion tokens, reasoning included
//! (`reasoning_tokens` is its part).
//!
//! So a session's usage is every `session_model_usage` row of it, one
//! event per session, model, provider and task (its rows summed), plus
//! what its `sessions` totals hold beyond its main-loop rows (`task` `''`
//! or `voice_chat`): the whole total for a gateway session or one of a
//! build before the table, nothing for a CLI session. That rest is the
//! session's model's. Each event is stamped at the session's `started_at`
//! and keyed by its session, model, provider and task, so a total that
//! grew replaces the old one when the database is read again.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::base::sqlite;
use crate::usage::event::{FileParse, Message, Tokens};

/// Rows read from one database at most; past it the rest are left out
/// and counted malformed.
pub(crate) const MAX_ROWS: u64 = 250_000;
/// The longest id, model, provider or task kept (a longer one is cut).
const MAX_NAME: usize = 128;
/// The `task`s of `session_model_usage` whose calls the session's totals
/// hold too (the main loop and its per-turn routes).
const MAIN_TASKS: [&[u8]; 2] = [b"", b"voice_chat"];

/// One usage row: a session's totals (`task` `None`) or a
/// `session_model_usage` row, its numbers as decimal text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Row<'a> {
    pub session: &'a [u8],
    pub model: &'a [u8],
    pub provider: &'a [u8],
    pub task: Option<&'a [u8]>,
    /// `sessions.started_at` (Unix seconds, a float); empty for a route.
    pub started_at: &'a [u8],
    pub cwd: &'a [u8],
    /// input, output, cache read, cache write, reasoning.
    pub counts: [&'a [u8]; 5],
}

/// A session's row of `sessions`.
#[derive(Default)]
struct Session {
    model: Vec<u8>,
    provider: Vec<u8>,
    cwd: Vec<u8>,
    started: Option<i64>,
    totals: Tokens,
}

/// A `session_model_usage` route: session, model, provider and task.
type Route = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

/// What one database holds, gathered before events are made.
#[derive(Default)]
pub struct Gathered {
    sessions: BTreeMap<Vec<u8>, Session>,
    /// (session, model, provider, task) → the sum of its rows.
    routes: BTreeMap<Route, Tokens>,
}

fn name(b: &[u8]) -> Vec<u8> {
    b[..b.len().min(MAX_NAME)].to_vec()
}

/// A token count's decimal text as a count: a negative, fractional,
/// non-numeric or NULL value is 0 (Hermes clamps at 0 when it writes).
fn count_of(text: &[u8]) -> u64 {
    let Some(s) = std::str::from_utf8(text).ok() else {
        return 0;
    };
    if let Ok(n) = s.parse::<u64>() {
        return n;
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x < 9.0e18 => x as u64,
        _ => 0,
    }
}

/// Unix seconds of `started_at` (`time.time()`; milliseconds past 10^10).
fn seconds_of(text: &[u8]) -> Option<i64> {
    let x: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let secs = if x >= 1e10 { x / 1000.0 } else { x };
    // 253,402,300,800 is 10000-01-01T00:00:00Z.
    (secs < 253_402_300_800.0).then_some(secs as i64)
}

fn tokens_of(counts: &[&[u8]; 5]) -> Tokens {
    Tokens {
        input: count_of(counts[0]),
        output: count_of(counts[1]),
        cache_read: count_of(counts[2]),
        cache_write_5m: count_of(counts[3]),
        cache_write_1h: 0,
        reasoning: count_of(counts[4]),
    }
}

impl Gathered {
    /// Adds one row.
    pub fn add(&mut self, row: &Row) {
        let tokens = tokens_of(&row.counts);
        match row.task {
            None => {
                let s = self.sessions.entry(name(row.session)).or_default();
                s.model = name(row.model);
                s.provider = name(row.provider);
                s.cwd = row.cwd.to_vec();
                s.cwd.truncate(4096);
                s.started = seconds_of(row.started_at);
                s.totals = tokens;
            }
            Some(task) => {
                let key = (
                    name(row.session),
                    name(row.model),
                    name(row.provider),
                    name(task),
                );
                self.routes.entry(key).or_default().add(&tokens);
            }
        }
    }

    /// Hands every event to `fp` (see the module's doc).
    pub fn finish(self, fp: &mut FileParse) {
        let mut main: HashMap<&[u8], Tokens> = HashMap::new();
        for ((session, model, provider, task), tokens) in &self.routes {
            if MAIN_TASKS.contains(&task.as_slice()) {
                main.entry(session.as_slice()).or_default().add(tokens);
            }
            let Some(s) = self.sessions.get(session) else {
                // A route of a session that is gone has no time.
                continue;
            };
            let id = [
                b"r\0",
                session.as_slice(),
                b"\0",
                model,
                b"\0",
                provider,
                b"\0",
                task,
            ]
            .concat();
            push(fp, s, session, model, &id, *tokens);
        }
        for (session, s) in &self.sessions {
            let counted = main.get(session.as_slice()).copied().unwrap_or_default();
            let rest = Tokens {
                input: s.totals.input.saturating_sub(counted.input),
                output: s.totals.output.saturating_sub(counted.output),
                cache_read: s.totals.cache_read.saturating_sub(counted.cache_read),
                cache_write_5m: s
                    .totals
                    .cache_write_5m
                    .saturating_sub(counted.cache_write_5m),
                cache_write_1h: 0,
                reasoning: s.totals.reasoning.saturating_sub(counted.reasoning),
            };
            let id = [b"s\0", session.as_slice(), b"\0", &s.provider].concat();
            push(fp, s, session, &s.model, &id, rest);
        }
    }
}

/// Adds one event of `tokens` (none when there are none) for `session`.
fn push(fp: &mut FileParse, s: &Session, session: &[u8], model: &[u8], id: &[u8], tokens: Tokens) {
    let Some(ts) = s.started else {
        return;
    };
    let tokens = Tokens {
        reasoning: tokens.reasoning.min(tokens.output),
        ..tokens
    };
    if tokens.total() == 0 {
        return;
    }
    // `unknown` is what Hermes writes for a route whose model it did not know.
    let model = if model == b"unknown" { &[][..] } else { model };
    fp.push_message(&Message {
        ts,
        model: &String::from_utf8_lossy(model),
        cwd: &String::from_utf8_lossy(&s.cwd),
        session: &String::from_utf8_lossy(session),
        id,
        tokens,
    });
}

/// The columns of Hermes' two tables the reading needs or uses.
#[derive(Default)]
struct Schema {
    sessions: Vec<String>,
    routes: Vec<String>,
}

impl Schema {
    /// `table.column` when the table has it, else NULL.
    fn col(&self, routes: bool, column: &str) -> String {
        let (have, table) = if routes {
            (&self.routes, "u")
        } else {
            (&self.sessions, "s")
        };
        if have.iter().any(|c| c == column) {
            format!("{table}.{column}")
        } else {
            "NULL".to_owned()
        }
    }

    /// The one statement reading both tables (one snapshot of the
    /// database), or `None` when `sessions` is not Hermes'.
    fn query(&self) -> Option<String> {
        const COUNTS: [&str; 5] = [
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
        ];
        for needed in ["id", "started_at", "input_tokens", "output_tokens"] {
            if !self.sessions.iter().any(|c| c == needed) {
                return None;
            }
        }
        let counts = |routes: bool| COUNTS.map(|c| self.col(routes, c)).join(", ");
        let mut sql = format!(
            "SELECT 0, s.id, {}, {}, NULL, s.started_at, {}, {} FROM sessions s",
            self.col(false, "model"),
            self.col(false, "billing_provider"),
            self.col(false, "cwd"),
            counts(false)
        );
        if ["session_id", "model", "input_tokens", "output_tokens"]
            .iter()
            .all(|n| self.routes.iter().any(|c| c == n))
        {
            sql += &format!(
                " UNION ALL SELECT 1, u.session_id, u.model, {}, {}, NULL, NULL, {} FROM session_model_usage u",
                self.col(true, "billing_provider"),
                self.col(true, "task"),
                counts(true)
            );
        }
        Some(sql)
    }
}

/// The statement listing the columns of `sessions` and
/// `session_model_usage`.
const SCHEMA_QUERY: &str = "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
     WHERE m.type = 'table' AND m.name IN ('sessions', 'session_model_usage')";

/// Reads the usage of the database at `path` into `fp`. Returns the rows
/// read. A database without Hermes' `sessions` table is refused.
pub(crate) fn read_db(fp: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
    let mut schema = Schema::default();
    sqlite::for_each_row(path, SCHEMA_QUERY, |[table, column]| {
        let column = String::from_utf8_lossy(column).into_owned();
        match table {
            b"sessions" => schema.sessions.push(column),
            _ => schema.routes.push(column),
        }
        schema.sessions.len() + schema.routes.len() < 4096
    })?;
    let Some(sql) = schema.query() else {
        return Err(sqlite::Error::Refused(
            "no `sessions` table of Hermes' schema".to_owned(),
        ));
    };
    let mut gathered = Gathered::default();
    let mut rows = 0u64;
    sqlite::for_each_row(
        path,
        &sql,
        |[
            kind,
            session,
            model,
            provider,
            task,
            started,
            cwd,
            i,
            o,
            r,
            w,
            x,
        ]| {
            rows += 1;
            if rows > MAX_ROWS {
                fp.malformed += 1;
                return false;
            }
            gathered.add(&Row {
                session,
                model,
                provider,
                task: (kind == b"1").then_some(task),
                started_at: started,
                cwd,
                counts: [i, o, r, w, x],
            });
            true
        },
    )?;
    gathered.finish(fp);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::event::message_tokens;

    fn row<'a>(
        session: &'a str,
        model: &'a str,
        task: Option<&'a str>,
        counts: [&'a str; 5],
    ) -> Row<'a> {
        Row {
            session: session.as_bytes(),
            model: model.as_bytes(),
            provider: b"anthropic",
            task: task.map(str::as_bytes),
            started_at: if task.is_none() {
                b"1764800000.75"
            } else {
                b""
            },
            cwd: b"",
            counts: counts.map(str::as_bytes),
        }
    }

    /// The events as (session, model, tokens), sorted.
    fn events(rows: &[Row]) -> Vec<(String, String, Tokens)> {
        let mut g = Gathered::default();
        for r in rows {
            g.add(r);
        }
        let mut fp = FileParse::default();
        g.finish(&mut fp);
        let mut got: Vec<_> = fp
            .events
            .iter()
            .map(|e| {
                assert_eq!(e.ts, 1_764_800_000);
                (
                    fp.string(e.session).to_owned(),
                    fp.string(e.model).to_owned(),
                    message_tokens(e.t),
                )
            })
            .collect();
        got.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        got
    }

    fn t(input: u64, output: u64, cache_read: u64, cache_write: u64, reasoning: u64) -> Tokens {
        Tokens {
            input,
            output,
            cache_read,
            cache_write_5m: cache_write,
            cache_write_1h: 0,
            reasoning,
        }
    }

    #[test]
    fn a_session_without_model_rows_is_its_totals_under_its_model() {
        // A gateway session, or one of a build before session_model_usage.
        let got = events(&[row(
            "s1",
            "claude-sonnet-4-5",
            None,
            ["100", "50", "4000", "300", "10"],
        )]);
        assert_eq!(
            got,
            [(
                "s1".into(),
                "claude-sonnet-4-5".into(),
                t(100, 50, 4000, 300, 10)
            )]
        );
    }

    #[test]
    fn a_cli_session_is_its_model_rows_and_an_auxiliary_call_adds_to_its_totals() {
        // A CLI session: two main-loop models (a /model switch) whose rows
        // sum to the session's totals: 100 + 40 = 140 input, 50 + 20 = 70
        // output, 1000 + 500 = 1500 cache read, 0 write, 0 reasoning; and a
        // title generation (task) only in session_model_usage.
        let got = events(&[
            row("s1", "gpt-5", None, ["140", "70", "1500", "0", "0"]),
            row("s1", "gpt-5", Some(""), ["100", "50", "1000", "0", "0"]),
            row(
                "s1",
                "claude-sonnet-4-5",
                Some(""),
                ["40", "20", "500", "0", "0"],
            ),
            row(
                "s1",
                "gemini-2.5-flash",
                Some("title_generation"),
                ["30", "8", "0", "0", "0"],
            ),
        ]);
        assert_eq!(
            got,
            [
                (
                    "s1".into(),
                    "claude-sonnet-4-5".into(),
                    t(40, 20, 500, 0, 0)
                ),
                ("s1".into(), "gemini-2.5-flash".into(), t(30, 8, 0, 0, 0)),
                ("s1".into(), "gpt-5".into(), t(100, 50, 1000, 0, 0)),
            ]
        );
    }

    #[test]
    fn a_gateway_session_s_totals_count_besides_its_auxiliary_rows() {
        // The gateway sets the totals (300 in, 90 out) and records no model
        // rows; a compression call (task) is apart: both count, 300 + 20.
        let got = events(&[
            row("g", "claude-opus-4-5", None, ["300", "90", "0", "0", "0"]),
            row(
                "g",
                "claude-haiku-4-5",
                Some("compression"),
                ["20", "5", "0", "0", "0"],
            ),
        ]);
        assert_eq!(
            got,
            [
                ("g".into(), "claude-haiku-4-5".into(), t(20, 5, 0, 0, 0)),
                ("g".into(), "claude-opus-4-5".into(), t(300, 90, 0, 0, 0)),
            ]
        );
    }

    #[test]
    fn rows_of_one_route_sum_and_a_rest_beyond_the_rows_goes_to_the_session_s_model() {
        // Two rows of one route (another base URL): 10 + 5 in, 2 + 1 out;
        // a voice_chat row (4 in, 1 out) is in the totals too. The totals
        // hold 29 in and 4 out, so 29 - (15 + 4) = 10 in and 4 - (3 + 1) =
        // 0 out more are the session model's.
        let got = events(&[
            row("s", "m1", None, ["29", "4", "0", "0", "0"]),
            row("s", "m2", Some(""), ["10", "2", "0", "0", "0"]),
            row("s", "m2", Some(""), ["5", "1", "0", "0", "0"]),
            row("s", "m3", Some("voice_chat"), ["4", "1", "0", "0", "0"]),
        ]);
        assert_eq!(
            got,
            [
                ("s".into(), "m1".into(), t(10, 0, 0, 0, 0)),
                ("s".into(), "m2".into(), t(15, 3, 0, 0, 0)),
                ("s".into(), "m3".into(), t(4, 1, 0, 0, 0)),
            ]
        );
    }

    #[test]
    fn bad_numbers_an_unknown_model_and_a_lost_session_count_as_the_module_says() {
        let got = events(&[
            // Negative, fractional and text counts: 0, 7, 0; reasoning is
            // capped at the output.
            row("s", "unknown", None, ["-5", "7.9", "x", "", "99"]),
            // A route of a session that is not in `sessions`: no time.
            row("gone", "m", Some(""), ["1", "1", "0", "0", "0"]),
        ]);
        assert_eq!(got, [("s".into(), "".into(), t(0, 7, 0, 0, 7))]);
    }

    #[test]
    fn a_database_is_read_in_one_statement_with_or_without_model_rows() {
        let scratch = crate::base::scratch::ScratchDir::new("hermes-db");
        let new = scratch.path().join("new.db");
        let conn = rusqlite::Connection::open(&new).unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, billing_provider TEXT,
                 started_at REAL, input_tokens INTEGER, output_tokens INTEGER,
                 cache_read_tokens INTEGER, cache_write_tokens INTEGER, reasoning_tokens INTEGER,
                 cwd TEXT);
             CREATE TABLE session_model_usage (session_id TEXT, model TEXT, billing_provider TEXT,
                 task TEXT, input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER,
                 cache_write_tokens INTEGER, reasoning_tokens INTEGER);
             INSERT INTO sessions VALUES ('c', 'gpt-5', 'openai', 1764800000.5, 30, 6, 100, 0, 2, '/w');
             INSERT INTO session_model_usage VALUES ('c', 'gpt-5', 'openai', '', 30, 6, 100, 0, 2);
             INSERT INTO session_model_usage VALUES ('c', 'm2', 'openai', 'vision', 4, 1, 0, 0, 0);",
        )
        .unwrap();
        drop(conn);
        // An older build: no reasoning, no cwd, no model rows.
        let old = scratch.path().join("old.db");
        rusqlite::Connection::open(&old)
            .unwrap()
            .execute_batch(
                "CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, started_at REAL,
                     input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER,
                     cache_write_tokens INTEGER);
                 INSERT INTO sessions VALUES ('o', 'gpt-5', 1764800000, 9, 1, 0, 0);",
            )
            .unwrap();
        let mut fp = FileParse::default();
        // One sessions row and two model rows.
        assert_eq!(read_db(&mut fp, &new), Ok(3));
        let t: Vec<Tokens> = fp.events.iter().map(|e| message_tokens(e.t)).collect();
        // gpt-5's route (30 in, 6 out, 100 read, 2 reasoning) and the
        // vision call (4 in, 1 out); the totals' rest is nothing.
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].input + t[1].input, 34);
        assert_eq!(t[0].reasoning + t[1].reasoning, 2);
        assert_eq!(fp.string(fp.events[0].cwd), "/w");
        let mut fp = FileParse::default();
        assert_eq!(read_db(&mut fp, &old), Ok(1));
        assert_eq!(fp.events.len(), 1);
        assert_eq!(message_tokens(fp.events[0].t).input, 9);
    }

    #[test]
    fn garbage_or_another_program_s_sessions_table_is_refused() {
        let scratch = crate::base::scratch::ScratchDir::new("hermes-hostile");
        let garbage = scratch.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
        let other = scratch.path().join("other.db");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE sessions (id TEXT, data TEXT);")
            .unwrap();
        let empty = scratch.path().join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        for path in [&garbage, &other, &empty] {
            let mut fp = FileParse::default();
            let got = read_db(&mut fp, path);
            assert!(
                matches!(got, Err(sqlite::Error::Refused(_))),
                "{path:?}: {got:?}"
            );
            assert!(fp.events.is_empty());
        }
    }
}
