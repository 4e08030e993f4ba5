"""`DifficultyCompetence`: per-(instance, annotator) confusion matrices (LIA, Eq. 1).

"Learning from Imperfect Annotations: An End-to-End Approach" (the LIA paper, ICLR 2020
submission) gives every pair of an instance ``i`` and an annotator ``j`` its own confusion
matrix, built from a *difficulty* tensor of the instance and a *competence* tensor of the
annotator, both in ``R^{C×C×L}``::

    D_i = d_φ(x_i)          C_j = c_ψ(r_j)          Q_ij = normalise(D_i •₃ C_j)     (Eq. 1)

``[Q_ij]_kl`` is the probability that annotator ``j`` answers ``l`` on instance ``i`` when the
true class is ``k`` (rows = true class, each row a distribution over the observed label).

The inner product along the latent axis is taken between the *non-negative* tensors
``exp(D_i)`` and ``exp(C_j)`` and each row is then normalised (the paper's footnote 2 asks for
non-negative entries and rows summing to one)::

    [Q_ij]_kl = Σ_m exp(D_iklm + C_jklm) / Σ_l' Σ_m exp(D_ikl'm + C_jkl'm)
              = softmax_l( logsumexp_m(D_iklm + C_jklm) )

which is the parametrisation of the authors' code and, for ``L = 1``, the minimax-entropy
model of Zhou et al. (2015) (``Q ∝ exp(σ_i + τ_j)``) that the paper generalises.

``d_φ`` is a small MLP (no hidden layer by default: a Dense map) from an instance
representation: given features ``(batch, d)``, or, feature-free (``num_instances`` set), a
learned embedding of each instance index. ``c_ψ`` maps the annotator representation ``r_j``
(the one-hot identity, i.e. a learned row per annotator, or a row of ``annotator_features``
given at construction, which lets the layer describe annotators it never saw) to ``C_j``.
Both maps end with a bias, so the shared part of every annotator's (instance's) tensor lives
in the bias and the regularised kernels hold the individual deviations.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from .._keras_utils import (ChecksIdsAtEntry, at_least_float32, batch_size_on_device,
                            checked_annotator_features, checked_bool, checked_codes, checked_int,
                            concrete_values, clip_probabilities, gather_annotators,
                            gather_rows, integer_codes, is_shape_list, softmax, split_pair,
                            split_padding)
from ..errors import CrowdDataError
from .model import eq1

__all__ = ["DifficultyCompetence", "AnnotationLogLikelihoods", "InstanceEmbedding"]

_EPS = 1e-7
_FORMS = "DifficultyCompetence takes instance or [instance, annotator_ids]"


def charge_rows(layer: keras.layers.Layer, regularizer: Any, rows: Any, n_rows: int) -> None:
    """Add ``regularizer``'s penalty of a table of ``n_rows`` rows, charged on the rows in use.

    ``regularizer(rows) · n_rows / batch``: the whole table's penalty when the batch holds
    every row once (full batch), its unbiased estimate on a uniform sample of rows. Unlike a
    weight regulariser its gradient touches only the batch's rows, so an optimiser step costs
    O(batch), not O(n_rows) (sparse gradients on TensorFlow).
    """
    if regularizer is None:
        return
    rows = ops.cast(rows, "float32")
    batch = batch_size_on_device(rows)
    layer.add_loss(ops.cast(regularizer(rows), "float32") * (float(n_rows) / batch))


def _checked_sizes(sizes: Any, name: str) -> list:
    """Hidden layer sizes: a sequence of positive integers (a bare ``5`` failed with "'int'
    object is not iterable")."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (list, tuple, np.ndarray)):
        raise TypeError(f"{name} must be a list of layer sizes (e.g. [{sizes!r}] for one "
                        f"hidden layer), got {type(sizes).__name__} {sizes!r}")
    return [checked_int(u, name) for u in sizes]


def check_instance_indices(values: Any, bound: int, argument: str, bound_name: str) -> None:
    """Instance indices entering as data are checked once (no op in a step's graph): integer
    codes in ``0..bound-1`` (no padding marker), else :class:`~crowd_keras.CrowdDataError`."""
    index = concrete_values(values)
    if index is None:
        return
    index = checked_codes(index, bound, "instance index", argument, bound_name)
    if (index < 0).any():
        pos = tuple(int(p) for p in np.argwhere(index < 0)[0])
        raise CrowdDataError(f"{argument}: instance index -1 at {pos}; every row needs an "
                             f"index in 0..{bound_name}-1")


