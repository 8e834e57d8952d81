//! The Push Relay client: `POST <relay>/push` with retries, and the verdicts
//! the hooks act on (delivered, token gone, relay says too large, rate
//! limited, failed).
//!
//! A 429 is not retried here, unlike a network error or a 5xx: the relay's
//! limits are per minute, so a retry a second later is rejected too and
//! spends the per-address budget the Host's other devices share. The push
//! ends with the answer's `Retry-After` (bounded), and the worker puts the
//! event back until then (`worker.rs`).
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
/// The longest `Retry-After` honoured, in seconds: a larger value means
/// this, so a relay cannot park an event for long.
pub(crate) const MAX_RETRY_AFTER_S: u64 = 120;
/// The wait after a 429 without a usable `Retry-After`: the relay's fixed
/// one-minute window.
pub(crate) const DEFAULT_RETRY_AFTER_S: u64 = 60;

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
    /// 429: the relay's rate limit; try again after this many seconds
    /// (its `Retry-After`, bounded), not at once.
    RateLimited(String, u64),
    /// 5xx: try again.
    Retry(String),
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
/// `retry_after` is the answer's `Retry-After` header, if any.
pub fn classify(status: u16, body: &str, retry_after: Option<&str>) -> Verdict {
    let answered = || format!("relay answered {status}: {}", excerpt(body));
    match status {
        200..=299 => Verdict::Delivered,
        410 => Verdict::Gone,
        413 if relay_origin_error(body) => Verdict::TooLarge(answered()),
        429 => Verdict::RateLimited(answered(), retry_after_seconds(retry_after)),
        500.. => Verdict::Retry(answered()),
        _ => Verdict::Final(answered()),
    }
}

/// The wait a 429's `Retry-After` asks for, in seconds: its delay-seconds
/// form, at least 1 and at most [`MAX_RETRY_AFTER_S`];
/// [`DEFAULT_RETRY_AFTER_S`] when it is missing or not a number (the relay
/// sends seconds, never an HTTP date).
pub(crate) fn retry_after_seconds(header: Option<&str>) -> u64 {
    header
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .map_or(DEFAULT_RETRY_AFTER_S, |digits| {
            digits.parse::<u64>().unwrap_or(MAX_RETRY_AFTER_S)
        })
        .clamp(1, MAX_RETRY_AFTER_S)
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
    /// event back, due after this many seconds.
    RateLimited(String, u64),
    /// Gave up; the last failure (`relay unreachable: …` or
    /// `relay answered <status>: …`).
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
            Err(e) => Verdict::Retry(format!("relay unreachable: {e}")),
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
                if let Err(e) = read {
                    if (200..300).contains(&status) || status == 410 || status == 429 {
                        return classify(status, "", retry_after.as_deref());
                    }
                    return Verdict::Retry(format!("relay unreachable: {e}"));
                }
                classify(
                    status,
                    &String::from_utf8_lossy(&bytes),
                    retry_after.as_deref(),
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
        let mut last = String::new();
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
                Verdict::Retry(message) => last = message,
            }
        }
        Outcome::Failed(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_the_relay_contract() {
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
            Verdict::RateLimited(r#"relay answered 429: {"error":"rate_limited"}"#.into(), 47)
        );
        assert!(matches!(classify(503, "", Some("5")), Verdict::Retry(_)));
        assert!(matches!(classify(400, "x", None), Verdict::Final(_)));
        let long = "é".repeat(300);
        assert_eq!(
            classify(400, &long, None),
            Verdict::Final(format!("relay answered 400: {}", "é".repeat(200)))
        );
    }

    #[test]
    fn retry_after_is_whole_seconds_bounded_with_a_one_minute_default() {
        // The relay's fixed one-minute window: 40 to 60 s is what it sends.
        assert_eq!(retry_after_seconds(Some("40")), 40);
        assert_eq!(retry_after_seconds(Some(" 60 ")), 60);
        assert_eq!(retry_after_seconds(Some("0")), 1);
        assert_eq!(retry_after_seconds(Some("121")), MAX_RETRY_AFTER_S);
        assert_eq!(
            retry_after_seconds(Some("99999999999999999999999")),
            MAX_RETRY_AFTER_S
        );
        for unusable in [
            None,
            Some(""),
            Some("-5"),
            Some("1.5"),
            Some("Wed, 21 Oct 2015 07:28:00 GMT"),
        ] {
            assert_eq!(retry_after_seconds(unusable), DEFAULT_RETRY_AFTER_S);
        }
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
        let Verdict::Final(message) = classify(400, &body, None) else {
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
