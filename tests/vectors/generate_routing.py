#!/usr/bin/env python3
"""Writes tests/vectors/routing.json, the routing cases that the Rust library (router/) and the
Python client (clients/python/src/efs_router) are both tested against.

Independent of both on purpose: the modulo-sha256 answers come from the original system's own
expression, the rendezvous answers from the rule as router/REFERENCE.md states it, in a few lines,
and the normalised form of every path is written here by hand. A version 2 list (a mount target
serving several shards) is expanded to its shards here too, from the rule as router/REFERENCE.md
states it; its cases give the position among the shards and the home shard's root, and are
routed by rendezvous only (a list of several shards per target cannot be modulo-sha256). Run
from the repository root:

    python3 tests/vectors/generate_routing.py > tests/vectors/routing.json
"""
import hashlib
import json


def original(file_path, mount_targets):
    # The original client, verbatim.
    return int(hashlib.sha256(file_path.encode()).hexdigest(), 16) % len(mount_targets)


def modulo_index(raw, targets):
    active = [i for i, t in enumerate(targets) if not t.get("draining", False)]
    return active[original(raw, active)]


def rendezvous_index(normalised, targets):
    # router/REFERENCE.md: score = first 8 bytes of sha256(root || 0x00 || path), big-endian;
    # highest wins; equal scores: smaller root (bytes), then earlier entry.
    best = None
    for i, t in enumerate(targets):
        if t.get("draining", False):
            continue
        root = t.get("root", "/").encode()
        score = int.from_bytes(hashlib.sha256(root + b"\0" + normalised.encode()).digest()[:8], "big")
        key = (-score, root, i)
        if best is None or key < best:
            best = key
    return best[2]


def expand(targets):
    # router/REFERENCE.md, version 2: a target's shards are its root, then /shards/<az_id>.<k> for
    # k = 1 .. shards - 1; shard k drains when the target does or k >= shards - draining_shards.
    out = []
    for t in targets:
        n, d = t.get("shards", 1), t.get("draining_shards", 0)
        for k in range(n):
            root = t.get("root", "/") if k == 0 else "/shards/%s.%d" % (t["az_id"], k)
            out.append(dict(t, root=root, draining=t.get("draining", False) or k >= n - d))
    return out


def target(i, az, az_id, root, draining=False):
    t = {"id": "fsmt-%08x" % (0x1A2B0000 + i), "ip": "10.0.%d.%d" % (i + 1, 4 + i), "az": az,
         "az_id": az_id, "subnet_id": "subnet-%04d" % i, "root": root}
    if draining:
        t["draining"] = True
    return t


A = target(0, "us-east-1a", "use1-az6", "/")
B = target(1, "us-east-1b", "use1-az4", "/shards/use1-az4")
C = target(2, "us-east-1c", "use1-az1", "/shards/use1-az1")
D = target(3, "us-east-1d", "use1-az2", "/shards/use1-az2")
E = target(4, "us-east-1e", "use1-az3", "/shards/use1-az3")
F = target(5, "us-east-1f", "use1-az5", "/shards/use1-az5")
B_RECREATED = dict(B, id="fsmt-7f7f7f7f", ip="10.0.9.9")
LEGACY = [{"id": "fsmt-11111111", "ip": "10.0.1.4"}, {"id": "fsmt-22222222", "ip": "10.0.2.7"},
          {"id": "fsmt-33333333", "ip": "10.0.3.9"}]

LISTS = {
    "one": [A],
    "two": [A, B],
    "three": [A, B, C],
    "three-reordered-recreated": [C, B_RECREATED, A],
    "four": [A, B, C, D],
    "four-second-draining": [A, dict(B, draining=True), C, D],
    "six": [A, B, C, D, E, F],
    "legacy-three": LEGACY,
    "legacy-three-first-draining": [dict(LEGACY[0], draining=True)] + LEGACY[1:],
}
# Version 2: several shards per mount target, routed over the expanded shards.
V2_LISTS = {
    # 9 shards: A's /, /shards/use1-az6.1, .2; B's /shards/use1-az4, .1, .2, .3 (draining); C's two.
    "v2-shared": [dict(A, shards=3), dict(B, shards=4, draining_shards=1), dict(C, shards=2)],
    # B drains whole: its three shards get nothing.
    "v2-shared-target-draining": [dict(A, shards=2), dict(B, shards=3, draining=True), C],
}
ERROR_LISTS = {
    "empty": [],
    "all-draining": [dict(A, draining=True), dict(B, draining=True)],
    "v2-all-draining": [dict(A, shards=2, draining=True), dict(B, shards=3, draining=True)],
}

