//! Everything the event hooks read from outside — the event JSON,
//! notifications.json, notify.json, row layouts, herdr's answers, relay
//! answers and URLs — goes through pure parsers that never panic: tens of
//! thousands of mutated inputs each come back as a value or a typed error.

use crate::fuzz_support;
use fuzz_support::Rng;

use std::collections::HashMap;
use std::path::Path;

use heeler::base::json::{self, Value};
use heeler::herdr::answer::{self, Agent, Pane, Tab};
use heeler::herdr::session::Session;
use heeler::hooks::env;
use heeler::hooks::registration;
use heeler::hooks::relay;
use heeler::hooks::row_layout::{self, RowContext};
use heeler::hooks::settings;
use heeler::wire::live_activity::{self, BuildContext};

const ROUNDS: usize = 20_000;

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e999",
    "1.5",
    "\"\"",
    "\"x\"",
    "[]",
    "{}",
    "\\u0000",
    "\u{1F980}",
    "\u{200D}",
    "#fff",
    "$x",
    "  ",
];

fn mutate(rng: &mut Rng, input: &str) -> String {
    let mut out: Vec<char> = input.chars().collect();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 if at < out.len() => {
                let end = (at + rng.below(12)).min(out.len());
                out.drain(at..end);
            }
            1 => out.truncate(at),
            2 | 3 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                out.splice(at..at, token.chars());
            }
            _ if !out.is_empty() => {
                let start = rng.below(out.len());
                let end = (start + rng.below(24)).min(out.len());
                let copy = out[start..end].to_vec();
                out.splice(at..at, copy);
            }
            _ => {}
        }
    }
    out.into_iter().collect()
}

/// Mutations of `seed` that still parse as JSON (plus the count of those
/// that did not, which the callers' parsers also see as text).
fn json_mutations(seed: &str, salt: u64, f: &mut dyn FnMut(&Value)) -> (usize, usize) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ salt);
    let (mut parsed, mut refused) = (0, 0);
    for _ in 0..ROUNDS {
        match json::parse(&mutate(&mut rng, seed)) {
            Ok(value) => {
                parsed += 1;
                f(&value);
            }
            Err(_) => refused += 1,
        }
    }
    (parsed, refused)
}

#[test]
fn event_json_never_panics() {
    let seed = r#"{"event":"pane_agent_status_changed","data":{"type":"pane_agent_status_changed","pane_id":"wV:p1","workspace_id":"wV","agent_status":"Blocked","agent":"claude","title":"t"}}"#;
    let mut rng = Rng(1);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..ROUNDS {
        match env::parse_event(&mutate(&mut rng, seed)) {
            Ok(event) => {
                ok += 1;
                assert!(!event.pane.is_empty() && !event.status.is_empty());
            }
            Err(_) => err += 1,
        }
    }
    println!("event: {ROUNDS} inputs, {ok} accepted, {err} typed errors");
}

#[test]
fn registration_files_never_panic_and_prunes_keep_json() {
    let seed = r##"{"v":1,"devices":[{"token":"aaaa","env":"production","key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","notify":{"blocked":true,"done":true},"session":"w","live_activity":{"token":"0123456789abcdef","env":"sandbox","pinned_pane_ids":["w1:p1"],"host_name":"h","row_layout":{"rows":[[{"token":"agent","fg":"#fff","bold":true}]]}},"x":[1]},{"token":"b","env":"sandbox","key":"QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI","notify":{"done":true}}]}"##;
    let sessions = [
        Session::Default,
        Session::Named("w".into()),
        Session::Unknown,
    ];
    let (mut devices, mut changed) = (0, 0);
    let (parsed, refused) = json_mutations(seed, 2, &mut |value| {
        for session in &sessions {
            devices += registration::alert_devices(Some(value), session, "blocked").len();
            devices += registration::activity_devices(Some(value), session).len();
        }
        let mut copy = value.clone();
        if registration::remove_tokens(&mut copy, &["aaaa".into()]) {
            changed += 1;
        }
        if registration::remove_live_activities(&mut copy, &["0123456789abcdef".into()]) {
            changed += 1;
        }
        assert!(
            json::parse(&copy.to_json()).is_ok(),
            "a prune writes valid JSON"
        );
    });
    println!(
        "notifications.json: {parsed} parsed mutations ({refused} refused as absent), {devices} devices, {changed} prunes"
    );
}

