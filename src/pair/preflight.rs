//! The pairing preflight: before a Pairing Code is shown, does OpenSSH
//! answer on the port the code advertises? A code for a port where nothing
//! listens (or where Tailscale SSH answers instead of OpenSSH) fails on the
//! phone with no hint on the Host, so pairing checks first.
//!
//! This module owns the rule "what answers on 127.0.0.1:<port>, and can
//! pairing use it": the banner read ([`read_banner`]), its classification
//! and wording ([`classify`]). `heeler doctor`'s `ssh_server` check is that
//! classification as a report line (`doctor::ssh::check_ssh_server`), so
//! the doctor and pairing can never disagree. What pairing does with it is
//! [`verdict`]: a failure refuses the code; a warning (an SSH server that is
//! not OpenSSH) is shown and pairing goes on; `--no-ssh-check` skips the
//! probe altogether.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::base::bytes::printable;

/// The flag that skips the preflight (`heeler pair [--no-ui] --no-ssh-check`).
pub(crate) const SKIP_FLAG: &str = "--no-ssh-check";

/// The connect's share of [`PROBE_TIMEOUT`] at most.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How good what answered is for pairing, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// OpenSSH.
    Pass,
    /// An SSH server that is not OpenSSH.
    Warn,
    /// Nothing, Tailscale SSH, or not SSH.
    Fail,
}

/// What answered on the port, in words: a summary and, unless it passed,
/// the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub level: Level,
    pub summary: String,
    pub fix: Option<String>,
}

impl Finding {
    fn new(level: Level, summary: String, fix: Option<String>) -> Finding {
        Finding {
            level,
            summary,
            fix,
        }
    }
}

/// Classifies what answered on 127.0.0.1:<port>: the first banner line, or
/// why none came.
pub fn classify(port: u16, banner: &Result<String, String>) -> Finding {
    classify_with(port, banner, None)
}

/// [`classify`], the fix naming `start` as the way to start OpenSSH on
/// this Host when the caller knows it (doctor reads the init system and
/// the distribution).
pub(crate) fn classify_with(
    port: u16,
    banner: &Result<String, String>,
    start: Option<&str>,
) -> Finding {
    let start = start.unwrap_or(
        "Linux: sudo systemctl enable --now ssh; macOS: System Settings > General > Sharing > Remote Login",
    );
    let start_fix =
        format!("start OpenSSH on port {port} ({start}), or set ssh_port in pair.json to its port");
    match banner {
        Err(reason) => Finding::new(
            Level::Fail,
            format!("no SSH server answers on 127.0.0.1:{port} ({reason})"),
            Some(start_fix),
        ),
        Ok(line) if line.starts_with("SSH-2.0-Tailscale") => Finding::new(
            Level::Fail,
            format!(
                "Tailscale SSH answers on port {port}, not OpenSSH; enrollment needs OpenSSH's forced command"
            ),
            Some(format!(
                "turn Tailscale SSH off (tailscale set --ssh=false) or run OpenSSH on another port and set ssh_port in pair.json (now {port})"
            )),
        ),
        Ok(line) if line.starts_with("SSH-2.0-OpenSSH") => {
            let software = line.trim_start_matches("SSH-2.0-");
            Finding::new(
                Level::Pass,
                format!("{} answers on 127.0.0.1:{port}", printable(software)),
                None,
            )
        }
        Ok(line) if line.starts_with("SSH-") => Finding::new(
            Level::Warn,
            format!(
                "an SSH server that is not OpenSSH answers on port {port} ({})",
                printable(line)
            ),
            Some("pairing needs OpenSSH (authorized_keys forced commands); use OpenSSH or set ssh_port in pair.json to its port".to_owned()),
        ),
        Ok(line) => Finding::new(
            Level::Fail,
            format!(
                "port {port} answers, but not with SSH ({})",
                printable(line)
            ),
            Some(start_fix),
        ),
    }
}

/// The whole probe, connect and banner: one deadline, fixed when the probe
/// starts, so a peer that sends a byte at a time cannot stretch it.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest line accepted, its CR LF included: RFC 4253 4.2's limit on
/// the version string, applied to every line the server sends.
pub(crate) const MAX_LINE: usize = 255;
/// The most bytes read looking for the version line. RFC 4253 4.2 lets a
/// server send other lines first and sets no limit on them; 8 KiB (at
/// least 32 lines of the longest length) is far more than any server sends.
pub(crate) const MAX_RECEIVED: usize = 8 * 1024;

/// What the bytes received so far say (pure: [`scan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scan {
    /// No version line yet: read on.
    More,
    /// The version line (`SSH-…`, its CR LF removed), or the first line of
    /// a server that sent no version line within [`MAX_RECEIVED`].
    Line(String),
    /// A line longer than [`MAX_LINE`]: whatever answers is not an SSH
    /// server pairing can use.
    TooLong,
}

