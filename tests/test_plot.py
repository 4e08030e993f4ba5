"""crowd_keras.plot draws what the models learned."""
import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from crowd_keras import plot  # noqa: E402
from crowd_keras.aggregation import DawidSkene  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402


@pytest.fixture(scope="module")
def fitted():
    sim = simulate_crowd(n_items=300, n_classes=3, n_annotators=6, seed=0)
    return sim, DawidSkene().fit(sim.annotations)


def test_confusion_matrix_shows_the_values(fitted):
    _, ds = fitted
    image = plot.confusion_matrix(ds.confusion_matrices_[0], classes=["a", "b", "c"], title="ann 0")
    np.testing.assert_allclose(image.get_array(), ds.confusion_matrices_[0])
    ax = image.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert len(ax.texts) == 9 and ax.get_title() == "ann 0"
    with pytest.raises(ValueError, match="square"):
        plot.confusion_matrix(np.ones((2, 3)))


def test_confusion_matrix_grid_saves_png(fitted, tmp_path):
    _, ds = fitted
    fig = plot.confusion_matrices(ds.confusion_matrices_, names=[f"a{i}" for i in range(6)],
                                  ncols=4, title="annotators")
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    assert len(visible) == 6
    out = tmp_path / "grid.png"
    fig.savefig(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_annotator_quality_and_omega(fitted):
    sim, ds = fitted
    ax = plot.annotator_quality(ds.annotator_quality_, true_accuracy=sim.annotator_accuracy())
    offsets = ax.collections[0].get_offsets()
    np.testing.assert_allclose(offsets[:, 1], ds.annotator_quality_["accuracy"])
    ax = plot.omega_distribution(np.array([0.1, 0.2, 0.9, np.nan]))
    heights = [p.get_height() for p in ax.patches]
    assert sum(heights) == 3  # NaN left out, three values binned


def test_kappa_heat_map_greys_undefined_pairs_and_says_so():
    import pandas as pd

    from crowd_keras import Annotations
    from crowd_keras.agreement import cohen_kappa_matrix
    # a and b share items 0-1 but both always say class 0: p_e = 1, kappa undefined;
    # a and c share item 2 and disagree: kappa defined
    ann = Annotations.from_frame(
        pd.DataFrame({"item": [0, 0, 1, 1, 2, 2], "worker": ["a", "b", "a", "b", "a", "c"],
                      "label": ["x", "x", "x", "x", "x", "y"]}),
        item="item", annotator="worker", label="label")
    kappa = cohen_kappa_matrix(ann)
    assert np.isnan(kappa.loc["a", "b"]) and np.isfinite(kappa.loc["a", "c"])
    ax = plot.kappa_matrix(kappa)
    assert "undefined" in ax.get_title()   # grey is not only "no shared item"
    matplotlib.pyplot.close(ax.figure)


def test_a_long_name_is_cut_in_the_pictures_so_they_stay_small():
    """A 5,000-character annotator name made the tightly saved kappa heat map 35,362 pixels
    square (1.2 gigapixels) and a 12,000-character one ran out of memory."""
    import io

    import matplotlib.pyplot as plt
    import pandas as pd

    long = "w" * 5000
    names = [long, "b", "c"]
    kappa = pd.DataFrame(np.eye(3), index=names, columns=names)
    ax = plot.kappa_matrix(kappa)
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert shown[0] == "w" * (plot.NAME_CHARS - 1) + "…" and shown[1:] == ["b", "c"]
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png", bbox_inches="tight", dpi=100)
    plt.close(ax.figure)
    width, height = np.frombuffer(buffer.getvalue()[16:24], dtype=">u4")   # the PNG header
    assert width < 2000 and height < 2000
    fig = plot.confusion_matrices(np.eye(2)[None], names=[long], classes=["a", "b" * 300])
    assert all(len(t.get_text()) <= plot.NAME_CHARS for ax in fig.axes
               for t in [ax.title, *ax.get_xticklabels()])
    plt.close(fig)
