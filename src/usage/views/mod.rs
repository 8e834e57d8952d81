//! The views for a person at the Host's terminal (`heeler usage`, `heeler
//! usage daily|weekly|monthly|session|blocks|models|dirs|statusline`):
//! tables, CSV and versioned JSON documents read from the same cache the
//! app's query reads, so each answers in milliseconds.
//!
//! - `data.rs`: what a view reads as plain values ([`data::Data`]), the
//!   validated options ([`data::Request`]), the one filter and the period
//!   rules (days in the asked zone, weeks from Monday, months).
//! - `blocks.rs`: 5-hour blocks, burn rate and projection.
//! - `claude_status.rs`: Claude Code's `statusLine` object on stdin (the
//!   session's cost), read within a bound.
//! - `table.rs`: columns, grouped numbers, fitting a width, CSV.
//! - `picture.rs`: bars and sparklines, in block characters or ASCII
//!   (the one decision of which a terminal gets).
//! - `recent.rs`: `recent-v1.json`, the last two days of slots (summed per slot and agent) the worker
//!   writes beside each snapshot, so the statusline decodes kilobytes.
//! - `render.rs`: every view as a pure function of data, options and
//!   format (width and colour included).
//! - `mod.rs` (this file): the thin edge: options, the query's refresh
//!   rule (`query::refresh`, so a stale cache starts the same background
//!   worker), the history kept (`usage.toml`, `usage::config`: a `--since`
//!   before it is refused), the aggregate's slots from the day before a
//!   view's first day ([`first_slot`]), our limits or pi-herdr's, whichever
//!   was read last ([`with_pi_herdr`]), the terminal, printing.
//!
//! Invariants: a view never scans a transcript and never changes the
//! app's query or its document; the views are pure and the terminal's
//! width, colour and glyphs are inputs, so they are tested as text. No
//! colour when stdout is not a terminal or `NO_COLOR` is set; pictures in
//! ASCII under `NO_COLOR` or a locale that is not UTF-8.

pub mod blocks;
pub mod claude_status;
pub mod data;
pub mod picture;
pub mod recent;
pub mod render;
pub mod table;

use std::io::Write;

use crate::base::json::Value;
use crate::cli::UsageViewFlags;
use crate::exit::Failure;
use crate::usage::event::Agent;
use crate::usage::query::{self, Context, Options, RefreshMode, SnapshotRead};
use crate::usage::views::data::{Data, Request};
use crate::usage::views::picture::Glyphs;
use crate::usage::views::render::{Format, View};
use crate::usage::views::table::Style;

/// Width used when stdout is not a terminal (CSV and JSON ignore it).
pub(crate) const DEFAULT_WIDTH: usize = 100;

/// The output format the flags ask for (`--json` wins over `--csv`).
pub fn format(
    flags: &UsageViewFlags,
    tty: bool,
    width: Option<usize>,
    no_color: bool,
    glyphs: Glyphs,
) -> Format {
    if flags.json {
        Format::Json
    } else if flags.csv {
        Format::Csv
    } else {
        Format::Text(Style {
            width: width.unwrap_or(DEFAULT_WIDTH),
            color: tty && !no_color,
            glyphs,
        })
    }
}

/// The width text views fit: `COLUMNS` when it is a whole number above 0
/// (POSIX: it overrides the terminal's width, and it is the one way to
/// give a width to output that goes to a pipe), else the terminal's, else
/// `None` ([`DEFAULT_WIDTH`]).
pub(crate) fn text_width(columns: Option<&str>, terminal: Option<usize>) -> Option<usize> {
    let positive = |w: &usize| *w > 0;
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(positive)
        .or(terminal.filter(positive))
}

/// Whether `NO_COLOR` asks for plain output (set and not empty): no colour,
/// and pictures in ASCII.
pub(crate) fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// What a view shows, read from the cache ([`load`]).
pub(crate) struct Loaded {
    pub(crate) data: Data,
    pub(crate) req: Request,
    /// The runtime record the hooks write (the roots herdr's session sees).
    pub(crate) runtime: Option<Value>,
}

