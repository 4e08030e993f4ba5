"""The benchmark report writer: the results page's table is replaced by the command's output."""
import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import run_all  # noqa: E402


def test_summary_table_has_one_row_per_set_and_known_columns_only():
    scores = {"bluebirds": {"majority vote": 0.759, "Dawid-Skene": 0.898, "other": 0.1},
              "dog": {"majority vote": 0.818}}
    lines = run_all.summary_table(scores)
    assert lines[0] == "| set | majority vote | Dawid-Skene |"
    assert lines[2] == "| bluebirds | 0.759 | 0.898 |"
    assert lines[3] == "| dog | 0.818 | n/a |"


def test_update_results_page_replaces_only_the_marked_block(tmp_path):
    start, end = run_all.RESULTS_MARKERS
    readme = tmp_path / "results.md"
    readme.write_text(f"# title\n\nbefore\n{start}\nold table\n{end}\nafter\n", encoding="utf-8")
    assert run_all.update_results_page(["| set | x |", "|---|---:|", "| a | 0.5 |"],
                                 "python -m benchmarks --quick", readme)
    text = readme.read_text(encoding="utf-8")
    assert "old table" not in text and "| a | 0.5 |" in text
    assert text.startswith("# title\n\nbefore\n") and text.endswith(f"{end}\nafter\n")
    assert "`python -m benchmarks --quick`" in text
    # a page without the markers is left alone
    plain = tmp_path / "PLAIN.md"
    plain.write_text("no markers\n", encoding="utf-8")
    assert not run_all.update_results_page(["| a |"], "cmd", plain)
    assert plain.read_text(encoding="utf-8") == "no markers\n"


def test_the_results_page_has_the_results_markers():
    text = run_all.RESULTS_PAGE.read_text(encoding="utf-8")
    start, end = run_all.RESULTS_MARKERS
    assert text.count(start) == 1 and text.count(end) == 1 and text.index(start) < text.index(end)


def test_run_all_only_refuses_a_name_it_has_no_script_for(tmp_path, monkeypatch, capsys):
    """``--only featurs`` ran part 1 alone and skipped every script, silently; a name is
    checked against the scripts (``.py`` may be left off)."""
    ran = []
    (tmp_path / "features.py").write_text("")       # plots and copies stay in tmp_path
    monkeypatch.setattr(run_all, "HERE", tmp_path)
    monkeypatch.setattr(run_all, "label_model_table", lambda data, quick: ([], {}))
    monkeypatch.setattr(run_all, "plot_scores", lambda scores, path: False)
    monkeypatch.setattr(run_all, "update_results_page", lambda *a, **k: False)
    monkeypatch.setattr(run_all, "run_script",
                        lambda script, flags, limit, data: ran.append((script, flags)) or
                        ("| row |", 0.0, 0))
    out = tmp_path / "report.md"
    with pytest.raises(SystemExit) as stop:
        run_all.main(["--only", "features.py", "featurs", "--out", str(out)])
    assert stop.value.code == 2 and ran == [] and not out.exists()
    assert "featurs" in capsys.readouterr().err
    assert run_all.main(["--quick", "--only", "features", "--out", str(out)]) == 0
    quick = {s: q for s, _, q, _ in run_all.SCRIPTS}
    assert ran == [("features.py", quick["features.py"])]
    assert "benchmarks/features.py" in out.read_text(encoding="utf-8")


def test_machine_report_names_the_version_of_every_peer_a_record_measures():
    """features.md compares with cleanlab's CROWDLAB and dask_default.md / scale_out.md run on
    Dask, but their package lines did not say which version."""
    line = next(x for x in run_all.machine_report() if x.startswith("- packages: "))
    for name in ("cleanlab", "dask", "distributed", "snorkel", "crowdkit"):
        assert f" {name} " in line, name
    cleanlab = pytest.importorskip("cleanlab")
    assert f"cleanlab {cleanlab.__version__}" in line


