//! The addresses the pairing popup offers: which of this machine's interface
//! addresses the phone might reach it on, in what order, and which one is
//! pre-checked.
//!
//! The decision is a pure function over a list of `(interface, address,
//! loopback)` entries, so tests cover every rule without real interfaces;
//! `sys::interface_addresses` supplies the list in production. pair.json
//! `addresses` (addresses the interfaces cannot show: a NAT, a published
//! container port, a DNS name) come first and pre-checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::wire::pairing_code;

/// One interface address as the operating system lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceAddress {
    pub interface: String,
    pub address: IpAddr,
    pub loopback: bool,
}

impl From<(String, IpAddr, bool)> for InterfaceAddress {
    fn from((interface, address, loopback): (String, IpAddr, bool)) -> Self {
        InterfaceAddress {
            interface,
            address,
            loopback,
        }
    }
}

/// Where a candidate came from, for the checklist's `(…)` note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An interface address: its interface name.
    Interface(String),
    /// Listed in pair.json `addresses`.
    PairJson,
    /// Given as `heeler pair --address`.
    CommandLine,
}

/// One row of the checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// As it goes into the Pairing Code: no brackets, no zone id.
    pub address: String,
    pub origin: Origin,
    pub(crate) pre_checked: bool,
}

impl Candidate {
    /// `IPv4`, `IPv6`, or `host name` for a pair.json entry that is no IP.
    pub(crate) fn family(&self) -> &'static str {
        match self.address.parse::<IpAddr>() {
            Ok(IpAddr::V4(_)) => "IPv4",
            Ok(IpAddr::V6(_)) => "IPv6",
            Err(_) => "host name",
        }
    }

    /// The checklist's note: `<interface>, <family>` or `pair.json, <family>`.
    pub fn note(&self) -> String {
        let source = match &self.origin {
            Origin::Interface(name) => name.as_str(),
            Origin::PairJson => "pair.json",
            Origin::CommandLine => "--address",
        };
        format!("{source}, {}", self.family())
    }
}

/// The one line naming the first `heeler pair --address` value a Pairing
/// Code cannot carry (the code's own rule), if any. Both front ends check
/// it before anything else, so a bad value is named rather than reported
/// as a bad code.
pub(crate) fn command_line_problem(command_line: &[String]) -> Option<String> {
    let bad = command_line
        .iter()
        .find(|a| !pairing_code::is_valid_address(a))?;
    Some(format!(
        "--address {bad:?} is not an address without whitespace."
    ))
}

/// [`candidates`] with `heeler pair --address` values listed first (and
/// pre-checked, like pair.json ones), then pair.json's.
pub(crate) fn candidates_with_command_line(
    interfaces: &[InterfaceAddress],
    primary: &str,
    command_line: &[String],
    pair_json: &[String],
) -> Vec<Candidate> {
    let configured: Vec<String> = command_line.iter().chain(pair_json).cloned().collect();
    let mut list = candidates(interfaces, primary, &configured);
    for candidate in &mut list {
        if candidate.origin == Origin::PairJson && command_line.contains(&candidate.address) {
            candidate.origin = Origin::CommandLine;
        }
    }
    list
}

/// The interface whose first likely address is pre-checked: `en0` on macOS,
/// `eth0` elsewhere.
pub(crate) fn primary_interface() -> &'static str {
    if cfg!(target_os = "macos") {
        "en0"
    } else {
        "eth0"
    }
}

/// Docker's own interfaces: `docker<N>`, `br-<hex>`, `veth…` (any case).
/// A generic `bridge0` is not Docker.
pub(crate) fn is_docker_interface(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("docker") {
        return rest.bytes().all(|b| b.is_ascii_digit());
    }
    if let Some(rest) = lower.strip_prefix("br-") {
        return !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_hexdigit());
    }
    lower.starts_with("veth")
}

/// A private or CGNAT range the phone plausibly shares with this machine.
fn is_likely_v4(address: Ipv4Addr) -> bool {
    let [a, b, ..] = address.octets();
    a == 10
        || (a == 172 && (16..=31).contains(&b))
        || (a == 192 && b == 168)
        || (a == 100 && (64..=127).contains(&b))
}

/// Unique local `fc00::/7` (this includes Tailscale's `fd7a:…`).
fn is_likely_v6(address: Ipv6Addr) -> bool {
    address.segments()[0] & 0xfe00 == 0xfc00
}

