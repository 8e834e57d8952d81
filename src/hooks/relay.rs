//! The Push Relay client: `POST <relay>/push` with retries, and the verdicts
//! the hooks act on (delivered, token gone, relay says too large, rate
//! limited, failed).
//!
//! A 429 is not retried here, unlike a network error or a 5xx: the relay's
//! limits are per minute, so a retry a second later is rejected too and
//! spends the per-address budget the Host's other devices share. The push
//! ends with the answer's `Retry-After` (bounded), and the worker puts the
//! event back until then (`worker.rs`). A failure that may pass (no
//! connection, a reset, a timeout, a 5xx) is retried here as the contract
//! says, then ends as [`Outcome::Unavailable`]: the worker's outbox puts the
//! event back with a backoff (or the 5xx's `Retry-After`) instead of
//! dropping it. Only a permanent answer (another 4xx) is [`Outcome::Failed`].
//!
//! One attempt, headers and body together, ends within its deadline
//! ([`ATTEMPT_TIMEOUT`], ureq's global timeout), whatever the relay sends
//! and however slowly: a push ends within 3 × 10 s plus two retry delays.
//!
//! The relay only ever sees sealed envelopes, but the token it forwards is
//! the user's, so transport is strict: HTTPS verified with rustls (ring)
//! against the bundled webpki roots (or the CA file a self-hosted relay names
//! in notify.json), plain `http://` only to a loopback host, no redirects,
//! proxies from the standard environment variables except for a loopback
//! relay (a proxy would see a plain-http request's token in cleartext, and
//! could not reach this machine's loopback anyway). Building the client is
//! the only TLS setup a hook does, and only once it has something to send.
//! A certificate the CA file's agent rejects is retried with the webpki
//! agent, so the two trust stores act as one union.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::json::{self, Value};

/// Attempts per push.
pub(crate) const ATTEMPTS: u32 = 3;
/// Deadline of one attempt (connect, send, answer): the default of the
/// one a client receives ([`RelayClient::new`]).
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(10_000);
/// Characters of an error answer kept for the log line.
pub(crate) const BODY_EXCERPT_CHARS: usize = 200;
const MAX_ANSWER_BYTES: u64 = 16 * 1024;
/// The largest Live Activity count the relay accepts (`bad_counts` above).
pub(crate) const MAX_COUNT: u64 = 999;
/// The longest `Retry-After` honoured, in milliseconds: a larger value
/// means this, so a relay cannot park an event for long.
pub(crate) const MAX_RETRY_AFTER_MS: u64 = 120_000;
/// The wait after a 429 without a usable `Retry-After`: the relay's fixed
/// one-minute window.
pub(crate) const DEFAULT_RETRY_AFTER_MS: u64 = 60_000;

/// A push token the relay accepts on either path: 16 to 200 lowercase hex
/// digits (`bad_token` otherwise).
pub(crate) fn is_push_token(token: &str) -> bool {
    (16..=200).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Why no client could be built for the configured relay URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayConfigError {
    /// Not an `https://` or `http://` URL with a host.
    BadUrl(String),
    /// `http://` to a host that is not loopback.
    PlainHttp(String),
    /// The `relay_ca_file` could not be read or holds no certificate.
    CaFile(PathBuf, String),
}

impl std::fmt::Display for RelayConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayConfigError::BadUrl(url) => write!(
                f,
                "relay_url {:?} is not an https URL",
                without_userinfo(url)
            ),
            RelayConfigError::PlainHttp(host) => write!(
                f,
                "relay_url uses plain http to {host}; only loopback relays may skip https"
            ),
            RelayConfigError::CaFile(path, why) => {
                write!(f, "relay_ca_file {}: {why}", path.display())
            }
        }
    }
}

impl std::error::Error for RelayConfigError {}

/// The scheme and bare host of a URL (`[::1]` → `::1`).
pub fn scheme_and_host(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split_once(']')?.0
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then_some((scheme, host))
}

/// The URL without its userinfo (`https://user:pw@host/x` →
/// `https://host/x`), for messages: credentials in a relay URL are never
/// printed.
pub(crate) fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Hosts plain HTTP may reach: `localhost`, 127.0.0.0/8 and `::1`.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Checks the relay URL's transport rule.
pub fn check_url(url: &str) -> Result<(), RelayConfigError> {
    match scheme_and_host(url) {
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => Ok(()),
        Some((scheme, host)) if scheme.eq_ignore_ascii_case("http") => {
            if is_loopback_host(host) {
                Ok(())
            } else {
                Err(RelayConfigError::PlainHttp(host.to_owned()))
            }
        }
        _ => Err(RelayConfigError::BadUrl(url.to_owned())),
    }
}