def test_benchmark_counts_below_one_are_usage_errors(capsys):
    """``--seeds 0`` ran no fit and failed inside the table (features.py: a KeyError after
    loading the sets; spans.py: a TypeError after the label models); ``--repeat 0`` timed
    nothing. They are usage errors now, naming the option."""
    import features
    import spans

    cases = ((features.main, ["--sets", "bluebirds", "--seeds", "0"], "--seeds"),
             (features.main, ["--sets"], "--sets"),
             (spans.main, ["--seeds", "0"], "--seeds"),
             (spans.main, ["--part", "select", "--select-draws", "0"], "--select-draws"))
    for main, argv, option in cases:
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2, argv
        assert option in capsys.readouterr().err
    from common import count

    assert count("3") == 3
    for bad in ("0", "-2", "1.5", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match=">= 1"):
            count(bad)


@pytest.mark.slow
def test_record_writes_the_command_machine_and_output(tmp_path, monkeypatch):
    import record  # noqa: E402 - benchmarks/ is on sys.path above

    from conftest import require_data

    require_data()
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    assert record.main(["no_such_script.py"]) == 2
    assert record.main(["aggregation.py", "--annotations", "20000"]) == 0
    text = (tmp_path / "aggregation.md").read_text(encoding="utf-8")
    assert "Produced by `python benchmarks/record.py aggregation.py --annotations 20000`" in text
    assert "- packages: numpy" in text and "- wall time:" in text
    assert "| " in text.split("```")[1]          # the script's own table, inside the fence


