//! Devin for Terminal and Hermes Agent end to end: their SQLite databases
//! in a scratch home, read by the built binary's views (priced from the
//! bundled table, unpriced models named), a commit that reaches only the
//! WAL shown on the next refresh, hostile files refused without a panic,
//! and random steps of writes refreshed incrementally against a scan from
//! scratch.

use crate::usage_fixture;
use crate::usage_views::{heeler, settle};

use std::path::Path;

use heeler::base::json::{self, Value};
use heeler::usage::cache::Index;
use heeler::usage::pricing::PriceTable;
use heeler::usage::worker::{self, Roots, ScanResult};
use rusqlite::{Connection, params};
use usage_fixture::*;

use crate::common::Xorshift as Rng;

/// A scratch directory removed on drop (also when a test panics).
struct Scratch(TempDir);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(temp_dir(name))
    }
}

/// Refreshes, then the `models` view's JSON document of `agent`.
fn refreshed(home: &Path, agent: &str) -> Value {
    let worker = heeler(home, &["usage", "worker"]);
    assert!(worker.status.success(), "{worker:?}");
    let out = heeler(home, &["usage", "models", "--agent", agent, "--json"]);
    settle(home);
    assert!(out.status.success(), "{out:?}");
    json::parse(String::from_utf8(out.stdout).unwrap().trim_end()).unwrap()
}

fn int(t: &Value, k: &str) -> Option<i64> {
    t.get(k).and_then(Value::as_i64)
}

fn cost(t: &Value) -> f64 {
    t.get("cost_usd").and_then(Value::as_f64).unwrap()
}

/// The coverage of `agent` in the summary: (files seen, unreadable).
fn coverage(home: &Path, agent: &str) -> (Option<i64>, Option<i64>) {
    let summary = heeler(home, &["usage", "--json"]);
    settle(home);
    let summary = json::parse(String::from_utf8(summary.stdout).unwrap().trim_end()).unwrap();
    let c = summary.get("coverage").and_then(|c| c.get(agent)).cloned();
    let c = c.unwrap_or_else(|| panic!("{agent}: {summary:?}"));
    (int(&c, "files_seen"), int(&c, "files_unreadable"))
}

/// A Devin CLI `sessions.db` with its two tables (as the public readers of
/// it show them), in WAL mode.
fn devin_db(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, working_directory TEXT NOT NULL,
             backend_type TEXT NOT NULL, model TEXT NOT NULL, agent_mode TEXT NOT NULL,
             created_at INTEGER NOT NULL, last_activity_at INTEGER NOT NULL);
         CREATE TABLE message_nodes (row_id INTEGER PRIMARY KEY AUTOINCREMENT,
             session_id TEXT NOT NULL, node_id INTEGER NOT NULL, parent_node_id INTEGER,
             chat_message TEXT NOT NULL, created_at INTEGER NOT NULL, metadata TEXT);",
    )
    .unwrap();
    conn
}

fn devin_session(conn: &Connection, id: &str, cwd: &str, model: &str) {
    conn.execute(
        "INSERT INTO sessions VALUES (?1, ?2, 'windsurf', ?3, 'normal', 1, 1)",
        params![id, cwd, model],
    )
    .unwrap();
}

fn devin_node(conn: &Connection, session: &str, at: i64, chat: &str) {
    conn.execute(
        "INSERT INTO message_nodes (session_id, node_id, chat_message, created_at) \
         VALUES (?1, 1, ?2, ?3)",
        params![session, chat, at],
    )
    .unwrap();
}

