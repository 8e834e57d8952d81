//! Gemini CLI session files (a legacy `.json` document or a `.jsonl` log,
//! read whole): any bytes, never panic, the same parse twice, nothing
//! counted from a file no part of which `JSON.parse` accepts, and the
//! events survive the cache's event encoding.
#![no_main]
use heeler::usage::event::FileParse;
use heeler::usage::parse::gemini;
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fp = FileParse::default();
    gemini::parse_document(&mut fp, data);
    let mut again = FileParse::default();
    gemini::parse_document(&mut again, data);
    assert_eq!(fp, again, "two parses of one document differ");
    // Every event comes from the whole document or from one of its lines:
    // when `JSON.parse` refuses each, nothing counts.
    if !heeler_fuzz::json_parse_accepts(data)
        && !data
            .split(|&b| b == b'\n')
            .any(heeler_fuzz::json_parse_accepts)
    {
        assert!(fp.events.is_empty(), "events from refused JSON");
        assert!(fp.codex.thread_id.is_empty(), "a session from refused JSON");
    }
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
    assert_eq!(lasts, fp.lasts);
});
