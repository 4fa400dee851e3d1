"""A LangGraph graph stopped at an interrupt resumes from the table after its process has
ended (issue 71): ``examples/langgraph_agent.py``'s graph, run in one Python process up to
its interrupt, then resumed in another, on DynamoDB Local (the example itself runs in
test_examples.py; the saver's behaviour in tests/integration/test_langgraph_saver.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dynaorm.testing import worker_suffix

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
sys.path.insert(0, "examples")
from langgraph.types import Command
from langgraph_agent import app, build
app.name, url, phase = sys.argv[1:4]
app.connect(url)
config = {"configurable": {"thread_id": "post-1"}}
if phase == "start":
    app.delete()
    app.create()
    build("acme").invoke({"topic": "restarts", "notes": []}, config)
    print(build("acme").get_state(config).next)
else:
    try:
        print(build("acme").invoke(Command(resume="yes"), config)["notes"])
    finally:
        app.delete()
"""


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_interrupted_graph_resumes_from_the_table_in_a_new_process(ddb_local: str) -> None:
    name = f"dynaorm-example-langgraph-restart{worker_suffix()}"
    assert _run(name, ddb_local, "start") == "('review',)"
    assert _run(name, ddb_local, "resume") == (
        "['draft about restarts', 'review: yes', 'published']")
