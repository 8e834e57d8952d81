//! The `notify.json` reader: any text gives settings, never a panic.
#![no_main]
use heeler::hooks::settings;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = std::path::Path::new("/nonexistent/heeler-fuzz");
    let _ = settings::from_text(Some(text), dir);
    let _ = settings::normalize_relay_url(text);
});
