//! An events segment's event stream: never panics; what decodes encodes
//! back to a stream that decodes to the same events.
#![no_main]
use heeler::usage::store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (count, rest) = heeler_fuzz::selector(data);
    let (strings, raw) = heeler_fuzz::selector(rest);
    let strings = usize::from(strings);
    let mut lasts = Vec::new();
    match codec::decode_events(raw, u32::from(count), strings, &mut lasts) {
        Some(events) => {
            assert_eq!(events.len(), usize::from(count));
            let again = codec::encode_events(&events, &lasts);
            let mut lasts_again = Vec::new();
            assert_eq!(
                codec::decode_events(&again, u32::from(count), strings, &mut lasts_again).as_ref(),
                Some(&events)
            );
            assert_eq!(lasts_again, lasts);
        }
        None => assert!(
            lasts.is_empty(),
            "a stream that fails adds no last counters"
        ),
    }
});