/// How one relay answer is treated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Any 2xx.
    Delivered,
    /// 410: the token is unregistered.
    Gone,
    /// A relay-origin 413 (`{"error":…}`): the body was too large for it.
    TooLarge(String),
    /// 429: the relay's rate limit; try again after this many milliseconds
    /// (its `Retry-After`, bounded), not at once.
    RateLimited(String, u64),
    /// 5xx, or no answer: try again; after this many milliseconds when a
    /// 5xx named its `Retry-After` (bounded).
    Retry(String, Option<u64>),
    /// No answer for a reason that does not pass by itself (the server's
    /// certificate rejected, a URL or proxy setting ureq refuses): tried
    /// again as the contract says, then final, never kept in the outbox.
    Broken(String),
    /// Any other status: final.
    Final(String),
}

/// The first 200 characters of an answer body, token-shaped strings
/// redacted first: a relay (or anything posing as one) that echoes the
/// request would otherwise put the device token into herdr's plugin log.
pub(crate) fn excerpt(body: &str) -> String {
    redact_tokens(body)
        .chars()
        .take(BODY_EXCERPT_CHARS)
        .collect()
}

/// Shortest run of hex digits taken for a token (the relay's minimum).
const MIN_TOKEN_CHARS: usize = 16;

/// `text` with every run of 16 or more ASCII hex digits (either case)
/// replaced by `[redacted]`.
pub(crate) fn redact_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_hexdigit()) {
        let run = rest[start..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len() - start);
        out.push_str(&rest[..start]);
        let digits = &rest[start..start + run];
        if run >= MIN_TOKEN_CHARS {
            out.push_str("[redacted]");
        } else {
            out.push_str(digits);
        }
        rest = &rest[start + run..];
    }
    out.push_str(rest);
    out
}

/// Classifies one HTTP answer (pure: the relay contract in one place);
/// `retry_after` is the answer's `Retry-After` header, if any, read at
/// `now_ms` (Unix milliseconds, for the HTTP-date form).
pub fn classify(status: u16, body: &str, retry_after: Option<&str>, now_ms: u64) -> Verdict {
    let answered = || format!("relay answered {status}: {}", excerpt(body));
    let asked = || retry_after.and_then(|v| retry_after_ms(v, now_ms));
    match status {
        200..=299 => Verdict::Delivered,
        410 => Verdict::Gone,
        413 if relay_origin_error(body) => Verdict::TooLarge(answered()),
        429 => Verdict::RateLimited(answered(), asked().unwrap_or(DEFAULT_RETRY_AFTER_MS)),
        500.. => Verdict::Retry(answered(), asked()),
        _ => Verdict::Final(answered()),
    }
}

/// The wait a `Retry-After` value asks for at `now_ms`, in milliseconds,
/// at least 1 s and at most [`MAX_RETRY_AFTER_MS`]: delay-seconds (RFC
/// 9110), also with a fraction (`1.5`), or an IMF-fixdate HTTP date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`; one already past asks for the
/// least). `None` when it is neither.
pub(crate) fn retry_after_ms(value: &str, now_ms: u64) -> Option<u64> {
    let value = value.trim();
    let ms = match value.split_once('.') {
        _ if value.is_empty() => return None,
        None if value.bytes().all(|b| b.is_ascii_digit()) => value
            .parse::<u64>()
            .map_or(MAX_RETRY_AFTER_MS, |s| s.saturating_mul(1_000)),
        Some((whole, fraction))
            if !whole.is_empty()
                && !fraction.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.bytes().all(|b| b.is_ascii_digit()) =>
        {
            let whole = whole.parse::<u64>().unwrap_or(u64::MAX / 2_000);
            let thousandths: String = fraction.chars().chain("000".chars()).take(3).collect();
            whole
                .saturating_mul(1_000)
                .saturating_add(thousandths.parse::<u64>().unwrap_or(0))
        }
        _ => {
            let at_ms = http_date_seconds(value)?.saturating_mul(1_000);
            u64::try_from(at_ms).unwrap_or(0).saturating_sub(now_ms)
        }
    };
    Some(ms.clamp(1_000, MAX_RETRY_AFTER_MS))
}

