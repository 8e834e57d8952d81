//! The `session` view: one row per Claude Code session or Codex thread,
//! the latest first, the table listing the latest few.

use super::*;

/// A session (or, for requests whose transcript names none, an agent
/// and directory).
type Key = (Agent, Text, Option<Text>);

/// A listed session's sums per model and tokens per directory.
type Detail = (BTreeMap<(Agent, Text), SlotAcc>, BTreeMap<Text, u64>);

fn key_of(k: &SlotKey) -> Key {
    (k.1, k.4.clone(), k.4.is_empty().then(|| k.3.clone()))
}

/// The latest first; then by session id, agent and directory (a group's
/// key), a total order.
fn latest_first((a, sa): &(Key, SlotAcc), (b, sb): &(Key, SlotAcc)) -> std::cmp::Ordering {
    sb.last_ts
        .cmp(&sa.last_ts)
        .then_with(|| a.1.cmp(&b.1))
        .then(a.0.cmp(&b.0))
        .then_with(|| a.2.cmp(&b.2))
}

/// Each session's sums (one pass over the slots; a busy Host has
/// thousands of sessions a month), the `listed` latest first and sorted,
/// and how many more there are with their sums.
fn latest_sessions(picked: Picked, listed: usize) -> (Vec<(Key, SlotAcc)>, usize, SlotAcc) {
    let mut sums: crate::usage::aggregate::FastHashMap<Key, SlotAcc> = Default::default();
    for (_, k, acc) in picked {
        sums.entry(key_of(k)).or_default().merge(acc);
    }
    let mut groups: Vec<(Key, SlotAcc)> = sums.into_iter().collect();
    let listed = listed.min(groups.len());
    if listed > 0 && listed < groups.len() {
        groups.select_nth_unstable_by(listed - 1, latest_first);
    }
    let not_listed = groups.split_off(listed);
    groups.sort_unstable_by(latest_first);
    let mut rest = SlotAcc::default();
    for (_, acc) in &not_listed {
        rest.add_counts(acc);
    }
    (groups, not_listed.len(), rest)
}

/// The models and directories of the sessions `groups` lists (a second
/// pass over the slots, for those only).
fn details_of(picked: Picked, groups: &[(Key, SlotAcc)]) -> Vec<Detail> {
    let at: crate::usage::aggregate::FastHashMap<&Key, usize> = groups
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k, i))
        .collect();
    let mut details: Vec<Detail> = vec![Default::default(); groups.len()];
    for (_, k, acc) in picked {
        if let Some(&i) = at.get(&key_of(k)) {
            let (models, dirs) = &mut details[i];
            models.entry((k.1, k.2.clone())).or_default().merge(acc);
            *dirs.entry(k.3.clone()).or_default() += acc.tokens.total();
        }
    }
    details
}

/// One session's row: its directories (the most tokens first), models,
/// last and first request.
fn session_row(data: &Data, (agent, session, _): Key, acc: SlotAcc, detail: Detail) -> Row {
    let (models, dirs) = detail;
    let mut by_tokens: Vec<(&Text, &u64)> = dirs.iter().collect();
    by_tokens.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let paths: Vec<&str> = by_tokens.iter().map(|(d, _)| &***d).collect();
    let id = if session.is_empty() {
        Value::Null
    } else {
        Value::from(&*session)
    };
    let (last, first) = (
        local_minute(data, acc.last_ts),
        local_minute(data, acc.first_ts),
    );
    let labels = |session: String| {
        vec![
            last.clone(),
            session,
            agent.name().into(),
            first.clone(),
            paths.join(", "),
            model_names(&models),
        ]
    };
    Row {
        labels: labels(short_session(&session)),
        csv: Some(labels(session.to_string())),
        json: Object::new()
            .with("session", id)
            .with("agent", agent.name())
            .with("directory", paths.first().copied().unwrap_or(""))
            .with(
                "directories",
                Value::Array(paths.iter().map(|p| Value::from(*p)).collect()),
            )
            .with("models", models_names_value(&models))
            .with("first_at", acc.first_ts)
            .with("last_at", acc.last_ts),
        acc,
        models,
    }
}

/// The `session` view: one row per session (a Claude `sessionId`, a Codex
/// thread), with its directories, models, first and last request and
/// sums, the latest first. Requests whose transcript names no session
/// are grouped per agent and directory instead. The table lists the
/// latest [`SESSION_ROWS`] (unless `--all`) and counts the others in its
/// total; it shows a session id's last eight characters (random in both
/// UUID versions the agents write); CSV and JSON have every row and the
/// whole id.
pub(super) fn sessions(
    data: &Data,
    req: &Request,
    picked: Picked,
    unpriced: &Unpriced,
    format: Format,
) -> String {
    let listed = match format {
        Format::Text(_) if !req.all => SESSION_ROWS,
        _ => usize::MAX,
    };
    let (groups, left_out, rest) = latest_sessions(picked, listed);
    let details = details_of(picked, &groups);
    let rows: Vec<Row> = groups
        .into_iter()
        .zip(details)
        .map(|((key, acc), detail)| session_row(data, key, acc, detail))
        .collect();
    let columns = [
        Column::text("Last active", 0),
        Column::text("Session", 0),
        // Which agent matters more here than a token split.
        Column::text("Agent", 7),
        Column::text("Started", 1),
        Column::flexible("Directory", 0),
        Column::text("Models", 1),
    ];
    let names = [
        "last_active",
        "session",
        "agent",
        "started",
        "directory",
        "models",
    ];
    let listed = Listed {
        rows,
        left_out,
        all: rest,
    };
    let asked = (data, req, format);
    tabular(asked, View::Session, (&columns, &names), listed, unpriced)
}

/// A session id as the table shows it: `…` and its last eight
/// characters, or `—` for none.
pub(super) fn short_session(id: &str) -> String {
    let n = id.chars().count();
    match n {
        0 => "—".to_string(),
        1..=9 => id.to_string(),
        _ => std::iter::once('…').chain(id.chars().skip(n - 8)).collect(),
    }
}
