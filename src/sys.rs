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

// ---- The pairing popup: host name and local wall-clock time. ----

/// This machine's host name (`gethostname`), `None` if it cannot be read.
#[allow(dead_code)] // used by the popup, which lands after the ceremony merge
pub(crate) fn host_name() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: `buffer` is a live, writable array and we pass its exact
    // length; gethostname writes at most that many bytes into it.
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if status != 0 {
        return None;
    }
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    let name = String::from_utf8_lossy(&buffer[..end]).into_owned();
    (!name.is_empty()).then_some(name)
}

/// The local wall-clock time of a Unix timestamp as `(hour, minute,
/// second)` (`localtime_r`), `None` if the conversion fails.
#[allow(dead_code)] // used by the popup, which lands after the ceremony merge
pub(crate) fn local_time_of_day(unix_seconds: i64) -> Option<(u32, u32, u32)> {
    let time = libc::time_t::try_from(unix_seconds).ok()?;
    // SAFETY: an all-zero `tm` is a valid value (integers and a null zone
    // pointer); localtime_r only writes into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers refer to live locals for the duration of the
    // call; localtime_r is the thread-safe variant.
    let result = unsafe { libc::localtime_r(&time, &mut tm) };
    if result.is_null() {
        return None;
    }
    Some((
        u32::try_from(tm.tm_hour).ok()?,
        u32::try_from(tm.tm_min).ok()?,
        u32::try_from(tm.tm_sec).ok()?,
    ))
}
