//! opencode's (and Kilo's) message rows: any `data` bytes (after a first
//! line that stands for the row's `session_id`) never panic, data
//! `JSON.parse` refuses counts nothing, a call counts at most once with a
//! key and some tokens, and the events survive the cache's encoding.
#![no_main]
use heeler::usage::event::FileParse;
use heeler::usage::parse::opencode;
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let (session, data) = match input.iter().position(|&b| b == b'\n') {
        Some(at) => (&input[..at], &input[at + 1..]),
        None => (&b"ses_1"[..], input),
    };
    let mut fp = FileParse::default();
    opencode::parse_message(&mut fp, session, data);
    if !heeler_fuzz::json_parse_accepts(data) {
        assert!(
            heeler_fuzz::refused_line_changed_nothing(&FileParse::default(), &fp),
            "data JSON.parse refuses changed the parse: {:?}",
            String::from_utf8_lossy(data)
        );
    }
    assert!(fp.events.len() <= 1);
    for e in &fp.events {
        assert_ne!(e.key, 0);
        assert!(e.t.iter().any(|&n| n > 0));
        assert!(e.t[5] <= e.t[4], "reasoning is part of output");
    }
    // Parsed again, the same call (what a reparse of the database gives).
    let mut again = FileParse::default();
    opencode::parse_message(&mut again, session, data);
    assert_eq!(again, fp);
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
    assert_eq!(lasts, fp.lasts);
});
