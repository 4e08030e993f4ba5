

def test_convergence_stops_after_the_first_settled_iteration_and_keeps_the_history():
    from crowd_keras.progress import Convergence

    values = iter([-10.0, -5.0, -4.0, -3.9995, -3.9994, -3.0])
    loop = Convergence(max_iter=10, tol=1e-3)
    for _ in loop:
        loop.record(next(values))
    assert loop.history == [-10.0, -5.0, -4.0, -3.9995] and loop.converged
    # relative: |Δ| < tol·|previous|
    loop = Convergence(max_iter=10, tol=0.2, relative=True)
    for value in loop:
        loop.record([100.0, 50.0, 45.0, 44.0][value])
    assert loop.history == [100.0, 50.0, 45.0]
    # never settled: max_iter iterations, not converged
    loop = Convergence(max_iter=4, tol=1e-9)
    for i in loop:
        loop.record(float(i))
    assert loop.history == [0.0, 1.0, 2.0, 3.0] and not loop.converged


def test_unknown_total_shows_the_count_alone():
    """A total of 0 with steps done (a download without a length) printed "23/1 B (2300%)"."""
    import io

    from crowd_keras.progress import Progress

    out = io.StringIO()
    bar = Progress(0, "downloading x", stream=out, use_tqdm=False, unit="B", interval=0.0)
    bar.update(23)
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("downloading x: 23 B, ") and lines[-1].endswith("done"), lines
    assert "%" not in out.getvalue().split("started")[-1]
    out = io.StringIO()
    with Progress(4, "pushing", stream=out, use_tqdm=False) as bar:
        bar.update(4)
    assert out.getvalue().splitlines()[-1].startswith("pushing: 4/4 it (100%)")
