"""Edge cases of one user path: a token tagger trained from crowd spans through the sequence
crowd layer (``sequences.batches`` → ``CrowdLayer([probs, annotator_ids])`` →
``MaskedMultiCrossEntropy``)."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.errors import CrowdDataError, NotFittedError
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.batches import Vocabulary, windows

TEXTS = ["John Smith lives in New York City today .", "Mary went home",
         "a b c d e f g h i j k l m"]


def crowd_spans():
    spans = pd.DataFrame([(0, "w1", 0, 10, "PER"), (0, "w1", 20, 33, "LOC"),
                          (0, "w2", 0, 4, "PER"), (1, "w2", 0, 4, "PER"),
                          (2, "w3", 0, 1, "PER")],
                         columns=["doc", "annotator", "start", "end", "label"])
    # w3 saw document 0 and w1 document 1 without marking anything: "O", not missing
    return SequenceAnnotations.from_spans(TEXTS, spans, seen=[(0, "w3"), (1, "w1")],
                                          scheme="BIO")


# ----------------------------------------------------------------------------- windows
def test_windows_of_long_documents_keep_missing_and_outside_apart():
    seq = crowd_spans()
    win = windows(seq, np.arange(seq.n_docs), 5)
    assert win.doc.tolist() == [0, 0, 1, 2, 2, 2]           # 9 and 13 tokens: cut in windows
    tags = seq.tags.tolist()
    w3 = np.flatnonzero(seq.annotator_ids == "w3")[0]
    doc1 = win.labels[2]                                     # "Mary went home", 3 tokens
    slots = win.annotators[2]
    assert sorted(slots[slots >= 0].tolist()) == [0, 1]      # w3 did not see it: no slot
    assert w3 not in slots.tolist()
    assert (doc1[3:] == -1).all()                            # padding
    w1 = doc1[:3, slots.tolist().index(0)]
    assert [tags[t] for t in w1] == ["O", "O", "O"]          # saw it, marked nothing


@pytest.mark.parametrize("docs", [np.array([True, False, True]), [0, 3], [-1], [0.5]],
                         ids=["bool-mask", "past-the-end", "negative", "fraction"])
def test_windows_reject_what_is_not_a_document_code(docs):
    # a boolean mask read as codes 1, 0, 1 and a negative code counted from the end gave
    # windows of other documents, silently
    seq = crowd_spans()
    with pytest.raises(CrowdDataError, match="windows"):
        windows(seq, docs, 5)
    with pytest.raises(CrowdDataError, match="subset"):
        seq.subset(docs)


def test_subset_takes_each_document_once():
    # a document twice gave a corpus with two documents of one id
    with pytest.raises(CrowdDataError, match="document code 1 is given 2 times to subset"):
        crowd_spans().subset([1, 0, 1])
    assert crowd_spans().subset([2, 0]).doc_ids.tolist() == [2, 0]


@pytest.mark.parametrize("length", [0, -3, 2.5, True])
def test_windows_need_a_positive_integer_length(length):
    with pytest.raises(ValueError, match="length must be a positive integer"):
        windows(crowd_spans(), [0], length)


def test_vocabulary_before_fit_and_bad_min_count():
    seq = crowd_spans()
    with pytest.raises(NotFittedError, match="not fitted"):
        Vocabulary().encode(seq)
    with pytest.raises(ValueError, match="min_count"):
        Vocabulary(min_count="2").fit(seq)
    with pytest.raises(CrowdDataError, match="boolean"):
        Vocabulary().fit(seq, np.array([True, False, True]))
    assert Vocabulary(min_count=1).fit(seq, [1]).size == 2 + 3    # Mary, went, home


def test_windows_check_per_token_arrays_against_their_documents():
    # the word ids of the whole corpus gathered by windows of a subset read the words of
    # other tokens (silently), and the tagger's outputs of other windows a bare IndexError
    seq = crowd_spans()
    vocab = Vocabulary(min_count=1).fit(seq)
    sub = seq.subset([1, 2])
    win = windows(sub, np.arange(sub.n_docs), 5)
    with pytest.raises(ValueError,
                       match=r"one value per token .*\(16, \.\.\.\), got shape \(25,\)"):
        win.gather(vocab.encode(seq), 0)
    words = win.gather(vocab.encode(sub), 0)                 # the subset's own ids
    assert words.shape == (4, 5) and (words[win.valid] > 1).all()
    with pytest.raises(ValueError, match=r"one output per window and position, \(4, 5, \.\.\.\), "
                                         r"got shape \(4, 6, 3\)"):
        win.scatter(np.zeros((4, 6, 3)), sub.n_tokens)
    with pytest.raises(ValueError, match="n_tokens is 25, but the windows were cut from "
                                         "documents of 16 tokens"):
        win.scatter(np.zeros((4, 5, 3)), seq.n_tokens)
    back = win.scatter(np.eye(3)[words % 3], sub.n_tokens)  # round trip of per-token values
    assert np.array_equal(back.argmax(1), vocab.encode(sub) % 3)


# ----------------------------------------------------------------------------- the layer
keras = pytest.importorskip("keras")
from crowd_keras.layers import CrowdLayer, CrowdRegressionLayer  # noqa: E402
from crowd_keras.losses import MaskedMultiCrossEntropy  # noqa: E402

V, K, A, T, S = 20, 3, 6, 7, 3


@pytest.mark.parametrize("ids_shape", [(), (T, S)], ids=["rank-1", "per-step-ids"])
def test_functional_model_with_wrong_annotator_ids_shape_names_it(ids_shape):
    # a symbolic call does not run call(): rank-1 ids gave an IndexError, per-step ids a
    # model with a wrong (batch, T, T, K) output
    probs = keras.Input((T, K))
    ids = keras.Input(ids_shape, dtype="int32")
    with pytest.raises(ValueError, match=r"annotator_ids of shape \(batch, k\).*got \(None"):
        CrowdLayer(A)([probs, ids])
    layer = CrowdLayer(A)
    layer([probs, keras.Input((S,), dtype="int32")])            # built by a good call
    with pytest.raises(ValueError, match="annotator_ids of shape"):
        layer.compute_output_shape([(None, T, K), (None,) + ids_shape])
    # a built layer on a tagger of other tags (IO → BIO): a raw "Incompatible shapes" error
    # when eager, a model with a wrong output when symbolic
    with pytest.raises(ValueError, match=r"got \(None, 7, 5\) \(layer '\w+' was built for 3 "
                                         r"classes\)"):
        layer([keras.Input((T, 5)), keras.Input((S,), dtype="int32")])
    with pytest.raises(ValueError, match=r"\(2, 7, 5\).*built for 3 classes"):
        layer([np.full((2, T, 5), 0.2, "float32"), np.zeros((2, S), "int32")])
    # the regression form of the same tagger (docs/tutorials/spans.md)
    with pytest.raises(ValueError, match=r"CrowdRegressionLayer expects annotator_ids of shape"):
        CrowdRegressionLayer(A)([keras.Input((T, 1)), ids])
    with pytest.raises(ValueError, match=r"CrowdRegressionLayer expects annotator_ids of shape"):
        CrowdRegressionLayer(A)([np.zeros((2, T, 1), "float32"),
                                 np.zeros((2,) + ids_shape, "int32")])


def tagger_batch():
    words = np.array([[3, 4, 5, 0, 0, 0, 0], [6, 7, 8, 9, 1, 2, 0]], "int32")   # 0 = padding
    ids = np.array([[0, 1, -1], [2, 3, 4]], "int32")
    y = np.random.default_rng(0).integers(0, K, (2, T, S)).astype("int32")
    y[np.broadcast_to(ids[:, None, :] < 0, y.shape)] = -1
    return words, ids, y


def crowd_tagger(seed=0):
    keras.utils.set_random_seed(seed)
    words, ids = keras.Input((T,), dtype="int32"), keras.Input((S,), dtype="int32")
    h = keras.layers.Embedding(V, 8, mask_zero=True)(words)
    probs = keras.layers.Dense(K, activation="softmax")(h)
    return keras.Model([words, ids], CrowdLayer(A, init_scale=2.0)([probs, ids]))


def test_per_step_sample_weights_of_a_tagger():
    # Keras' temporal sample weights (batch, time) raised a raw "Incompatible shapes" error
    words, ids, y = tagger_batch()
    model = crowd_tagger()
    model.compile(keras.optimizers.SGD(0.1), loss=MaskedMultiCrossEntropy())
    per_item = np.array([1.0, 3.0], "float32")
    out = model([words, ids])
    for reduction in ("sum_over_batch_size", "sum", "none", "mean_with_sample_weight"):
        loss = MaskedMultiCrossEntropy(reduction=reduction)
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(loss(y, out, sample_weight=np.repeat(per_item[:, None],
                                                                            T, 1))),
            keras.ops.convert_to_numpy(loss(y, out, sample_weight=per_item)), rtol=1e-6)
    steps = np.arange(1, T + 1, dtype="float32")[None, :].repeat(2, 0)
    model.fit([words, ids], y, sample_weight=steps, epochs=1, verbose=0)
    log_p = keras.ops.convert_to_numpy(keras.ops.log_softmax(model([words, ids]), -1))
    nll = -np.take_along_axis(log_p, np.maximum(y, 0)[..., None], -1)[..., 0]
    seen = (y >= 0) & (words > 0)[..., None]
    expected = (nll * steps[..., None])[seen].sum() / seen.sum()     # Σ w ℓ / n_observed
    padded_weights = np.where(words > 0, steps, 100.0).astype("float32")   # padding: no say
    for w in (steps, padded_weights):
        assert np.isclose(model.evaluate([words, ids], y, sample_weight=w, verbose=0), expected,
                          rtol=1e-5)
    with pytest.raises(ValueError, match=r"sample_weight of shape \(2, 5\) is not per item"):
        MaskedMultiCrossEntropy()(y, out, sample_weight=np.ones((2, 5), "float32"))
    # per slot (one weight per annotation): the same as the per-step weights spread over them
    slots = np.repeat(padded_weights[..., None], S, -1)
    assert np.isclose(model.evaluate([words, ids], y, sample_weight=slots, verbose=0), expected,
                      rtol=1e-5)


def test_temporal_weights_of_the_tagger_alone_as_keras_weighs_them():
    # the tagger on majority-vote tags (examples/pico_tagger.py's baseline): its (batch, time)
    # targets with Keras' temporal weights, against Keras' own sparse cross-entropy
    words, _, _ = tagger_batch()
    keras.utils.set_random_seed(0)
    w_in = keras.Input((T,), dtype="int32")
    tagger = keras.Model(w_in, keras.layers.Dense(K, activation="softmax")(
        keras.layers.Embedding(V, 4, mask_zero=True)(w_in)))
    tags = np.where(words > 0, words % K, -1).astype("int32")
    steps = np.where(words > 0, np.arange(1, T + 1), 0).astype("float32")
    values = []
    for loss, y in ((keras.losses.SparseCategoricalCrossentropy(), np.maximum(tags, 0)),
                    (MaskedMultiCrossEntropy(from_logits=False), tags)):
        tagger.compile("sgd", loss=loss)
        values.append(tagger.evaluate(words, y, sample_weight=steps, verbose=0))
    # both Σ w ℓ / n_observed (Keras counts the unmasked steps)
    assert np.isclose(values[1], values[0], rtol=1e-5)


def test_padded_steps_weights_have_no_say_under_mean_with_sample_weight():
    """The weights of padded steps entered "mean_with_sample_weight"'s divisor: large weights
    there shrank the loss, and Keras' idiom of temporal weights that are 0 at padding
    inflated it (by time × batch / real steps)."""
    from crowd_keras.losses import LabelCountCrossEntropy

    words, ids, y = tagger_batch()
    real = (words > 0).astype("float32")
    steps = np.arange(1, T + 1, dtype="float32")[None, :].repeat(2, 0)
    padded = np.where(real > 0, steps, 100.0).astype("float32")
    out = crowd_tagger()([words, ids])                            # masked (Embedding)
    loss = MaskedMultiCrossEntropy(reduction="mean_with_sample_weight")
    value = float(loss(y, out, sample_weight=steps))
    for w in (padded, steps * real, np.repeat(padded[..., None], S, -1)):
        assert np.isclose(float(loss(y, out, sample_weight=w)), value, rtol=1e-5)
    # weights 1 at the real steps and 0 at padding (Keras' idiom): the same as no weighting
    ones = np.ones_like(real)
    assert np.isclose(float(loss(y, out, sample_weight=real)),
                      float(loss(y, out, sample_weight=ones)), rtol=1e-5)
    keras.utils.set_random_seed(0)
    w_in = keras.Input((T,), dtype="int32")
    probs = keras.Model(w_in, keras.layers.Dense(K, activation="softmax")(
        keras.layers.Embedding(V, 4, mask_zero=True)(w_in)))(words)   # masked
    counts = np.eye(K, dtype="float32")[words % K] * real[..., None]
    count_loss = LabelCountCrossEntropy(reduction="mean_with_sample_weight")
    assert np.isclose(float(count_loss(counts, probs, sample_weight=padded)),
                      float(count_loss(counts, probs, sample_weight=steps * real)), rtol=1e-5)


BACKEND_SCRIPT = '''
import os, sys, tempfile
import numpy as np, keras
sys.path.insert(0, "tests")
from test_sequence_layer_edges import crowd_tagger, tagger_batch, T
from crowd_keras.losses import MaskedMultiCrossEntropy
assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
words, ids, y = tagger_batch()
pad = np.broadcast_to((words == 0)[..., None], y.shape)
model = crowd_tagger()
model.compile(keras.optimizers.SGD(0.1), loss=MaskedMultiCrossEntropy())
steps = np.where(words > 0, np.arange(1, T + 1), 100.0).astype("float32")
model.fit([words, ids], y, sample_weight=steps, epochs=1, verbose=0)
a = model.evaluate([words, ids], y, sample_weight=steps, verbose=0)
b = model.evaluate([words, ids], np.where(pad, 0, y), sample_weight=steps * (words > 0), verbose=0)
assert np.isclose(a, b, rtol=1e-5), (a, b)
path = os.path.join(tempfile.mkdtemp(), "tagger.keras")
model.save(path)
np.testing.assert_allclose(keras.models.load_model(path).predict([words, ids], verbose=0),
                           model.predict([words, ids], verbose=0), atol=1e-6)
print("OK round trip", sys.argv[1])
'''


@pytest.fixture(scope="module")
def tagger_on_other_backend():
    """``backend -> {"round trip"[, "summary"]: output}``: this module's scripts for another
    backend in one fresh process each (conftest.run_parts), run when first asked for (the
    tests that use it are one xdist group)."""
    from conftest import require_module, run_parts

    done = {}

    def run(backend):
        require_module(backend)
        if backend not in done:
            parts = [("round trip", BACKEND_SCRIPT, [backend])]
            if backend == "torch":
                parts.append(("summary", SUMMARY_SCRIPT, [backend]))
            done[backend] = run_parts(parts, KERAS_BACKEND=backend)
        return done[backend]
    return run


@pytest.mark.slow
@pytest.mark.xdist_group("sequence_layer_edges_backends")
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_temporal_weights_and_round_trip_on_other_backends(backend, tagger_on_other_backend):
    out = tagger_on_other_backend(backend)["round trip"]
    assert f"OK round trip {backend}" in out, out


SUMMARY_SCRIPT = """
import sys
import keras
sys.path.insert(0, "tests")
from test_sequence_layer_edges import tagger_crowd_model_without_summary
assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
tagger_crowd_model_without_summary()
print("OK summary", sys.argv[1])
"""


def tagger_crowd_model_without_summary():
    """A CrowdModel tagger fitted on per-step labels (no annotator summary): its
    ``annotator_quality_`` says why."""
    from crowd_keras.models import CrowdModel

    words, ids, y = tagger_batch()
    tagger = keras.Sequential([keras.Input((T,), dtype="int32"), keras.layers.Embedding(V, 4),
                               keras.layers.Dense(K, activation="softmax")])
    model = CrowdModel(tagger, CrowdLayer(A))
    model.compile("sgd")
    model.fit(words, (ids, y), epochs=1, verbose=0)
    assert not hasattr(model, "annotator_quality_")
    with pytest.raises(NotFittedError, match=r"no annotator summary yet: .*\(not a tagger's "
                                             "per-step labels"):
        model.annotator_quality_


def test_a_tagger_crowd_model_says_why_it_has_no_annotator_summary():
    tagger_crowd_model_without_summary()


@pytest.mark.slow
@pytest.mark.xdist_group("sequence_layer_edges_backends")
def test_a_tagger_crowd_model_says_why_it_has_no_annotator_summary_on_torch(
        tagger_on_other_backend):
    # a Keras model is a torch Module there: the property's NotFittedError was replaced by
    # torch's bare "'CrowdModel' object has no attribute 'annotator_quality_'"
    out = tagger_on_other_backend("torch")["summary"]
    assert "OK summary torch" in out, out


@pytest.mark.parametrize("arch", ["lstm", "conv"])
def test_the_pico_tagger_example_builds_its_taggers_without_a_warning(arch):
    # --arch conv masked the padding for Conv1D, which takes no mask: Keras warned, twice a
    # run, that the layer "will therefore destroy the mask information"
    import importlib
    import sys
    import warnings
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    pico_tagger = importlib.import_module("pico_tagger")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tagger = pico_tagger.build_tagger(V, K, T, units=4, arch=arch)
    words, _, _ = tagger_batch()
    assert tuple(tagger(words).shape) == (2, T, K)


class PaddingNoise(keras.layers.Layer):
    """Adds ``shift`` to the logits of the masked steps (keeping the mask)."""

    def __init__(self, shift, **kwargs):
        super().__init__(**kwargs)
        self.shift, self.supports_masking = shift, True

    def call(self, x, mask=None):
        pad = 1.0 - keras.ops.cast(mask, x.dtype)
        return x + self.shift * keras.ops.reshape(pad, keras.ops.shape(pad) + (1, 1))


def test_padded_labels_and_logits_do_not_train():
    words, ids, y = tagger_batch()
    pad = np.broadcast_to((words == 0)[..., None], y.shape)
    weights = []
    for shift, labels in ((0.0, np.where(pad, -1, y)), (50.0, np.where(pad, (y + 1) % K, y)),
                          (-3e4, np.where(pad, 0, y))):
        base = crowd_tagger(seed=3)
        model = keras.Model(base.inputs, PaddingNoise(shift)(base.output))
        model.compile(keras.optimizers.SGD(0.5), loss=MaskedMultiCrossEntropy())
        model.fit([words, ids], labels, epochs=2, batch_size=2, verbose=0, shuffle=False)
        weights.append([keras.ops.convert_to_numpy(w) for w in model.weights])
    for other in weights[1:]:
        for a, b in zip(weights[0], other):
            np.testing.assert_allclose(a, b, atol=1e-6)
