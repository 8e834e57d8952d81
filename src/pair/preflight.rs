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
use std::time::Duration;

use crate::base::bytes::printable;

/// The flag that skips the preflight (`heeler pair [--no-ui] --no-ssh-check`).
pub(crate) const SKIP_FLAG: &str = "--no-ssh-check";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const BANNER_TIMEOUT: Duration = Duration::from_secs(3);

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

/// The first `SSH-` line the server on 127.0.0.1:<port> sends (at most
/// 1 KiB read, within the connect and banner timeouts).
pub(crate) fn read_banner(port: u16) -> Result<String, String> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT).map_err(describe)?;
    stream
        .set_read_timeout(Some(BANNER_TIMEOUT))
        .map_err(describe)?;
    let mut received = Vec::new();
    let mut chunk = [0u8; 256];
    while received.len() < 1024 {
        let n = stream.read(&mut chunk).map_err(describe)?;
        if n == 0 {
            break;
        }
        received.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&received);
        if let Some(line) = text.lines().find(|line| line.starts_with("SSH-"))
            && (text.contains(&format!("{line}\n")) || text.contains(&format!("{line}\r")))
        {
            return Ok(line.trim_end().to_owned());
        }
    }
    let text = String::from_utf8_lossy(&received);
    match text.lines().next() {
        Some(line) if !line.is_empty() => Ok(line.trim_end().to_owned()),
        _ => Err("closed without a banner".to_owned()),
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
/// at most the connect and banner timeouts).
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