fn is_link_local(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => v4.octets()[0] == 169 && v4.octets()[1] == 254,
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

struct Ranked {
    address: String,
    interface: String,
    rank: u8,
    docker: bool,
    likely: bool,
}

/// The checklist rows, in order: pair.json `addresses` first (pre-checked),
/// then the interface addresses ranked by the rules of the contract.
///
/// Interface addresses: loopback and link-local are dropped; rank is
/// Docker +4, not likely +2, IPv6 +1; a stable sort by rank, then
/// de-duplication by address keeping the first. Without pair.json
/// addresses, the first non-Docker likely address on `primary` (else
/// anywhere) is pre-checked and moved to the top. An interface address equal
/// to a pair.json one is dropped.
pub fn candidates(
    interfaces: &[InterfaceAddress],
    primary: &str,
    configured: &[String],
) -> Vec<Candidate> {
    let mut ranked: Vec<Ranked> = interfaces
        .iter()
        .filter(|entry| !entry.loopback && !entry.address.is_loopback())
        .filter(|entry| !is_link_local(entry.address))
        .map(|entry| {
            let docker = is_docker_interface(&entry.interface);
            let (likely, v6) = match entry.address {
                IpAddr::V4(v4) => (is_likely_v4(v4), false),
                IpAddr::V6(v6) => (is_likely_v6(v6), true),
            };
            let rank = if docker { 4 } else { 0 } + if likely { 0 } else { 2 } + u8::from(v6);
            Ranked {
                address: entry.address.to_string(),
                interface: entry.interface.clone(),
                rank,
                docker,
                likely,
            }
        })
        .collect();
    ranked.sort_by_key(|r| r.rank);
    let mut seen: Vec<String> = configured.to_vec();
    ranked.retain(|r| {
        if seen.contains(&r.address) {
            false
        } else {
            seen.push(r.address.clone());
            true
        }
    });

    let mut out: Vec<Candidate> = Vec::new();
    for address in configured {
        if !out.iter().any(|c| &c.address == address) {
            out.push(Candidate {
                address: address.clone(),
                origin: Origin::PairJson,
                pre_checked: true,
            });
        }
    }
    let default_index = if configured.is_empty() {
        let eligible = |r: &Ranked| !r.docker && r.likely;
        ranked
            .iter()
            .position(|r| eligible(r) && r.interface == primary)
            .or_else(|| ranked.iter().position(eligible))
    } else {
        None
    };
    if let Some(index) = default_index {
        let chosen = ranked.remove(index);
        out.push(Candidate {
            address: chosen.address,
            origin: Origin::Interface(chosen.interface),
            pre_checked: true,
        });
    }
    out.extend(ranked.into_iter().map(|r| Candidate {
        address: r.address,
        origin: Origin::Interface(r.interface),
        pre_checked: false,
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_address_a_code_cannot_carry_is_named() {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(command_line_problem(&list(&[])), None);
        assert_eq!(
            command_line_problem(&list(&["10.0.0.1", "h.example"])),
            None
        );
        let problem = |items: &[&str]| command_line_problem(&list(items));
        assert_eq!(
            problem(&["10.0.0.1", ""]).as_deref(),
            Some("--address \"\" is not an address without whitespace.")
        );
        assert_eq!(
            problem(&["a\tb", "c d"]).as_deref(),
            Some("--address \"a\\tb\" is not an address without whitespace.")
        );
        // The code's own white space, byte order mark included.
        assert!(problem(&["\u{feff}x"]).is_some());
    }

    fn entry(interface: &str, address: &str) -> InterfaceAddress {
        let address: IpAddr = address.parse().unwrap();
        InterfaceAddress {
            interface: interface.into(),
            loopback: address.is_loopback(),
            address,
        }
    }

    fn rows(list: &[Candidate]) -> Vec<(String, bool)> {
        list.iter()
            .map(|c| (c.address.clone(), c.pre_checked))
            .collect()
    }

    fn owned(items: &[(&str, bool)]) -> Vec<(String, bool)> {
        items.iter().map(|(a, p)| (a.to_string(), *p)).collect()
    }

    #[test]
    fn loopback_and_link_local_are_dropped() {
        let list = candidates(
            &[
                entry("lo", "127.0.0.1"),
                entry("lo", "::1"),
                entry("eth0", "169.254.3.4"),
                entry("eth0", "fe80::1"),
                entry("eth0", "FEBF::1".to_lowercase().as_str()),
                entry("eth0", "192.168.1.5"),
            ],
            "eth0",
            &[],
        );
        assert_eq!(rows(&list), owned(&[("192.168.1.5", true)]));
    }

    #[test]
    fn ranking_prefers_likely_ipv4_then_demotes_docker() {
        let list = candidates(
            &[
                entry("docker0", "172.17.0.1"),
                entry("eth0", "203.0.113.9"),
                entry("eth0", "2001:db8::5"),
                entry("wlan0", "fd7a:115c:a1e0::1"),
                entry("wlan0", "10.0.0.7"),
                entry("br-0a1b2c", "172.18.0.1"),
                entry("veth12ab", "203.0.113.10"),
            ],
            "eth0",
            &[],
        );
        assert_eq!(
            rows(&list),
            owned(&[
                ("10.0.0.7", true),
                ("fd7a:115c:a1e0::1", false),
                ("203.0.113.9", false),
                ("2001:db8::5", false),
                ("172.17.0.1", false),
                ("172.18.0.1", false),
                ("203.0.113.10", false),
            ])
        );
        assert_eq!(list[0].note(), "wlan0, IPv4");
        assert_eq!(list[1].family(), "IPv6");
    }

    #[test]
    fn primary_interface_wins_the_pre_check_and_moves_first() {
        let list = candidates(
            &[
                entry("wlan0", "10.0.0.7"),
                entry("eth0", "192.168.1.5"),
                entry("eth0", "192.168.1.6"),
            ],
            "eth0",
            &[],
        );
        assert_eq!(
            rows(&list),
            owned(&[
                ("192.168.1.5", true),
                ("10.0.0.7", false),
                ("192.168.1.6", false)
            ])
        );
    }

    #[test]
    fn public_and_docker_addresses_are_never_pre_checked() {
        let list = candidates(
            &[entry("eth0", "203.0.113.9"), entry("docker0", "172.17.0.1")],
            "eth0",
            &[],
        );
        assert!(list.iter().all(|c| !c.pre_checked));
        assert_eq!(list[0].address, "203.0.113.9");
    }

    #[test]
    fn docker_alias_cannot_hide_an_ordinary_interface() {
        let list = candidates(
            &[entry("docker0", "10.1.1.1"), entry("eth1", "10.1.1.1")],
            "eth0",
            &[],
        );
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].origin, Origin::Interface("eth1".into()));
        assert!(list[0].pre_checked);
    }

    #[test]
    fn docker_names() {
        for name in [
            "docker0",
            "DOCKER",
            "docker12",
            "br-abc123",
            "veth0",
            "VETHx",
        ] {
            assert!(is_docker_interface(name), "{name}");
        }
        for name in ["bridge0", "dockerx", "br-", "br-xyz", "eth0", "en0"] {
            assert!(!is_docker_interface(name), "{name}");
        }
    }

    #[test]
    fn likely_ranges() {
        for a in [
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.1",
            "192.168.0.1",
            "100.64.0.1",
            "100.127.1.1",
        ] {
            assert!(is_likely_v4(a.parse().unwrap()), "{a}");
        }
        for a in [
            "172.15.0.1",
            "172.32.0.1",
            "100.63.0.1",
            "100.128.0.1",
            "8.8.8.8",
        ] {
            assert!(!is_likely_v4(a.parse().unwrap()), "{a}");
        }
        assert!(is_likely_v6("fc00::1".parse().unwrap()));
        assert!(is_likely_v6("fdff::1".parse().unwrap()));
        assert!(!is_likely_v6("fe00::1".parse().unwrap()));
    }

    #[test]
    fn pair_json_addresses_come_first_and_pre_checked() {
        let configured = vec!["192.168.1.10".to_string(), "nas.example.com".to_string()];
        let list = candidates(
            &[
                entry("eth0", "172.17.0.2"),
                entry("eth0", "192.168.1.10"),
                entry("docker0", "172.18.0.1"),
            ],
            "eth0",
            &configured,
        );
        assert_eq!(
            rows(&list),
            owned(&[
                ("192.168.1.10", true),
                ("nas.example.com", true),
                ("172.17.0.2", false),
                ("172.18.0.1", false),
            ])
        );
        assert_eq!(list[1].note(), "pair.json, host name");
        assert_eq!(list[0].note(), "pair.json, IPv4");
    }

    #[test]
    fn command_line_addresses_come_first() {
        let list = candidates_with_command_line(
            &[entry("eth0", "192.168.1.5")],
            "eth0",
            &["10.9.9.9".to_string(), "192.168.1.10".to_string()],
            &["192.168.1.10".to_string(), "nas.example.com".to_string()],
        );
        assert_eq!(
            rows(&list),
            owned(&[
                ("10.9.9.9", true),
                ("192.168.1.10", true),
                ("nas.example.com", true),
                ("192.168.1.5", false),
            ])
        );
        assert_eq!(list[0].note(), "--address, IPv4");
        assert_eq!(list[1].origin, Origin::CommandLine);
        assert_eq!(list[2].origin, Origin::PairJson);
    }

    #[test]
    fn nothing_routable_gives_an_empty_list() {
        assert!(candidates(&[entry("lo", "127.0.0.1")], "eth0", &[]).is_empty());
    }
}