/// Reads `received` as RFC 4253 4.2 identification lines: the first
/// complete line starting `SSH-` is the version line; lines before it are
/// allowed, each within [`MAX_LINE`], up to [`MAX_RECEIVED`] in all.
pub(crate) fn scan(received: &[u8]) -> Scan {
    let mut rest = received;
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        if end + 1 > MAX_LINE {
            return Scan::TooLong;
        }
        let line = &rest[..end];
        if line.starts_with(b"SSH-") {
            return Scan::Line(line_text(line));
        }
        rest = &rest[end + 1..];
    }
    if rest.len() > MAX_LINE {
        return Scan::TooLong;
    }
    if received.len() >= MAX_RECEIVED {
        return first_line(received).map_or(Scan::TooLong, Scan::Line);
    }
    Scan::More
}

/// A line's text, its trailing CR (or other white space) removed.
fn line_text(line: &[u8]) -> String {
    String::from_utf8_lossy(line).trim_end().to_owned()
}

/// The first line received, complete or not, unless it is empty.
fn first_line(received: &[u8]) -> Option<String> {
    let line = received.split(|&b| b == b'\n').next().unwrap_or_default();
    Some(line_text(line)).filter(|line| !line.is_empty())
}

/// What [`read_banner`] reports when the read ends without a version
/// line: the server `closed` its side, or the deadline passed.
fn without_version_line(received: &[u8], closed: bool) -> Result<String, String> {
    let complete = received.contains(&b'\n');
    match first_line(received) {
        // A whole line that is not a version line: say what answers.
        Some(line) if complete || closed => Ok(line),
        _ if closed => Err("closed without a banner".to_owned()),
        _ => Err(format!(
            "no banner line within {} s",
            PROBE_TIMEOUT.as_secs()
        )),
    }
}

/// The first `SSH-` line the server on 127.0.0.1:<port> sends, within
/// [`PROBE_TIMEOUT`] from the connect's start to the line's end, each line
/// at most [`MAX_LINE`] bytes and at most [`MAX_RECEIVED`] bytes read.
pub(crate) fn read_banner(port: u16) -> Result<String, String> {
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let left = || deadline.saturating_duration_since(Instant::now());
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        TcpStream::connect_timeout(&address, CONNECT_TIMEOUT.min(left())).map_err(describe)?;
    let mut received = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        match scan(&received) {
            Scan::Line(line) => return Ok(line),
            Scan::TooLong => {
                return Err(format!(
                    "a line longer than RFC 4253's {MAX_LINE} characters"
                ));
            }
            Scan::More => {}
        }
        let left = left();
        if left.is_zero() {
            return without_version_line(&received, false);
        }
        stream.set_read_timeout(Some(left)).map_err(describe)?;
        let room = (MAX_RECEIVED - received.len()).min(chunk.len());
        match stream.read(&mut chunk[..room]) {
            Ok(0) => return without_version_line(&received, true),
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                ) =>
            {
                return without_version_line(&received, false);
            }
            Err(e) => return Err(describe(e)),
        }
    }
}

fn describe(error: std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => "timed out".to_owned(),
        _ => error.to_string(),
    }
}

/// Reads and classifies what answers on the advertised `port` (blocks for
/// at most [`PROBE_TIMEOUT`] in all).
pub fn check(port: u16) -> Finding {
    classify(port, &read_banner(port))
}

/// What pairing does after the SSH check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Show the code.
    Proceed,
    /// Show the code, with this warning (summary; fix).
    ProceedWithWarning(String),
    /// Show no code: the reason and the fix, one line.
    Refuse(String),
}

/// The decision for one finding.
pub fn verdict(finding: &Finding) -> Verdict {
    let line = || match &finding.fix {
        Some(fix) => format!("{}; fix: {fix}", finding.summary),
        None => finding.summary.clone(),
    };
    match finding.level {
        Level::Pass => Verdict::Proceed,
        Level::Warn => Verdict::ProceedWithWarning(line()),
        Level::Fail => Verdict::Refuse(line()),
    }
}

