"""Every comparison we claim, in one run: writes ``benchmarks/RESULTS.md`` and PNG plots.

    python -m benchmarks            # full run (long: every seed and epoch of every benchmark)
    python -m benchmarks --quick    # under 10 minutes on 2 cores: fewer seeds and epochs

Part 1 is ``benchmarks/label_models.py``: every label model of the library, majority vote
and the peers (crowd-kit's MajorityVote, DawidSkene and GLAD, Snorkel's LabelModel) on every
set in ``../shared/data``, in the same process, against the gold labels of the items they
aggregate (F1 of the spam class for WRENCH sms). Part 2 runs each benchmark script (layers against crowd-kit's
PyTorch layers, scaling, the papers' protocols) and copies its tables. The machine, the
package versions and whether a GPU was used head the report; nothing in it is edited by hand.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA  # noqa: E402

from benchmarks import label_models  # noqa: E402
from crowd_keras.files import atomic_write_text  # noqa: E402

# (script, arguments of the full run, arguments of the quick run, time limit in seconds)
SCRIPTS = [
    ("aggregation.py", [], ["--annotations", "200000"], 900),
    ("snorkel_label_model.py", ["--repeat", "5"], ["--quick"], 900),   # as its record
    ("crowd_layer.py", [], ["--quick"], 3600),
    ("conal.py", [], ["--quick"], 3600),
    ("mixture_of_groups.py", [], ["--quick"], 3600),
    ("lia.py", [], ["--quick"], 3600),
    ("scale_out.py", [], ["--quick"], 3600),
    ("dask_default.py", [], ["--quick"], 1800),
    ("scaling.py", [], ["--sizes", "100000", "--repeat", "1"], 3600),
    ("encoding.py", [], ["--quick"], 900),
    # the CPU-sized run (a GPU run: python benchmarks/record.py gpu.py)
    ("gpu.py", ["--items", "20000", "--annotators", "10000", "--batch-size", "64",
                "--precisions", "float32", "--repeat", "3", "--alternate", "16"],
     ["--items", "2000", "--annotators", "100", "--precisions", "float32", "--epochs", "2"], 3600),
    ("spans.py", [], ["--quick"], 3600),
    ("pico_label_studio_path.py", ["--server", "--all"], ["--orders", "0"], 1800),
    ("bayesian.py", [], ["--sets", "bluebirds", "dog", "--sizes", "100000", "--reference-sizes",
                         "100000", "--whole-sizes", "100000", "--iters", "2", "--repeat", "1"],
     3600),
    ("agreement.py", [], ["--quick"], 1800),
    ("vote_posterior.py", [], ["--quick"], 1800),
    ("failure_kinds.py", [], ["--quick"], 1800),
    ("fold_draws.py", [], ["--quick"], 1800),
    ("ebcc_restarts.py", [], ["--quick", "--starts", "4", "--keep", "2"], 1800),
    ("gold_designs.py", [], ["--quick"], 1800),
    ("features.py", [], ["--sets", "music", "--seeds", "1"], 1800),
    ("scale_hunt.py", [], ["--quick"], 1800),
    # a real Label Studio server (skipped without the label-studio executable)
    ("label_studio_push.py", [], ["--sizes", "200", "--in-place", "20"], 3600),
]

# every peer a record is measured against is named with its version (cleanlab: features.py;
# dask and distributed: dask_default.py, scale_out.py)
PACKAGES = ["numpy", "scipy", "pandas", "keras", "tensorflow", "torch", "jax", "snorkel",
            "crowdkit", "label_studio_sdk", "sklearn", "cleanlab", "dask", "distributed"]


def gpu_report() -> str:
    """The GPUs of this machine as the NVIDIA driver names them (no framework is initialised:
    a JAX or TensorFlow start here would take GPU memory from the benchmark's process)."""
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "none (CPU only)"
    gpus = [line.strip() for line in res.stdout.splitlines() if line.strip()]
    if res.returncode or not gpus:
        return "none (CPU only)"
    return "; ".join(" (".join(g.split(", ", 1)) + ")" if ", " in g else g for g in gpus)


def machine_report() -> list:
    lines = [f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- machine: {platform.platform()}, {os.cpu_count()} CPU cores, Python "
             f"{platform.python_version()}"]
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
        lines.append(f"- memory: {mem:.0f} GiB")
    except (ValueError, OSError, AttributeError):
        pass
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {importlib.import_module(name).__version__}")
        except Exception:  # noqa: BLE001 - absent or broken optional package
            versions.append(f"{name} (not installed)")
    lines.append("- packages: " + ", ".join(versions))
    lines.append(f"- GPU: {gpu_report()}")
    from crowd_keras.numerics import thread_count   # the environment the run sees
    lines.append(f"- label-model threads: {thread_count()} (CROWD_KERAS_THREADS, else "
                 "OMP_NUM_THREADS, else the cores up to 8)")
    return lines


# ------------------------------------------------------------------ part 1: label models
def label_model_table(data: Path, quick: bool) -> tuple[list, dict]:
    """``benchmarks/label_models.py``'s table (every model, majority vote and the peers on
    every set, one run) and the scores by set and model."""
    scores, times, sets = label_models.run(data, quick)
    return label_models.report(scores, times, sets), scores


def plot_scores(scores: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sets = list(scores)
    labels = list(dict.fromkeys(m for s in sets for m in scores[s]))
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(sets)), 4))
    width = 0.8 / len(labels)
    for j, label in enumerate(labels):
        ax.bar(np.arange(len(sets)) + j * width, [scores[s].get(label, np.nan) for s in sets],
               width, label=label)
    ax.set_xticks(np.arange(len(sets)) + 0.4 - width / 2, sets, rotation=20)
    ax.set_ylabel("accuracy (sms: F1)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, ncol=3, loc="lower left")
    ax.set_title("Label models on the shared data sets")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


SUMMARY = ["majority vote", "auto (default)", "Dawid-Skene", "CrowdLabelModel (default)",
           "GLAD", "MACE", "crowd-kit MV", "crowd-kit DS", "crowd-kit GLAD", "Snorkel LabelModel"]
# the label-model table of the docs site's results page
RESULTS_PAGE = ROOT / "docs" / "results.md"
RESULTS_MARKERS = ("<!-- results:start (written by python -m benchmarks) -->",
                  "<!-- results:end -->")


def summary_table(scores: dict) -> list:
    """One row per set: the defaults a user reaches for, beside the peers."""
    cols = [c for c in SUMMARY if any(c in row for row in scores.values())]
    lines = ["| set | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name, row in scores.items():
        lines.append(f"| {name} | " + " | ".join(f"{row[c]:.3f}" if c in row else "n/a"
                                                 for c in cols) + " |")
    return lines


def update_results_page(table: list, command: str, path: Path = RESULTS_PAGE) -> bool:
    """Replace the results page's table (between ``RESULTS_MARKERS``) with this run's."""
    text = path.read_text(encoding="utf-8")
    start, end = RESULTS_MARKERS
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    block = [start, f"Label models on the shared sets (`{command}`; accuracy of the aggregated "
             "labels against the gold labels of the same items, WRENCH sms: F1 of the spam "
             "class; WRENCH sets are Snorkel label matrices, the others crowd answers):", ""]
    atomic_write_text(path, head + "\n".join(block + table + [end]) + tail)
    return True


# ------------------------------------------------------------------ part 2: scripts
def run_script(script: str, args: list, limit: float, data: Path,
               echo: bool = False) -> tuple[str, float, int]:
    """Run ``benchmarks/<script>`` in its own process: (its output, seconds, exit code).

    The process is killed after ``limit`` seconds; its output up to then is kept, with a line
    saying so, and the code is -1. With ``echo`` each line is also printed as it comes (a long
    record shows its progress, and a log of it keeps the rows of a run that is stopped).
    """
    # one thread (comparable timings); C++ logs quiet unless the caller asks for them (gpu.py's
    # JAX host-sync count reads the transfer guard's log: TF_CPP_MIN_LOG_LEVEL=0)
    env = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    start = time.perf_counter()
    stopped = threading.Event()
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
        proc = subprocess.Popen([sys.executable, str(HERE / script), "--data", str(data), *args],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                cwd=ROOT)

        def stop() -> None:
            stopped.set()
            proc.kill()

        timer = threading.Timer(limit, stop)
        timer.start()
        lines = []
        try:
            for line in proc.stdout:
                lines.append(line)
                if echo:
                    print(line, end="", flush=True)
            code = proc.wait()
        finally:
            timer.cancel()
            proc.stdout.close()
        out = "".join(lines)
        if stopped.is_set():
            out, code = out + f"\n(stopped after {limit:g} s)", -1
        elif code:
            err.seek(0)
            out += "\n" + err.read()[-2000:]
    return out, time.perf_counter() - start, code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--quick", action="store_true", help="fewer seeds/epochs (< 10 min)")
    parser.add_argument("--only", nargs="+", metavar="SCRIPT",
                        help="run only these scripts of part 2 (features.py or features)")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    if args.only:
        # a mistyped name would otherwise run part 1 alone and leave its script out, silently
        names = [s for s, *_ in SCRIPTS]
        args.only = [o if o.endswith(".py") else o + ".py" for o in args.only]
        unknown = [o for o in args.only if o not in names]
        if unknown:
            parser.error(f"--only: no benchmark script {', '.join(unknown)}; the scripts are "
                         f"{', '.join(names)}")
    plots = HERE / "plots"
    plots.mkdir(exist_ok=True)

    started = time.perf_counter()
    command = " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])])
    report = ["# crowd-keras benchmark results", "",
              f"Produced by `{command}` (do not edit by hand).", ""]
    report += machine_report()
    print("part 1: label models on every set", flush=True)
    lines, scores = label_model_table(args.data, args.quick)
    report += ["", "## Label models on every set (`benchmarks/label_models.py`)", "",
               "Accuracy of the aggregated labels against the gold labels of the same items "
               "(F1 of the spam class for WRENCH sms), every model and peer in one run; "
               "fit times and peak memory at scale are in `benchmarks/scaling.py`.", ""] + lines
    summary = summary_table(scores)
    report += ["", "### Summary (accuracy; sms: F1)", ""] + summary
    if args.out == HERE / "RESULTS.md" and update_results_page(summary, command):
        print(f"updated the results table in {RESULTS_PAGE}")
    if plot_scores(scores, plots / "label_models.png"):
        report += ["", "![label models](plots/label_models.png)"]

    for script, full, quick, limit in SCRIPTS:
        if args.only and script not in args.only:
            continue
        if not (HERE / script).exists():
            continue
        flags = quick if args.quick else full
        print(f"part 2: {script} {' '.join(flags)}", flush=True)
        out, seconds, code = run_script(script, flags, limit, args.data)
        status = "" if code == 0 else f" — exit code {code}"
        report += ["", f"## `benchmarks/{script}{(' ' + ' '.join(flags)) if flags else ''}` "
                       f"({seconds:.0f} s{status})", "", out.strip()]
        for png in sorted((HERE / "out").glob("*.png")) if (HERE / "out").exists() else []:
            target = plots / png.name
            target.write_bytes(png.read_bytes())
    report += ["", f"Total time: {time.perf_counter() - started:.0f} s."]
    atomic_write_text(args.out, "\n".join(report) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
