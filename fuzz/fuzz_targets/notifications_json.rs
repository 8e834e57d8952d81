//! The `notifications.json` reader and its edits: never panic; a prune
//! keeps the file a v1 registration that prints and parses back.
#![no_main]
use heeler::base::json;
use heeler::herdr::session;
use heeler::hooks::registration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut file) = json::parse(text) else {
        return;
    };
    let v1 = registration::is_v1(&file);
    let sessions = [
        session::from_socket_path(None),
        session::from_socket_path(Some("/run/herdr/sessions/work/herdr.sock")),
    ];
    let mut tokens = Vec::new();
    for session in &sessions {
        for flag in ["blocked", "done"] {
            let selection = registration::alert_selection(Some(&file), session, flag);
            tokens.extend(selection.devices.into_iter().map(|d| d.token));
            tokens.extend(selection.refused);
        }
        for device in registration::activity_devices(Some(&file), session) {
            assert!(registration::is_activity_token(&device.token));
            tokens.push(device.token);
        }
    }
    if let Some(entries) = file.get("devices").and_then(json::Value::as_array) {
        for entry in entries {
            let _ = registration::is_usable_entry(entry);
            let _ = registration::entry_key(entry);
            let _ = registration::entry_alerts(entry);
        }
    }
    let mut pruned = file.clone();
    registration::remove_tokens(&mut pruned, &tokens);
    registration::remove_live_activities(&mut file, &tokens);
    for edited in [&pruned, &file] {
        assert_eq!(registration::is_v1(edited), v1);
        let printed = edited.to_json();
        let again = json::parse(&printed).map(|v| v.to_json());
        assert_eq!(again.as_deref(), Ok(printed.as_str()));
    }
});
