//! The plan limits as the views show them: each agent's windows (5-hour,
//! weekly) with their use and reset, from the limits the query reports.

use super::*;

/// The 5-hour limit window of `agent`'s stored limits: (used percent,
/// resets at), when the limits are current.
pub(crate) fn five_hour_limit(data: &Data, agent: Agent) -> Option<(f64, Option<i64>)> {
    let (_, v) = data.limits.iter().find(|(a, _)| *a == agent)?;
    windows(v)
        .into_iter()
        .find(|w| w.minutes == Some(300))
        .map(|w| (w.used, w.resets_at))
}

/// One window of a limits document.
pub(crate) struct Window {
    pub(crate) label: String,
    pub(crate) minutes: Option<i64>,
    pub(crate) used: f64,
    pub(crate) resets_at: Option<i64>,
}

/// The current windows of a limits document (none unless its state is
/// `ok`; a window whose reset passed since it was observed is left out).
pub(crate) fn windows(v: &Value) -> Vec<Window> {
    if v.get("state").and_then(Value::as_str) != Some("ok") {
        return Vec::new();
    }
    let Some(list) = v.get("windows").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter(|w| w.get("reset_since_observed") != Some(&Value::Bool(true)))
        .filter_map(|w| {
            let used = w.get("used_percent").and_then(Value::as_f64)?;
            let minutes = w.get("window_minutes").and_then(Value::as_i64);
            let id = w.get("id").and_then(Value::as_str).unwrap_or("");
            let label = match minutes {
                Some(300) => "5h".to_string(),
                Some(10_080) if id.contains("sonnet") => "7d sonnet".to_string(),
                Some(10_080) if id.contains("opus") => "7d opus".to_string(),
                Some(10_080) => "7d".to_string(),
                Some(m) if m % 1440 == 0 => format!("{}d", m / 1440),
                Some(m) if m % 60 == 0 => format!("{}h", m / 60),
                Some(m) => format!("{m}m"),
                None => crate::base::terminal::inert(id).into_owned(),
            };
            Some(Window {
                label,
                minutes,
                used,
                resets_at: w.get("resets_at").and_then(Value::as_i64),
            })
        })
        .collect()
}

pub(crate) fn percent(p: f64) -> String {
    format!("{}%", p.round() as i64)
}