/// How [`load`] waits on a first run and refreshes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoadMode {
    /// On a first run at a terminal, wait for the first refresh (the
    /// plain views); the live screen never waits, it shows the wait.
    pub(crate) wait_first_run: bool,
    /// The query's refresh rule: `Auto` starts the worker when the cache
    /// is stale, `Force` now.
    pub(crate) refresh: RefreshMode,
}

/// Reads what `view` shows from the cache through the query's refresh
/// rule (`query::refresh`: a stale cache starts the background worker).
/// Bad options are a usage error (exit 2); `name` starts its message.
pub(crate) fn load(
    view: View,
    flags: &UsageViewFlags,
    name: &str,
    mode: LoadMode,
) -> Result<Loaded, Failure> {
    let ctx = Context::from_env();
    let (inputs, decision) = refreshed(flags, &ctx, mode);
    if let Some(e) = &inputs.zone_error {
        return Err(Failure::new(
            format!(
                "{name}: --tz {:?} is not a time zone on this Host ({})",
                flags.tz.as_deref().unwrap_or(""),
                e.code()
            ),
            2,
        ));
    }
    let today = inputs.zone.local_day(inputs.now);
    let req = request(flags, name, today)?;
    let (generated_at, coverage, runtime) = snapshot_header(&inputs);
    let slots = slots_for(view, flags, &ctx, generated_at, first_slot(&req, today));
    // Model names, directories and session ids come from transcripts: made
    // inert where they enter the views. JSON escapes them itself and keeps
    // them exact for scripts.
    let slots = if flags.json {
        slots
    } else {
        inert_slots(slots)
    };
    // `--limits`: read both agents' limits now, instead of the stored ones.
    let stored = (
        decision.claude_limits.clone(),
        decision.codex_limits.clone(),
    );
    let (claude, codex) = match &ctx.dir {
        Ok(dir) if flags.limits => read_limits_now(dir, runtime.as_ref(), inputs.now, stored),
        _ => stored,
    };
    let data = Data {
        slots,
        zone: inputs.zone.clone(),
        now: inputs.now,
        generated_at,
        refresh: decision.state.name(),
        coverage,
        limits: with_pi_herdr(
            claude,
            codex,
            crate::usage::limits::pi_herdr::fetch().as_ref(),
            inputs.now,
        ),
    };
    Ok(Loaded { data, req, runtime })
}

/// `slots` with every transcript-derived string of their keys made safe
/// to draw (`base::terminal::inert`); a key that needs nothing keeps its
/// shared text.
pub(crate) fn inert_slots(
    slots: Vec<(
        crate::usage::aggregate::SlotKey,
        crate::usage::aggregate::SlotAcc,
    )>,
) -> Vec<(
    crate::usage::aggregate::SlotKey,
    crate::usage::aggregate::SlotAcc,
)> {
    use crate::base::terminal::inert;
    use crate::usage::aggregate::Text;
    use std::borrow::Cow;
    fn safe(text: Text) -> Text {
        match inert(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => Text::from(s),
        }
    }
    slots
        .into_iter()
        .map(|((slot, agent, model, dir, session), acc)| {
            ((slot, agent, safe(model), safe(dir), safe(session)), acc)
        })
        .collect()
}

/// The query's inputs and decision for the views (the app's Claude limits
/// toggle left as it is); on a first run at a terminal, when `mode` says
/// so, after waiting for the first refresh.
fn refreshed(
    flags: &UsageViewFlags,
    ctx: &Context,
    mode: LoadMode,
) -> (query::Inputs, query::Decision) {
    let claude_limits = ctx
        .dir
        .as_ref()
        .is_ok_and(|d| d.claude_limits_wanted().exists());
    let options = Options {
        tz: flags.tz.clone(),
        claude_limits,
        refresh: mode.refresh,
    };
    let (inputs, decision) = query::refresh(&options, ctx);
    let first_run = matches!(
        &inputs.stored,
        Ok(stored) if matches!(stored.snapshot, SnapshotRead::Missing)
    );
    if mode.wait_first_run
        && first_run
        && decision.state == query::RefreshState::Running
        && !flags.json
        && !flags.csv
        && termion::is_tty(&std::io::stderr())
        && let Ok(dir) = &ctx.dir
    {
        let runtime = inputs.stored.as_ref().ok().and_then(|s| s.runtime.clone());
        wait_for_first_refresh(dir, runtime.as_ref());
        return query::refresh(&options, &Context::from_env());
    }
    (inputs, decision)
}

