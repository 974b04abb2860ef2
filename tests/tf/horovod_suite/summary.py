"""Reads the JUnit files of run.sh's ranks and prints, per test, what every
rank got (a test passes only where every rank passed it), then counts."""

import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict


def outcomes(path):
    out = OrderedDict()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        kind = "passed"
        message = ""
        for child in case:
            if child.tag in ("failure", "error"):
                kind, message = "failed", (child.get("message") or "").splitlines()[0:1]
                message = message[0][:160] if message else ""
            elif child.tag == "skipped":
                kind, message = "skipped", (child.get("message") or "")[:160]
        out[name] = (kind, message)
    return out


def main(paths):
    ranks = [outcomes(p) for p in sorted(paths)]
    names = list(OrderedDict.fromkeys(n for r in ranks for n in r))
    counts = {"passed": 0, "failed": 0, "skipped": 0, "missing": 0}
    for name in names:
        got = [r.get(name, ("missing", "")) for r in ranks]
        kinds = {k for k, _ in got}
        kind = ("failed" if "failed" in kinds else "missing" if "missing" in kinds
                else "skipped" if kinds == {"skipped"} else "passed")
        counts[kind] += 1
        if kind != "passed":
            why = next((m for k, m in got if k == kind and m), "")
            print(f"{kind:8} {name}  {why}")
    print(f"{len(ranks)} ranks, {len(names)} tests: " +
          ", ".join(f"{v} {k}" for k, v in counts.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
