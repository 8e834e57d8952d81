//! Amp thread documents: any bytes never panic, a document `JSON.parse`
//! refuses counts nothing (one malformed document), no call is made of
//! nothing (every call has tokens), and the calls survive the cache's
//! event encoding.
#![no_main]
use std::path::Path;

use heeler::usage::event::FileParse;
use heeler::usage::parse::amp;
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fp = FileParse::default();
    amp::begin(
        &mut fp,
        Path::new("/h/.local/share/amp/threads/T-1.json"),
        1 << 60,
    );
    amp::parse_document(&mut fp, data);
    if !heeler_fuzz::json_parse_accepts(data) {
        assert!(
            fp.events.is_empty() && fp.malformed == 1,
            "a refused document counted"
        );
    }
    assert!(fp.events.iter().all(|e| e.t.iter().any(|&n| n != 0)));
    assert_eq!(fp.codex.thread_id, "T-1");
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
});
