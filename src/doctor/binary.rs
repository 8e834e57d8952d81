//! Is the installed heeler the static release build: the `binary` check,
//! and whether an ELF executable needs a dynamic loader (a `PT_INTERP`
//! program header), read from its bytes.
//!
//! heeler ships as a static musl binary so it runs on any Linux host without
//! a matching libc; `heeler doctor` reads its own executable to confirm the
//! installed file is that build and not, say, a glibc development build.
//! Pure: callers pass the bytes (only the header and program headers are
//! read).

use std::path::Path;

use crate::doctor::report::Check;

/// `p_type` of the program header naming the dynamic loader.
const PT_INTERP: u32 = 3;

/// Why the bytes are not an ELF executable we can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfError {
    NotElf,
    Truncated,
    Unsupported,
}

impl std::fmt::Display for ElfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ElfError::NotElf => "not an ELF file",
            ElfError::Truncated => "truncated ELF headers",
            ElfError::Unsupported => "unsupported ELF class or byte order",
        })
    }
}

impl std::error::Error for ElfError {}

/// True when the executable has a `PT_INTERP` header (is dynamically linked).
pub fn has_interpreter(bytes: &[u8]) -> Result<bool, ElfError> {
    if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(ElfError::NotElf);
    }
    let class = *bytes.get(4).ok_or(ElfError::Truncated)?;
    let little_endian = match bytes.get(5) {
        Some(1) => true,
        Some(2) => false,
        Some(_) => return Err(ElfError::Unsupported),
        None => return Err(ElfError::Truncated),
    };
    let read = |offset: usize, width: usize| -> Result<u64, ElfError> {
        let end = offset.checked_add(width).ok_or(ElfError::Truncated)?;
        let field = bytes.get(offset..end).ok_or(ElfError::Truncated)?;
        let mut value: u64 = 0;
        for i in 0..width {
            let byte = if little_endian {
                field[width - 1 - i]
            } else {
                field[i]
            };
            value = (value << 8) | u64::from(byte);
        }
        Ok(value)
    };
    // (e_phoff offset, width), e_phentsize offset, e_phnum offset.
    let ((phoff_at, phoff_width), phentsize_at, phnum_at) = match class {
        1 => ((0x1c, 4), 0x2a, 0x2c),
        2 => ((0x20, 8), 0x36, 0x38),
        _ => return Err(ElfError::Unsupported),
    };
    let phoff = usize::try_from(read(phoff_at, phoff_width)?).map_err(|_| ElfError::Truncated)?;
    let entry_size = usize::try_from(read(phentsize_at, 2)?).map_err(|_| ElfError::Truncated)?;
    let count = read(phnum_at, 2)?;
    if entry_size < 4 {
        return Err(ElfError::Truncated);
    }
    for index in 0..usize::try_from(count).map_err(|_| ElfError::Truncated)? {
        let at = index
            .checked_mul(entry_size)
            .and_then(|offset| offset.checked_add(phoff))
            .ok_or(ElfError::Truncated)?;
        if read(at, 4)? == u64::from(PT_INTERP) {
            return Ok(true);
        }
    }
    Ok(false)
}

pub(crate) fn check_binary(
    os: &str,
    path: &Path,
    has_interpreter: &Result<bool, String>,
    version: &str,
) -> Check {
    const ID: &str = "binary";
    let shown = path.display();
    if os != "linux" {
        return Check::pass(
            ID,
            format!(
                "heeler {version} at {shown} ({os} binaries link the system library dynamically by design)"
            ),
        );
    }
    match has_interpreter {
        Ok(false) => Check::pass(
            ID,
            format!("heeler {version} at {shown} is statically linked"),
        ),
        Ok(true) => Check::warn(
            ID,
            format!("heeler {version} at {shown} is dynamically linked (a development build?)"),
            "install the static release binary: sh install.sh in the plugin checkout",
        ),
        Err(why) => Check::warn(
            ID,
            format!("heeler {version} at {shown}: could not read its ELF headers ({why})"),
            "reinstall: sh install.sh in the plugin checkout",
        ),
    }
}

