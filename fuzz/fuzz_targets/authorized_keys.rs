//! `authorized_keys` line edits: the file splits and joins back
//! byte-identically, and every edit keeps every other line byte-identical
//! and in order. (Additions are single `O_APPEND` writes, not edits of the
//! lines read, so they have no pure function to fuzz here.)
#![no_main]
use heeler::pair::authorized_keys as ak;
use libfuzzer_sys::fuzz_target;

/// `after` is `before` with some lines removed, order and bytes kept.
fn is_subsequence(after: &[Vec<u8>], before: &[Vec<u8>]) -> bool {
    let mut rest = before.iter();
    after.iter().all(|line| rest.any(|b| b == line))
}

fuzz_target!(|data: &[u8]| {
    let (selector, rest) = heeler_fuzz::selector(data);
    let (file, arg) = heeler_fuzz::split2(rest);
    let lines = ak::split_lines(file);
    let joined = ak::join_lines(&lines);
    if file.ends_with(b"\n") || file.is_empty() {
        assert_eq!(joined, file);
    } else {
        assert_eq!(&joined[..joined.len() - 1], file);
    }
    assert_eq!(ak::split_lines(&joined), lines);
    for line in &lines {
        let _ = ak::marker_of(line);
        let _ = ak::key_blob_of(line);
    }
    let arg_text = String::from_utf8_lossy(arg);
    let edited = match selector % 4 {
        0 => ak::remove_pairing(&lines, &arg_text),
        1 => ak::sweep_expired(&lines, i64::from(selector) * 1_000_000_007),
        2 => ak::remove_line(&lines, arg),
        _ => ak::revoke_blob(&lines, &arg_text),
    };
    if let Some(new) = edited {
        assert!(
            is_subsequence(&new, &lines),
            "an edit changed a line it kept"
        );
        if selector % 4 == 3 {
            assert!(!ak::has_blob(&new, &arg_text));
        }
    }
});
