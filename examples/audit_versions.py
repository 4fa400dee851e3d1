"""Equipment audits with version control: ``v0_<part>`` holds the latest copy and every
save adds an immutable ``v<n>_<part>`` row, so history, any past version and optimistic
locking come for free.

Run: ``python examples/audit_versions.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, show, table_keys

from dynaorm import ConcurrentModificationError, Entity, Session, Table

plant = Table("dynaorm-example-audits")


class Audit(Entity):
    class Meta:
        table = plant
        pk = "EQUIPMENT#{equipment_id}"
        sk = "{part}"
        versioned = True

    equipment_id: str
    part: str
    auditor: str
    status: str
    version: int = 0


def line(a: Audit) -> str:
    return f"v{a.version:<3} {a.part:<6} {a.auditor:<6} {a.status}"


def main() -> None:
    with run(plant, "equipment audits: latest copy, history, versions, stale writers") as db:
        s = db.session()
        audit = Audit(equipment_id="E1", part="pump", auditor="ana", status="installed")
        s.save(audit)
        s.save(Audit(equipment_id="E1", part="valve", auditor="bo", status="ok"))
        s.commit()
        for n in range(2, 13):  # eleven more audits of the pump: versions 2..12
            audit.auditor = ["ana", "bo", "cy"][n % 3]
            audit.status = "ok" if n % 4 else "needs repair"
            s.save(audit)
            s.commit()
        table_keys(db, "twelve audits of the pump, one of the valve", extra=["version"])

        show('s.query(Audit, equipment_id="E1")  # latest copy of every part',
             s.query(Audit, equipment_id="E1"), line)
        show('s.history(Audit, equipment_id="E1", part="pump").reverse().limit(3)',
             s.history(Audit, equipment_id="E1", part="pump").reverse().limit(3), line)
        page = s.history(Audit, equipment_id="E1", part="pump").page_size(5).page()
        show('s.history(Audit, equipment_id="E1", part="pump").page_size(5).page().items',
             page.items, line)
        v3 = s.get(Audit, equipment_id="E1", part="pump", version=3)
        print(f"\ns.get(Audit, equipment_id='E1', part='pump', version=3) -> "
              f"{line(v3) if v3 else None}")

        mine = s.get(Audit, equipment_id="E1", part="pump")
        other = Session(plant)
        theirs = other.get(Audit, equipment_id="E1", part="pump")
        assert mine is not None and theirs is not None
        theirs.status = "replaced"
        other.save(theirs)
        other.commit()
        print(f"\nanother writer saved version {theirs.version}")
        mine.status = "ok (stale)"
        s.save(mine)
        try:
            s.commit()
        except ConcurrentModificationError as exc:
            print(f"stale writer refused: {type(exc).__name__}: {exc}")
        latest = s.get(Audit, equipment_id="E1", part="pump")
        print(f"latest is still: {line(latest) if latest else None}")
        print(f"history has {s.history(Audit, equipment_id='E1', part='pump').count()} rows")


if __name__ == "__main__":
    main()
