"""Writes tests/vectors/reports.json, the client-report cases that the Rust library (router/src/report.rs,
router/tests/report_vectors.rs) and the Python client (efs_router.report, clients/python/tests/test_report.py) must
both answer the same way:

- lists: list texts and the SHA-256 of their exact bytes (a report's list.sha256);
- serialised: a report's fields and the exact text both libraries write for it (compact, fields in order, nulls);
- files: a report file's name and bytes (text, or hex; then spaces to a length) and what parsing it gives: ok (and
  the fields), too-large, malformed or wrong-name.

The outcomes are written here by hand; the libraries are tested against them. Run:

    python3 tests/vectors/generate_reports.py > tests/vectors/reports.json
"""

import hashlib
import json

LISTS = [
    '{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4"}]}',
    '{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4","root":"/","az_id":"use1-az1","shards":2}],'
    '"strategy":"rendezvous","version":2}',
    # The same list, spelled otherwise: another text, another digest.
    '{ "mount_targets": [ {"id": "fsmt-0", "ip": "10.0.0.4"} ] }',
    '{"mount_targets":[{"id":"fsmt-é","ip":"10.0.0.4"}]}',
]

ID = "0123456789abcdef"
SHA = hashlib.sha256(LISTS[1].encode()).hexdigest()


def report(**over):
    r = {"format": 1, "client": ID, "router": "efs-router-rust/0.1.0", "reads": [1, 2],
         "list": {"sha256": SHA, "version": 2, "parameter_version": 7}, "loaded_at": 1700000000,
         "refreshed_at": None, "refresh_failed_at": None, "written_at": 1700000060, "every": 60, "task": None,
         "label": None}
    r.update(over)
    return r


def compact(r):
    return json.dumps(r, separators=(",", ":"), ensure_ascii=False)


SERIALISED = [
    report(),
    report(router="efs-router-python/0.1.0", reads=[1], list={"sha256": SHA, "version": 1, "parameter_version": None},
           refreshed_at=1700000030, refresh_failed_at=1700000050,
           task="arn:aws:ecs:us-east-1:111122223333:task/c/0123456789abcdef", label="reader-1"),
    # Escapes: both write a quote, a backslash and control characters the same way, and other text as UTF-8.
    report(label='été "x" \\ \n\t\u0001\u001f\u007f \u2028 /', task="t", reads=[]),
    report(list={"sha256": SHA, "version": 2, "parameter_version": -9223372036854775808},
           written_at=18446744073709551615),
]

MINIMAL = compact(report())
# The optional fields absent.
ABSENT = ('{"format":1,"client":"%s","router":"r","reads":[1,2],"list":{"sha256":"%s","version":1},'
          '"loaded_at":1,"written_at":2,"every":60}' % (ID, SHA))
ABSENT_PARSED = report(router="r", list={"sha256": SHA, "version": 1, "parameter_version": None}, loaded_at=1,
                       written_at=2)


def with_field(text, field):
    """``text`` (an object) with ``field`` (``"k":v``) first."""
    return "{" + field + "," + text[1:]


