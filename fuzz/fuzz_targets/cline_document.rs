//! Cline session documents (`*.messages.json`, read whole): any bytes,
//! never panic; a document `JSON.parse` refuses counts nothing and is one
//! malformed document; every call it gives has tokens, at most one per
//! `metrics` member; the parse is the same twice, and its events survive
//! the cache's event encoding.
#![no_main]
use heeler::usage::event::FileParse;
use heeler::usage::parse::cline;
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fp = FileParse::default();
    cline::parse_document(&mut fp, data);
    if !heeler_fuzz::json_parse_accepts(data) {
        assert!(fp.events.is_empty(), "a refused document counted");
        assert_eq!(fp.malformed, 1);
    }
    // Without escapes (a key may spell itself `"m\u0065trics"`), each
    // call is a `"metrics"` member.
    if !data.contains(&b'\\') {
        let metrics = data.windows(9).filter(|w| w == b"\"metrics\"").count();
        assert!(
            fp.events.len() <= metrics,
            "more calls than metrics members"
        );
    }
    for e in &fp.events {
        assert!(e.t.iter().any(|&n| n > 0), "a call without tokens");
        assert!(e.t[5] <= e.t[4], "reasoning beyond output");
    }
    let mut again = FileParse::default();
    cline::parse_document(&mut again, data);
    assert_eq!(again, fp);
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
    assert_eq!(lasts, fp.lasts);
});