@pytest.mark.slow
def test_record_as_name_keeps_the_main_record(tmp_path, monkeypatch):
    import record  # noqa: E402

    from conftest import require_data

    require_data()
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    assert record.main(["--as"]) == 2
    assert record.main(["--as", "../escape", "aggregation.py"]) == 2
    assert record.main(["--as", "small", "no_such_script.py"]) == 2
    assert not list(tmp_path.iterdir())                  # refused calls write nothing
    assert record.main(["--as", "agg_small", "aggregation.py", "--annotations", "20000"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["agg_small.md"]
    text = (tmp_path / "agg_small.md").read_text(encoding="utf-8")
    assert ("Produced by `python benchmarks/record.py --as agg_small aggregation.py "
            "--annotations 20000`") in text


def test_record_limit_stops_the_script_and_keeps_its_rows(tmp_path, monkeypatch, capsys):
    """``--limit`` kills a script that runs past it; the record keeps what it printed (also
    echoed as it came) and says it was stopped; a bad limit is refused."""
    import record  # noqa: E402
    import run_all

    (tmp_path / "slow.py").write_text(
        "import sys, time\nprint('| row | 1 |', flush=True)\ntime.sleep(120)\n")
    monkeypatch.setattr(run_all, "HERE", tmp_path)
    monkeypatch.setattr(run_all, "SCRIPTS", [("slow.py", [], [], 10)])
    monkeypatch.setattr(record, "RESULTS", tmp_path / "results")
    assert record.main(["--limit", "0", "slow.py"]) == 2
    assert record.main(["--limit", "soon", "slow.py"]) == 2
    assert not (tmp_path / "results").exists()
    capsys.readouterr()
    started = time.perf_counter()
    assert record.main(["--limit", "3", "--as", "slow_stopped", "slow.py"]) == -1
    assert time.perf_counter() - started < 60
    assert "| row | 1 |" in capsys.readouterr().out
    text = (tmp_path / "results" / "slow_stopped.md").read_text(encoding="utf-8")
    assert "Produced by `python benchmarks/record.py --limit 3 --as slow_stopped slow.py`" in text
    assert "| row | 1 |" in text and "(stopped after 3 s)" in text
    assert "exit code -1" in text


def test_record_keeps_the_record_when_the_run_fails_or_shows_its_help(tmp_path, monkeypatch,
                                                                      capsys):
    """A bad argument (argparse's exit code 2), a crash or ``--help`` is no measurement: the
    record in place is left as it was, and the failure is shown."""
    import record  # noqa: E402
    import run_all

    (tmp_path / "bench.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data')\n"
        "p.add_argument('--seeds', type=int, default=3)\na = p.parse_args()\n"
        "print('| row |', a.seeds)\nassert a.seeds < 9, 'too many seeds'\n")
    monkeypatch.setattr(run_all, "HERE", tmp_path)
    monkeypatch.setattr(run_all, "SCRIPTS", [("bench.py", [], [], 60)])
    monkeypatch.setattr(record, "RESULTS", tmp_path / "results")
    (tmp_path / "results").mkdir()
    kept = tmp_path / "results" / "bench.md"
    kept.write_text("the long run\n", encoding="utf-8")
    capsys.readouterr()
    assert record.main(["bench.py", "--seedz", "5"]) == 2
    assert "--seedz" in capsys.readouterr().err
    assert record.main(["bench.py", "--seeds", "9"]) == 1
    assert "too many seeds" in capsys.readouterr().err
    assert record.main(["bench.py", "--help"]) == 0
    assert kept.read_text(encoding="utf-8") == "the long run\n"
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["bench.md"]
    assert record.main(["bench.py", "--seeds", "5"]) == 0      # a good run replaces it
    assert "| row | 5" in kept.read_text(encoding="utf-8")


def test_gpu_host_syncs_are_blamed_on_our_code_only_when_keras_called_it():
    """gpu.py's attribution of a host sync: a layer of ours that Keras' loop called is ours;
    Keras' own work under ``CrowdModel.fit`` (its data feed) is Keras'; neither: the frame."""
    import traceback

    gpu = pytest.importorskip("gpu")

    def stack(*frames):
        return [traceback.FrameSummary(path, line, name) for path, line, name in frames]

    fit = ("/site/crowd_keras/models.py", 159, "fit")
    loop = ("/site/keras/src/trainers/trainer.py", 300, "fit")
    feed = ("/site/keras/src/backend/torch/core.py", 221, "convert_to_tensor")
    mask = ("/site/crowd_keras/_keras_utils.py", 65, "annotator_mask")
    assert gpu._where(stack(fit, loop, feed)) == \
        "keras/src/backend/torch/core.py:221 (convert_to_tensor)"
    assert gpu._where(stack(fit, loop, mask, feed)) == \
        "crowd_keras/_keras_utils.py:65 (annotator_mask)"
    assert gpu._where(stack(("/x/script.py", 3, "<module>"))) == "/x/script.py:3"
    assert gpu._where([]) == "?"


def test_label_model_report_states_the_worst_margin_and_the_sets_near_the_best_peer():
    import label_models

    scores = {"a": {"majority vote": 0.80, "majority vote (random ties)": 0.82,
                    "auto (default)": 0.85, "crowd-kit DS": 0.853, "Snorkel LabelModel": 0.70},
              "b": {"majority vote": 0.90, "majority vote (random ties)": 0.88,
                    "auto (default)": 0.89, "crowd-kit DS": 0.93}}
    sets = {"a": (None, None, "accuracy", 0), "b": (None, None, "accuracy", 12)}
    lines = label_models.report(scores, {}, sets)
    text = "\n".join(lines)
    assert "| − MV | +0.000 | +0.020 | +0.050 | +0.053 | -0.100 |" in text
    assert "Worst auto − majority vote over all sets (the better of the two tie rules): -0.010" in text
    assert "auto below majority vote on: ['b']" in text
    assert "1 of 2 sets (not on ['b'])" in text
    assert "b: 12 dropped" in text


def test_scaling_table_gives_the_cost_per_annotation_and_em_pass(capsys):
    """``scaling.py``'s table: µs per annotation, and per annotation and EM iteration counted
    over all the fit's iterations (the mixture of groups' restarts too); a bound passed is
    named, a model without EM iterations gets a dash."""
    import scaling

    def result(seconds, n_iter, all_iter):
        return {"time": seconds, "peak_mib": 1.0, "accuracy": 0.9, "n_iter": n_iter,
                "all_iter": all_iter}

    rows = [(100_000, {"majority_vote": result(0.01, 0, 0), "dawid_skene": result(0.1, 20, 20),
                       "mixture_of_groups": result(1.2, 30, 80), "lia": result(2.5, 10, 10)})]
    scaling.print_table(rows, ["majority_vote", "dawid_skene", "mixture_of_groups", "lia"])
    out = capsys.readouterr().out
    lines = {line.split(" | ")[2]: line.split(" | ") for line in out.splitlines()
             if line.startswith("| 100,000")}
    assert lines["Dawid-Skene"][5:7] == ["1.00", "0.050"]          # 0.1 s / 1e5 / 20
    assert lines["mixture of groups"][4:7] == ["12.0×", "12.00", "0.150"]   # / 80, not / 30
    assert lines["mixture of groups"][8] == "30 (80 with restarts)"
    assert lines["majority vote"][6] == "–"
    assert "mixture of groups at 100,000 (12×)" in out and "LIA-E at 100,000 (25×)" in out


def test_encoding_rows_report_the_fastest_process_and_the_largest_memory(monkeypatch, capsys):
    """``encoding.py --repeat``: each row's processes run interleaved over the cases (a slow
    spell of the machine hits every case), the seconds are the fastest's and beside them the
    slowest's, the memory the largest; the peer ratio uses the fastest runs."""
    import encoding

    calls = []
    timings = iter(range(1, 1000))

    def fake(case, rows, env):
        calls.append(case)
        run = next(timings)   # later runs slower, except every case's second run: fastest
        seconds = 0.5 if len([c for c in calls if c == case]) == 2 else float(run)
        return {"case": case, "rows": rows, "seconds": seconds, "annotations": rows,
                "peak_rss_mb": float(run), "tracemalloc_mb": 2.0 * run}

    monkeypatch.setattr(encoding, "_measure_in_subprocess", fake)
    encoding.main(["--quick", "--repeat", "3"])
    cases = encoding.CASES + encoding.PEER_CASES
    assert calls == list(cases) * 3                                # interleaved, not grouped
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in out.splitlines()
            if line.startswith("| ") and "1,000,000" in line}
    assert set(rows) == set(cases)
    last = 2 * len(cases)   # index of the third round's first run
    first = rows[cases[0]]
    assert first[2:4] == ["0.50", f"{last + 1:.2f}"]              # fastest, then slowest
    assert first[4:6] == [f"{last + 1:.0f}", f"{2 * (last + 1):.0f} |"]   # the largest
    assert "(1.00x the peer's time)" in out                      # 0.5 s against 0.5 s


def test_gpu_alternating_epochs_run_each_model_in_turn_after_an_uncounted_first_epoch():
    gpu = pytest.importorskip("gpu")
    calls = []
    fits = {key: (lambda key=key: calls.append(key)) for key in ("bare", "crowd", "other")}
    times = gpu.alternating_epochs(fits, 2)
    assert calls == ["bare", "crowd", "other"] * 3   # the compiling epoch, then 2 rounds
    assert {key: len(t) for key, t in times.items()} == {"bare": 2, "crowd": 2, "other": 2}


def test_gpu_ratio_is_the_median_of_the_rounds_ratios_not_the_ratio_of_medians():
    gpu = pytest.importorskip("gpu")
    # rounds: 1/1, 4/1, 3/3 → ratios 1, 4, 1 (median 1); the medians' ratio would be 3
    assert gpu.median_ratio([1.0, 4.0, 3.0], [1.0, 1.0, 3.0]) == 1.0


def test_gpu_step_timer_keeps_each_epochs_median_step(monkeypatch):
    gpu = pytest.importorskip("gpu")
    timer = gpu.StepTimer()
    ticks = iter([0.0, 1.0, 2.0, 12.0, 13.0, 100.0, 100.5, 101.5])   # perf_counter values
    monkeypatch.setattr(gpu.time, "perf_counter", lambda: next(ticks))
    for epoch, steps in enumerate((4, 2)):
        timer.on_epoch_begin(epoch)
        for step in range(steps):
            timer.on_train_batch_begin(step)
            timer.on_train_batch_end(step)
        timer.on_epoch_end(epoch)
    # epoch 0: start 0, ends 1, 2, 12, 13 → steps 1, 1, 10, 1 (the burst of 10 left out);
    # epoch 1: start 100 (its own), ends 100.5, 101.5 → 0.5, 1
    assert timer.medians == [1.0, 0.75]


@pytest.mark.slow
def test_gpu_script_runs_on_a_cpu_and_counts_no_host_syncs_there():
    """Without a GPU, gpu.py still runs (it says so) and counts no host syncs: on torch the
    sync counter needs CUDA, and its per-step medians once switched the counter on."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    env = dict(os.environ, KERAS_BACKEND="torch", OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--items", "400",
         "--annotators", "10", "--alternate", "1", "--precisions", "float32",
         "--layers", "CrowdLayer MW", "--no-peer"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if "No GPU found" not in proc.stdout:
        pytest.skip("a GPU is present: this checks the CPU path")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| float32 |")]
    assert [row.split(" | ")[1] for row in rows] == [
        "CrowdLayer MW", "none (bare classifier, LazyAdam)"]
    assert all(row.rstrip(" |").endswith("n/a") for row in rows)
    assert "Host syncs are counted on a GPU only" in proc.stdout


def test_failure_kinds_table_counts_the_dips_and_takes_the_best_candidate_per_crowd():
    import failure_kinds

    def crowd(kind, seed, default, gains, chosen, n=1000):
        return {"kind": kind, "seed": seed, "scale": 0.5, "n": n, "chosen": chosen,
                "default": default, "gains": {"majority_vote": 0.0, **gains}}

    rows = failure_kinds.table([
        crowd("cliques", 0, 0.010, {"ibcc": -0.02, "ebcc": 0.010}, "ebcc"),
        crowd("cliques", 1, -0.003, {"ibcc": -0.003, "ebcc": 0.004}, "ibcc"),
        crowd("cliques", 2, -0.001, {"ibcc": -0.001, "ebcc": -0.004}, "ibcc"),
        crowd("skewed", 0, 0.0, {"ibcc": 0.02, "ebcc": 0.01}, "majority_vote")])
    assert rows[0].startswith("| kind | scale | items | crowds | default | ibcc | ebcc | oracle")
    cells = [c.strip() for c in rows[2].split("|")[1:-1]]
    assert cells[:5] == ["cliques", "0.5", "1000", "3", "**+0.0020**"]
    assert cells[5:8] == ["-0.0080", "+0.0033", f"{(0.010 + 0.004 + 0.0) / 3:+.4f}"]
    assert cells[8] == "1: -3"             # three items below voting; one item is not a dip
    assert cells[9] == "ibcc 2, ebcc 1"
    assert [c.strip() for c in rows[3].split("|")[1:-1]][8:] == ["none", "majority_vote 1"]


def test_failure_kinds_recall_table_averages_over_the_seeds_of_a_kind():
    import failure_kinds

    y = np.array([0, 0, 0, 1])
    assert failure_kinds.mean_recall(np.array([0, 0, 1, 0]), y, 3) == pytest.approx(1 / 3)
    rows = failure_kinds.recall_table([
        {"kind": "skewed", "scale": 1.0, "learned_gain": 0.02,
         "recall": {"vote": 0.8, "default": 0.9, "learned": 0.6}},
        {"kind": "skewed", "scale": 1.0, "learned_gain": 0.0,
         "recall": {"vote": 0.7, "default": 0.8, "learned": 0.7}}])
    assert rows[2] == "| skewed | 1.0 | 0.7500 | 0.8500 | 0.6500 | +0.0100 |"
    # below voting by more than one item: in accuracy 1/n, in mean recall one item of the
    # smallest class
    crowd = {"n": 100, "default": -0.011, "learned_gain": -0.01, "recall_item": 0.05,
             "recall": {"vote": 0.8, "default": 0.76, "learned": 0.74}}
    assert failure_kinds.below_voting(crowd, "default") == (True, False)
    assert failure_kinds.below_voting(crowd, "learned") == (False, True)


def test_fold_draws_counts_dips_per_draw_and_what_each_switch_did():
    import fold_draws

    def crowd(gains, rules, n=1000):
        return {"n": n, "names": ["majority_vote", "ibcc", "dawid_skene@3", "ebcc"],
                "gains": gains, "rules": rules}

    results = [crowd([0, -30, 5, -2], {"old": [1, 3, 0], "new": [3, 3, 3]}),
               crowd([0, 10, 12, 4], {"old": [2, 2, 2], "new": [3, 2, 2]})]
    # old: gains (-30 - 2 + 0) / 3 and 12 items per 1,000; two draws more than one item
    # below voting, on one crowd; the first crowd's choice varies, the second's does not
    assert fold_draws.summary(results, "old") == \
        f"| old | {np.mean([-32 / 3000, 12 / 1000]):+.4f} | 2 of 6 | 1 | 1 |"
    assert fold_draws.summary(results, "new") == \
        f"| new | {np.mean([-2 / 1000, (4 + 24) / 3000]):+.4f} | 3 of 6 | 1 | 1 |"
    rows = fold_draws.switches(results, "old", "new")
    assert rows[2:] == ["| ibcc | ebcc | 1 | 1 | 0 | 0 | +28 | +28 |",
                        "| majority_vote | ebcc | 1 | 0 | 1 | 0 | -2 | -2 |",
                        "| dawid_skene | ebcc | 1 | 0 | 1 | 0 | -8 | -8 |"]


def test_ebcc_restarts_compares_one_start_the_best_elbo_and_the_mean_posterior():
    import ebcc_restarts

    def crowd(kind, elbo, right, mean_right, vote=100, n=200):
        return {"kind": kind, "seed": 0, "scale": 1.0, "n": n, "vote": vote, "elbo": elbo,
                "right": right, "mean_right": dict(enumerate(mean_right, start=1))}

    # crowd a: the best ELBO of two is start 1 (102 right); of the starts 2-3, start 3 (99)
    results = [crowd("a", [-5.0, -1.0, -3.0, -2.0], [98, 102, 97, 99], [98, 101, 100, 100]),
               crowd("b", [-1.0, -1.0, -4.0, -0.5], [105, 90, 96, 101], [105, 99, 99, 100])]
    assert ebcc_restarts.picks(results[0], [2]) == \
        {"one start": 98, "best ELBO of 2": 102, "mean of 2": 101}
    # an ELBO tie keeps the first start
    assert ebcc_restarts.best_elbo(results[1], 0, 2) == 105
    lines = ebcc_restarts.table(results, [2])
    assert lines[-2] == f"| all | - | 2 | {np.mean([-2, 5]) / 200:+.4f} | " \
        f"{np.mean([2, 5]) / 200:+.4f} | {np.mean([1, -1]) / 200:+.4f} |"
    assert lines[-1].endswith("one start 1, best ELBO of 2 0, mean of 2 0")
    rows = ebcc_restarts.paired(results, [2])
    assert rows[2] == "| one start | | | | 9.50 |"              # |98-102|, |105-90|
    # +4 and 0 items against one start; picks 102 vs 99 and 105 vs 101 apart
    assert rows[3] == "| best ELBO of 2 | 1 | 0 | +2.00 (± 1.41) | 3.50 |"
    assert rows[4] == "| mean of 2 | 1 | 1 | -1.50 (± 3.18) |  |"       # +3 and -6


def test_gold_designs_draws_random_and_class_balanced_gold():
    import gold_designs

    y = np.array([0] * 90 + [1] * 7 + [2] * 3)
    rows = gold_designs.draw_gold(y, "random", 20, [1, 2])
    assert len(np.unique(rows)) == 20 and (np.diff(rows) > 0).all()
    np.testing.assert_array_equal(rows, gold_designs.draw_gold(y, "random", 20, [1, 2]))
    assert not np.array_equal(rows, gold_designs.draw_gold(y, "random", 20, [1, 3]))
    balanced = gold_designs.draw_gold(y, "balanced", 18, [1, 2])
    # six of each class, as far as a class has items: all three of class 2
    assert np.bincount(y[balanced]).tolist() == [6, 6, 3]
    crowd = {"random": {"gains": {"gold": -0.011, "uniform": -0.01}, "item": 0.01},
             "balanced": {"gains": {"gold": 0.0, "uniform": -0.2}, "item": 0.05}}
    assert gold_designs.below(crowd, "random", "gold")
    assert not gold_designs.below(crowd, "random", "uniform")     # one item is not a dip
    assert gold_designs.below(crowd, "balanced", "uniform")



def test_a_benchmarks_data_folder_is_crowd_keras_data_as_for_the_tests(tmp_path):
    # they read ../shared/data beside the clone only: a clone elsewhere with
    # CROWD_KERAS_DATA set (as the tests take it) ran them on a missing folder
    from conftest import subprocess_env

    code = ("import argparse, runpy, sys\n"
            "def shown(parser, *args, **kwargs):\n"
            "    print(parser.get_default('data')); sys.exit(0)\n"
            "argparse.ArgumentParser.parse_args = shown\n"
            "sys.argv = ['aggregation.py']\n"
            f"runpy.run_path({str(ROOT / 'benchmarks' / 'aggregation.py')!r}, run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=subprocess_env(CROWD_KERAS_DATA=str(tmp_path)), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(tmp_path)
    # and every script's --data default is that folder, not a path of its own
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        if script.name != "common.py":
            assert '"shared" / "data"' not in text, script.name
        for line in text.splitlines():
            if '"--data"' in line and "default=" in line:
                assert "default=DATA)" in line or "default=None" in line, (script.name, line)
