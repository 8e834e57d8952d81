//! Claude Code's statusLine object on the statusline's stdin: any bytes
//! give a session or none, never a panic; a session's cost is a finite
//! number of zero or more, and the part it prints is `$<dollars> session`.
#![no_main]
use heeler::usage::views::claude_status;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(session) = claude_status::parse(data) {
        assert!(session.cost_usd.is_finite() && session.cost_usd >= 0.0);
        let part = claude_status::session_part(&session);
        assert!(
            part.starts_with('$') && part.ends_with(" session"),
            "{part}"
        );
    }
});
