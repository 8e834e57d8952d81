//! Hermes' usage rows (a session's totals or a `session_model_usage`
//! row, every column any bytes): never panic, at most one event per row,
//! no event without tokens or time, reasoning never above output, and the
//! events survive the cache's event encoding.
#![no_main]
use heeler::usage::event::FileParse;
use heeler::usage::parse::hermes::{Gathered, Row};
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut gathered = Gathered::default();
    let mut rows = 0usize;
    // Rows of parts: kind (an even first byte a session's totals),
    // session, model, provider, task, started_at, cwd, five counts.
    for line in data.split(|&b| b == b'\n') {
        let (kind, rest) = heeler_fuzz::selector(line);
        let parts = heeler_fuzz::parts(rest);
        let part = |i: usize| parts.get(i).copied().unwrap_or_default();
        gathered.add(&Row {
            session: part(0),
            model: part(1),
            provider: part(2),
            task: (kind % 2 == 1).then(|| part(3)),
            started_at: part(4),
            cwd: part(5),
            counts: [part(6), part(7), part(8), part(9), part(10)],
        });
        rows += 1;
    }
    let mut fp = FileParse::default();
    gathered.finish(&mut fp);
    assert!(fp.events.len() <= rows);
    for e in &fp.events {
        assert_ne!(e.key, 0);
        assert!(e.t.iter().take(5).any(|&n| n > 0));
        assert!(e.t[5] <= e.t[4], "reasoning above output");
    }
    let raw = codec::encode_events(&fp.events, &fp.lasts);
    let count = u32::try_from(fp.events.len()).expect("few events");
    let mut lasts = Vec::new();
    let decoded = codec::decode_events(&raw, count, fp.strings.len(), &mut lasts);
    assert_eq!(decoded.as_ref(), Some(&fp.events));
});
