#!/usr/bin/env python3
"""Generates heeler's own test vectors, independently of heeler.

Everything here is computed with Python's standard library and the
`cryptography` package (AES-256-GCM), never by running heeler, so the vectors
cross-check the Rust implementation. Run from anywhere:

    python3 test-vectors/generate.py

It rewrites pairing-code-v2.json, notification-payload-v1.json and
live-activity-content-v1.json next to itself. plugin-version-v1.json is
written by hand.
"""

import base64
import hashlib
import json
import os
import unicodedata

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HERE = os.path.dirname(os.path.abspath(__file__))
FP = "SHA256:6+jncNdibsG2cqvfoLApGrO8CvIwAEMzsB+IilOs8tg"
SEED = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
KEY = bytes(range(32))
KEY2 = bytes(range(255, 223, -1))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def compact(value, sort=False) -> str:
    """JSON.stringify: compact, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort)


def pairing_code(version: int, wire: dict) -> str:
    return f"HERDR-PAIR:{version}:" + b64url(compact(wire).encode())


# ---------------------------------------------------------------- Pairing Code v2

def v2_wire(addrs, port, user, sock, herdr, seed=None, exp=None):
    wire = {"addrs": addrs, "port": port, "user": user, "fp": FP, "sock": sock, "herdr": herdr}
    if seed is not None:
        wire["seed"] = seed
        wire["exp"] = exp
    return wire


def app_payload(wire):
    payload = {
        "addresses": wire["addrs"],
        "port": wire["port"],
        "username": wire["user"],
        "hostKeyFingerprint": wire["fp"],
        "socketPath": wire["sock"],
        "herdrPath": wire["herdr"],
    }
    if "seed" in wire:
        payload["bootstrapSeed"] = wire["seed"]
        payload["expiresAt"] = wire["exp"]
    return payload


def pairing_v2():
    valid_cases = [
        ("desktop app default session, config-only",
         v2_wire(["192.168.1.42"], 22, "ada", "/Users/ada/Library/Application Support/Caterm/herdr/herdr.sock", "/Users/ada/Library/Application Support/Caterm/herdr/launcher")),
        ("named session socket with bootstrap key",
         v2_wire(["10.0.0.7"], 22, "lin", "/srv/xdg/herdr/sessions/work/herdr.sock", "/srv/xdg/herdr/plugins/config/heeler/launcher", SEED, 1753305600)),
        ("session named herdr, several addresses and a custom port",
         v2_wire(["192.168.1.42", "100.101.102.103", "fd7a:115c:a1e0::1"], 2222, "grace", "/home/grace/.project/herdr/sessions/herdr/herdr.sock", "/home/grace/bin/herdr-project")),
        ("sock of exactly 96 bytes",
         v2_wire(["nas.example.com"], 22, "ada", "/" + "d" * 78 + "/herdr/herdr.sock", "/opt/h/launcher")),
        ("session name with dot, underscore and dash",
         v2_wire(["192.168.1.42"], 22, "ada", "/tmp/x/herdr/sessions/feature.v2_tmp-1/herdr.sock", "/tmp/x/launcher", SEED, 1766000000)),
        ("non-ASCII directory names in both paths",
         v2_wire(["192.168.1.42"], 22, "ada", "/home/ada/项目/herdr/herdr.sock", "/home/ada/项目/启动器")),
    ]
    invalid_cases = [
        ("relative sock", {"sock": "herdr/herdr.sock"}),
        ("relative herdr launcher", {"herdr": "bin/launcher"}),
        ("sock with a single quote", {"sock": "/home/o'brien/herdr/herdr.sock"}),
        ("herdr launcher with a backslash", {"herdr": "/opt/h\\launcher"}),
        ("sock with a control character", {"sock": "/home/ada/\u0001/herdr/herdr.sock"}),
        ("herdr launcher with DEL", {"herdr": "/opt/h/launch\u007fer"}),
        ("herdr launcher with a newline", {"herdr": "/opt/h/launcher\n"}),
        ("sock not in herdr's socket layout", {"sock": "/tmp/custom-herdr.sock"}),
        ("sock in a herdr-dev directory", {"sock": "/home/ada/.config/herdr-dev/herdr.sock"}),
        ("sock with an invalid session name", {"sock": "/home/ada/.config/herdr/sessions/bad name/herdr.sock"}),
        ("sock with a dot-dot session name", {"sock": "/home/ada/.config/herdr/sessions/../herdr.sock"}),
        ("sock with a 65-byte session name", {"sock": "/h/herdr/sessions/" + "s" * 65 + "/herdr.sock"}),
        ("sock of 97 bytes", {"sock": "/" + "d" * 79 + "/herdr/herdr.sock"}),
        ("missing sock", {"sock": None}),
        ("missing herdr", {"herdr": None}),
        ("sock is not a string", {"sock": 7}),
    ]
    base = v2_wire(["192.168.1.42"], 22, "ada", "/srv/xdg/herdr/herdr.sock", "/srv/xdg/launcher")
    valid = [{"name": n, "code": pairing_code(2, w), "payload": app_payload(w)} for n, w in valid_cases]
    invalid = []
    for name, change in invalid_cases:
        wire = dict(base)
        for k, v in change.items():
            if v is None:
                del wire[k]
            else:
                wire[k] = v
        invalid.append({"name": name, "code": pairing_code(2, wire), "wire": wire, "error": "bad_payload"})
    assert len(base["sock"].encode()) <= 96 and len(valid_cases[3][1]["sock"].encode()) == 96
    assert len(invalid_cases[12][1]["sock"].encode()) == 97
    return {
        "description": (
            "heeler's Pairing Code v2 (Herdr endpoint) vectors, in the shape of the app's pairing-code-v1.json "
            "plus socketPath/herdrPath. Valid codes are the canonical encoding of `payload` (keys addrs, port, "
            "user, fp, sock, herdr, seed, exp; no whitespace). Invalid entries break one sock/herdr rule of the "
            "spec: `wire` must be refused by the encoder and `code` by a v2 decoder, both with `error`. "
            "Generated by generate.py independently of heeler."
        ),
        "valid": valid,
        "invalid": invalid,
    }


# ---------------------------------------------------------------- envelopes

def kid(key: bytes) -> str:
    return b64url(hashlib.sha256(key).digest()[:8])


def seal(key: bytes, nonce: bytes, aad: bytes, plaintext: str) -> str:
    ct = AESGCM(key).encrypt(nonce, plaintext.encode(), aad)
    return compact({"v": 1, "kid": kid(key), "n": b64url(nonce), "ct": b64url(ct)})


def for_display(text):
    """display-text.js forDisplay: 80 code points, else 79 + trimEnd + ellipsis."""
    if not text:
        return None
    if len(text) <= 80:
        return text
    head = text[:79]
    while head and (head[-1].isspace() or head[-1] == "\ufeff" or unicodedata.category(head[-1]) == "Zs"):
        head = head[:-1]
    return head + "\u2026"


def notification_wire(pane, kind, status, ts, project=None, title=None):
    wire = {"pane": pane, "kind": kind, "status": status, "ts": ts}
    project, title = for_display(project), for_display(title)
    if project:
        wire["project"] = project
    if title:
        wire["title"] = title
    return wire


def to_app(wire):
    app = {"paneId": wire["pane"], "agentKind": wire["kind"], "status": wire["status"], "timestamp": wire["ts"]}
    for k in ("project", "title"):
        if k in wire:
            app[k] = wire[k]
    return app


def notifications():
    cases = [
        ("title over 80 code points is cut to 79 plus an ellipsis", KEY, bytes(range(1, 13)),
         dict(pane="w1:p2", kind="claude", status="blocked", ts=1766000001, project="heeler", title="Refactor the relay client so retries honour retry_delay_ms and 410 prunes every session's entry")),
        ("trailing white space before the cut is trimmed", KEY, bytes(range(2, 14)),
         dict(pane="w1:p3", kind="codex", status="done", ts=1766000002, title="x" * 77 + "   and more text after the cut")),
        ("exactly 80 emoji code points are kept whole", KEY2, bytes(range(3, 15)),
         dict(pane="wZ:p9", kind="claude", status="done", ts=1766000003, project="😀" * 80)),
        ("empty project and title are omitted", KEY, bytes(range(4, 16)),
         dict(pane="w1:p4", kind="gemini", status="blocked", ts=1766000004, project="", title="")),
        ("quotes, backslash and control characters are escaped like JSON.stringify", KEY, bytes(range(5, 17)),
         dict(pane="w1:p5", kind="claude", status="blocked", ts=1766000005, title="say \"hi\" \\ tab\there\u0001 / é")),
        ("project of 81 CJK code points", KEY2, bytes(range(6, 18)),
         dict(pane="w2:p1", kind="kimi", status="done", ts=1766000006, project="项" * 81)),
    ]
    valid = []
    for name, key, nonce, fields in cases:
        wire = notification_wire(**fields)
        entry = {
            "name": name,
            "key": b64url(key),
            "keyId": kid(key),
            "envelope": seal(key, nonce, b"HERDR-NOTIFY:1", compact(wire)),
            "payload": to_app(wire),
        }
        raw = {k: v for k, v in fields.items() if v is not None}
        if raw.get("project") != wire.get("project") or raw.get("title") != wire.get("title"):
            entry["input"] = {"paneId": raw["pane"], "agentKind": raw["kind"], "status": raw["status"], "timestamp": raw["ts"],
                              **{k: raw[k] for k in ("project", "title") if k in raw}}
        entry["collapse"] = {"pane": fields["pane"], "key": b64url(hashlib.sha256(key + b"HERDR-NOTIFY-COLLAPSE:" + fields["pane"].encode()).digest()[:16])}
        valid.append(entry)
    bad = lambda pt, n: seal(KEY, bytes([n] * 12), b"HERDR-NOTIFY:1", pt)
    invalid = [
        ("ts is zero", bad('{"pane":"p","kind":"k","status":"s","ts":0}', 1), "bad_payload"),
        ("ts is negative", bad('{"pane":"p","kind":"k","status":"s","ts":-5}', 2), "bad_payload"),
        ("title of 257 UTF-16 units", bad(compact({"pane": "p", "kind": "k", "status": "s", "ts": 1, "title": "t" * 257}), 3), "bad_payload"),
        ("project is a number", bad('{"pane":"p","kind":"k","status":"s","ts":1,"project":5}', 4), "bad_payload"),
        ("plaintext is an array", bad("[1]", 5), "bad_payload"),
        ("activity AAD does not open as a notification", seal(KEY, bytes([6] * 12), b"HERDR-ACTIVITY:1", '{"pane":"p","kind":"k","status":"s","ts":1}'), "decrypt_failed"),
        ("nonce with padding", compact({"v": 1, "kid": kid(KEY), "n": "AAECAwQFBgcICQoL==", "ct": "AAAAAAAAAAAAAAAAAAAAAA"}), "bad_envelope"),
        ("empty kid", compact({"v": 1, "kid": "", "n": "AAECAwQFBgcICQoL", "ct": "AAAAAAAAAAAAAAAAAAAAAA"}), "bad_envelope"),
        ("version 1.5 is not an integer", '{"v":1.5,"kid":"x","n":"AAECAwQFBgcICQoL","ct":"AAAAAAAAAAAAAAAAAAAAAA"}', "bad_envelope"),
    ]
    return {
        "description": (
            "heeler's own notification envelope v1 vectors, in the shape of the app's notification-payload-v1.json. "
            "`input` (when present) is the plaintext handed to the seal side before display trimming; `payload` is "
            "what the envelope decrypts to. `collapse` is the per-pane collapse key under `key`. Generated by "
            "generate.py with Python's cryptography AES-GCM, independently of heeler."
        ),
        "valid": valid,
        "invalid": [{"name": n, "key": b64url(KEY), "envelope": e, "error": err} for n, e, err in invalid],
    }


def activities():
    def content(agents, host):
        return {"agents": agents, "host": host, "v": 1}

    cases = [
        ("rows with every span style and a separator", KEY, bytes(range(7, 19)), content([
            {"kind": "codex", "name": "builder", "pane": "w1:p1", "status": "blocked",
             "rows": [[{"text": "Heeler", "fg": "#a0b0c0", "bold": False}, {"text": " · "}, {"text": "builder", "dim": True}], [{"text": "运行测试 🧪"}]],
             "title": "run the test suite", "workspace": "Heeler"}], "studio")),
        ("keys are sorted at every level", KEY2, bytes(range(8, 20)), content([
            {"workspace": "w", "title": "t", "status": "done", "pane": "w9:p1", "name": "n", "kind": "claude"}], "h")),
        ("end state: no agents", KEY, bytes(range(9, 21)), content([], "mbp")),
        ("five agents with emoji ZWJ titles", KEY, bytes(range(10, 22)), content(
            [{"kind": "claude", "pane": f"w1:p{i}", "status": "working", "title": "👨‍👩‍👧 family " + str(i)} for i in range(5)], "x")),
    ]
    valid = []
    for name, key, nonce, payload in cases:
        valid.append({
            "name": name, "key": b64url(key), "keyId": kid(key),
            "envelope": seal(key, nonce, b"HERDR-ACTIVITY:1", compact(payload, sort=True)),
            "payload": payload,
        })
    inventory_cases = [
        ("counts cover every eligible agent, cap five, uppercase statuses", None, [
            {"pane_id": f"w1:p{i}", "agent_status": s, "agent": "claude", "terminal_title": f"raw {i}"}
            for i, s in enumerate(["WORKING", "Blocked", "done", "idle", "working", "blocked", "done", "unknown"])]),
        ("display_agent wins over name, stripped title over raw, long names trimmed", ["w2:b"], [
            {"pane_id": "w2:a", "agent_status": "working", "agent": "codex", "display_agent": "d" * 90, "name": "n", "terminal_title_stripped": "", "terminal_title": "raw title"},
            {"pane_id": "w2:b", "agent_status": "done", "agent": "", "name": "named", "terminal_title_stripped": "stripped"}]),
        ("duplicate pins keep their first index; malformed agents are skipped", ["w3:b", "w3:a", "w3:b"], [
            {"pane_id": "w3:a", "agent_status": "working"}, {"pane_id": "w3:b", "agent_status": "working"},
            {"pane_id": "", "agent_status": "working"}, {"agent_status": "blocked"}, {"pane_id": "w3:c", "agent_status": 3}]),
    ]
    for (name, pins, inventory), nonce_byte in zip(inventory_cases, range(40, 43)):
        eligible = []
        for a in inventory:
            pane, status = a.get("pane_id"), a.get("agent_status")
            if isinstance(pane, str) and pane and isinstance(status, str) and status.lower() in ("working", "blocked", "done"):
                eligible.append((a, pane, status.lower()))
        counts = {"working": 0, "blocked": 0, "done": 0}
        for _, _, s in eligible:
            counts[s] += 1
        rank = {"blocked": 0, "done": 1, "working": 2}
        pin_list = pins or []
        def pin_key(p):
            return (0, pin_list.index(p)) if p in pin_list else (1, 0)
        eligible.sort(key=lambda e: (pin_key(e[1]), rank[e[2]], e[1]))
        agents = []
        for a, pane, status in eligible[:5]:
            entry = {"kind": a.get("agent") or "unknown", "pane": pane, "status": status}
            name_src = a.get("display_agent") or a.get("name")
            if for_display(name_src):
                entry["name"] = for_display(name_src)
            title_src = a.get("terminal_title_stripped") or a.get("terminal_title")
            if for_display(title_src):
                entry["title"] = for_display(title_src)
            agents.append(entry)
        payload = content(agents, "host")
        case = {"name": name, "key": b64url(KEY), "keyId": kid(KEY),
                "envelope": seal(KEY, bytes([nonce_byte] * 12), b"HERDR-ACTIVITY:1", compact(payload, sort=True)),
                "counts": counts, "inventory": inventory, "payload": payload}
        if pins is not None:
            case["pinned_pane_ids"] = pins
        valid.append(case)
    bad = lambda pt, n: seal(KEY, bytes([n] * 12), b"HERDR-ACTIVITY:1", pt)
    invalid = [
        ("empty host", bad('{"agents":[],"host":"","v":1}', 50), "bad_payload"),
        ("agent is not an object", bad('{"agents":["x"],"host":"h","v":1}', 51), "bad_payload"),
        ("status is a number", bad('{"agents":[{"status":1}],"host":"h","v":1}', 52), "bad_payload"),
        ("missing v", bad('{"agents":[],"host":"h"}', 53), "bad_payload"),
        ("ciphertext of 15 bytes", compact({"v": 1, "kid": kid(KEY), "n": "AAECAwQFBgcICQoL", "ct": b64url(bytes(15))}), "bad_envelope"),
    ]
    return {
        "description": (
            "heeler's own Live Activity content envelope vectors, in the shape of the app's "
            "live-activity-content-v1.json (AAD HERDR-ACTIVITY:1, sorted-key canonical plaintext). Cases with "
            "`inventory` pin the builder: eligibility, counts, pins, rank, cap and display trimming. Generated by "
            "generate.py with Python's cryptography AES-GCM, independently of heeler."
        ),
        "valid": valid,
        "invalid": [{"name": n, "key": b64url(KEY), "envelope": e, "error": err} for n, e, err in invalid],
    }


def write(name, data):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=2)
        f.write("\n")


if __name__ == "__main__":
    write("pairing-code-v2.json", pairing_v2())
    write("notification-payload-v1.json", notifications())
    write("live-activity-content-v1.json", activities())