/// The Unix seconds of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date_seconds(value: &str) -> Option<i64> {
    let fields: Vec<&str> = value.split(' ').collect();
    let [weekday, day, month, year, time, "GMT"] = fields.as_slice() else {
        return None;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !weekday.ends_with(',') || !digits(day, 2) || !digits(year, 4) {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == month)? as u32 + 1;
    let hms: Vec<&str> = time.split(':').collect();
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !digits(h, 2) || !digits(m, 2) || !digits(s, 2) {
        return None;
    }
    let (h, m, s): (i64, i64, i64) = (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?);
    let day: u32 = day.parse().ok()?;
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = crate::base::tz::days_from_civil(year.parse().ok()?, month, day);
    Some(days * 86_400 + h * 3_600 + m * 60 + s)
}

/// A relay-origin error body carries a string `error`; a relayed APNs
/// verdict carries `reason` instead.
fn relay_origin_error(body: &str) -> bool {
    json::parse(body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(|_| ()))
        .is_some()
}

/// The result of a push after its retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    Gone,
    TooLarge(String),
    /// The relay's rate limit (429): not retried here; the caller puts the
    /// event back, due after this many milliseconds.
    RateLimited(String, u64),
    /// Every attempt failed in a way that may pass (no connection, a
    /// timeout, a 5xx): the last failure, and the last 5xx's
    /// `Retry-After` in milliseconds; the caller puts the event back.
    Unavailable(String, Option<u64>),
    /// A permanent answer; the failure (`relay answered <status>: …`).
    Failed(String),
}

/// A client for one relay base URL.
pub struct RelayClient {
    /// Tried in order while the server's certificate is rejected: the
    /// extra-CA agent (when `relay_ca_file` is set), then the webpki one.
    /// Together they trust the union of both sets of roots.
    agents: Vec<ureq::Agent>,
    push_url: String,
    retry_delay: Duration,
}

/// Whether an error is the server certificate failing verification (as
/// opposed to a network failure), so another trust store may accept it.
pub(crate) fn is_certificate_rejection(error: &ureq::Error) -> bool {
    let rejected = |e: &rustls::Error| matches!(e, rustls::Error::InvalidCertificate(_));
    match error {
        ureq::Error::Rustls(e) => rejected(e),
        ureq::Error::Io(e) => e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .is_some_and(rejected),
        _ => false,
    }
}

/// Whether a request error may pass by itself: no connection, a reset, a
/// timeout (TLS handshake included), no DNS answer, a garbled or cut
/// answer. A rejected certificate or a setting ureq refuses does not.
pub(crate) fn is_transient(error: &ureq::Error) -> bool {
    if is_certificate_rejection(error) {
        return false;
    }
    matches!(
        error,
        ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_)
            | ureq::Error::ConnectProxyFailed(_)
            | ureq::Error::BodyStalled
    )
}

/// Whether a push to `url` may go through the environment's proxy: never
/// to a loopback host.
pub(crate) fn uses_proxy(url: &str) -> bool {
    scheme_and_host(url).is_none_or(|(_, host)| !is_loopback_host(host))
}

fn agent_trusting(roots: ureq::tls::RootCerts, proxied: bool, attempt: Duration) -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .root_certs(roots)
        .build();
    let mut config = ureq::Agent::config_builder().tls_config(tls);
    if !proxied {
        config = config.proxy(None);
    }
    let config = config
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(attempt))
        .user_agent(concat!("heeler/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::new_with_config(config)
}

/// The largest `relay_ca_file` read (a bundle of a few hundred
/// certificates fits); it is read like every config file, so a FIFO or a
/// device there fails the hook at once instead of holding it.
const MAX_CA_FILE_BYTES: u64 = 1024 * 1024;

fn load_ca_file(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>, RelayConfigError> {
    let fail = |why: String| RelayConfigError::CaFile(path.to_path_buf(), why);
    let pem = crate::base::state_file::read_config(path, MAX_CA_FILE_BYTES)
        .map_err(|e| fail(e.to_string()))?;
    let certs = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
            _ => None,
        })
        .collect::<Vec<_>>();
    if certs.is_empty() {
        return Err(fail("no PEM certificate in it".to_owned()));
    }
    Ok(certs)
}

impl RelayClient {
    /// A client for `base_url` (no trailing `/`), trusting the bundled
    /// webpki roots plus the certificates in `ca_file` when one is set;
    /// each attempt ends at `attempt` ([`ATTEMPT_TIMEOUT`] but in tests).
    pub fn new(
        base_url: &str,
        ca_file: Option<&Path>,
        retry_delay: Duration,
        attempt: Duration,
    ) -> Result<RelayClient, RelayConfigError> {
        check_url(base_url)?;
        let proxied = uses_proxy(base_url);
        let mut agents = Vec::with_capacity(2);
        if let Some(path) = ca_file {
            let certs = load_ca_file(path)?;
            agents.push(agent_trusting(
                ureq::tls::RootCerts::new_with_certs(&certs),
                proxied,
                attempt,
            ));
        }
        agents.push(agent_trusting(
            ureq::tls::RootCerts::WebPki,
            proxied,
            attempt,
        ));
        Ok(RelayClient {
            agents,
            push_url: format!("{base_url}/push"),
            retry_delay,
        })
    }

