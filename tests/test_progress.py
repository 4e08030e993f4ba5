

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
