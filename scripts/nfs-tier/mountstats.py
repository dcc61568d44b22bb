"""One mount's NFS operations so far, from /proc/self/mountstats: what the tier's benches count with."""

from typing import Dict, Tuple


def per_op(mount: str) -> Dict[str, Tuple[int, int, int]]:
    """The calls, bytes sent and bytes received of each NFS operation sent so far through ``mount``."""
    out: Dict[str, Tuple[int, int, int]] = {}
    with open("/proc/self/mountstats") as f:
        mine, ops = False, False
        for line in f:
            if line.startswith("device "):
                mine, ops = (" mounted on %s " % mount) in line, False
            elif mine and line.strip() == "per-op statistics":
                ops = True
            elif mine and ops and ":" in line:
                name, rest = line.strip().split(":", 1)
                fields = rest.split()
                if len(fields) >= 5 and fields[0].isdigit():
                    out[name] = (int(fields[0]), int(fields[3]), int(fields[4]))
    return out
