//! Claude Code's `statusLine` input. Claude Code runs its status line
//! command after each message with a JSON object about the session on
//! stdin (`session_id`, `model`, `workspace`, `cost.total_cost_usd`, …),
//! so `heeler usage statusline` as that command can show the session's
//! cost beside today's, as ccusage's statusline does. The session's cost
//! is Claude Code's own figure (`cost.total_cost_usd`): our cache sums
//! sessions only in the aggregate, which the statusline does not read.
//!
//! The read is bounded, so a status line never hangs: nothing is read
//! from a terminal (a shell prompt, a person typing the command), and
//! from anything else at most [`MAX_INPUT`] bytes until end of file or
//! [`READ_DEADLINE`], whichever comes first (an empty stdin, `/dev/null`,
//! ends at once; a pipe nobody writes to ends at the deadline). Input
//! that is not such an object is ignored: the line is the same as without.

use std::io::Read;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::base::json;
use crate::base::sys;

/// The most stdin bytes read (Claude Code's object is a few kilobytes).
pub(crate) const MAX_INPUT: usize = 64 * 1024;
/// How long stdin is read at most.
pub(crate) const READ_DEADLINE: Duration = Duration::from_millis(100);

/// What the statusline shows of Claude Code's session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// `cost.total_cost_usd`: the session's cost so far, in dollars.
    pub cost_usd: f64,
}

/// The session in Claude Code's status line object (pure): `None` unless
/// `bytes` is a JSON object whose `cost.total_cost_usd` is a number of
/// zero or more.
pub fn parse(bytes: &[u8]) -> Option<Session> {
    let text = std::str::from_utf8(bytes).ok()?;
    let value = json::parse(text.trim()).ok()?;
    let cost = value.get("cost")?.get("total_cost_usd")?.as_f64()?;
    (cost.is_finite() && cost >= 0.0).then_some(Session { cost_usd: cost })
}

/// Reads `input` until end of file, [`MAX_INPUT`] bytes, an error or
/// `timeout`, whichever comes first; each read waits (`poll`) only as long
/// as is left, so a silent writer cannot hold the read past it.
pub(crate) fn read_bounded(mut input: impl Read + AsFd, timeout: Duration) -> Vec<u8> {
    let deadline = Instant::now() + timeout;
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 8192];
    while bytes.len() < MAX_INPUT {
        let left = deadline.saturating_duration_since(Instant::now());
        match sys::wait_readable(input.as_fd(), left) {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
        let room = (MAX_INPUT - bytes.len()).min(buffer.len());
        match input.read(&mut buffer[..room]) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    bytes
}

/// Claude Code's session from this process's stdin, unless stdin is a
/// terminal (then nothing is read).
pub(crate) fn from_stdin() -> Option<Session> {
    let stdin = std::io::stdin();
    if termion::is_tty(&stdin) {
        return None;
    }
    parse(&read_bounded(stdin.lock(), READ_DEADLINE))
}

/// The session's part of the statusline: `$0.42 session`.
pub fn session_part(session: &Session) -> String {
    format!(
        "{} session",
        crate::usage::views::table::dollars(session.cost_usd)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    /// Claude Code's documented example object (its statusline docs).
    const CLAUDE: &str = r#"{"hook_event_name":"Status","session_id":"abc123","transcript_path":"/path/to/transcript.json","cwd":"/current/working/directory","model":{"id":"claude-opus-4-1","display_name":"Opus"},"workspace":{"current_dir":"/current/working/directory","project_dir":"/original/project/directory"},"version":"1.0.80","output_style":{"name":"default"},"cost":{"total_cost_usd":0.01234,"total_duration_ms":45000,"total_api_duration_ms":2300,"total_lines_added":156,"total_lines_removed":23}}"#;

    #[test]
    fn the_session_cost_is_read_from_claude_code_s_object() {
        assert_eq!(
            parse(CLAUDE.as_bytes()),
            Some(Session { cost_usd: 0.01234 })
        );
        assert_eq!(
            session_part(&parse(CLAUDE.as_bytes()).unwrap()),
            "$0.01 session"
        );
        assert_eq!(
            parse(b"\n {\"cost\":{\"total_cost_usd\":12}}\n"),
            Some(Session { cost_usd: 12.0 })
        );
    }

    #[test]
    fn anything_else_is_ignored() {
        for input in [
            &b""[..],
            b"   \n",
            b"not json",
            b"[1,2]",
            b"{}",
            b"{\"cost\":{}}",
            b"{\"cost\":{\"total_cost_usd\":\"0.5\"}}",
            b"{\"cost\":{\"total_cost_usd\":-1}}",
            b"{\"cost\":{\"total_cost_usd\":0.5}",
            b"{\"cost\":{\"total_cost_usd\":0.5}}\xff",
        ] {
            assert_eq!(parse(input), None, "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn the_read_ends_at_end_of_file_at_the_cap_or_at_the_deadline() {
        // End of file: everything written.
        let (mut writer, reader) = UnixStream::pair().unwrap();
        writer.write_all(CLAUDE.as_bytes()).unwrap();
        writer.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(
            read_bounded(reader, Duration::from_secs(10)),
            CLAUDE.as_bytes()
        );
        // A writer that stays silent: the deadline ends the read with what
        // came before it.
        let (mut writer, reader) = UnixStream::pair().unwrap();
        writer.write_all(b"{\"cost\":").unwrap();
        assert_eq!(
            read_bounded(reader, Duration::from_millis(20)),
            b"{\"cost\":"
        );
        drop(writer);
        // More than the cap: the cap, and the rest is left unread.
        let (mut writer, reader) = UnixStream::pair().unwrap();
        let big = vec![b' '; MAX_INPUT + 10];
        let feeder = std::thread::spawn(move || {
            let _ = writer.write_all(&big);
        });
        assert_eq!(
            read_bounded(reader, Duration::from_secs(10)).len(),
            MAX_INPUT
        );
        feeder.join().unwrap();
    }
}
