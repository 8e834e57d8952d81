//! `HERDR-PAIR:1` decoding: never panics, and a decoded payload encodes
//! to a canonical code that decodes to the same payload and is its own
//! canonical form (a code may decode without being canonical: the app's
//! `decodeOnly` vectors).
#![no_main]
use heeler::wire::pairing_code;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(payload) = pairing_code::decode(code) {
        let canonical = pairing_code::encode_v1(&payload).expect("a decoded payload encodes");
        assert_eq!(pairing_code::decode(&canonical).as_ref(), Ok(&payload));
    }
});