#[test]
fn notify_settings_never_panic() {
    let seed = r#"{"relay_url":" https://herdr-apns.bybee.dev/ ","debounce_ms":5000,"activity_debounce_ms":1500,"retry_delay_ms":1000,"relay_ca_file":"ca.pem"}"#;
    let mut urls = 0;
    let (parsed, _) = json_mutations(seed, 3, &mut |value| {
        let settings = settings::from_value(value, Path::new("/cfg"));
        assert!(!settings.relay_url.ends_with('/'));
        if relay::check_url(&settings.relay_url).is_ok() {
            urls += 1;
        }
    });
    println!("notify.json: {parsed} parsed mutations, {urls} usable relay URLs");
}

#[test]
fn row_layouts_and_herdr_answers_never_panic() {
    let layout_seed = r##"{"rows":[[{"token":"workspace","bold":true,"fg":"#AbC"},{"token":"tab"},{"token":"pane"}],[{"token":"$note","dim":true},{"token":"terminal_title_stripped"}],[{"token":"directory"},{"token":"host"},{"token":"status"}]]}"##;
    let inventory_seed = r#"[{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","name":"n","display_agent":"d","agent_status":"working","terminal_title":"⠋ x","cwd":" /w ","title":"p","tokens":{"note":"n"}},{"pane_id":"w1:p2","workspace_id":"w1","tab_id":"w1:t2","agent_status":"Blocked"}]"#;
    let tabs_seed = r#"[{"tab_id":"w1:t1","workspace_id":"w1","label":"1"},{"tab_id":"w1:t2","workspace_id":"w1","label":"two"},{"tab_id":"w1:t1","workspace_id":"w1","label":"again"}]"#;
    let layouts: Vec<row_layout::RowLayout> = {
        let mut found = vec![row_layout::parse_layout(&json::parse(layout_seed).unwrap()).unwrap()];
        json_mutations(layout_seed, 4, &mut |value| {
            if let Some(layout) = row_layout::parse_layout(value)
                && found.len() < 64
            {
                found.push(layout);
            }
        });
        found
    };
    let labels = HashMap::from([("w1".to_owned(), "Heeler".to_owned())]);
    let mut rendered = 0;
    let mut rng = Rng(5);
    json_mutations(inventory_seed, 5, &mut |inventory| {
        let mut context = RowContext {
            workspace_labels: labels.clone(),
            host: "h".into(),
            ..RowContext::default()
        };
        if let Ok(Value::Array(tabs)) = json::parse(&mutate(&mut rng, tabs_seed)) {
            row_layout::add_tabs(&mut context, "w1", &answer::rows(&tabs, Tab::from_value));
            row_layout::add_panes(&mut context, "w1", &answer::rows(&tabs, Pane::from_value));
        }
        let layout = &layouts[rng.below(layouts.len())];
        let agents = answer::agents(inventory.as_array().unwrap_or(&[]));
        let render = |agent: &Agent| Some(row_layout::render(layout, agent, &context, Some(" x ")));
        let (counts, content) = live_activity::build(
            &agents,
            &BuildContext {
                host: "h",
                pins: inventory.get("pins"),
                workspace_labels: &labels,
                rows: &render,
            },
        );
        assert!(content.agents.len() <= 5);
        assert!(counts.working + counts.blocked + counts.done >= content.agents.len() as u64);
        rendered += content.agents.len();
    });
    println!(
        "rows: {} layouts, {rendered} agents rendered",
        layouts.len()
    );
}

#[test]
fn relay_answers_and_urls_never_panic() {
    let mut rng = Rng(6);
    let bodies = [
        r#"{"error":"payload_too_large"}"#,
        r#"{"reason":"BadDeviceToken"}"#,
        "",
    ];
    for _ in 0..ROUNDS {
        let status = (rng.next() % 700) as u16;
        let pick = rng.below(bodies.len());
        let body = mutate(&mut rng, bodies[pick]);
        let retry_after = mutate(&mut rng, "45");
        let _ = relay::classify(status, &body, Some(&retry_after), 0);
        let date = mutate(&mut rng, "Wed, 21 Oct 2015 07:28:00 GMT");
        let _ = relay::classify(status, &body, Some(&date), u64::MAX);
        let url = mutate(&mut rng, "https://[::1]:8443/relay?x#y");
        let _ = relay::check_url(&url);
        let _ = relay::scheme_and_host(&url);
    }
    println!("relay: {ROUNDS} answers and URLs classified");
}
