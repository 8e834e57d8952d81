//! Kimi lines: any bytes, line by line, never panic, a line
//! `JSON.parse` refuses counts nothing, and the events they give survive
//! the cache's event encoding.
#![no_main]
use heeler::usage::event::FileParse;
use heeler::usage::parse::kimi;
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fp = FileParse::default();
    for line in data.split(|&b| b == b'\n') {
        let before = fp.clone();
        kimi::parse_line(&mut fp, line);
        // A line `JSON.parse` refuses counts nothing.
        if !heeler_fuzz::json_parse_accepts(line) {
            assert!(
                heeler_fuzz::refused_line_changed_nothing(&before, &fp),
                "a line JSON.parse refuses changed the parse: {:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
    assert_eq!(lasts, fp.lasts);
});
