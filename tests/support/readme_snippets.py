"""The README's quickstart as a user would type it: ``mypy --strict`` and pyright check it
in ``make test`` (keep it in step with README.md; tests/system/test_readme.py checks that
every statement of the README's block stands here, in order, and runs the README's block
itself as a script).

``find`` returns ``User | None``: the snippet narrows before using the result.
"""

from pydantic import Field

from dynaorm import GSI, Entity, Session, Table, Unique, Versioned, ksuid
from dynaorm.testing import moto_backend

app = Table("app", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class User(Entity):
    class Meta:
        table = app
        pk = "USER#{user_id}"
        sk = "PROFILE"
        unique = ("username", Unique("email", normalize=str.lower))
        indexes = {"gsi1": ("ORG#{org_id}", "USER#{username}")}

    user_id: str = Field(default_factory=ksuid)
    org_id: str
    username: str
    email: str


class Audit(Versioned):  # declares `version: int = 0`, implies Meta.versioned = True
    class Meta:
        table = app
        pk = "EQUIPMENT#{equipment_id}"
        sk = "{part}"

    equipment_id: str
    part: str
    notes: str = ""


def main() -> None:
    app.create()
    with Session(app) as s:  # commits on exit, rolls back on error
        s.save(User(org_id="o1", username="bobby", email="Bobby@Tables.com"))

    s = Session(app)
    bob = s.find(User, email="BOBBY@tables.com")  # User | None
    if bob is None:
        raise LookupError("no user with that email")
    bob.email = "bob@tables.com"
    s.save(bob)
    s.commit()
    print(s.query(User, index="gsi1", org_id="o1").all())


def quickstart() -> None:
    with moto_backend():
        main()


def versioned() -> None:
    s = Session(app)
    audit = s.get(Audit, equipment_id="E1", part="P1")
    if audit is not None:
        print(audit.version, [a.version for a in s.history(
            Audit, equipment_id="E1", part="P1").reverse().limit(5)])