@keras.saving.register_keras_serializable(package="crowd_keras")
class InstanceEmbedding(keras.layers.Layer):
    """A learned row per instance index, regularised on the rows of each batch.

    ``keras.layers.Embedding(input_dim, output_dim)`` for instance indices (one row per
    item: every item of a data set has its own parameters), except that
    ``embeddings_regularizer`` is charged on the rows the batch gathers, scaled to the table
    (:func:`charge_rows`): the same penalty in full batch, and an optimiser step that costs
    O(batch) instead of O(items) when the table has millions of rows.
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.input_dim = checked_int(input_dim, "input_dim")
        self.output_dim = checked_int(output_dim, "output_dim")
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.embeddings_regularizer = keras.regularizers.get(embeddings_regularizer)

    def build(self, input_shape: Any) -> None:
        # a table of rows: not autocast (gather_rows), the rows cast once gathered
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          name="embeddings", autocast=False)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        check_instance_indices(inputs, self.input_dim, "InstanceEmbedding inputs", "input_dim")
        # float indices as int32 first, as Keras' Embedding takes them (not autocast: bfloat16
        # read row 256 for 257)
        return super().__call__(integer_codes(inputs), *args, **kwargs)

    def call(self, inputs: Any) -> Any:
        rows = gather_rows(self.embeddings, ops.cast(inputs, "int32"))
        charge_rows(self, self.embeddings_regularizer, rows, self.input_dim)
        return ops.cast(rows, self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (*tuple(input_shape), self.output_dim)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(input_dim=self.input_dim, output_dim=self.output_dim,
                      embeddings_initializer=keras.initializers.serialize(
                          self.embeddings_initializer),
                      embeddings_regularizer=keras.regularizers.serialize(
                          self.embeddings_regularizer)
                      if self.embeddings_regularizer is not None else None)
        return config


@keras.saving.register_keras_serializable(package="crowd_keras")
class DifficultyCompetence(ChecksIdsAtEntry, keras.layers.Layer):
    """Instance-difficulty × annotator-competence confusion matrices (LIA, paper Eq. 1).

    Args:
        num_classes: ``C``.
        latent_dim: ``L``, the latent size of the difficulty and competence tensors.
        num_annotators: number of annotators (codes ``0..A-1``), one-hot identity ``r_j``;
            not needed when ``annotator_features`` is given.
        annotator_features: optional ``(A, f)`` array, row ``j`` describing annotator ``j``;
            ``c_ψ`` is then a function of these features and generalises to new annotators
            (:meth:`confusions_for_features`).
        num_instances: feature-free use: the instance input is an integer instance index
            ``(batch,)`` (or ``(batch, 1)``) into a learned embedding table of this size.
        instance_embedding_dim: size of those instance embeddings (the paper uses 16).
        instance_hidden, annotator_hidden: hidden units of the ``d_φ`` / ``c_ψ`` MLPs
            (empty: a single Dense map, the paper's linear ``c_ψ``).
        activation: activation of the hidden layers (the authors use ``"selu"``).
        instance_regularizer, annotator_regularizer: regularisers on the kernels (and the
            instance embedding table) of ``d_φ`` / ``c_ψ``; the biases are not regularised.
            The instance embedding table is charged on the rows of each batch, scaled to
            the table (the same penalty in full batch; see :func:`charge_rows`).
        output_mode: ``"probs"`` (default) or ``"log_probs"`` (log Q, numerically safer for a
            likelihood).

    Call forms:
        * ``layer([instance, annotator_ids])``: ``instance`` is the representation
          ``(batch, d)`` (or indices ``(batch,)`` with ``num_instances``), ``annotator_ids``
          ``(batch, k)`` integer codes padded with -1 → ``(batch, k, C, C)``; cost ∝
          ``batch × k``. Padding slots hold annotator 0's matrices (mask them).
        * ``layer(instance)`` → ``(batch, A, C, C)`` for every annotator.
    """

    def __init__(self, num_classes: int, latent_dim: int = 1,
                 num_annotators: Optional[int] = None, annotator_features: Any = None,
                 num_instances: Optional[int] = None, instance_embedding_dim: int = 16,
                 instance_hidden: Sequence[int] = (), annotator_hidden: Sequence[int] = (),
                 activation: str = "selu", instance_regularizer: Any = None,
                 annotator_regularizer: Any = None, output_mode: str = "probs",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        feats = checked_annotator_features(annotator_features, "DifficultyCompetence")
        num_classes = checked_int(num_classes, "num_classes", minimum=2)
        latent_dim = checked_int(latent_dim, "latent_dim")
        num_annotators = checked_int(num_annotators, "num_annotators", allow_none=True)
        num_instances = checked_int(num_instances, "num_instances", allow_none=True)
        instance_embedding_dim = checked_int(instance_embedding_dim, "instance_embedding_dim")
        instance_hidden = _checked_sizes(instance_hidden, "instance_hidden")
        annotator_hidden = _checked_sizes(annotator_hidden, "annotator_hidden")
        if feats is None and num_annotators is None:
            raise ValueError("DifficultyCompetence needs num_annotators or annotator_features")
        if feats is not None and num_annotators is not None and int(num_annotators) != len(feats):
            raise ValueError(f"num_annotators={num_annotators} but annotator_features has "
                             f"{len(feats)} rows")
        if output_mode not in ("probs", "log_probs"):
            raise ValueError(f"output_mode must be 'probs' or 'log_probs', got {output_mode!r}")
        self.num_classes = int(num_classes)
        self.latent_dim = int(latent_dim)
        self.annotator_features = feats
        self.num_annotators = int(len(feats) if feats is not None else num_annotators)
        self.num_instances = None if num_instances is None else int(num_instances)
        self.instance_embedding_dim = int(instance_embedding_dim)
        self.instance_hidden = tuple(int(u) for u in instance_hidden)
        self.annotator_hidden = tuple(int(u) for u in annotator_hidden)
        keras.activations.get(activation)   # an unknown name fails here, not at the first call
        self.activation = activation
        self.instance_regularizer = keras.regularizers.get(instance_regularizer)
        self.annotator_regularizer = keras.regularizers.get(annotator_regularizer)
        self.output_mode = output_mode

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if self.num_instances is not None:   # feature-free: the instance input is an index
            instance = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
            check_instance_indices(instance, self.num_instances,
                                   "DifficultyCompetence instance indices", "num_instances")
            # float indices as int32 before Keras' autocast (see integer_codes)
            as_int = integer_codes(instance)
            if isinstance(inputs, (list, tuple)):
                inputs = type(inputs)([as_int, *inputs[1:]])
            else:
                inputs = as_int
        return super().__call__(inputs, *args, **kwargs)

    @property
    def uses_annotator_features(self) -> bool:
        return self.annotator_features is not None

    # ------------------------------------------------------------------ weights
    def _mlp(self, prefix: str, sizes: Sequence[int], regularizer: Any,
             first_is_table: bool = False) -> list:
        """Kernels and biases of an MLP with layer sizes ``sizes`` (input first); with
        ``first_is_table`` the first kernel is a table of rows (one-hot inputs), gathered and
        not autocast (``gather_rows``)."""
        out = []
        for n, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            kernel = self.add_weight(shape=(a, b), initializer="glorot_uniform",
                                     regularizer=regularizer, name=f"{prefix}_kernel_{n}",
                                     autocast=not (first_is_table and n == 0))
            bias = self.add_weight(shape=(b,), initializer="zeros", name=f"{prefix}_bias_{n}")
            out.append((kernel, bias))
        return out

    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the shape unless the instance input is a representation
        ``(batch, features)`` (the features the layer was built for, once built), or indices
        ``(batch,)`` / ``(batch, 1)`` with ``num_instances``, and ``annotator_ids``
        ``(batch, k)``."""
        inst_shape, ids_shape = split_pair(input_shape, _FORMS)
        if self.num_instances is not None:
            if len(inst_shape) not in (1, 2) or (len(inst_shape) == 2 and inst_shape[-1] != 1):
                raise ValueError("DifficultyCompetence(num_instances=...) expects instance "
                                 f"indices of shape (batch,) or (batch, 1), got {inst_shape}")
        else:
            d = int(self.instance_layers[0][0].shape[0]) if self.built else None
            if len(inst_shape) != 2 or (inst_shape[-1] is None and d is None) or \
                    (None not in (d, inst_shape[-1]) and inst_shape[-1] != d):
                built = "" if d is None else f" (layer {self.name!r} was built for {d} features)"
                raise ValueError("DifficultyCompetence expects an instance representation of "
                                 f"shape (batch, {d or 'features'}), got {inst_shape}{built}; "
                                 "for instance indices set num_instances")
        if ids_shape is not None and len(ids_shape) != 2:
            raise ValueError("DifficultyCompetence: annotator_ids must be (batch, k), got shape "
                             f"{ids_shape}")

    def build(self, input_shape: Any) -> None:
        self.check_input_shape(input_shape)
        inst_shape = tuple(input_shape[0]) if is_shape_list(input_shape) else tuple(input_shape)
        width = self.num_classes * self.num_classes * self.latent_dim
        if self.num_instances is not None:
            self.instance_embedding = self.add_weight(
                shape=(self.num_instances, self.instance_embedding_dim),
                initializer=keras.initializers.RandomNormal(stddev=0.1),
                name="instance_embedding",   # regularised on the rows in use (difficulty)
                autocast=False)              # a table of rows (gather_rows)
            d_in = self.instance_embedding_dim
        else:
            d_in = int(inst_shape[-1])
        self.instance_layers = self._mlp("instance", (d_in, *self.instance_hidden, width),
                                         self.instance_regularizer)
        if self.annotator_features is None:
            # c_ψ(one-hot r_j): the first kernel's row j, so a (A, first) table.
            a_in = self.num_annotators
        else:
            a_in = self.annotator_features.shape[1]
        self.annotator_layers = self._mlp("annotator", (a_in, *self.annotator_hidden, width),
                                          self.annotator_regularizer,
                                          first_is_table=self.annotator_features is None)

    # ------------------------------------------------------------------ tensors
    def _run_mlp(self, h: Any, layers: list, first_is_table: bool = False,
                 ids: Any = None) -> Any:
        for n, (kernel, bias) in enumerate(layers):
            if n == 0 and first_is_table:
                h = ops.cast(gather_rows(kernel, ids), self.compute_dtype) + \
                    ops.cast(bias, self.compute_dtype)
            else:
                h = ops.matmul(h, ops.cast(kernel, h.dtype)) + ops.cast(bias, h.dtype)
            if n < len(layers) - 1:
                h = keras.activations.get(self.activation)(h)
        return h

    def _reshape(self, flat: Any) -> Any:
        """``(n, C·C·L)`` → ``(n, C, C, L)``."""
        c, l = self.num_classes, self.latent_dim
        return ops.reshape(flat, (-1, c, c, l))

    def difficulty(self, instance: Any) -> Any:
        """``D_i = d_φ(x_i)``: ``(batch, C, C, L)`` from the instance input.

        Instance indices (feature-free) given as data are checked as a call's are: a gather
        does not (JAX reads NaN past the table, -1 is its last row on JAX and torch)."""
        if self.num_instances is not None:
            check_instance_indices(instance, self.num_instances,
                                   "DifficultyCompetence.difficulty instance", "num_instances")
        return self._difficulty(instance)

    def _difficulty(self, instance: Any, charge: bool = False) -> Any:
        """:meth:`difficulty` without the check (``call`` checked its inputs); ``charge``:
        add the instance table's penalty on the rows of the batch (:func:`charge_rows`)."""
        if self.num_instances is not None:
            idx = ops.cast(instance, "int32")
            if len(idx.shape) == 2:
                idx = ops.squeeze(idx, axis=-1)
            h = gather_rows(self.instance_embedding, idx)
            if charge:
                charge_rows(self, self.instance_regularizer, h, self.num_instances)
            h = ops.cast(h, self.compute_dtype)
        else:
            h = ops.cast(instance, self.compute_dtype)
        return self._reshape(self._run_mlp(h, self.instance_layers))

    def competence(self, annotator_ids: Any = None) -> Any:
        """``C_j = c_ψ(r_j)`` for the known annotators.

        ``annotator_ids (batch, k)`` (-1 = padding, given annotator 0's tensor) →
        ``(batch, k, C, C, L)``; ``None`` → every annotator, ``(A, C, C, L)``. Ids given as
        data are checked as a call's are (a gather reads NaN past the table on JAX, and
        ``-2`` or ``1.7`` would read another annotator's rows).
        """
        ids = concrete_values(annotator_ids)
        if ids is not None:
            checked_codes(ids, self.num_annotators, "annotator id",
                          "DifficultyCompetence.competence annotator_ids", "num_annotators")
        return self._competence(annotator_ids)

    def _competence(self, annotator_ids: Any = None) -> Any:
        """:meth:`competence` without the check (``call`` checked its inputs)."""
        if self.annotator_features is None:
            if annotator_ids is not None:
                # the batch's rows only (the MLP is row-wise): a step reads and updates
                # O(batch · k) rows of the (A, ·) table, not all A
                safe, _ = split_padding(annotator_ids)
                rows = self._run_mlp(None, self.annotator_layers, first_is_table=True,
                                     ids=ops.reshape(safe, (-1,)))
                c, l = self.num_classes, self.latent_dim
                return ops.reshape(rows, (ops.shape(safe)[0], ops.shape(safe)[1], c, c, l))
            ids = ops.arange(self.num_annotators, dtype="int32")
            return self._reshape(self._run_mlp(None, self.annotator_layers,
                                               first_is_table=True, ids=ids))
        table = self.competence_from_features(self.annotator_features)
        if annotator_ids is None:
            return table
        gathered, _ = gather_annotators(table, annotator_ids)
        return gathered

    def competence_from_features(self, annotator_features: Any) -> Any:
        """``C = c_ψ(r)`` for annotators described by features ``(m, f)`` → ``(m, C, C, L)``."""
        if self.annotator_features is None:
            raise ValueError("this layer identifies annotators one-hot; it was built without "
                             "annotator_features, so it cannot describe new annotators")
        if annotator_features is not self.annotator_features:
            # new annotators, checked as the constructor checks its own (a NaN row gave NaN
            # confusions, a 1-d row was read as one annotator, another width a matmul error)
            given = concrete_values(annotator_features)
            if given is not None:
                feats = checked_annotator_features(
                    given, "DifficultyCompetence.competence_from_features")
                width = self.annotator_features.shape[1]
                if feats.shape[1] != width:
                    raise ValueError(f"DifficultyCompetence.competence_from_features: "
                                     f"annotator_features have {feats.shape[1]} features per "
                                     f"annotator, the layer was built with {width}")
                annotator_features = feats
        r = ops.convert_to_tensor(annotator_features, dtype=self.compute_dtype)
        return self._reshape(self._run_mlp(r, self.annotator_layers))

    def combine(self, difficulty: Any, competence: Any) -> Any:
        """``normalise(exp(D) •₃ exp(C))``: D ``(batch, C, C, L)``, C ``(batch, k, C, C, L)``.

        Returns ``(batch, k, C, C)`` probabilities, or log-probabilities with
        ``output_mode="log_probs"``.
        """
        d = ops.expand_dims(difficulty, 1)                          # (b, 1, C, C, L)
        z = d + ops.cast(competence, d.dtype)
        normalize = ops.log_softmax if self.output_mode == "log_probs" else softmax
        return eq1(z, ops.logsumexp, normalize)                     # (b, k, C, C)

    # ------------------------------------------------------------------ forward
    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 2:
                raise ValueError(f"{_FORMS}, got a list of {len(inputs)} inputs")
            instance, ids = inputs
            if len(ids.shape) != 2:
                raise ValueError(f"annotator_ids must be (batch, k), got shape {ids.shape}")
            return self.combine(self._difficulty(instance, True), self._competence(ids))
        d = self._difficulty(inputs, True)
        comp = ops.expand_dims(self._competence(), 0)               # (1, A, C, C, L)
        return self.combine(d, comp)

    def confusions_for_features(self, instance: Any, annotator_features: Any) -> Any:
        """Q for every pair of ``instance`` rows and annotators described by features.

        ``annotator_features (m, f)`` → ``(batch, m, C, C)`` (or log-probabilities).
        """
        comp = ops.expand_dims(self.competence_from_features(annotator_features), 0)
        return self.combine(self.difficulty(instance), comp)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        c = self.num_classes
        if is_shape_list(input_shape):
            inst, ids = input_shape
            return (inst[0], ids[1], c, c)
        return (input_shape[0], self.num_annotators, c, c)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            num_classes=self.num_classes, latent_dim=self.latent_dim,
            num_annotators=self.num_annotators,
            annotator_features=None if self.annotator_features is None
            else self.annotator_features.tolist(),
            num_instances=self.num_instances, instance_embedding_dim=self.instance_embedding_dim,
            instance_hidden=list(self.instance_hidden),
            annotator_hidden=list(self.annotator_hidden), activation=self.activation,
            instance_regularizer=keras.regularizers.serialize(self.instance_regularizer)
            if self.instance_regularizer is not None else None,
            annotator_regularizer=keras.regularizers.serialize(self.annotator_regularizer)
            if self.annotator_regularizer is not None else None,
            output_mode=self.output_mode)
        return config


