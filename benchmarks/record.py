"""Run one benchmark script with its full (or given) settings and keep its tables.

    python benchmarks/record.py mixture_of_groups.py --seeds 5 --sim-seeds 2
    python benchmarks/record.py lia.py --repeats 10 --sets bluebirds dog
    python benchmarks/record.py --as crowd_layer_20_seeds crowd_layer.py --seeds 20 ...
    python benchmarks/record.py --limit 300 gpu.py     # stopped after 300 s (rows so far kept)

writes ``benchmarks/results/<script>.md`` (or ``<NAME>.md`` with ``--as NAME``, for a second
run of a script that should not replace its main record): the exact command, the machine and
package versions (as in ``RESULTS.md``), the wall time and the script's output, untouched.
A run that fails (exit code above 0, a bad argument too) or shows ``--help`` writes nothing;
one stopped by ``--limit`` or a signal is recorded with the rows it printed.
These are the long runs behind the issues' done-when figures; ``python -m benchmarks --quick``
is the short run of everything.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import DATA  # noqa: E402

import run_all  # noqa: E402
from crowd_keras.files import atomic_write_text  # noqa: E402

RESULTS = HERE / "results"
LIMIT_S = 4 * 3600


def main(argv: list | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prefix, name, limit = [], None, LIMIT_S
    while argv[:1] in (["--as"], ["--limit"]):
        if argv[0] == "--as":
            if len(argv) < 2 or not re.fullmatch(r"[A-Za-z0-9_.-]+", argv[1]) \
                    or argv[1][0] == ".":
                print("record.py: --as needs a plain file name (letters, digits, _ . -)",
                      file=sys.stderr)
                return 2
            name = argv[1]
        else:
            try:
                limit = float(argv[1])
            except (IndexError, ValueError):
                limit = 0
            if not limit > 0:
                print("record.py: --limit needs a number of seconds above 0", file=sys.stderr)
                return 2
        prefix, argv = prefix + argv[:2], argv[2:]
    if not argv or argv[0] not in [s for s, *_ in run_all.SCRIPTS]:
        names = ", ".join(s for s, *_ in run_all.SCRIPTS)
        print(f"usage: python benchmarks/record.py [--as NAME] [--limit SECONDS] SCRIPT "
              f"[ARGS...]; SCRIPT is one of {names}", file=sys.stderr)
        return 2
    script, args = argv[0], argv[1:]
    # a --data among ARGS comes after the default one and wins (argparse keeps the last);
    # the output is printed as it comes (a stopped run's log keeps its rows)
    out, seconds, code = run_all.run_script(script, args, limit,
                                            DATA, echo=True)
    target = RESULTS / f"{name or Path(script).stem}.md"
    # a help text or a failed run (a bad argument: exit code 2) is no measurement and must not
    # replace the record; a run stopped by --limit or a signal (code < 0) keeps its rows
    if code > 0 or {"-h", "--help"} & set(args):
        if code > 0:
            print(out[-2000:], file=sys.stderr)
            print(f"record.py: {script} exited with code {code}; {target} is left as it was",
                  file=sys.stderr)
        return code
    command = " ".join(["python benchmarks/record.py", *prefix, script, *args])
    lines = [f"# `benchmarks/{script}`", "", f"Produced by `{command}` (do not edit by hand).",
             "", *run_all.machine_report(),
             f"- wall time: {seconds:.0f} s" + ("" if code == 0 else f", exit code {code}"),
             "", "```", out.strip(), "```", ""]
    RESULTS.mkdir(exist_ok=True)
    atomic_write_text(target, "\n".join(lines))
    print(f"wrote {target}")
    return code


if __name__ == "__main__":
    sys.exit(main())
