//! Envelope opening under both AADs: never panics; what seals opens to the
//! same plaintext under its own domain only.
#![no_main]
use heeler::wire::envelope::{self, Domain, NotificationKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (selector, mut rest) = heeler_fuzz::selector(data);
    // Bit 2: the key is the input's next 32 bytes (seeds from the vectors).
    let mut key = [7; 32];
    if selector & 4 != 0 && rest.len() >= 32 {
        key.copy_from_slice(&rest[..32]);
        rest = &rest[32..];
    }
    let key = NotificationKey::from_bytes(key);
    let (domain, other) = match selector & 1 {
        0 => (Domain::Notification, Domain::Activity),
        _ => (Domain::Activity, Domain::Notification),
    };
    if let Ok(text) = std::str::from_utf8(rest) {
        let _ = envelope::open(domain, &key, text);
    }
    if selector & 2 != 0 {
        let sealed = envelope::seal(domain, &key, [selector; 12], rest);
        assert_eq!(envelope::open(domain, &key, &sealed).as_deref(), Ok(rest));
        assert!(envelope::open(other, &key, &sealed).is_err());
    }
});
