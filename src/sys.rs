//! The one place where heeler talks to the operating system below `std`.
//!
//! Every `unsafe` block of the crate lives here, small and commented, so that
//! a reviewer can audit all of it in one sitting. Callers get safe functions.
#![allow(unsafe_code)]

/// The machine's host name (`gethostname(2)`), when it is UTF-8.
pub(crate) fn hostname() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: `buffer` is valid for writes of `buffer.len()` bytes and
    // gethostname writes at most that many; we read only up to the first NUL
    // (or the whole buffer when the name was truncated without one).
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if status != 0 {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8(buffer[..end].to_vec()).ok()
}
