#!/usr/bin/env python
"""Cold start: a fresh Python process imports the library, defines one entity (model) and
makes its first ``get`` against DynamoDB Local -- what a Lambda function's first request
pays -- for dynaorm, a boto3 resource (``Table.get_item``) and PynamoDB, in one run; and
``import dynaorm`` against ``import pynamodb.models`` alone.

Each figure is the wall time of a child process's work (measured inside the child, from
before the first import to after the first answer: the interpreter's own start is left
out), the median of ``--runs`` interleaved runs. DynamoDB Local is started once and one
item is written first, so every contender reads the same item.

dynaorm's own modules are compiled to bytecode first (``compileall``, as ``pip install``
does for the other contenders in site-packages): in a checkout with
``PYTHONDONTWRITEBYTECODE`` set nothing else writes them, and every child would compile
~75 modules from source (about 60 ms here), which no installed package pays.

``--baseline DIR`` also runs dynaorm's programs on another checkout's ``dynaorm`` (its
bytecode compiled the same way), interleaved with this one's, so the two compare within
one run (rows marked "baseline").

Usage::

    .venv/bin/python benchmarks/cold_start.py [--runs 7] [--json PATH] [--baseline DIR]
        [--clock wall|cpu]

``--clock cpu`` times the child's CPU (user + system) instead of its wall time: on a
machine other work loads, the wall time counts waits for a core that say nothing of the
library (the first answer's wait for DynamoDB Local is left out too).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TABLE = "cold-start"

_CLOCK = "import time\n_t0 = time.CLOCK()\n"
_DONE = "print(time.CLOCK() - _t0)\n"
#: ``--clock``: the child's wall time, or its CPU time (user + system: on a loaded machine
#: it leaves out the waits for a core and for DynamoDB Local, which wall time counts)
CLOCKS = {"wall": "perf_counter", "cpu": "process_time"}

#: each contender's child program (the endpoint in ENDPOINT)
PROGRAMS = {
    "dynaorm": """
from dynaorm import Client, Entity, Session, Table
app = Table("cold-start", endpoint_url=ENDPOINT, region="us-east-1")
class User(Entity):
    class Meta:
        table = app
        pk = "USER#{user_id}"
        sk = "PROFILE"
    user_id: str
    name: str = ""
    logins: int = 0
user = Session(app).get(User, user_id="u1")
assert user.name == "Alice", user
""",
    "boto3-resource": """
import boto3
table = boto3.resource("dynamodb", endpoint_url=ENDPOINT, region_name="us-east-1").Table(
    "cold-start")
item = table.get_item(Key={"pk": "USER#u1", "sk": "PROFILE"})["Item"]
assert item["name"] == "Alice", item
""",
    "pynamodb": """
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model
class User(Model):
    class Meta:
        table_name = "cold-start"
        host = ENDPOINT
        region = "us-east-1"
    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(default="")
    logins = NumberAttribute(default=0)