/// Whether another user could replace the binary the forced command
/// names: `heeler pair` refuses to start a ceremony then, so this fails.
pub(crate) fn check_binary_trust(
    path: &Path,
    trust: &Result<(), crate::base::dirs::UntrustedBinary>,
) -> Check {
    const ID: &str = "binary_trust";
    match trust {
        Ok(()) => Check::pass(
            ID,
            format!(
                "only root or you can replace {}, which the phone's SSH login runs",
                path.display()
            ),
        ),
        Err(untrusted) => Check::fail(
            ID,
            format!("{}; heeler pair refuses to start", untrusted.summary()),
            untrusted.untrusted.fix(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::report::Status;

    /// A minimal little-endian ELF64 header with the given program header types.
    fn elf64(types: &[u32]) -> Vec<u8> {
        let mut bytes = vec![0u8; 64];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&(types.len() as u16).to_le_bytes());
        for p_type in types {
            let mut header = vec![0u8; 56];
            header[..4].copy_from_slice(&p_type.to_le_bytes());
            bytes.extend_from_slice(&header);
        }
        bytes
    }

    #[test]
    fn finds_an_interpreter_header_among_others() {
        assert_eq!(has_interpreter(&elf64(&[6, 3, 1])), Ok(true));
        assert_eq!(has_interpreter(&elf64(&[1, 1, 7])), Ok(false));
        assert_eq!(has_interpreter(&elf64(&[])), Ok(false));
    }

    #[test]
    fn big_endian_elf32_is_read_too() {
        let mut bytes = vec![0u8; 52];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 1;
        bytes[5] = 2;
        bytes[0x1c..0x20].copy_from_slice(&52u32.to_be_bytes());
        bytes[0x2a..0x2c].copy_from_slice(&32u16.to_be_bytes());
        bytes[0x2c..0x2e].copy_from_slice(&1u16.to_be_bytes());
        let mut header = vec![0u8; 32];
        header[..4].copy_from_slice(&3u32.to_be_bytes());
        bytes.extend_from_slice(&header);
        assert_eq!(has_interpreter(&bytes), Ok(true));
    }

    #[test]
    fn refuses_what_is_not_a_whole_elf_file() {
        assert_eq!(has_interpreter(b"#!/bin/sh\n"), Err(ElfError::NotElf));
        assert_eq!(has_interpreter(b""), Err(ElfError::NotElf));
        let whole = elf64(&[1, 3]);
        assert_eq!(has_interpreter(&whole[..70]), Err(ElfError::Truncated));
        let mut huge = elf64(&[]);
        huge[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        assert_eq!(has_interpreter(&huge), Err(ElfError::Truncated));
        let mut odd = elf64(&[]);
        odd[4] = 9;
        assert_eq!(has_interpreter(&odd), Err(ElfError::Unsupported));
    }

    #[test]
    fn the_test_binary_itself_is_readable() {
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        if cfg!(target_os = "linux") {
            let dynamic = has_interpreter(&bytes).unwrap();
            println!("this test binary has PT_INTERP: {dynamic}");
            // A default (gnu, non-static) test build is dynamically linked.
            if cfg!(all(target_env = "gnu", not(target_feature = "crt-static"))) {
                assert!(dynamic);
            }
        } else {
            assert_eq!(has_interpreter(&bytes), Err(ElfError::NotElf));
        }
    }

    #[test]
    fn the_binary_must_be_static_on_linux() {
        let path = Path::new("/p/bin/heeler");
        assert_eq!(
            check_binary("linux", path, &Ok(false), "0.8.0").status,
            Status::Pass
        );
        assert_eq!(
            check_binary("linux", path, &Ok(true), "0.8.0").status,
            Status::Warn
        );
        assert_eq!(
            check_binary("linux", path, &Err("x".into()), "0.8.0").status,
            Status::Warn
        );
        assert_eq!(
            check_binary("macos", path, &Err("not an ELF file".into()), "0.8.0").status,
            Status::Pass
        );
    }

    #[test]
    fn a_replaceable_binary_fails_with_the_fix() {
        use crate::base::dirs::{Problem, Untrusted, UntrustedBinary};
        let path = Path::new("/opt/x/heeler");
        let pass = check_binary_trust(path, &Ok(()));
        assert_eq!(pass.status, Status::Pass);
        assert_eq!(
            pass.summary,
            "only root or you can replace /opt/x/heeler, which the phone's SSH login runs"
        );
        let fail = check_binary_trust(
            path,
            &Err(UntrustedBinary {
                binary: path.into(),
                untrusted: Untrusted {
                    path: "/opt/x".into(),
                    problem: Problem::Writable { mode: 0o777 },
                },
            }),
        );
        assert_eq!(fail.status, Status::Fail);
        assert_eq!(
            fail.summary,
            "another user could replace /opt/x/heeler, which the phone's SSH login runs: \
             /opt/x is writable by group or others (mode 0777); heeler pair refuses to start"
        );
        assert_eq!(fail.fix.as_deref(), Some("run `chmod go-w /opt/x`"));
    }
}
