//! Devin's message nodes (`chat_message` JSON and the row's other
//! columns): any bytes never panic, a message `JSON.parse` refuses counts
//! nothing but its malformed count, every call has tokens and a key, and
//! the events survive the cache's event encoding.
#![no_main]
use heeler::usage::event::FileParse;
use heeler::usage::parse::devin::{self, Node};
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fp = FileParse::default();
    // Rows of parts: chat message, row time, session model, row id.
    for row in data.split(|&b| b == b'\n') {
        let parts = heeler_fuzz::parts(row);
        let part = |i: usize| parts.get(i).copied().unwrap_or_default();
        let node = Node {
            row_id: part(3),
            session: b"s",
            created_at: part(1),
            chat_message: part(0),
            session_model: part(2),
            cwd: b"/w",
        };
        let before = fp.clone();
        devin::parse_node(&mut fp, &node);
        if !heeler_fuzz::json_parse_accepts(node.chat_message) {
            assert!(
                heeler_fuzz::refused_line_changed_nothing(&before, &fp),
                "a message JSON.parse refuses changed the parse: {:?}",
                String::from_utf8_lossy(node.chat_message)
            );
        }
        assert!(fp.events.len() <= before.events.len() + 1);
    }
    for e in &fp.events {
        assert_ne!(e.key, 0);
        assert!(e.t.iter().take(5).any(|&n| n > 0));
    }
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
});