/// The validated request of `flags`, within the history the cache keeps.
fn request(flags: &UsageViewFlags, name: &str, today: i64) -> Result<Request, Failure> {
    let req = Request::new(
        flags.since.as_deref(),
        flags.until.as_deref(),
        flags.agent.as_deref(),
        flags.dir.as_deref(),
        flags.breakdown,
        today,
    )
    .map_err(|e| Failure::new(format!("{name}: {}", e.0), 2))?;
    let req = Request {
        all: flags.all,
        ..req
    };
    let config =
        crate::usage::config::from_env().map_err(|e| Failure::new(format!("{name}: {e}"), 1))?;
    req.check_history(config.retention_days, today)
        .map_err(|e| Failure::new(format!("{name}: {}", e.0), 2))?;
    Ok(req)
}

/// The snapshot's `generated_at` and `coverage` (none before the first
/// refresh) and the runtime record.
fn snapshot_header(inputs: &query::Inputs) -> (Option<i64>, Value, Option<Value>) {
    let Ok(stored) = &inputs.stored else {
        return (None, Value::Null, None);
    };
    let header = match &stored.snapshot {
        SnapshotRead::Ahead(a) => Some((a.generated_at, a.coverage.clone())),
        SnapshotRead::Slots(s) => Some((s.generated_at, s.coverage.clone())),
        SnapshotRead::Missing | SnapshotRead::Unreadable => None,
    };
    (
        header.as_ref().map(|h| h.0),
        header.map_or(Value::Null, |h| h.1),
        stored.runtime.clone(),
    )
}

/// The slots `view` reads from slot `from` on: none before the first
/// refresh; for the statusline the small `recent-v1.json` when it is the
/// snapshot's (its rows are summed over directories, so `--dir` reads the
/// state); else the aggregate state's ([`read_slots`]).
fn slots_for(
    view: View,
    flags: &UsageViewFlags,
    ctx: &Context,
    generated_at: Option<i64>,
    from: i64,
) -> Vec<(
    crate::usage::aggregate::SlotKey,
    crate::usage::aggregate::SlotAcc,
)> {
    let (Ok(dir), Some(at)) = (&ctx.dir, generated_at) else {
        return Vec::new();
    };
    let recent = (view == View::Statusline && flags.dir.is_none())
        .then(|| {
            crate::base::state_file::read_text(&dir.recent(), crate::base::state_file::MAX_BYTES)
        })
        .flatten()
        .and_then(|text| recent::decode(&text, at));
    recent.unwrap_or_else(|| read_slots(&dir.0, view, from))
}

/// Runs one view: reads the cache through the query's refresh rule
/// ([`load`]), renders and prints. Bad options are a usage error (exit 2).
pub fn run(view: View, flags: &UsageViewFlags) -> Result<(), Failure> {
    let name = match view {
        View::Summary => "heeler usage".to_string(),
        v => format!("heeler usage {}", v.name()),
    };
    let mode = LoadMode {
        wait_first_run: true,
        refresh: RefreshMode::Auto,
    };
    let Loaded { data, req, runtime } = load(view, flags, &name, mode)?;
    let tty = termion::is_tty(&std::io::stdout());
    let terminal = if tty {
        termion::terminal_size().ok().map(|(w, _)| usize::from(w))
    } else {
        None
    };
    let columns = std::env::var("COLUMNS").ok();
    let width = text_width(columns.as_deref(), terminal);
    let no_color = no_color();
    let format = format(flags, tty, width, no_color, Glyphs::from_env(no_color));
    let mut text = if view == View::Statusline {
        // Claude Code's status line object on stdin, when it ran us.
        let session = claude_status::from_stdin();
        render::statusline_for(&data, &req, session.as_ref()) + "\n"
    } else {
        render::render(&data, &req, view, format)
    };
    if matches!(format, Format::Text(_))
        && view != View::Statusline
        && let Some(hint) = empty_hint(&data, runtime.as_ref())
    {
        text.push_str(&hint);
        text.push('\n');
    }
    if flags.json {
        // Exact strings for scripts, and still nothing a terminal acts on.
        text = crate::base::terminal::inert_json(&text).into_owned();
    }
    // A closed stdout (a pager quit early) is not worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(())
}