# (path as the application spells it, its normalised form) -- written by hand from the rules.
PATHS = [
    ("data/analysis/device-1-1700000000.json", "data/analysis/device-1-1700000000.json"),
    ("data/analysis/device-42-1700000123.json", "data/analysis/device-42-1700000123.json"),
    ("data/analysis/device-999-1700003600.json", "data/analysis/device-999-1700003600.json"),
    ("data/analysis/device-12345-1712345678.json", "data/analysis/device-12345-1712345678.json"),
    ("data/analysis/device-7-1700000000.json", "data/analysis/device-7-1700000000.json"),
    ("/data/analysis/device-7-1700000000.json", "data/analysis/device-7-1700000000.json"),
    ("./data/analysis/device-7-1700000000.json", "data/analysis/device-7-1700000000.json"),
    ("data/tmp/../analysis/device-7-1700000000.json", "data/analysis/device-7-1700000000.json"),
    ("device-3-1700000000.json", "device-3-1700000000.json"),
    ("/device-3-1700000000.json", "device-3-1700000000.json"),
    ("a", "a"),
    ("a/./b/../c", "a/c"),
    ("données/été-1.json", "données/été-1.json"),
    ("data/📈/reading.json", "data/📈/reading.json"),
    ("data/with space/x.json", "data/with space/x.json"),
    ("data/back\\slash.json", "data/back\\slash.json"),
    ("shardsX/not-a-shard.json", "shardsX/not-a-shard.json"),
    ("x" * 200 + "/" + "y" * 200 + ".json", "x" * 200 + "/" + "y" * 200 + ".json"),
    ("..a/b..", "..a/b.."),
    (".hidden/.x", ".hidden/.x"),
    # Near misses of the router's own names (.efs-router-<16 lowercase hex>.tmp / .moving): files.
    ("data/.efs-router-0123456789ABCDEF.tmp", "data/.efs-router-0123456789ABCDEF.tmp"),
    ("data/.efs-router-0123456789abcdef.tmpx", "data/.efs-router-0123456789abcdef.tmpx"),
    ("x.efs-router-0123456789abcdef.moving", "x.efs-router-0123456789abcdef.moving"),
    ("data/.efs-router-0123456789abcdef.tmp/..", "data"),
    ("data/.efs-router-clients.json", "data/.efs-router-clients.json"),
]

# Normalisation cases beyond PATHS: refused paths, with the rule that refuses them.
REFUSED = [
    ("", "empty"), ("/", "empty"), (".", "empty"), ("./", "empty-component"), ("a/..", "empty"),
    ("/a/b/../..", "empty"), ("a//b", "empty-component"), ("a/", "empty-component"),
    ("//a", "empty-component"), ("a/b/", "empty-component"), ("..", "escapes-root"),
    ("/../etc/passwd", "escapes-root"), ("a/../../b", "escapes-root"), ("./..", "escapes-root"),
    ("a\0b", "nul"), ("\0", "nul"), ("a/\0/b", "nul"),
    (".efs-router-0123456789abcdef.tmp", "reserved-name"),
    ("data/analysis/.efs-router-0123456789abcdef.tmp", "reserved-name"),
    ("data/.efs-router-ffffffffffffffff.moving/x.json", "reserved-name"),
    ("/./data/x/../.efs-router-0000000000000000.moving", "reserved-name"),
    # The clients' reports' directory, anywhere in a path.
    (".efs-router-clients/0123456789abcdef.json", "reserved-name"),
    ("data/.efs-router-clients", "reserved-name"),
]


def main():
    routing = []
    for name, targets in LISTS.items():
        for strategy in ("rendezvous", "modulo-sha256"):
            for raw, norm in PATHS:
                index = rendezvous_index(norm, targets) if strategy == "rendezvous" else modulo_index(raw, targets)
                routing.append({"list": name, "strategy": strategy, "path": raw, "index": index})
    for name, targets in V2_LISTS.items():
        shards = expand(targets)
        for raw, norm in PATHS:
            index = rendezvous_index(norm, shards)
            routing.append({"list": name, "strategy": "rendezvous", "path": raw, "index": index,
                            "root": shards[index]["root"]})
    errors = []
    for strategy in ("rendezvous", "modulo-sha256"):
        errors.append({"list": "empty", "strategy": strategy, "path": PATHS[0][0], "error": "no-targets"})
        errors.append({"list": "all-draining", "strategy": strategy, "path": PATHS[0][0], "error": "all-draining"})
        for raw, kind in REFUSED:
            errors.append({"list": "three", "strategy": strategy, "path": raw, "error": kind})
    errors.append({"list": "v2-all-draining", "strategy": "rendezvous", "path": PATHS[0][0], "error": "all-draining"})
    normalise = [{"path": raw, "normalised": norm} for raw, norm in PATHS]
    normalise += [{"path": raw, "error": kind} for raw, kind in REFUSED]

    def lines(items):
        return ",\n".join("    " + json.dumps(x, ensure_ascii=False) for x in items)

    lists = dict(LISTS, **V2_LISTS, **ERROR_LISTS)
    print("{")
    print('  "about": "Routing cases shared by router/ (Rust) and clients/python (efs_router). Generated by tests/vectors/generate_routing.py; do not edit by hand. Each list is the mount_targets of a document; a case routes over its shards (version 2: each target: its root, then /shards/<az_id>.<k>), index is the position among them, and root (version 2 lists) the root of the home shard.",')
    print('  "lists": {\n' + ",\n".join("    %s: %s" % (json.dumps(k), json.dumps(v, ensure_ascii=False)) for k, v in lists.items()) + "\n  },")
    print('  "normalise": [\n' + lines(normalise) + "\n  ],")
    print('  "routing": [\n' + lines(routing) + "\n  ],")
    print('  "routing_errors": [\n' + lines(errors) + "\n  ]")
    print("}")


if __name__ == "__main__":
    main()