def replace(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


def nested(depth):
    """An unknown field holding arrays nested so that the deepest is ``depth`` levels down, the report's object
    being level 1."""
    return with_field(MINIMAL, '"deep":' + "[" * (depth - 1) + "]" * (depth - 1))


FILES = [
    # ok
    (ID + ".json", MINIMAL, 0, "ok", report()),
    (ID + ".json", ABSENT, 0, "ok", ABSENT_PARSED),
    (ID + ".json", compact(SERIALISED[2]), 0, "ok", SERIALISED[2]),
    (ID + ".json", compact(SERIALISED[3]), 0, "ok", SERIALISED[3]),
    (ID + ".json", with_field(MINIMAL, '"future":{"a":[1,2.5,null,"x"]}'), 0, "ok", report()),
    (ID + ".json", with_field(MINIMAL, '"future":1,"future":2'), 0, "ok", report()),
    (ID + ".json", with_field(MINIMAL, '"future":"\\ud800"'), 0, "ok", report()),
    (ID + ".json", " \n" + MINIMAL + "\n", 0, "ok", report()),
    (ID + ".json", MINIMAL, 4096, "ok", report()),
    # serde_json skips an unknown field however deep (no recursion limit there).
    (ID + ".json", nested(127), 0, "ok", report()),
    (ID + ".json", nested(1800), 0, "ok", report()),
    # too large: whatever it holds
    (ID + ".json", MINIMAL, 4097, "too-large", None),
    (ID + ".json", "", 4097, "too-large", None),
    # malformed
    (ID + ".json", "", 0, "malformed", None),
    (ID + ".json", "not json", 0, "malformed", None),
    (ID + ".json", "[" + MINIMAL + "]", 0, "malformed", None),
    (ID + ".json", MINIMAL + " x", 0, "malformed", None),
    (ID + ".json", "\ufeff" + MINIMAL, 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"format":1', '"format":2'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"format":1', '"format":"1"'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"format":1', '"format":1.0'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"format":1', '"format":true'), 0, "malformed", None),
    ("0123456789ABCDEF.json", replace(MINIMAL, ID, "0123456789ABCDEF"), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, SHA, SHA[:63]), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000,', ""), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000', '"loaded_at":null'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000', '"loaded_at":-1'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000', '"loaded_at":-0'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000', '"loaded_at":1e9'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000', '"loaded_at":18446744073709551616'), 0,
     "malformed", None),
    (ID + ".json", replace(MINIMAL, '"loaded_at":1700000000', '"loaded_at":NaN'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"reads":[1,2]', '"reads":[1,true]'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"reads":[1,2]', '"reads":[4294967296]'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"parameter_version":7', '"parameter_version":7.5'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"parameter_version":7', '"parameter_version":9223372036854775808'), 0,
     "malformed", None),
    (ID + ".json", replace(MINIMAL, '"version":2', '"version":2,"version":2'), 0, "malformed", None),
    (ID + ".json", with_field(MINIMAL, '"client":"%s"' % ID), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"label":null', '"label":"\\ud800"'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"label":null', '"label":"a\tb"'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"label":null', '"label":7'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"task":null', '"task":["x"]'), 0, "malformed", None),
    (ID + ".json", replace(MINIMAL, '"task":null', '"task":' + "[" * 1500 + "]" * 1500), 0, "malformed", None),
    # a report under another name; a file not named as a report
    ("fedcba9876543210.json", MINIMAL, 0, "wrong-name", None),
    (ID + ".JSON", MINIMAL, 0, "wrong-name", None),
    (".efs-router-0123456789abcdef.tmp", MINIMAL, 0, "wrong-name", None),
    # malformed wins over the name
    ("fedcba9876543210.json", replace(MINIMAL, '"format":1', '"format":2'), 0, "malformed", None),
]

# Bytes that are not UTF-8: inside a field that is read, malformed; inside an unknown one, serde_json skips them.
BYTE_FILES = [
    (ID + ".json", MINIMAL.encode().replace(b'"label":null', b'"label":"\xff"'), "malformed", None),
    (ID + ".json", with_field(MINIMAL, '"future":"@"').encode().replace(b"@", b"\xff"), "ok", report()),
]


def main():
    files = []
    for name, text, pad, outcome, parsed in FILES:
        case = {"name": name, "text": text}
        if pad:
            case["pad_to"] = pad
        case["outcome"] = outcome
        if parsed is not None:
            case["report"] = parsed
        files.append(case)
    for name, data, outcome, parsed in BYTE_FILES:
        case = {"name": name, "hex": data.hex(), "outcome": outcome}
        if parsed is not None:
            case["report"] = parsed
        files.append(case)
    doc = {
        "about": "Client-report cases shared by router/ (Rust) and clients/python (efs_router). Generated by "
                 "tests/vectors/generate_reports.py; do not edit by hand. lists: the SHA-256 of each list's exact "
                 "text (UTF-8). serialised: a report and the exact JSON both write for it. files: a report file's "
                 "name and bytes (text as UTF-8, or hex; then spaces up to pad_to bytes) and what parsing gives: "
                 "ok (with the report), too-large, malformed or wrong-name.",
        "lists": [{"text": t, "sha256": hashlib.sha256(t.encode()).hexdigest()} for t in LISTS],
        "serialised": [{"report": r, "json": compact(r)} for r in SERIALISED],
        "files": files,
    }
    print(json.dumps(doc, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
