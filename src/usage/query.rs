//! `heeler usage query`: the SSH entry point that always answers at once.
//!
//! It reads the snapshot, the limits files and the worker's status, renders
//! the v1 document for the requested zone, and starts a detached worker
//! when anything is stale — never scanning or probing itself, so it answers
//! within milliseconds. Every problem becomes an entry of `errors` inside
//! the document; the command itself always succeeds.

use std::path::PathBuf;

use crate::base::dirs::NoHome;
use crate::base::json::read_file as read_json;
use crate::base::json::{Object, Value};
use crate::usage::event::Agent;
use crate::usage::paths::UsageDir;
use crate::usage::pricing::PriceTable;
use crate::usage::report::{self, Envelope, Prerendered, Snapshot};
use crate::usage::tz::{self, TzError, Zone};
use crate::usage::worker;

/// A snapshot older than this is refreshed.
pub const SNAPSHOT_TTL: i64 = 60;
/// How soon the app should ask again while a refresh runs.
pub const RETRY_AFTER_MS: u64 = 2000;

/// `--refresh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshMode {
    Auto,
    Force,
    Never,
}

impl RefreshMode {
    pub fn parse(text: &str) -> Option<RefreshMode> {
        match text {
            "auto" => Some(RefreshMode::Auto),
            "force" => Some(RefreshMode::Force),
            "never" => Some(RefreshMode::Never),
            _ => None,
        }
    }
}

/// The query's options, already validated.
#[derive(Debug, Clone)]
pub struct Options {
    pub tz: Option<String>,
    pub claude_limits: bool,
    pub refresh: RefreshMode,
}

/// Everything outside the options a query depends on.
#[derive(Debug, Clone)]
pub struct Context {
    pub dir: UsageDir,
    pub now: i64,
    pub zoneinfo: PathBuf,
    pub tz_env: Option<String>,
    pub localtime: PathBuf,
    /// The binary to start as the worker; `None` never starts one.
    pub exe: Option<PathBuf>,
}

impl Context {
    pub fn from_env() -> Result<Context, NoHome> {
        Ok(Context {
            dir: UsageDir::from_env()?,
            now: crate::base::clock::unix_seconds(),
            zoneinfo: tz::zoneinfo_dir(),
            tz_env: std::env::var("TZ").ok(),
            localtime: PathBuf::from("/etc/localtime"),
            exe: std::env::current_exe().ok(),
        })
    }
}

fn stored_limits(dir: &UsageDir, agent: Agent) -> Option<Value> {
    let mut v = read_json(&dir.limits(agent))?;
    v.as_object_mut()?.remove("attempted_at");
    Some(v)
}

fn pending() -> Value {
    Value::Object(Object::new().with("state", "pending"))
}

/// Builds the answer (and starts a worker when needed).
/// `snapshot` with its slots, read from the aggregate state it names. The
/// worker writes the state before the snapshot, so a state newer than the
/// snapshot read means a refresh finished meanwhile: the snapshot is read
/// again (once; after that the newer slots are used as they are).
fn with_slots(dir: &UsageDir, snapshot: Option<Snapshot>) -> Option<Snapshot> {
    let mut snapshot = snapshot?;
    let store = crate::usage::store::state::StateStore::in_dir(&dir.0);
    let (fingerprint, detailed) = store.load_slots()?;
    if fingerprint != snapshot.aggregate
        && let Some(again) = std::fs::read_to_string(dir.snapshot())
            .ok()
            .and_then(|t| Snapshot::parse(&t))
    {
        snapshot = again;
    }
    snapshot.slots = crate::usage::aggregate::flatten(&detailed).slots;
    Some(snapshot)
}