/// The one line `heeler pair --no-ui` exits 1 with.
pub(crate) fn refusal_line(reason: &str) -> String {
    format!("{reason} (or pass {SKIP_FLAG} to print the code anyway)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(level: Level, summary: &str, fix: Option<&str>) -> Finding {
        Finding::new(level, summary.into(), fix.map(Into::into))
    }

    #[test]
    fn a_failure_refuses_with_its_fix_and_a_warning_goes_on() {
        let refused = finding(Level::Fail, "no SSH server answers", Some("start OpenSSH"));
        assert_eq!(
            verdict(&refused),
            Verdict::Refuse("no SSH server answers; fix: start OpenSSH".into())
        );
        let other = finding(Level::Warn, "dropbear answers", Some("use OpenSSH"));
        assert_eq!(
            verdict(&other),
            Verdict::ProceedWithWarning("dropbear answers; fix: use OpenSSH".into())
        );
        assert_eq!(
            verdict(&finding(Level::Pass, "OpenSSH_9.6 answers", None)),
            Verdict::Proceed
        );
    }

    #[test]
    fn banners_decide_the_verdict() {
        // The banners as the servers send them (RFC 4253 4.2 identification
        // strings): OpenSSH pairs; Tailscale SSH and silence refuse (the
        // contract: enrollment needs OpenSSH's forced command); another SSH
        // server is a warning.
        let at = |banner: Result<&str, &str>| {
            let banner = banner.map(str::to_owned).map_err(str::to_owned);
            verdict(&classify(2222, &banner))
        };
        assert_eq!(at(Ok("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3")), Verdict::Proceed);
        assert!(matches!(
            at(Ok("SSH-2.0-Tailscale")),
            Verdict::Refuse(line) if line.contains("Tailscale SSH") && line.contains("tailscale set --ssh=false")
        ));
        assert!(matches!(
            at(Err("connection refused")),
            Verdict::Refuse(line) if line.contains("127.0.0.1:2222 (connection refused)")
        ));
        assert!(matches!(
            at(Ok("SSH-2.0-dropbear_2022.83")),
            Verdict::ProceedWithWarning(_)
        ));
        assert!(matches!(at(Ok("HTTP/1.1 400")), Verdict::Refuse(_)));
        // A peer's control bytes never reach the line.
        assert!(matches!(
            at(Ok("SSH-2.0-OpenSSH_9\u{1b}[31m")),
            Verdict::Proceed
        ));
        assert!(
            !classify(1, &Ok("SSH-2.0-OpenSSH_9\u{1b}[2J".into()))
                .summary
                .contains('\u{1b}')
        );
    }

    #[test]
    fn identification_lines_are_read_as_rfc_4253_says() {
        // RFC 4253 4.2: "SSH-protoversion-softwareversion SP comments CR LF",
        // at most 255 characters with the CR LF; other lines MAY come first.
        let line = |s: &str| Scan::Line(s.to_owned());
        assert_eq!(scan(b""), Scan::More);
        assert_eq!(scan(b"SSH-2.0-OpenSSH_9.6"), Scan::More, "no line end yet");
        assert_eq!(
            scan(b"SSH-2.0-OpenSSH_9.6\r\n"),
            line("SSH-2.0-OpenSSH_9.6")
        );
        assert_eq!(scan(b"SSH-2.0-X\n"), line("SSH-2.0-X"), "a bare LF");
        assert_eq!(
            scan(b"welcome\r\nsecond\r\nSSH-2.0-X y\r\nrest"),
            line("SSH-2.0-X y")
        );
        // 255 with the CR LF is the longest allowed; 256 is refused, as is
        // an unterminated line that is already longer.
        let of_length = |n: usize| {
            let mut l = b"SSH-2.0-".to_vec();
            l.resize(n - 2, b'x');
            l.extend_from_slice(b"\r\n");
            l
        };
        assert!(matches!(scan(&of_length(255)), Scan::Line(l) if l.len() == 253));
        assert_eq!(scan(&of_length(256)), Scan::TooLong);
        assert_eq!(scan(&[b'x'; 256]), Scan::TooLong);
        assert_eq!(scan(&[b'x'; 255]), Scan::More);
        let mut early = of_length(256);
        early.splice(..3, *b"pre");
        assert_eq!(scan(&early), Scan::TooLong, "a long line before");
        // Other lines up to MAX_RECEIVED, then the first one is reported.
        let other = [b'a'; 99].iter().chain(b"\n").copied().collect::<Vec<_>>();
        let many: Vec<u8> = other.iter().copied().cycle().take(MAX_RECEIVED).collect();
        assert_eq!(scan(&many[..MAX_RECEIVED - 1]), Scan::More);
        assert_eq!(scan(&many), line(&"a".repeat(99)));
    }

    #[test]
    fn a_read_that_ends_without_a_version_line_says_why() {
        assert_eq!(
            without_version_line(b"", true),
            Err("closed without a banner".into())
        );
        assert_eq!(
            without_version_line(b"S", false),
            Err("no banner line within 5 s".into())
        );
        assert_eq!(
            without_version_line(b"220 smtp ready\r\n", false),
            Ok("220 smtp ready".into())
        );
        assert_eq!(without_version_line(b"HTTP", true), Ok("HTTP".into()));
    }

    #[test]
    fn the_refusal_line_names_the_skip_flag() {
        assert_eq!(
            refusal_line("no SSH server answers; fix: start it"),
            "no SSH server answers; fix: start it (or pass --no-ssh-check to print the code anyway)"
        );
    }

    #[test]
    fn a_port_nothing_listens_on_is_refused_and_a_banner_is_read() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        assert_eq!(read_banner(port), Err("connection refused".into()));
        assert_eq!(check(port).level, Level::Fail);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            std::io::Write::write_all(&mut stream, b"SSH-2.0-OpenSSH_9.6\r\n").unwrap();
        });
        assert_eq!(read_banner(port), Ok("SSH-2.0-OpenSSH_9.6".into()));
        server.join().unwrap();
    }
}
