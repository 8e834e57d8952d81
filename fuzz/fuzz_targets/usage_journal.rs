//! The journal framing both stores share: never panics; the intact
//! records are exactly a prefix of the journal after its header, framed
//! as `journal::frame` frames them.
#![no_main]
use heeler::usage::store::journal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (header_len, rest) = heeler_fuzz::selector(data);
    let header = &rest[..usize::from(header_len % 48).min(rest.len())];
    let (records, whole) = journal::records(rest, header);
    let mut framed = header.to_vec();
    for payload in &records {
        journal::frame(payload, &mut framed);
    }
    if rest.starts_with(header) {
        assert!(rest.starts_with(&framed));
        assert_eq!(whole, framed.len() == rest.len());
    } else {
        assert!(records.is_empty() && !whole);
    }
});
