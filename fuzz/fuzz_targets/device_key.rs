//! A submitted Device Key line: never panics; an accepted key's canonical
//! line is one `ssh-ed25519` line that parses to the same key.
#![no_main]
use heeler::pair::device_key;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(key) = device_key::parse(line) {
        assert!(key.line.starts_with("ssh-ed25519 "));
        assert!(!key.line.contains(['\n', '\r']));
        assert_eq!(device_key::parse(&key.line).as_ref(), Ok(&key));
        let _ = device_key::comment_of_line(&key.line);
    }
});
