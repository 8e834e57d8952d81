//! The relay client over real TLS: a Python `ssl` relay stand-in on
//! 127.0.0.1 with a certificate from a test CA generated at test time.
//! Trusted through `relay_ca_file` (in addition to the bundled roots),
//! refused with the bundled roots alone.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use support::*;

const SERVER: &str = r#"
import datetime, ipaddress, socket, ssl, sys, os
from cryptography import x509
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

out = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc)
def name(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
ca_key = ec.generate_private_key(ec.SECP256R1())
ca = (x509.CertificateBuilder().subject_name(name("heeler test CA")).issuer_name(name("heeler test CA"))
      .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
      .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
      .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
          encipher_only=False, decipher_only=False), critical=True)
      .sign(ca_key, hashes.SHA256()))
key = ec.generate_private_key(ec.SECP256R1())
cert = (x509.CertificateBuilder().subject_name(name("relay")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256()))
open(os.path.join(out, "ca.pem"), "wb").write(ca.public_bytes(serialization.Encoding.PEM))
open(os.path.join(out, "server.pem"), "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(os.path.join(out, "server.key"), "wb").write(key.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.path.join(out, "server.pem"), os.path.join(out, "server.key"))
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
while True:
    conn, _ = listener.accept()
    try:
        tls = context.wrap_socket(conn, server_side=True)
    except Exception as e:
        open(os.path.join(out, "handshake-failures"), "a").write(type(e).__name__ + "\n")
        conn.close()
        continue
    reader = tls.makefile("rb")
    reader.readline()
    length = 0
    while True:
        line = reader.readline().decode().strip()
        if not line: break
        k, v = line.split(":", 1)
        if k.lower() == "content-length": length = int(v)
    body = reader.read(length)
    open(os.path.join(out, "bodies"), "ab").write(body + b"\n")
    answer = b'{"apnsId":"tls"}'
    tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(answer) + answer)
    tls.close()
"#;

struct TlsRelay {
    child: Child,
    url: String,
}

impl Drop for TlsRelay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_tls_relay(dir: &std::path::Path) -> TlsRelay {
    let mut child = Command::new("python3")
        .args(["-c", SERVER])
        .arg(dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    TlsRelay {
        child,
        url: format!("https://127.0.0.1:{}", port.trim()),
    }
}

#[test]
fn https_relay_is_verified_against_the_configured_ca_only() {
    if let Err(why) = python_crypto() {
        common::skip(&why);
        return;
    }
    let f = Fixture::new("tls");
    f.herdr.set_agents(
        r#"[{"pane_id":"w1:p1","workspace_id":"w1","agent":"claude","agent_status":"blocked"}]"#,
    );
    f.write_registration(&registration(&[entry("aaaa1111aaaa1111", KEY_A, "")]));
    let relay = start_tls_relay(&f.root);

    // Bundled webpki roots alone: the private CA is not trusted.
    f.write_settings(&format!(r#"{{"relay_url":"{}"}}"#, relay.url));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure is
    // the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let line = f.failure_text();
    assert!(
        line.starts_with("notify-hook: push for token aaaa1111… failed: relay unreachable: "),
        "{line}"
    );
    assert!(!f.root.join("bodies").exists());
    f.clear_failures();

    // A CA file naming some other certificate: neither trust store accepts.
    std::fs::copy(f.root.join("server.pem"), f.config.join("relay-ca.pem")).unwrap();
    f.write_settings(&format!(
        r#"{{"relay_url":"{}","relay_ca_file":"relay-ca.pem"}}"#,
        relay.url
    ));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure is
    // the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert!(
        f.failure_text().contains("relay unreachable: "),
        "{}",
        f.failure_text()
    );
    assert!(!f.root.join("bodies").exists());
    f.clear_failures();

    // With relay_ca_file (relative to the config dir) the push is delivered.
    std::fs::copy(f.root.join("ca.pem"), f.config.join("relay-ca.pem")).unwrap();
    f.write_settings(&format!(
        r#"{{"relay_url":"{}","relay_ca_file":"relay-ca.pem"}}"#,
        relay.url
    ));
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    assert!(output.status.success(), "{}", stderr(&output));
    let bodies = std::fs::read_to_string(f.root.join("bodies")).unwrap();
    assert_eq!(bodies.lines().count(), 1);
    assert!(bodies.starts_with(r#"{"token":"aaaa1111aaaa1111","env":"production","envelope":"#));
    println!("delivered over TLS to a relay behind a test CA");

    // A CA file without certificates is one clear line.
    std::fs::write(f.config.join("relay-ca.pem"), "not a certificate").unwrap();
    std::fs::remove_dir_all(f.state.join("notify")).unwrap();
    f.clear_failures();
    let output = f.run("notify-hook", &event("w1:p1", "blocked"));
    // The hook hands the event over and succeeds; the worker's failure is
    // the same line in the failure log.
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert!(
        f.failure_text().contains("relay_ca_file"),
        "{}",
        f.failure_text()
    );
}