    fn send(&self, body: &str) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
        let mut result = Err(ureq::Error::ConnectionFailed);
        for agent in &self.agents {
            result = agent
                .post(&self.push_url)
                .header("content-type", "application/json")
                .send(body);
            match &result {
                Err(e) if is_certificate_rejection(e) => continue,
                _ => break,
            }
        }
        result
    }

    fn attempt(&self, body: &str) -> Verdict {
        match self.send(body) {
            Err(e) if is_transient(&e) => Verdict::Retry(format!("relay unreachable: {e}"), None),
            Err(e) => Verdict::Broken(format!("relay unreachable: {e}")),
            Ok(response) => {
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let mut bytes = Vec::new();
                let read = response
                    .into_body()
                    .into_reader()
                    .take(MAX_ANSWER_BYTES)
                    .read_to_end(&mut bytes);
                let now = crate::base::clock::unix_millis();
                if let Err(e) = read {
                    if (200..300).contains(&status) || status == 410 || status == 429 {
                        return classify(status, "", retry_after.as_deref(), now);
                    }
                    return Verdict::Retry(format!("relay unreachable: {e}"), None);
                }
                classify(
                    status,
                    &String::from_utf8_lossy(&bytes),
                    retry_after.as_deref(),
                    now,
                )
            }
        }
    }

    /// POSTs `body` to `/push`: up to three attempts, `retry_delay` before
    /// the second and third; a 429 ends the push at once (retrying it
    /// would only spend the relay's per-address budget).
    pub fn push(&self, body: &str) -> Outcome {
        self.push_counted(body, || {})
    }

    /// [`RelayClient::push`], calling `on_attempt` before each request is
    /// sent, so that the caller's pacing counts every request the relay
    /// counts.
    pub(crate) fn push_counted(&self, body: &str, mut on_attempt: impl FnMut()) -> Outcome {
        let (mut last, mut after, mut broken) = (String::new(), None, false);
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                std::thread::sleep(self.retry_delay);
            }
            on_attempt();
            match self.attempt(body) {
                Verdict::Delivered => return Outcome::Delivered,
                Verdict::Gone => return Outcome::Gone,
                Verdict::TooLarge(message) => return Outcome::TooLarge(message),
                Verdict::RateLimited(message, seconds) => {
                    return Outcome::RateLimited(message, seconds);
                }
                Verdict::Final(message) => return Outcome::Failed(message),
                Verdict::Retry(message, retry_after) => {
                    (last, after, broken) = (message, retry_after, false);
                }
                Verdict::Broken(message) => (last, broken) = (message, true),
            }
        }
        if broken {
            return Outcome::Failed(last);
        }
        Outcome::Unavailable(last, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_the_relay_contract() {
        let classify = |status, body: &str, retry_after| classify(status, body, retry_after, 0);
        assert_eq!(classify(204, "", None), Verdict::Delivered);
        assert_eq!(
            classify(410, r#"{"reason":"Unregistered"}"#, None),
            Verdict::Gone
        );
        assert!(matches!(
            classify(413, r#"{"error":"payload_too_large"}"#, None),
            Verdict::TooLarge(_)
        ));
        assert_eq!(
            classify(413, r#"{"reason":"PayloadTooLarge"}"#, None),
            Verdict::Final(r#"relay answered 413: {"reason":"PayloadTooLarge"}"#.into())
        );
        assert_eq!(
            classify(429, r#"{"error":"rate_limited"}"#, Some("47")),
            Verdict::RateLimited(
                r#"relay answered 429: {"error":"rate_limited"}"#.into(),
                47_000
            )
        );
        assert_eq!(
            classify(503, "", Some("5")),
            Verdict::Retry("relay answered 503: ".into(), Some(5_000))
        );
        assert_eq!(
            classify(502, "", None),
            Verdict::Retry("relay answered 502: ".into(), None)
        );
        assert!(matches!(classify(400, "x", None), Verdict::Final(_)));
        let long = "é".repeat(300);
        assert_eq!(
            classify(400, &long, None),
            Verdict::Final(format!("relay answered 400: {}", "é".repeat(200)))
        );
    }

    #[test]
    fn retry_after_is_seconds_fractions_or_an_http_date_bounded() {
        // RFC 9110 section 10.2.3: delay-seconds or an HTTP-date.
        let at = |v: &str, now: u64| retry_after_ms(v, now);
        assert_eq!(at("40", 0), Some(40_000));
        assert_eq!(at(" 60 ", 0), Some(60_000));
        assert_eq!(at("0", 0), Some(1_000), "at least a second");
        assert_eq!(at("1.5", 0), Some(1_500));
        assert_eq!(at("2.25", 0), Some(2_250));
        assert_eq!(at("3.14159", 0), Some(3_141));
        assert_eq!(at("121", 0), Some(MAX_RETRY_AFTER_MS));
        assert_eq!(at("99999999999999999999999", 0), Some(MAX_RETRY_AFTER_MS));
        // 1445412480 is 2015-10-21 07:28:00 UTC (`date -d @1445412480 -u`).
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let now = 1_445_412_480_000;
        assert_eq!(at(date, now - 30_000), Some(30_000));
        assert_eq!(at(date, now - 7_500), Some(7_500));
        assert_eq!(at(date, now + 5_000), Some(1_000), "already past");
        assert_eq!(at(date, now - 3_600_000), Some(MAX_RETRY_AFTER_MS));
        for unusable in [
            "",
            "-5",
            "1.",
            ".5",
            "1.5.2",
            "soon",
            "Wed, 21 Oct 2015 07:28:00 UTC",
            "Wed, 21 Foo 2015 07:28:00 GMT",
            "Wed, 32 Oct 2015 07:28:00 GMT",
            "Wednesday, 21-Oct-15 07:28:00 GMT",
        ] {
            assert_eq!(at(unusable, now), None, "{unusable:?}");
        }
        // A 429 without a usable value waits the relay's window.
        assert_eq!(
            classify(429, "", Some("soon"), 0),
            Verdict::RateLimited("relay answered 429: ".into(), DEFAULT_RETRY_AFTER_MS)
        );
    }

    #[test]
    fn userinfo_is_cut_from_shown_urls() {
        assert_eq!(
            without_userinfo("https://u:p@relay.example:1/a@b?c"),
            "https://relay.example:1/a@b?c"
        );
        assert_eq!(without_userinfo("http://a@b@[::1]"), "http://[::1]");
        assert_eq!(
            without_userinfo("https://relay.example/x@y"),
            "https://relay.example/x@y"
        );
        assert_eq!(without_userinfo("no scheme@x"), "no scheme@x");
        assert_eq!(
            RelayConfigError::BadUrl("ftp://u:pw@x".into()).to_string(),
            r#"relay_url "ftp://x" is not an https URL"#
        );
    }

    #[test]
    fn loopback_relays_bypass_the_proxy() {
        assert!(!uses_proxy("http://127.0.0.1:8080"));
        assert!(!uses_proxy("http://[::1]:1/x"));
        assert!(!uses_proxy("https://localhost:8443"));
        assert!(!uses_proxy("http://user@127.0.0.2:9"));
        assert!(uses_proxy("https://heeler-apns.bybee.dev"));
        assert!(uses_proxy("https://127.0.0.1.evil.example"));
    }

    #[test]
    fn token_shaped_strings_never_reach_the_excerpt() {
        let token = "0123456789abcdef0123456789ABCDEF";
        let body =
            format!(r#"{{"error":"bad_env","echo":{{"token":"{token}","n":"0123456789abcde"}}}}"#);
        let Verdict::Final(message) = classify(400, &body, None, 0) else {
            panic!("a 400 is final");
        };
        assert_eq!(
            message,
            r#"relay answered 400: {"error":"bad_env","echo":{"token":"[redacted]","n":"0123456789abcde"}}"#
        );
        // Redaction comes before the cut, so no tail of a token survives it.
        let body = format!("{}{token}", "x".repeat(195));
        assert_eq!(excerpt(&body), format!("{}[reda", "x".repeat(195)));
        assert_eq!(redact_tokens("é0123456789abcdef!"), "é[redacted]!");
    }

    #[test]
    fn plain_http_only_to_loopback() {
        assert!(check_url("https://heeler-apns.bybee.dev").is_ok());
        assert!(check_url("http://127.0.0.1:8080").is_ok());
        assert!(check_url("http://[::1]:1/x").is_ok());
        assert!(check_url("http://localhost").is_ok());
        assert!(check_url("http://user@127.0.0.2:9").is_ok());
        assert_eq!(
            check_url("http://relay.example"),
            Err(RelayConfigError::PlainHttp("relay.example".into()))
        );
        assert!(check_url("http://127.0.0.1.evil.example").is_err());
        assert!(check_url("ftp://x").is_err());
        assert!(check_url("nope").is_err());
    }
}