/// An assistant message's `chat_message`: metrics (input, output, cache
/// read, cache creation), and the model and request id when given.
fn devin_assistant(model: Option<&str>, request: Option<&str>, m: [u64; 4]) -> String {
    let mut meta = String::new();
    if let Some(model) = model {
        meta += &format!(r#""generation_model":"{model}","#);
    }
    if let Some(request) = request {
        meta += &format!(r#""request_id":"{request}","#);
    }
    format!(
        r#"{{"role":"assistant","content":"ok","metadata":{{"num_tokens":{},{meta}"metrics":{{"input_tokens":{},"output_tokens":{},"cache_read_tokens":{},"cache_creation_tokens":{},"total_time_ms":900}}}}}}"#,
        m[1], m[0], m[1], m[2], m[3]
    )
}

#[test]
fn devin_s_database_shows_in_the_views_priced_and_follows_the_wal() {
    let home = Scratch::new("views-devin");
    let start = heeler::base::clock::unix_seconds() - 2 * 3_600;
    let db = home.0.join(".local/share/devin/cli/sessions.db");
    let writer = devin_db(&db);
    devin_session(&writer, "sess-a", "/home/dev/dv-proj", "adaptive");
    devin_session(&writer, "sess-b", "/home/dev/dv-two", "claude-sonnet-4-5");
    let user = r#"{"role":"user","content":"fix it","metadata":{"is_user_input":true}}"#;
    devin_node(&writer, "sess-a", start, user);
    let first = devin_assistant(
        Some("claude-sonnet-4-5"),
        Some("req_1"),
        [1_000, 200, 5_000, 300],
    );
    devin_node(&writer, "sess-a", start + 60, &first);
    // A retry: a sibling node with the same request and metrics.
    devin_node(&writer, "sess-a", start + 61, &first);
    // The session's model is the routing mode: this call's is unknown.
    let routed = devin_assistant(None, Some("req_2"), [10, 5, 0, 0]);
    devin_node(&writer, "sess-a", start + 90, &routed);
    let bare = r#"{"role":"assistant","metadata":{"metrics":{"input_tokens":2000,"output_tokens":100,"cache_read_tokens":0,"cache_creation_tokens":null}}}"#;
    devin_node(&writer, "sess-b", start + 120, bare);
    let gpt = devin_assistant(Some("gpt-5"), Some("req_3"), [3_000, 400, 1_000, 0]);
    devin_node(&writer, "sess-b", start + 180, &gpt);
    // A transcript copy beside the database is not read.
    write(
        &home
            .0
            .join(".local/share/devin/cli/transcripts/sess-b.json"),
        "{}",
    );
    let doc = refreshed(&home.0, "devin");
    let totals = doc.get("totals").unwrap();
    // By hand: four calls (the retry is its request), input 1,000 + 10 +
    // 2,000 + 3,000, output 200 + 5 + 100 + 400.
    assert_eq!(int(totals, "requests"), Some(4));
    assert_eq!(int(totals, "input"), Some(6_010));
    assert_eq!(int(totals, "output"), Some(705));
    assert_eq!(int(totals, "cache_read"), Some(6_000));
    assert_eq!(int(totals, "cache_write_5m"), Some(300));
    // Sonnet 4.5 ($3e-6 in, $15e-6 out, $0.3e-6 cache read, $3.75e-6
    // write): 0.003 + 0.003 + 0.0015 + 0.001125 = 0.008625, and 0.006 +
    // 0.0015 = 0.0075; GPT-5 ($1.25e-6 in, $10e-6 out, $0.125e-6 cache
    // read): 0.00375 + 0.004 + 0.000125 = 0.007875. Sum 0.024.
    assert!((cost(totals) - 0.024).abs() < 1e-9, "{}", cost(totals));
    assert_eq!(int(totals, "unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(unpriced.contains(r#""agent":"devin""#), "{unpriced}");

    // A call committed while Devin runs reaches only the WAL: 50 × $1.25e-6
    // + 5 × $10e-6 = $0.0001125 more on the next refresh.
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0")
        .unwrap();
    let late = devin_assistant(Some("gpt-5"), Some("req_4"), [50, 5, 0, 0]);
    devin_node(&writer, "sess-b", start + 240, &late);
    let doc = refreshed(&home.0, "devin");
    let totals = doc.get("totals").unwrap();
    assert_eq!(int(totals, "requests"), Some(5));
    assert_eq!(int(totals, "input"), Some(6_060));
    assert!(
        (cost(totals) - 0.024_112_5).abs() <= 5.1e-7,
        "{}",
        cost(totals)
    );
    assert_eq!(coverage(&home.0, "devin"), (Some(1), Some(0)));
    drop(writer);
}

/// A Hermes `state.db`: `sessions` with the columns Hermes' usage writer
/// fills, and `session_model_usage` when `routes` (newer builds), in WAL
/// mode.
fn hermes_db(path: &Path, routes: bool) -> Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
             billing_provider TEXT, started_at REAL NOT NULL, message_count INTEGER DEFAULT 0,
             input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
             cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
             reasoning_tokens INTEGER DEFAULT 0, estimated_cost_usd REAL, actual_cost_usd REAL,
             cwd TEXT);",
    )
    .unwrap();
    if routes {
        conn.execute_batch(
            "CREATE TABLE session_model_usage (session_id TEXT NOT NULL, model TEXT NOT NULL,
                 billing_provider TEXT NOT NULL DEFAULT '', billing_base_url TEXT NOT NULL DEFAULT '',
                 billing_mode TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '',
                 api_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
                 output_tokens INTEGER DEFAULT 0, cache_read_tokens INTEGER DEFAULT 0,
                 cache_write_tokens INTEGER DEFAULT 0, reasoning_tokens INTEGER DEFAULT 0,
                 estimated_cost_usd REAL DEFAULT 0, actual_cost_usd REAL DEFAULT 0,
                 cost_status TEXT, cost_source TEXT, first_seen REAL, last_seen REAL,
                 PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task));",
        )
        .unwrap();
    }
    conn
}