@keras.saving.register_keras_serializable(package="crowd_keras")
class AnnotationLogLikelihoods(keras.layers.Layer):
    """Per-item log terms of the LIA likelihood.

    Inputs ``[h (batch, C), log_q (batch, k, C, C), labels (batch, k)]`` (labels padded with
    -1) → ``(batch, 1 + k, C)``: row 0 is ``log h_θ(x_i)_c``, row ``1 + j`` is
    ``log [Q_ij]_{c, y_ij}`` for every true class ``c`` (0 in padding slots).
    """

    def __init__(self, from_logits: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.from_logits = checked_bool(from_logits, "from_logits")

    @staticmethod
    def check_input_shape(input_shape: Any) -> None:
        """ValueError naming the three shapes unless they are ``[(batch, C), (batch, k, C,
        C), (batch, k)]`` (unknown sizes pass): on JAX and torch a label of shape (batch, 1)
        was broadcast over every slot, with no error."""
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 3:
            raise ValueError("AnnotationLogLikelihoods takes [h, log_q, labels], got "
                             f"{input_shape!r}")
        h, q, y = (tuple(s) for s in input_shape)

        def same(a: Any, b: Any) -> bool:
            return a is None or b is None or a == b

        if not (len(h) == 2 and len(q) == 4 and len(y) == 2 and same(q[2], q[3])
                and same(h[1], q[3]) and same(y[1], q[1])
                and same(h[0], q[0]) and same(h[0], y[0]) and same(q[0], y[0])):
            raise ValueError(f"AnnotationLogLikelihoods takes h (batch, C), log_q (batch, k, "
                             f"C, C) and labels (batch, k); got h {h}, log_q {q}, labels {y}")

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, (list, tuple)) and len(inputs) == 3:
            self.check_input_shape([getattr(v, "shape", np.shape(v)) for v in inputs])
        # labels entering as data are checked once (no op in a step's graph)
        if isinstance(inputs, (list, tuple)) and len(inputs) == 3:
            labels = concrete_values(inputs[2])
            if labels is not None:
                checked_codes(labels, inputs[1].shape[-1], "label",
                              "AnnotationLogLikelihoods labels", "classes")
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs: Any) -> Any:
        h, log_q, labels = inputs
        c = log_q.shape[-1]
        # the log at least in float32 (at_least_float32: in float16 a class under the clip
        # got a NaN gradient)
        log_h = (ops.log_softmax(h, axis=-1) if self.from_logits
                 else ops.log(clip_probabilities(at_least_float32(h), _EPS)))
        safe, mask = split_padding(labels)
        # one-hot as a comparison with arange (Keras' torch one_hot copies a host 0 every call)
        hit = ops.equal(ops.expand_dims(safe, -1), ops.arange(c, dtype="int32"))
        onehot = ops.cast(ops.logical_and(hit, ops.expand_dims(mask, -1)), log_q.dtype)
        observed = ops.einsum("bkcl,bkl->bkc", log_q, onehot)
        return ops.concatenate([ops.expand_dims(ops.cast(log_h, log_q.dtype), 1), observed],
                               axis=1)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        self.check_input_shape(input_shape)
        h, log_q, _ = input_shape
        width = None if log_q[1] is None else log_q[1] + 1
        return (h[0], width, h[-1])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(from_logits=self.from_logits)
        return config
