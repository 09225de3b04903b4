"""Writes a MaxMind-format database of networks the caller names, with mmdb-writer (PyPI): a real
writer, independent of the reader bbrtop uses. The tests (and the lab) map their own address
blocks to ASes and countries with it.

    target/mmdb-venv/bin/python scripts/mmdb_write.py OUT.mmdb < spec.json

spec.json: {"database_type": "bbrtop-lab-ASN", "networks": {"10.61.0.0/16": {...record...}}}.
Integers are written as uint32, as MaxMind's own databases hold AS numbers.
"""

import json
import sys

from mmdb_writer import MMDBWriter
from netaddr import IPSet


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: mmdb_write.py OUT.mmdb < spec.json")
    spec = json.load(sys.stdin)
    writer = MMDBWriter(
        ip_version=6,
        ipv4_compatible=True,
        database_type=spec["database_type"],
        languages=["en"],
        description={"en": "bbrtop test networks"},
        int_type="u32",
    )
    for cidr, record in spec["networks"].items():
        writer.insert_network(IPSet([cidr]), record)
    writer.to_db_file(sys.argv[1])


if __name__ == "__main__":
    main()
