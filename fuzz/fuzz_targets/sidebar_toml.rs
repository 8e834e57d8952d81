//! The sidebar TOML path: any bytes give a layout (or the defaults) whose
//! snapshot prints as JSON that parses and prints back to itself.
#![no_main]
use heeler::base::json;
use heeler::sidebar::config::{self, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = config::parse_config(data);
    let source = Source {
        path: "/home/u/.config/herdr/config.toml".into(),
        found: true,
        mtime_ms: Some(1_757_039_000_123.456_7),
    };
    let snapshot = config::snapshot(1_757_039_000_123, &source, &parsed);
    let printed = snapshot.to_json();
    let again = json::parse(&printed).map(|v| v.to_json());
    assert_eq!(again.as_deref(), Ok(printed.as_str()));
});