/// How long `--limits` waits for herdr's session to read Claude Code's
/// limits (the action's probe has its own [`crate::usage::limits::PROBE_TIMEOUT`], plus the
/// trigger's).
const HERDR_ACTION_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// `heeler usage --limits`: reads Claude Code's and Codex's limits now, in
/// the foreground, the way the worker does when they are due (Claude's
/// through herdr's session where its sign-in needs that, the
/// `usage-claude-limits` action), stores them where the app's query finds
/// them, and returns them (Claude's, Codex's). The app's toggle
/// (`claude-limits.wanted`) and its query are left as they are. A Codex
/// reading that is not `ok` is shown but not stored, so the worker's
/// fallback (the newest rollout's limits) is kept; `stored` is what the
/// cache had, shown when a reading cannot be had at all.
fn read_limits_now(
    dir: &crate::usage::paths::UsageDir,
    runtime: Option<&Value>,
    now: i64,
    stored: (Value, Value),
) -> (Value, Value) {
    use crate::usage::limits;
    if termion::is_tty(&std::io::stderr()) {
        let _ = write!(std::io::stderr(), "Reading Claude Code and Codex limits…");
    }
    let _ = crate::base::atomic_file::create_dir_all(&dir.0, 0o700);
    // The person's own environment: this is their terminal.
    let env = limits::ProbeEnv::from_runtime(None);
    let codex = limits::probe_codex(&env, now, limits::probe_timeout());
    if codex.get("state").and_then(Value::as_str) == Some("ok") {
        limits::store(dir, Agent::Codex, &codex, now);
    }
    let claude = if limits::claude_needs_herdr_session() {
        limits::herdr_action::trigger_and_record(dir, runtime, now);
        wait_for_claude_limits(dir, now).unwrap_or(stored.0)
    } else {
        let claude = limits::probe_claude(&env, now, limits::probe_timeout());
        limits::store(dir, Agent::Claude, &claude, now);
        Value::Object(claude)
    };
    if termion::is_tty(&std::io::stderr()) {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    (claude, Value::Object(codex))
}

/// Claude's limits once herdr's session has stored a reading attempted at
/// or after `since`, or None after [`HERDR_ACTION_WAIT`].
fn wait_for_claude_limits(dir: &crate::usage::paths::UsageDir, since: i64) -> Option<Value> {
    let started = std::time::Instant::now();
    while started.elapsed() < HERDR_ACTION_WAIT {
        let read = crate::base::json::read_file(&dir.limits(Agent::Claude));
        if let Some(value) = read
            && value
                .get("attempted_at")
                .and_then(Value::as_i64)
                .is_some_and(|at| at >= since)
        {
            return Some(value);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    None
}

/// The limits the views show per agent: our probes' values, or pi-herdr's
/// `limits` document's reading when that is fresher
/// (`limits::pi_herdr::freshest`).
pub(crate) fn with_pi_herdr(
    claude: Value,
    codex: Value,
    doc: Option<&Value>,
    now: i64,
) -> Vec<(Agent, Value)> {
    use crate::usage::limits::pi_herdr;
    [(Agent::Claude, claude), (Agent::Codex, codex)]
        .into_iter()
        .map(|(agent, ours)| {
            let theirs = doc.and_then(|d| pi_herdr::parse(d, agent, now));
            (agent, pi_herdr::freshest(ours, theirs))
        })
        .collect()
}

/// The slots `view` reads from the aggregate state in `dir`, from slot
/// start `from` on: the session view the per-session sums, every other
/// view the sums of each slot (sessions summed away, which is all they
/// need, and far fewer to decode on a Host of many sessions). Empty when
/// there is no readable state.
pub fn read_slots(
    dir: &std::path::Path,
    view: View,
    from: i64,
) -> Vec<(
    crate::usage::aggregate::SlotKey,
    crate::usage::aggregate::SlotAcc,
)> {
    use crate::usage::store::state::{StateStore, Tables};
    let tables = match view {
        View::Session => Tables::Sessions,
        _ => Tables::Slots,
    };
    StateStore::in_dir(dir)
        .rows_from(from, tables)
        .map(|(_, rows)| rows)
        .unwrap_or_default()
}

/// The first slot any view of `req` reads (the summary shows 30 days
/// whatever `--since` says): a day before the first local day's UTC
/// midnight, since no zone is a day or more ahead of UTC.
pub fn first_slot(req: &Request, today: i64) -> i64 {
    let first_day = req.since.min(today - (data::DEFAULT_DAYS - 1));
    (first_day - 1).saturating_mul(86_400)
}

/// The line naming the roots searched when a refresh found no transcript.
fn empty_hint(data: &Data, runtime: Option<&Value>) -> Option<String> {
    let seen = |agent: &str| {
        data.coverage
            .get(agent)
            .and_then(|a| a.get("files_seen"))
            .and_then(Value::as_i64)
            .map(|n| n.max(0) as u64)
            .unwrap_or(0)
    };
    let seen_any = crate::usage::agents::ALL.iter().any(|a| seen(a.name()) > 0);
    if data.generated_at.is_none() || seen_any {
        return None;
    }
    let roots = crate::usage::discover::Roots::searched(runtime);
    // The roots come from the runtime record's environment: drawn inert.
    let text = crate::usage::discover::nothing_found(&roots);
    Some(crate::base::terminal::inert(&text).into_owned())
}

/// How long a first run on a terminal waits for the first refresh.
const FIRST_RUN_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A first run on a terminal: instead of an empty table, waits (up to
/// [`FIRST_RUN_WAIT`]) for the background worker's first snapshot, showing
/// on stderr how many files and megabytes it reads and for how long.
fn wait_for_first_refresh(dir: &crate::usage::paths::UsageDir, runtime: Option<&Value>) {
    let found = crate::usage::discover::discover(&crate::usage::discover::Roots::from_env(runtime));
    let files = found.candidates.len();
    let bytes: u64 = found
        .candidates
        .iter()
        .filter_map(|c| c.stat.map(|s| s.size))
        .sum();
    let started = std::time::Instant::now();
    let mut err = std::io::stderr().lock();
    // The worker takes its lock a moment after it starts; once it is gone
    // without a snapshot (it failed), there is nothing to wait for.
    let gone = || {
        started.elapsed() > std::time::Duration::from_secs(2)
            && !crate::usage::worker::is_running(dir)
    };
    while !dir.snapshot().exists() && started.elapsed() < FIRST_RUN_WAIT && !gone() {
        let _ = write!(
            err,
            "\rFirst run: reading {} transcript file{} ({}) in the background… {} s",
            crate::usage::views::table::group(files as u64),
            if files == 1 { "" } else { "s" },
            megabytes(bytes),
            started.elapsed().as_secs()
        );
        let _ = err.flush();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
}

/// `12.3 MB`.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::time::parse_date;

    #[test]
    fn columns_sets_the_width_on_a_terminal_and_off_one() {
        assert_eq!(text_width(Some("72"), Some(120)), Some(72));
        assert_eq!(text_width(Some(" 72\n"), None), Some(72));
        // Not a width: the terminal's, else the default's (None).
        for junk in ["", "0", "-5", "wide", "7x"] {
            assert_eq!(text_width(Some(junk), Some(120)), Some(120), "{junk:?}");
            assert_eq!(text_width(Some(junk), None), None, "{junk:?}");
        }
        assert_eq!(text_width(None, Some(0)), None);
        assert_eq!(text_width(None, None), None);
    }

    /// pi-herdr README's example (Claude: 5h 67% resetting 1794321600,
    /// 7d 36%), read at 1794310000.
    const PI_DOC: &str = r#"{"schema":1,"updated_at":1794310000,"accounts":{"claude.1a2b3c4d":{"provider":"claude","account":"1a2b3c4d","plan":"max","status":"ok","binding":"5h","source":"header","host":"mentoair","at":1794310000,"windows":{"5h":{"id":"5h","label":"5 hours","window_s":18000,"used":67,"resets_at":1794321600,"status":"ok","at":1794310000},"7d":{"id":"7d","label":"7 days","window_s":604800,"used":36,"resets_at":1794571200,"status":"ok","at":1794310000}}}}}"#;

    fn data_with(limits: Vec<(Agent, Value)>, now: i64) -> Data {
        Data {
            slots: Vec::new(),
            zone: crate::base::tz::Zone::utc(),
            now,
            generated_at: Some(now),
            refresh: "idle",
            coverage: Value::Null,
            limits,
        }
    }

    #[test]
    fn pi_herdr_s_document_fills_the_limits_our_probe_has_not_read() {
        let v = |t: &str| crate::base::json::parse(t).unwrap();
        let doc = v(PI_DOC);
        let now = 1_794_310_000 + 600;
        let limits = with_pi_herdr(
            v(r#"{"state":"pending"}"#),
            v(r#"{"state":"disabled"}"#),
            Some(&doc),
            now,
        );
        let data = data_with(limits, now);
        let today = data.zone.local_day(now);
        let req = Request::new(None, None, None, None, false, today).unwrap();
        let line = render::statusline(&data, &req);
        assert!(line.ends_with("claude 5h 67%"), "{line}");
        let style = Style {
            width: 100,
            color: false,
            glyphs: Glyphs::Unicode,
        };
        let summary = render::render(&data, &req, View::Summary, Format::Text(style));
        // 1794321600 (14:40 UTC) is 11,000 s, 3 h 03 min, after now (11:36);
        // 67% of a 20-cell bar is 107.2 of its 160 eighths: 13 cells and
        // three eighths.
        let bar = format!("{}▍{}", "█".repeat(13), "░".repeat(6));
        assert!(
            summary.contains(&format!(
                "Claude Code 5h  {bar}  67% used, resets 14:40 (in 3h 03m)\nClaude Code 7d  "
            )),
            "{summary}"
        );
        assert!(summary.contains("  36% used, resets "), "{summary}");
        // Our own reading, newer than the document's, wins.
        let ours = v(
            r#"{"state":"ok","fetched_at":1794310300,"windows":[{"id":"five_hour","window_minutes":300,"used_percent":70,"resets_at":1794321600}]}"#,
        );
        let limits = with_pi_herdr(ours, v(r#"{"state":"disabled"}"#), Some(&doc), now);
        let line = render::statusline(&data_with(limits, now), &req);
        assert!(line.ends_with("claude 5h 70%"), "{line}");
    }

    #[test]
    fn a_view_reads_from_a_day_before_its_first_local_day() {
        let today = parse_date("2026-11-29").unwrap();
        let req = |since: &str| Request::new(Some(since), None, None, None, false, today).unwrap();
        // The summary's 30 days reach back to 2026-10-31 whatever --since.
        let oct30 = crate::usage::time::parse_timestamp("2026-10-30T00:00:00Z").unwrap();
        assert_eq!(first_slot(&req("2026-11-28"), today), oct30);
        let sep1 = crate::usage::time::parse_timestamp("2026-09-01T00:00:00Z").unwrap();
        assert_eq!(first_slot(&req("2026-09-02"), today), sep1);
        // Local midnight of 2026-09-02 in the zone furthest ahead (UTC+14)
        // is 2026-09-01T10:00Z: after the first slot read.
        assert!(first_slot(&req("2026-09-02"), today) <= sep1 + 10 * 3600);
    }
}