/// A session's row: its totals (input, output, cache read, cache write,
/// reasoning).
fn hermes_session(conn: &Connection, id: &str, model: &str, at: f64, t: [i64; 5]) {
    conn.execute(
        "INSERT INTO sessions (id, source, model, billing_provider, started_at, input_tokens, \
         output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cwd) \
         VALUES (?1, 'cli', ?2, 'anthropic', ?3, ?4, ?5, ?6, ?7, ?8, '/home/dev/hm')",
        params![id, model, at, t[0], t[1], t[2], t[3], t[4]],
    )
    .unwrap();
}

fn hermes_route(conn: &Connection, session: &str, model: &str, task: &str, t: [i64; 5]) {
    conn.execute(
        "INSERT INTO session_model_usage (session_id, model, billing_provider, task, \
         api_call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, \
         reasoning_tokens) VALUES (?1, ?2, 'anthropic', ?3, 1, ?4, ?5, ?6, ?7, ?8)",
        params![session, model, task, t[0], t[1], t[2], t[3], t[4]],
    )
    .unwrap();
}

#[test]
fn hermes_databases_show_in_the_views_priced_and_a_grown_total_replaces_the_old() {
    let home = Scratch::new("views-hermes");
    let start = (heeler::base::clock::unix_seconds() - 2 * 3_600) as f64 + 0.5;
    let writer = hermes_db(&home.0.join(".hermes/state.db"), true);
    // A CLI session: its main-loop route holds its totals; a title
    // generation is in session_model_usage only.
    let cli = [1_000, 500, 20_000, 2_000, 0];
    hermes_session(&writer, "cli1", "claude-sonnet-4-5", start, cli);
    hermes_route(&writer, "cli1", "claude-sonnet-4-5", "", cli);
    hermes_route(
        &writer,
        "cli1",
        "claude-haiku-4-5",
        "title_generation",
        [200, 20, 0, 0, 0],
    );
    // A gateway session: totals only; output 800 holds its reasoning 300.
    hermes_session(
        &writer,
        "gw1",
        "gpt-5",
        start + 60.0,
        [3_000, 800, 1_000, 0, 300],
    );
    hermes_session(
        &writer,
        "odd",
        "hermes-mystery-1",
        start + 90.0,
        [100, 10, 0, 0, 0],
    );
    // A profile's database of a build before session_model_usage.
    let profile = hermes_db(&home.0.join(".hermes/profiles/coder/state.db"), false);
    hermes_session(
        &profile,
        "p1",
        "claude-haiku-4-5",
        start + 120.0,
        [400, 40, 0, 0, 0],
    );
    let doc = refreshed(&home.0, "hermes");
    let totals = doc.get("totals").unwrap();
    // By hand: five session×model requests (cli1's totals are its route),
    // input 1,000 + 200 + 3,000 + 100 + 400, output 500 + 20 + 800 + 10 + 40.
    assert_eq!(int(totals, "requests"), Some(5));
    assert_eq!(int(totals, "input"), Some(4_700));
    assert_eq!(int(totals, "output"), Some(1_370));
    assert_eq!(int(totals, "cache_read"), Some(21_000));
    assert_eq!(int(totals, "cache_write_5m"), Some(2_000));
    // Sonnet 4.5: 0.003 + 0.0075 + 0.006 + 0.0075 = 0.024; Haiku 4.5 ($1e-6
    // in, $5e-6 out): 0.0002 + 0.0001 = 0.0003 and 0.0004 + 0.0002 =
    // 0.0006; GPT-5: 0.00375 + 0.008 + 0.000125 = 0.011875. Sum 0.036775.
    assert!((cost(totals) - 0.036_775).abs() < 1e-9, "{}", cost(totals));
    assert_eq!(int(totals, "unpriced_requests"), Some(1));
    let unpriced = doc.get("unpriced_models").unwrap().to_json();
    assert!(
        unpriced.contains(r#""agent":"hermes","model":"hermes-mystery-1""#),
        "{unpriced}"
    );

    // The gateway sets its session's totals anew (input 3,000 → 3,500) in
    // a commit that reaches only the WAL: the grown total replaces the old,
    // 500 × $1.25e-6 = $0.000625 more.
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0")
        .unwrap();
    writer
        .execute(
            "UPDATE sessions SET input_tokens = 3500 WHERE id = 'gw1'",
            [],
        )
        .unwrap();
    let doc = refreshed(&home.0, "hermes");
    let totals = doc.get("totals").unwrap();
    assert_eq!(int(totals, "requests"), Some(5));
    assert_eq!(int(totals, "input"), Some(5_200));
    assert!((cost(totals) - 0.037_4).abs() <= 5.1e-7, "{}", cost(totals));
    assert_eq!(coverage(&home.0, "hermes"), (Some(2), Some(0)));
    drop((writer, profile));
}

#[test]
fn hostile_devin_and_hermes_databases_are_refused_without_a_panic() {
    let home = Scratch::new("views-db-hostile");
    // Garbage where Devin's database is; a database of another schema
    // where Hermes' is; a truncated one in a profile.
    write(
        &home.0.join(".local/share/devin/cli/sessions.db"),
        &"\u{5a}".repeat(10_000),
    );
    std::fs::create_dir_all(home.0.join(".hermes")).unwrap();
    let other = Connection::open(home.0.join(".hermes/state.db")).unwrap();
    other
        .execute_batch("CREATE TABLE sessions (name TEXT); INSERT INTO sessions VALUES ('x');")
        .unwrap();
    drop(other);
    let whole = home.0.join("whole.db");
    let conn = hermes_db(&whole, true);
    for i in 0..500 {
        hermes_session(&conn, &format!("s{i}"), "gpt-5", 1.0e9, [1, 1, 0, 0, 0]);
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE")
        .unwrap();
    drop(conn);
    let bytes = std::fs::read(&whole).unwrap();
    let cut = home.0.join(".hermes/profiles/p/state.db");
    std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let started = std::time::Instant::now();
    for agent in ["devin", "hermes"] {
        let doc = refreshed(&home.0, agent);
        let totals = doc.get("totals").unwrap();
        assert_eq!(int(totals, "requests"), Some(0), "{agent}");
    }
    assert_eq!(coverage(&home.0, "devin"), (Some(1), Some(1)));
    assert_eq!(coverage(&home.0, "hermes"), (Some(2), Some(2)));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

fn scan(
    index: &mut Index,
    state: &mut Option<heeler::usage::aggregate::incremental::State>,
    home: &Path,
) -> ScanResult {
    let roots = Roots::resolve(home, &|_| None);
    let prices = PriceTable::bundled().unwrap();
    let options = worker::ScanOptions {
        threads: 2,
        retention_days: 30,
        ..worker::ScanOptions::new(&prices, NOW)
    };
    worker::scan_with_state(index, state, &roots, worker::discover(&roots), &options)
}

/// One random step on the two agents' databases: a new call or a retry, a
/// grown or shrunk total, a new route, a deleted row, a new profile's
/// database, or a database deleted.
fn step(rng: &mut Rng, home: &Path, n: u64) -> &'static str {
    let devin = home.join(".local/share/devin/cli/sessions.db");
    let hermes = home.join(format!(".hermes/profiles/p{}/state.db", rng.below(2)));
    let at = NOW - HOUR - rng.below(HOUR as u64) as i64;
    let metrics = [
        1 + rng.below(900),
        rng.below(300),
        rng.below(4_000),
        rng.below(200),
    ];
    let models = ["claude-sonnet-4-5", "gpt-5", "mystery-1"];
    let model = models[rng.below(3) as usize];
    let open = |path: &Path, f: fn(&Path) -> Connection| {
        if path.exists() {
            Connection::open(path).unwrap()
        } else {
            f(path)
        }
    };
    match rng.below(7) {
        0 | 1 => {
            let conn = open(&devin, devin_db);
            let request = format!("req_{}", rng.below(6));
            let chat = devin_assistant(Some(model), Some(&request), metrics);
            devin_node(&conn, &format!("s{}", rng.below(2)), at, &chat);
            "a devin call"
        }
        2 => {
            let conn = open(&devin, devin_db);
            conn.execute(
                "DELETE FROM message_nodes WHERE row_id % 3 = ?1",
                [(n % 3) as i64],
            )
            .unwrap();
            "devin rows deleted"
        }
        3 | 4 => {
            let conn = open(&hermes, |p| hermes_db(p, true));
            let t = metrics.map(|x| x as i64);
            let id = format!("h{}", rng.below(3));
            conn.execute(
                "INSERT INTO sessions (id, source, model, started_at, input_tokens, output_tokens, \
                 cache_read_tokens, cache_write_tokens) VALUES (?1, 'cli', ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT(id) DO UPDATE SET input_tokens = excluded.input_tokens, \
                 output_tokens = excluded.output_tokens",
                params![id, model, at as f64, t[0], t[1], t[2], t[3]],
            )
            .unwrap();
            "a hermes total set"
        }
        5 => {
            let conn = open(&hermes, |p| hermes_db(p, true));
            let t = metrics.map(|x| x as i64);
            let task = ["", "compression"][rng.below(2) as usize];
            conn.execute(
                "INSERT OR REPLACE INTO session_model_usage (session_id, model, task, input_tokens, \
                 output_tokens) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![format!("h{}", rng.below(3)), model, task, t[0], t[1]],
            )
            .unwrap();
            "a hermes route"
        }
        _ => {
            let gone = [devin, hermes][rng.below(2) as usize].clone();
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", gone.display()));
            }
            "a database deleted"
        }
    }
}

#[test]
fn random_database_writes_refresh_incrementally_as_a_scan_from_scratch_does() {
    for seed in [7u64, 8] {
        let home = temp_dir(&format!("usage-db-agents-{seed}"));
        let mut rng = Rng(seed);
        let mut index = Index::default();
        let mut state = None;
        let mut seen = [0u32; 2];
        for n in 0..24 {
            let what = step(&mut rng, &home, n);
            let result = scan(&mut index, &mut state, &home);
            let mut expected = scan(&mut Index::default(), &mut None, &home);
            expected.snapshot.aggregate = result.snapshot.aggregate;
            assert_eq!(
                result.snapshot, expected.snapshot,
                "seed {seed} step {n} ({what}): incremental != from scratch"
            );
            for (i, agent) in ["devin", "hermes"].into_iter().enumerate() {
                let has = |s: &heeler::usage::aggregate::SlotTotals| s.agent.name() == agent;
                seen[i] += u32::from(result.snapshot.slots.iter().any(has));
            }
        }
        // Both agents' usage was there at most steps (not an empty match).
        assert!(seen.iter().all(|&n| n >= 8), "seed {seed}: {seen:?}");
        let _ = std::fs::remove_dir_all(&home);
    }
}
