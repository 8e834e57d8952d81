//! Row rendering from `row_layout` reproduces the app's "three configured
//! rows" vector byte for byte (same key, same nonce), from an inventory and
//! layout that produce that payload.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;

use heeler::base::base64;
use heeler::base::json::{self, Value};
use heeler::herdr::answer::{self, Agent};
use heeler::hooks::row_layout::{self, RowContext};
use heeler::wire::envelope::NotificationKey;
use heeler::wire::live_activity::{self, BuildContext};

fn vectors_dir() -> PathBuf {
    std::env::var_os("HEELER_VECTORS_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/heeler-vectors"),
        PathBuf::from,
    )
}

#[test]
fn three_configured_rows_vector_is_reproduced() {
    let path = vectors_dir().join("live-activity-content-v1.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        common::skip(&format!("{} not found", path.display()));
        return;
    };
    let vectors = json::parse(&text).unwrap();
    let vector = vectors
        .get("valid")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .find(|v| {
            v.get("name").and_then(Value::as_str)
                == Some("three configured rows preserve styles and literal plugin text")
        })
        .expect("vector present");
    let key =
        NotificationKey::from_base64url(vector.get("key").unwrap().as_str().unwrap()).unwrap();
    let expected = vector.get("envelope").unwrap().as_str().unwrap();
    let nonce = json::parse(expected).unwrap();
    let nonce: [u8; 12] = base64::decode_url(nonce.get("n").unwrap().as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();

    let layout = row_layout::parse_layout(
        &json::parse(
            r##"{"rows":[[{"token":"workspace","bold":true,"fg":"#AbC"},{"token":"state_icon"},{"token":"agent"}],[{"token":"$note","dim":true},{"token":"$blank"}],[{"token":"directory","dim":false,"bold":null}]]}"##,
        )
        .unwrap(),
    )
    .unwrap();
    let inventory = json::parse(
        r#"[{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","agent":"claude","name":"reviewer","agent_status":"Working","cwd":"  /work/Heeler ","tokens":{"note":"**literal plugin text**","blank":" \t "}}]"#,
    )
    .unwrap();
    let labels = HashMap::from([("w1".to_owned(), "Heeler".to_owned())]);
    let context = RowContext {
        workspace_labels: labels.clone(),
        host: "studio".into(),
        ..RowContext::default()
    };
    let render = |agent: &Agent| Some(row_layout::render(&layout, agent, &context, None));
    let (_, content) = live_activity::build(
        &answer::agents(inventory.as_array().unwrap()),
        &BuildContext {
            host: "studio",
            pins: None,
            workspace_labels: &labels,
            rows: &render,
        },
    );
    assert_eq!(
        content.canonical_json(),
        vector.get("payload").unwrap().to_json_sorted()
    );
    assert_eq!(content.seal(&key, nonce), expected);
    println!("reproduced the three-rows vector envelope");
}
