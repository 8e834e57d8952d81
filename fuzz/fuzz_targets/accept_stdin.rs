//! `heeler accept`'s stdin: the bytes a client sends (then EOF) read as the
//! forced command reads them, then judged as a submission.
#![no_main]
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use heeler::pair::accept;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((mut writer, reader)) = UnixStream::pair() else {
        return;
    };
    // Inputs stay far below a socket buffer: the write never blocks.
    if writer.write_all(data).is_err() || writer.shutdown(std::net::Shutdown::Write).is_err() {
        return;
    }
    let submitted = accept::read_submission(reader, Duration::from_secs(5));
    assert!(!submitted.contains('\n'));
    if let Ok(key) = accept::submitted_key(&submitted) {
        assert!(key.line.starts_with("ssh-ed25519 "));
    }
});