pub fn answer(options: &Options, ctx: &Context) -> Value {
    let mut errors = Vec::new();
    let host = || tz::host_zone(ctx.tz_env.as_deref(), &ctx.localtime, &ctx.zoneinfo);
    let zone: Zone = match &options.tz {
        None => host(),
        Some(name) => match Zone::load(name, &ctx.zoneinfo) {
            Ok(z) => z,
            Err(e) => {
                let message = match e {
                    TzError::BadName => "--tz is not an IANA zone name; using the Host's zone",
                    TzError::Unknown => "--tz names no zone on this Host; using the Host's zone",
                    TzError::Corrupt => "the zone's file is unreadable; using the Host's zone",
                };
                errors.push(report::error(e.code(), message));
                host()
            }
        },
    };
    // Members the worker rendered ahead for this zone and day, else the
    // slots (and the zone is asked to be rendered ahead next time).
    let text = std::fs::read_to_string(ctx.dir.snapshot()).ok();
    let day = zone.local_day(ctx.now);
    let ahead = text
        .as_deref()
        .and_then(|t| Prerendered::read(t, &zone.name, day));
    let snapshot = match (&text, &ahead) {
        (Some(_), Some(_)) | (None, _) => None,
        (Some(text), None) => {
            let parsed = with_slots(&ctx.dir, Snapshot::parse(text));
            if parsed.is_none() {
                errors.push(report::error(
                    "snapshot_unreadable",
                    "the cached snapshot is unreadable; a refresh replaces it",
                ));
            } else {
                worker::want_zone(&ctx.dir, &zone.name);
            }
            parsed
        }
    };
    let head = match (&ahead, &snapshot) {
        (Some(a), _) => Some((a.generated_at, a.partial, a.pricing.clone())),
        (None, Some(s)) => Some((s.generated_at, s.partial, s.pricing.clone())),
        (None, None) => None,
    };
    let status = read_json(&ctx.dir.status());
    let runtime = read_json(&ctx.dir.runtime());

    // Claude limits follow the device's toggle.
    let wanted = ctx.dir.claude_limits_wanted();
    let claude_limits = if options.claude_limits {
        if !wanted.exists() {
            let _ = crate::base::atomic_file::create_dir_all(&ctx.dir.0, 0o700)
                .and_then(|()| crate::base::atomic_file::write(&wanted, b"", 0o600));
        }
        stored_limits(&ctx.dir, Agent::Claude).unwrap_or_else(|| {
            if crate::usage::limits::claude_needs_herdr_session() {
                Value::Object(Object::new().with("state", "needs_herdr_session"))
            } else {
                pending()
            }
        })
    } else {
        let _ = std::fs::remove_file(&wanted);
        Value::Object(Object::new().with("state", "disabled"))
    };
    let mut codex_limits = stored_limits(&ctx.dir, Agent::Codex).unwrap_or_else(pending);
    crate::usage::limits::mark_passed_resets(&mut codex_limits, ctx.now);
    let limits_due =
        crate::usage::limits::is_due(read_json(&ctx.dir.limits(Agent::Codex)).as_ref(), ctx.now)
            || (options.claude_limits
                && if crate::usage::limits::claude_needs_herdr_session() {
                    // The worker asks herdr's session to run the action.
                    crate::usage::limits::herdr_action::launcher(runtime.as_ref()).is_some()
                        && crate::usage::limits::herdr_action::is_due(
                            read_json(&ctx.dir.claude_limits_trigger()).as_ref(),
                            read_json(&ctx.dir.limits(Agent::Claude)).as_ref(),
                            ctx.now,
                        )
                } else {
                    crate::usage::limits::is_due(
                        read_json(&ctx.dir.limits(Agent::Claude)).as_ref(),
                        ctx.now,
                    )
                });

    let stale = match &head {
        None => true,
        Some((generated_at, partial, _)) => *partial || ctx.now - generated_at >= SNAPSHOT_TTL,
    };
    let running = worker::is_running(&ctx.dir);
    let wants_worker = options.refresh == RefreshMode::Force || stale || limits_due;
    let mut state = if running { "running" } else { "idle" };
    if !running && wants_worker && options.refresh != RefreshMode::Never {
        match &ctx.exe {
            Some(exe) => match worker::spawn(&ctx.dir, exe) {
                Ok(()) => state = "running",
                Err(_) => {
                    state = "failed";
                    errors.push(report::error(
                        "worker_spawn_failed",
                        "could not start the background refresh",
                    ));
                }
            },
            None => state = "stale",
        }
    } else if !running && stale {
        state = "stale";
    }
    let status_field = |k: &str| {
        status
            .as_ref()
            .and_then(|s| s.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let last_error = status_field("last_error");
    if state == "idle" && !matches!(last_error, Value::Null) {
        state = "failed";
    }
    let refresh = Object::new()
        .with("state", state)
        .with("started_at", status_field("started_at"))
        .with("last_success_at", status_field("last_success_at"))
        .with("last_error", last_error)
        .with(
            "retry_after_ms",
            if state == "running" {
                Value::from(RETRY_AFTER_MS)
            } else {
                Value::Null
            },
        );
    let pricing = match &head {
        Some((_, _, pricing)) => pricing.clone(),
        None => PriceTable::bundled().map(|t| t.meta).unwrap_or_default(),
    };
    let env = Envelope {
        now: ctx.now,
        refresh: Value::Object(refresh),
        runtime: crate::usage::runtime::state_of(runtime.as_ref()),
        pricing,
        limits: Value::Object(
            Object::new()
                .with("claude", claude_limits)
                .with("codex", codex_limits),
        ),
        errors,
    };
    match ahead {
        Some(a) => report::assemble(Some((a.generated_at, a.coverage)), a.parts, &zone, &env),
        None => report::render(snapshot.as_ref(), &zone, &env),
    }
}