user = User.get("USER#u1", "PROFILE")
assert user.name == "Alice", user
""",
    # the dynaorm program with a shared config file (CONFIGS): three the plain path reads, and
    # one with a setting it leaves to botocore's session
    "dynaorm, shared config file": "",
    "dynaorm, retry_mode": "",
    "dynaorm, max_attempts": "",
    "dynaorm, session path": "",
    "import dynaorm": "import dynaorm\n",
    "import pynamodb.models": "import pynamodb.models\n",
}
#: the dynaorm program, then a first save and commit of what it read (the write path's
#: modules load here: the row against "dynaorm" is what the first save costs)
PROGRAMS["dynaorm + first save"] = PROGRAMS["dynaorm"] + """
s = Session(app)
user.logins += 1
s.save(user)
s.commit()
"""
#: import and definition alone, no request
PROGRAMS["import dynaorm + one entity"] = PROGRAMS["dynaorm"].split("user = ")[0]
PROGRAMS["import pynamodb.models + one Model"] = PROGRAMS["pynamodb"].split("user = ")[0]


#: the shared config file of the programs that run with one
CONFIGS = {"dynaorm, shared config file": "[default]\nregion = us-east-1\noutput = json\n",
           "dynaorm, retry_mode": "[default]\nregion = us-east-1\nretry_mode = standard\n",
           "dynaorm, max_attempts": "[default]\nregion = us-east-1\nmax_attempts = 3\n",
           # (the profile's CA bundle: botocore's default one, written in by run_child)
           "dynaorm, session path": "[default]\nregion = us-east-1\nca_bundle = CA_BUNDLE\n"}
#: the first get of an AsyncSession (dynaorm's own wire: no aiobotocore)
PROGRAMS["dynaorm, AsyncSession"] = PROGRAMS["dynaorm"].replace(
    "from dynaorm import Client, Entity, Session, Table",
    "import asyncio\nfrom dynaorm import AsyncSession, Client, Entity, Table").replace(
    'user = Session(app).get(User, user_id="u1")',
    'user = asyncio.run(AsyncSession(app).get(User, user_id="u1"))')
#: settings a Lambda function may carry, each for dynaorm, boto3 and PynamoDB alike: the
#: environment variables it adds (``CA_BUNDLE``: botocore's default bundle, the path
#: written in), the shared config file it reads, and a botocore ``Config`` given
SETTINGS: dict[str, tuple[dict[str, str], str | None, bool]] = {
    "AWS_CA_BUNDLE": ({"AWS_CA_BUNDLE": "CA_BUNDLE"}, None, False),
    "REQUESTS_CA_BUNDLE": ({"REQUESTS_CA_BUNDLE": "CA_BUNDLE"}, None, False),
    "AWS_PROFILE": ({"AWS_PROFILE": "app"}, "[profile app]\nregion = us-east-1\n", False),
    "a Config": ({}, None, True),
}
_CONFIGURED = {  # each contender's program with a botocore Config (read_timeout=5)
    "dynaorm": ('app = Table("cold-start", endpoint_url=ENDPOINT, region="us-east-1")',
                "from botocore.config import Config\napp = Table(\"cold-start\", client=Client("
                "ENDPOINT, \"us-east-1\", config=Config(read_timeout=5)))"),
    "boto3-resource": ('region_name="us-east-1")', 'region_name="us-east-1", '
                       "config=__import__('botocore.config').config.Config(read_timeout=5))"),
    "pynamodb": ('        region = "us-east-1"',
                 '        region = "us-east-1"\n        read_timeout_seconds = 5'),
}
#: the environment variables of each program that runs with settings
EXTRA_ENV: dict[str, dict[str, str]] = {}
for _setting, (_env, _config, _configured) in SETTINGS.items():
    for _name in ("dynaorm", "boto3-resource", "pynamodb"):
        _label = f"{_name} [{_setting}]"
        _old, _new = _CONFIGURED[_name] if _configured else ("", "")
        PROGRAMS[_label] = PROGRAMS[_name].replace(_old, _new) if _old else PROGRAMS[_name]
        EXTRA_ENV[_label] = _env
        if _config is not None:
            CONFIGS[_label] = _config
#: the programs run on the ``--baseline`` checkout too
DYNAORM_PROGRAMS = ("dynaorm", "dynaorm + first save", "import dynaorm",
                    "import dynaorm + one entity", "dynaorm [a Config]", "dynaorm, retry_mode",
                    "dynaorm, max_attempts")
#: what each row is, and the row it is compared with
ROWS = (
    ("dynaorm", "dynaorm: import + entity + first get", "pynamodb"),
    ("dynaorm, shared config file", "dynaorm, a shared config file (region, output): the same",
     "pynamodb"),
    ("dynaorm, retry_mode", "dynaorm, a config file with retry_mode: the same", "pynamodb"),
    ("dynaorm, max_attempts", "dynaorm, a config file with max_attempts: the same",
     "pynamodb"),
    ("dynaorm, session path", "dynaorm, session path (a config file with ca_bundle): "
     "the same", "pynamodb"),
    ("boto3-resource", "boto3 resource: import + first get_item", "pynamodb"),
    ("pynamodb", "PynamoDB: import + Model + first get", "pynamodb"),
    ("dynaorm + first save", "dynaorm: import + entity + first get + first save", "pynamodb"),
    ("import dynaorm", "import dynaorm", "import pynamodb.models"),
    ("import pynamodb.models", "import pynamodb.models", "import pynamodb.models"),
    ("import dynaorm + one entity", "import dynaorm + one entity",
     "import pynamodb.models + one Model"),
    ("import pynamodb.models + one Model", "import pynamodb.models + one Model",
     "import pynamodb.models + one Model"),
    ("dynaorm, AsyncSession", "dynaorm: import + entity + first AsyncSession get", "pynamodb"),
    *((f"{name} [{setting}]", f"{text} [{setting}]", f"pynamodb [{setting}]")
      for setting in SETTINGS for name, text in (
          ("dynaorm", "dynaorm: first get"), ("boto3-resource", "boto3 resource: first get"),
          ("pynamodb", "PynamoDB: first get"))),
)
BASELINE = " [baseline]"


def _environment(config_file: Path | None, root: Path = ROOT) -> dict[str, str]:
    """The children's environment, as on AWS Lambda: credentials in the environment, no
    other AWS setting (this machine's ``AWS_CA_BUNDLE`` / ``REQUESTS_CA_BUNDLE`` and any
    proxy left out: DynamoDB Local is plain HTTP on loopback), no shared files unless
    ``config_file`` (a shared config file, :data:`CONFIGS`)."""
    env = {k: v for k, v in os.environ.items() if not (
        k.startswith(("AWS_", "BOTO")) or k.lower().endswith("_proxy")
        or k == "REQUESTS_CA_BUNDLE")}
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", PYTHONPATH=str(root),
               AWS_CONFIG_FILE=str(config_file or "/nonexistent/aws-config"),
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent/aws-credentials")
    return env


def run_child(name: str, endpoint: str, configs: dict[str, Path], root: Path = ROOT,
              clock: str = "wall") -> float:
    """Seconds the child spent on ``name``'s program (from its first import), importing
    dynaorm from ``root`` (with ``configs[name]`` as its shared config file, if any)."""
    program = PROGRAMS[name] or PROGRAMS["dynaorm"]
    code = (f"ENDPOINT = {endpoint!r}\n" + _CLOCK + program + _DONE).replace(
        "CLOCK", CLOCKS[clock])
    env = _environment(configs.get(name), root)
    from botocore.httpsession import get_cert_path

    env.update({k: str(get_cert_path(True)) if v == "CA_BUNDLE" else v
                for k, v in EXTRA_ENV.get(name, {}).items()})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=root)  # (``-c`` puts the cwd first)
    return float(out.stdout.strip().splitlines()[-1])


def _check_roots(roots: list[Path]) -> None:
    """Each root's children import that root's ``dynaorm``."""
    for root in roots:
        out = subprocess.run([sys.executable, "-c", "import dynaorm; print(dynaorm.__file__)"],
                             env=_environment(None, root), capture_output=True, text=True,
                             check=True, cwd=root).stdout.strip()
        assert Path(out).resolve() == (root / "dynaorm" / "__init__.py").resolve(), out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="the child's wall time (default) or its CPU time")
    args = parser.parse_args()
    runs: list[tuple[str, str, Path]] = [(name, name, ROOT) for name in PROGRAMS]
    compileall.compile_dir(str(ROOT / "dynaorm"), quiet=1)  # (see the module's docstring)
    if args.baseline is not None:
        baseline = args.baseline.resolve()
        compileall.compile_dir(str(baseline / "dynaorm"), quiet=1)
        runs += [(name + BASELINE, name, baseline) for name in DYNAORM_PROGRAMS]
    _check_roots(sorted({root for _, _, root in runs}))
    from botocore.httpsession import get_cert_path

    from tests.support.ddb_local import DynamoDBLocal

    samples: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    configs = {name: Path(tempfile.mkdtemp()) / "config" for name in CONFIGS}
    for name, path in configs.items():
        path.write_text(CONFIGS[name].replace("CA_BUNDLE", str(get_cert_path(True))))
    with DynamoDBLocal() as ddb:
        client = ddb.client()
        client.create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}])
        client.put_item(TableName=TABLE, Item={
            "pk": {"S": "USER#u1"}, "sk": {"S": "PROFILE"}, "_type": {"S": "User"},
            "user_id": {"S": "u1"}, "name": {"S": "Alice"}, "logins": {"N": "3"}})
        for _, name, root in runs:  # warm the file system cache once
            run_child(name, ddb.endpoint_url, configs, root, args.clock)
        for _ in range(args.runs):
            for label, name, root in runs:
                samples[label].append(run_child(name, ddb.endpoint_url, configs, root,
                                                args.clock))
    median = {k: statistics.median(v) for k, v in samples.items()}
    print(f"cold start, fresh process ({args.clock} ms, median of {args.runs}; min-max in "
          "brackets)")
    print("| contender | ms | vs PynamoDB |")
    print("| --- | ---: | ---: |")
    for name, text, base in ROWS:
        for label in (name, name + BASELINE):
            if label in samples:
                print(f"| {text}{label[len(name):]} | {median[label] * 1e3:.0f} "
                      f"[{min(samples[label]) * 1e3:.0f}-{max(samples[label]) * 1e3:.0f}] | "
                      f"{median[label] / median[base]:.2f}x |")
    for suffix in ("", BASELINE) if args.baseline is not None else ("",):
        saved = median["dynaorm + first save" + suffix] - median["dynaorm" + suffix]
        print(f"first save and commit after the first get{suffix}: {saved * 1e3:.1f} ms "
              "(difference of the medians)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(median, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
