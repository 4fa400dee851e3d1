"""A key rotation run to the end: patients written under an old key, a new key put in
front, every stored value re-sealed under it by ``jobs.reencrypt`` (latest copies and
their history too), then the old key dropped: everything still reads, and ``find`` finds
by the unique ssn's MAC key, which no rotation touches.

Run: ``python examples/key_rotation.py [--endpoint-url URL]``
(needs ``dynaorm[encryption]``)
"""

from __future__ import annotations

import os

from _support import run

from dynaorm import Encrypted, Entity, StaticKeyring, Table, Unique, jobs
from dynaorm.schema.rules.encrypted import header_of
from dynaorm.testing import TestBackend

OLD, NEW, MAC = os.urandom(32), os.urandom(32), os.urandom(32)
#: in production the keys come from your secret store (or KMS: KmsKeyring(key_id,
#: previous=[...], mac_key_id=...)), and the keyring is given where the table is defined,
#: so that a job's worker processes, which import this module, hold it too
clinic = Table("dynaorm-example-rotation", keyring=StaticKeyring(OLD, mac_key=MAC))


class Chart(Entity):
    class Meta:
        table = clinic
        pk = "CHART#{chart_id}"
        sk = "CHART"
        unique = [Unique("ssn")]
        versioned = True

    chart_id: str
    ssn: Encrypted[str]
    diagnosis: Encrypted[str]
    version: int = 0


def key_ids(db: TestBackend) -> list[str]:
    """Which key each stored ciphertext names (its header: the first 16 hex digits of the
    key's SHA-256), and how many values it holds."""
    names = {StaticKeyring(OLD).key_id: "OLD", StaticKeyring(NEW).key_id: "NEW"}
    found = [names[h[0]] for item in db.scan_raw()
             for av in item.values() if (h := header_of(av)) is not None]
    return [f"{name}: {found.count(name)}" for name in sorted(set(found))]


def main() -> None:
    with run(clinic, "a key rotation, to the end") as db:
        s = db.session()
        for n in range(3):
            s.save(Chart(chart_id=f"c{n}", ssn=f"000-00-000{n}", diagnosis="flu"))
        s.commit()
        chart = s.get(Chart, chart_id="c0")
        assert chart is not None
        chart.diagnosis = "cold"  # a second version: history under the old key too
        s.save(chart)
        s.commit()
        print("stored under:", key_ids(db))
        clinic.keyring = StaticKeyring(NEW, previous=[OLD], mac_key=MAC)  # 1. NEW in front
        report = jobs.run_local(jobs.reencrypt(Chart, segments=2))  # 2. re-seal
        print(f"re-sealed {report.resealed} rows, {report.current} current, "
              f"{len(report.failed)} failed")
        print("stored under:", key_ids(db))
        again = jobs.run_local(jobs.reencrypt(Chart, segments=2))
        print(f"run again: re-sealed {again.resealed}, current {again.current}")
        clinic.keyring = StaticKeyring(NEW, mac_key=MAC)  # 3. OLD dropped
        s = db.session()
        found = s.find(Chart, ssn="000-00-0000")
        print("found by ssn:", found is not None and found.chart_id)
        print("history:", [c.diagnosis for c in s.history(Chart, chart_id="c0")])


if __name__ == "__main__":
    main()
