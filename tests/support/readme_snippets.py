"""The README's quickstart as a user would type it: ``mypy --strict`` and pyright check it
in ``make test`` (keep it in step with README.md; tests/system/test_readme.py checks that
every statement of the README's block stands here, in order, and runs the README's block
itself as a script).

``find`` returns ``User | None``: the snippet narrows before using the result.
"""

import os
import re
import subprocess
from pathlib import Path

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


# -- running the README's block as written (tests/system/test_readme.py, test_packaging.py) --
_ROOT = Path(__file__).resolve().parents[2]


def quickstart_source() -> str:
    """The README's first Python block: the quickstart, as a user copies it."""
    readme = (_ROOT / "README.md").read_text()
    match = re.search(r"```python\n(.*?)```", readme, re.S)
    assert match, "README.md has no python block"
    return match.group(1)


def clean_env() -> dict[str, str]:
    """The environment of a new user: no AWS settings, no dynaorm or pytest variables,
    and a HOME without ``~/.aws``."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "DYNAORM_", "PYTEST_", "PYTHON", "VIRTUAL_ENV"))}


#: The README's last two lines, which choose the database (moto in-process).
IN_PROCESS = ("with moto_backend():                              # an in-process DynamoDB (moto)\n"
              "    main()\n")


def on_endpoint(source: str, endpoint_url: str) -> str:
    """The quickstart with the change the README gives for DynamoDB Local."""
    assert IN_PROCESS in source, "the README's quickstart no longer ends as IN_PROCESS says"
    return source.replace(IN_PROCESS, f'app.connect("{endpoint_url}")\nmain()\n')


def run_quickstart(python: str | Path, workdir: Path,
                   source: str | None = None) -> subprocess.CompletedProcess[str]:
    """Save the quickstart (or ``source``) as ``quickstart.py`` in ``workdir`` and run it
    with ``python``."""
    script = workdir / "quickstart.py"
    script.write_text(quickstart_source() if source is None else source)
    env = clean_env() | {"HOME": str(workdir)}
    return subprocess.run([str(python), script.name], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def check_quickstart_output(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"the quickstart failed:\n{result.stdout}\n{result.stderr}"
    assert "User(" in result.stdout and "email='bob@tables.com'" in result.stdout, result.stdout
    assert "username='bobby'" in result.stdout
