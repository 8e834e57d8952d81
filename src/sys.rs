//! The one place where heeler talks to the operating system below `std`.
//!
//! Every `unsafe` block of the crate lives here, small and commented, so that
//! a reviewer can audit all of it in one sitting. Callers get safe functions.
#![allow(unsafe_code)]

/// A deserialization slot for `miniserde`'s visitor protocol.
///
/// `miniserde::Deserialize::begin` hands us `&mut Option<T>` and wants a
/// `&mut dyn Visitor` back that writes into it. `Place` is a `repr(C)`
/// wrapper around that `Option<T>`, so the reference can be reinterpreted.
#[repr(C)]
pub(crate) struct Place<T> {
    pub(crate) out: Option<T>,
}

impl<T> Place<T> {
    pub(crate) fn new(out: &mut Option<T>) -> &mut Place<T> {
        // SAFETY: `Place<T>` is `repr(C)` with `Option<T>` as its only field,
        // so it has the same size, alignment and layout as `Option<T>`. The
        // returned reference borrows `out` for the same lifetime, so no
        // aliasing is introduced. This mirrors `miniserde::make_place!`.
        unsafe { &mut *std::ptr::addr_of_mut!(*out).cast::<Place<T>>() }
    }
}

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
