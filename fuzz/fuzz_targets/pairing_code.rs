//! `HERDR-PAIR:1` decoding: never panics, and a code that decodes is the
//! canonical encoding of its payload (one payload, one byte string).
#![no_main]
use heeler::wire::pairing_code;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(payload) = pairing_code::decode(code) {
        let again = pairing_code::encode_v1(&payload).expect("a decoded payload encodes");
        assert_eq!(again, code, "decode accepted a non-canonical code");
    }
});
