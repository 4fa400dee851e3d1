"""Run Python scripts each in a process of its own, as ``python SCRIPT ARGS`` would, from one
interpreter that imported what they all import first (``--preload``): each script is a
child forked from it, run as ``__main__`` with its own ``sys.argv``, its output in files of
its own. Starting an interpreter and importing moto, boto3 and dynaorm was most of what an
example run cost (some 3 s of CPU each, 51 examples).

``python fork_scripts.py --preload MOD[,MOD] --at-once N --timeout S --out DIR -- SCRIPT
[SCRIPT...] [-- ARGS...]`` prints one line ``NAME CODE`` per script (a negative code: the
signal that ended it; ``SIGALRM``: its timeout); ``DIR/NAME.out`` and ``DIR/NAME.err`` hold
what it printed. The first script's folder is ``sys.path[0]``, as ``python SCRIPT`` sets.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import runpy
import signal
import sys
import threading
import traceback
from pathlib import Path


def _child(script: Path, args: list[str], out: Path, timeout: int) -> None:
    """In the forked child: run ``script`` as ``__main__`` and leave as the interpreter
    would (exit code, traceback, atexit handlers, non-daemon threads joined)."""
    signal.alarm(timeout)
    for fd, path in ((1, out / f"{script.stem}.out"), (2, out / f"{script.stem}.err")):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    sys.argv = [str(script), *args]
    code = 0
    try:
        runpy.run_path(str(script), run_name="__main__")
        threading._shutdown()  # type: ignore[attr-defined]  # (as the interpreter's exit)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # (what python prints, and its exit code)
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preload", default="")
    parser.add_argument("--at-once", type=int, default=4)
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    rest = opts.rest[1:] if opts.rest[:1] == ["--"] else opts.rest
    scripts = [Path(s) for s in (rest[:rest.index("--")] if "--" in rest else rest)]
    args = rest[rest.index("--") + 1:] if "--" in rest else []
    sys.path[0] = str(scripts[0].parent)
    for name in filter(None, opts.preload.split(",")):
        importlib.import_module(name)
    gc.freeze()  # (the children share the preloaded objects' pages)
    sys.stdout.flush()
    running: dict[int, str] = {}
    todo = list(scripts)
    while todo or running:
        while todo and len(running) < opts.at_once:
            script = todo.pop(0)
            pid = os.fork()
            if pid == 0:
                _child(script, args, opts.out, opts.timeout)
            running[pid] = script.stem
        pid, status = os.wait()
        print(running.pop(pid), os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
