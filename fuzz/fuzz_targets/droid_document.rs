//! Droid session settings: any bytes never panic, a document `JSON.parse`
//! refuses counts nothing (one malformed document), a session is at most
//! one call whose reasoning is within its output, and the call survives
//! the cache's event encoding.
#![no_main]
use std::path::Path;

use heeler::usage::event::FileParse;
use heeler::usage::parse::droid;
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fp = FileParse::default();
    droid::begin(
        &mut fp,
        Path::new("/h/.factory/sessions/p/s1.settings.json"),
        1 << 60,
    );
    droid::parse_document(&mut fp, data);
    if !heeler_fuzz::json_parse_accepts(data) {
        assert!(
            fp.events.is_empty() && fp.malformed == 1,
            "a refused document counted"
        );
    }
    assert!(fp.events.len() <= 1);
    // t = [input, cache read, cache write, 0, output, reasoning].
    assert!(fp.events.iter().all(|e| e.t[5] <= e.t[4]));
    assert_eq!(fp.codex.thread_id, "s1");
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("one event");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
});
