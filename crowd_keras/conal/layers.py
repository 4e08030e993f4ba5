"""Common noise adaptation (CoNAL; Chu, Ma & Wang, AAAI 2021).

Annotators share confusions (a small bird against the sky looks like a plane to everyone).
CoNAL models one *common* confusion matrix ``W_g`` shared by all annotators plus one
*individual* matrix ``W_r`` per annotator, mixed per (instance, annotator) by a gate::

    ω_ri = σ(û_r · v̂_i)                       (paper Eq. 3, embeddings L2-normalised)
    h_ri = ω_ri · (p_iᵀ W_g) + (1 − ω_ri) · (p_iᵀ W_r)   → softmax → annotator r's labels

``AnnotatorGate`` computes ω from an instance representation (raw features or any hidden
layer) and an annotator embedding (one-hot identity or annotator features);
``CommonNoiseAdaptation`` holds ``W_g`` and ``W_r`` and mixes them. Both have the two call
forms of :class:`~crowd_keras.layers.CrowdLayer`: all annotators, or the annotator ids of
each item padded with -1 (cost ∝ annotations, not annotators).
"""
from __future__ import annotations

from typing import Any, Optional

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from .._keras_utils import (ChecksIdsAtEntry, KeepsTimeStepMask, apply_annotator_matrices,
                            at_least_float32,
                            checked_annotator_features, checked_codes, checked_finite,
                            checked_ids_shape, checked_int, checked_noise_scale,
                            concrete_values, floor_at, gather_annotators, identity_initializer,
                            is_shape_list, shapes_match, split_pair, weight_in_use)

__all__ = ["AnnotatorGate", "CommonNoiseAdaptation"]


def _inverse_norm(x: Any) -> Any:
    """``1 / ‖x‖`` over the last axis (``x (..., e)`` → ``(...)``), at least in float32, the
    squared norm floored at 10⁻¹² (a zero vector stays finite)."""
    x = at_least_float32(x)
    return ops.rsqrt(floor_at(ops.sum(ops.square(x), axis=-1), 1e-12))


def _l2_normalize(x: Any) -> Any:
    """``x̂ = x / ‖x‖`` over the last axis, at least in float32 (:func:`_inverse_norm`)."""
    x = at_least_float32(x)
    return x * ops.expand_dims(_inverse_norm(x), -1)


@keras.saving.register_keras_serializable(package="crowd_keras")
class AnnotatorGate(ChecksIdsAtEntry, KeepsTimeStepMask, keras.layers.Layer):
    """The gate ω_ri = σ(û_r · v̂_i) of CoNAL (paper Eq. 3).

    ``v_i = W_v x_i + b_v`` from the instance representation ``x_i``; ``u_r = W_u e_r + b_u``
    from annotator ``r``'s features ``e_r`` (``annotator_features``, fixed at construction)
    or, without features, a learned embedding per annotator (the one-hot identity times
    ``W_u``). Both are L2-normalised before the inner product, so ω stays in
    ``[σ(-1), σ(1)] ≈ [0.27, 0.73]`` unless ``scale`` (default 1, as in the paper) widens it.

    Args:
        num_annotators: number of annotators (optional with ``annotator_features``, which
            then must have that many rows).
        embedding_dim: size of u and v (the paper uses 20).
        annotator_features: optional ``(annotators, f)`` array describing each annotator.
        scale: multiplies û·v̂ before the sigmoid.

    Call forms:
        * ``gate(x)``: ``x (batch, d)`` → ω ``(batch, annotators)``.
        * ``gate([x, annotator_ids])``: ids ``(batch, k)`` padded -1 → ω ``(batch, k)``
          (padding slots hold a meaningless value; the loss masks them).
        * ``x (batch, time, d)``, a representation per time step: ω ``(batch, time,
          annotators)`` or ``(batch, time, k)``.
    """

    def __init__(self, num_annotators: Optional[int] = None, embedding_dim: int = 20,
                 annotator_features: Any = None, scale: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        feats = checked_annotator_features(annotator_features, "AnnotatorGate")
        if feats is None and num_annotators is None:
            raise ValueError("AnnotatorGate needs num_annotators or annotator_features")
        if feats is not None and num_annotators is not None and \
                checked_int(num_annotators, "num_annotators") != len(feats):
            raise ValueError(f"AnnotatorGate: num_annotators={num_annotators} but "
                             f"annotator_features has {len(feats)} rows (one per annotator)")
        self.num_annotators = (int(feats.shape[0]) if feats is not None
                               else checked_int(num_annotators, "num_annotators"))
        self.embedding_dim = checked_int(embedding_dim, "embedding_dim")
        self.annotator_features = feats
        self.scale = checked_finite(scale, "scale")
        self.supports_masking = True

    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the shape unless ``x`` is ``(batch, [time,] features)`` (the
        features the layer was built for, once built) and ``annotator_ids`` ``(batch, k)``."""
        x_shape, ids_shape = split_pair(input_shape,
                                        "AnnotatorGate takes x or [x, annotator_ids]")
        d = int(self.instance_kernel.shape[0]) if self.built else None
        if len(x_shape) not in (2, 3) or (x_shape[-1] is None and d is None) or \
                (None not in (d, x_shape[-1]) and x_shape[-1] != d):
            built = "" if d is None else f" (layer {self.name!r} was built for {d} features)"
            raise ValueError("AnnotatorGate expects an instance representation of shape (batch, "
                             f"[time,] {d or 'features'}) with known features, got "
                             f"{x_shape}{built}")
        if ids_shape is not None and len(ids_shape) != 2:
            raise ValueError("AnnotatorGate: annotator_ids must be (batch, k), got shape "
                             f"{ids_shape}")

    def build(self, input_shape: Any) -> None:
        self.check_input_shape(input_shape)
        x_shape = input_shape[0] if is_shape_list(input_shape) else input_shape
        d = int(x_shape[-1])
        e = self.embedding_dim
        self.instance_kernel = self.add_weight(shape=(d, e), initializer="glorot_uniform",
                                               name="instance_kernel")
        self.instance_bias = self.add_weight(shape=(e,), initializer="zeros", name="instance_bias")
        if self.annotator_features is None:
            # per-annotator tables: not autocast (gather_rows), rows cast once gathered
            self.annotator_embedding = self.add_weight(
                shape=(self.num_annotators, e), initializer="glorot_uniform",
                name="annotator_embedding", autocast=False)
        else:
            f = self.annotator_features.shape[1]
            self.annotator_kernel = self.add_weight(shape=(f, e), initializer="glorot_uniform",
                                                    name="annotator_kernel")
            self.annotator_bias = self.add_weight(shape=(e,), initializer="zeros",
                                                  name="annotator_bias")

    def annotator_embeddings(self, annotator_ids: Any = None) -> Any:
        """û, L2-normalised: ``(annotators, embedding_dim)`` for every annotator, or
        ``(batch, k, embedding_dim)`` for padded ``annotator_ids (batch, k)`` (padding slots
        hold annotator 0's).

        The listed rows are gathered before the (row-wise) map and normalisation: a step
        then costs O(batch), and the gradient of a learned embedding touches only the rows
        in the batch (a sparse update with ``LazyAdam``) instead of the whole table.
        Ids given as data are checked as a call's are (a gather past the table is NaN on
        JAX; ``-2`` or ``1.7`` would read another annotator's row).
        """
        ids = concrete_values(annotator_ids)
        if ids is not None:
            checked_codes(ids, self.num_annotators, "annotator id",
                          "AnnotatorGate.annotator_embeddings annotator_ids", "num_annotators")
        return _l2_normalize(self._annotator_rows(annotator_ids))

    def _annotator_rows(self, annotator_ids: Any = None) -> Any:
        """u before normalisation: every annotator's, or the listed ones' (gathered first)."""
        if self.annotator_features is None:
            table = self.annotator_embedding
        else:
            table = ops.convert_to_tensor(self.annotator_features, dtype=self.compute_dtype)
        if annotator_ids is not None:
            table, _ = gather_annotators(table, annotator_ids)
        if self.annotator_features is None:
            return table
        return ops.matmul(table, self.annotator_kernel) + self.annotator_bias

    def call(self, inputs: Any) -> Any:
        indexed = isinstance(inputs, (list, tuple))
        x = inputs[0] if indexed else inputs
        v = ops.matmul(x, self.instance_kernel) + self.instance_bias              # (b, [t,] e)
        # the cosine û·v̂ at least in float32 (see at_least_float32), ω in the compute dtype
        out_dtype, v = v.dtype, at_least_float32(v)
        if not indexed:
            u = self.annotator_embeddings()                                      # (A, e)
            logits = ops.matmul(_l2_normalize(v), ops.transpose(ops.cast(u, v.dtype)))
            return ops.cast(ops.sigmoid(self._scaled(logits)), out_dtype)       # (b, [t,] A)
        u_k = ops.cast(self._annotator_rows(inputs[1]), v.dtype)                 # (b, k, e)
        if len(v.shape) == 3:   # a representation per time step: ω (b, t, k)
            u_k, v = ops.expand_dims(u_k, 1), ops.expand_dims(v, 2)
        else:
            v = ops.expand_dims(v, 1)
        # û·v̂ = (u·v) / (‖u‖ ‖v‖): the norms scale the (b, [t,] k) dot products instead of
        # dividing the (b, k, e) rows and (b, e) vectors (fewer and smaller ops per step, and
        # a cheaper gradient); the dot as a product and a sum, not a batched matmul (as
        # batched_vector_matrix: cheaper for such small vectors on TensorFlow's CPU)
        dots = ops.sum(u_k * v, axis=-1)                                         # (b, [t,] k)
        logits = dots * _inverse_norm(u_k) * _inverse_norm(v)
        return ops.cast(ops.sigmoid(self._scaled(logits)), out_dtype)

    def _scaled(self, logits: Any) -> Any:
        return logits if self.scale == 1.0 else self.scale * logits

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if is_shape_list(input_shape):   # (batch, [time,] k)
            return tuple(input_shape[0][:-1]) + (input_shape[1][1],)
        return tuple(input_shape[:-1]) + (self.num_annotators,)   # (batch, [time,] A)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_annotators=self.num_annotators, embedding_dim=self.embedding_dim,
                      annotator_features=None if self.annotator_features is None
                      else self.annotator_features.tolist(), scale=self.scale)
        return config


@keras.saving.register_keras_serializable(package="crowd_keras")
class CommonNoiseAdaptation(ChecksIdsAtEntry, KeepsTimeStepMask, keras.layers.Layer):
    """Common + individual noise adaptation layers mixed by ω (CoNAL, paper Eq. 1-2).

    Holds the common matrix ``W_g (K, K)`` and the individual matrices ``W_r (A, K, K)``,
    both initialised at the identity (like the crowd layer's MW), and returns the logits
    ``h_ri = ω_ri·(p_iᵀW_g) + (1−ω_ri)·(p_iᵀW_r)`` of each annotation.

    Args:
        num_annotators, num_classes: sizes.
        difference_weight: λ of the paper's regulariser. The paper's loss is
            ``CE − λ Σ_r ‖W_g − W_r‖²``: the term is *subtracted*, so a positive λ rewards a
            common matrix that *differs* from the individual ones (it pushes them apart,
            preventing the degenerate W_g = W_r solution of the paper's Theorem 1). It is
            added to the layer's losses as ``−λ Σ_r ‖W_g − W_r‖²`` (Frobenius, squared).
            Use small values (the authors use 1e-5): the term is unbounded below.
        omega: a fixed ω in [0, 1] for ablations (then no gate input is taken).
        init_scale: the matrices start at ``init_scale · I`` (the authors' code uses 2).
        learning_rate_multiplier: the matrices move this many times faster under Adam than
            the classifier (the variables hold ``W / m``; see
            :class:`~crowd_keras.layers.CrowdLayer`). Larger values help where the
            classifier would otherwise absorb the noise; see ``benchmarks/results/conal.md``.

        gate: an :class:`AnnotatorGate` owned by this layer: ω is then computed from the
            instance representation passed as the last input (``CrowdModel`` passes ``x``).

    Call forms (ω from an :class:`AnnotatorGate` with the same form):
        * ``layer([probs, omega])``: probs ``(batch, K)``, ω ``(batch, A)`` → ``(batch, A, K)``;
        * ``layer([probs, annotator_ids, omega])``: ids ``(batch, k)`` padded -1, ω
          ``(batch, k)`` → ``(batch, k, K)``.
        With a fixed ``omega``: ``layer(probs)`` or ``layer([probs, annotator_ids])``; with
        a ``gate``: ``layer([probs, x])`` or ``layer([probs, annotator_ids, x])``.
        Sequences ``(batch, time, K)`` give ``(batch, time, A|k, K)``; ω is then
        ``(batch, A|k)`` (one gate per sequence) or ``(batch, time, A|k)``.
    """

    def __init__(self, num_annotators: int, num_classes: int, gate: Any = None,
                 difference_weight: float = 0.0, omega: Optional[float] = None,
                 init_scale: float = 1.0, learning_rate_multiplier: float = 1.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        num_annotators = checked_int(num_annotators, "num_annotators")
        num_classes = checked_int(num_classes, "num_classes", minimum=2)
        if omega is not None and not 0.0 <= checked_finite(omega, "omega") <= 1.0:
            raise ValueError(f"a fixed omega must be in [0, 1], got {omega}")
        if omega is not None and gate is not None:
            raise ValueError("give either a gate or a fixed omega, not both")
        if isinstance(gate, dict):
            gate = keras.saving.deserialize_keras_object(gate)
        if gate is not None and not (isinstance(gate, keras.layers.Layer)
                                     and hasattr(gate, "num_annotators")):
            # a string or another layer failed on its missing num_annotators attribute
            raise TypeError("gate must be an AnnotatorGate (a Keras layer with "
                            f"num_annotators) or None, got {type(gate).__name__}")
        if gate is not None and gate.num_annotators != int(num_annotators):
            raise ValueError(f"the gate has {gate.num_annotators} annotators, the layer "
                             f"{num_annotators}")
        self.num_annotators = int(num_annotators)
        self.num_classes = int(num_classes)
        self.gate = gate
        self.difference_weight = checked_finite(difference_weight, "difference_weight")
        self.omega = None if omega is None else float(omega)
        self.init_scale, self.learning_rate_multiplier = checked_noise_scale(
            init_scale, learning_rate_multiplier)
        self.supports_masking = True

    @property
    def uses_features(self) -> bool:
        """With a gate, the layer takes the instance representation (CrowdModel protocol)."""
        return self.gate is not None

    def build(self, input_shape: Any) -> None:
        k, a = self.num_classes, self.num_annotators
        self.check_input_shape(input_shape)
        scale = self.init_scale / self.learning_rate_multiplier   # stored value at init
        # not autocast: call() casts them to the compute dtype where they meet the data, and
        # the difference regulariser reads them in float32 (under mixed_float16 a float16
        # sum over A·K² squares overflows, and a float16 loss cannot join the float32 total)
        self.common_kernel = self.add_weight(
            shape=(k, k), initializer=lambda shape, dtype=None: scale * ops.eye(k, dtype=dtype),
            name="common_kernel", autocast=False)
        self.kernel = self.add_weight(
            shape=(a, k, k), name="kernel", autocast=False,
            initializer=lambda shape, dtype=None: scale * identity_initializer(shape, dtype))
        if self.gate is not None and not self.gate.built:
            self.gate.build(tuple(input_shape[-1]))

    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the layer and the shapes when the probabilities do not have
        ``num_classes`` classes or ω not one value per annotator slot (a backend's matmul or
        broadcast error otherwise, and none at all on a symbolic call)."""
        shapes = [tuple(s) for s in input_shape] if is_shape_list(input_shape) \
            else [tuple(input_shape)]
        probs, ids, omega, rep = self._split(shapes)
        if rep is not None:
            # the gate's representation, and the ω it gives, meet the same checks as an ω
            # given as an input (else a per-step ω on flat probabilities broadcast silently)
            gate_input = rep if ids is None else [rep, ids]
            self.gate.check_input_shape(gate_input)
            omega = tuple(self.gate.compute_output_shape(gate_input))
        if len(probs) not in (2, 3) or probs[-1] not in (None, self.num_classes):
            raise ValueError(f"CommonNoiseAdaptation(num_classes={self.num_classes}) expects "
                             f"probabilities of shape (batch, [time,] {self.num_classes}), got "
                             f"{probs}")
        if ids is not None:
            checked_ids_shape(ids, "CommonNoiseAdaptation")
        if omega is not None:
            width = self.num_annotators if ids is None else ids[-1]
            if None not in (width, omega[-1]) and omega[-1] != width:
                raise ValueError(f"CommonNoiseAdaptation(num_annotators={self.num_annotators}): "
                                 f"omega of shape {omega} does not give one value per annotator "
                                 f"slot; expected (batch, [time,] {width}) for "
                                 + ("every annotator" if ids is None else
                                    f"annotator_ids of shape {ids}"))
            # (batch, width), or (batch, time, width) for sequences: a per-step ω on flat
            # probabilities, or another time axis, broadcast into a wrong output or failed in
            # a backend op at predict time
            lead = probs[:len(omega) - 1]
            if len(omega) not in (2, len(probs)) or not shapes_match(omega[:-1], lead):
                raise ValueError(f"CommonNoiseAdaptation: omega of shape {omega} does not match "
                                 f"probabilities of shape {probs}; expected (batch, {width})"
                                 + (f" or (batch, time, {width}) with the probabilities' batch "
                                    "and time" if len(probs) == 3 else ""))

    def _split(self, inputs: Any) -> tuple:
        """(probs, annotator_ids or None, omega or None, representation or None)."""
        parts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if self.omega is not None and len(parts) in (1, 2):
            return parts[0], (parts[1] if len(parts) == 2 else None), None, None
        if self.omega is None and len(parts) in (2, 3):
            ids = parts[1] if len(parts) == 3 else None
            if self.gate is not None:
                return parts[0], ids, None, parts[-1]
            return parts[0], ids, parts[-1], None
        raise ValueError("CommonNoiseAdaptation takes [probs, omega] or [probs, annotator_ids, "
                         "omega]; with a gate [probs, x] or [probs, annotator_ids, x]; with a "
                         f"fixed omega probs or [probs, annotator_ids]; got {len(parts)} inputs")

    def entry_ids(self, inputs: Any) -> Any:
        return self._split(inputs)[1]

    def call(self, inputs: Any) -> Any:
        probs, ids, omega, rep = self._split(inputs)
        if rep is not None:
            omega = self.gate(rep if ids is None else [rep, ids])
        seq = len(probs.shape) == 3
        m, dt = self.learning_rate_multiplier, probs.dtype
        common_kernel = weight_in_use(self.common_kernel, m, dt)
        common = ops.matmul(probs, common_kernel)                                # (b,[t,]K)
        common = ops.expand_dims(common, -2)                                     # (b,[t,]1,K)
        if ids is None:
            eq = "bti,aij->btaj" if seq else "bi,aij->baj"
            individual = ops.einsum(eq, probs, weight_in_use(self.kernel, m, dt))
        else:
            kernel, _ = gather_annotators(self.kernel, ids)                      # (b,k,K,K)
            individual = apply_annotator_matrices(probs, weight_in_use(kernel, m, dt))
        if omega is None:
            w = ops.cast(self.omega, probs.dtype)
        else:
            w = ops.cast(omega, probs.dtype)
            if seq and len(w.shape) == 2:
                w = ops.expand_dims(w, 1)                                        # (b,1,A|k)
            w = ops.expand_dims(w, -1)                                           # (...,A|k,1)
        if self.difference_weight:
            common_w = ops.cast(self.common_kernel, "float32")
            diff = ops.sum(ops.square(ops.expand_dims(common_w, 0)
                                      - ops.cast(self.kernel, "float32"))) * (m * m)
            self.add_loss(-self.difference_weight * diff)   # in float32 (the matrices in use)
        # ω·common + (1 − ω)·individual, as one product: fewer ops per step
        return individual + w * (common - individual)

    def omega_for(self, x: Any, annotator_ids: Any = None) -> np.ndarray:
        """ω for the given instances (representation ``x``) and annotators, as numpy.

        ``annotator_ids (batch, k)`` padded -1 → ``(batch, k)``; without ids ``(batch, A)``.
        """
        if self.gate is None:
            raise ValueError("this layer has no gate" + ("" if self.omega is None else
                                                         f" (fixed omega={self.omega})"))
        x = np.asarray(x, "float32")
        # the ids as given, not cast to int32 tensors: the gate checks ids that enter as
        # arrays on every backend (an eager JAX or torch tensor is not checked, and a cast
        # would truncate 1.7 to 1)
        out = self.gate(x if annotator_ids is None else [x, np.asarray(annotator_ids)])
        return ops.convert_to_numpy(out)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = list(input_shape) if isinstance(input_shape[0], (list, tuple)) else [input_shape]
        probs = tuple(shapes[0])
        with_ids = len(shapes) == (2 if self.omega is not None else 3)
        width = shapes[1][1] if with_ids else self.num_annotators
        return probs[:-1] + (width, probs[-1])

    # ------------------------------------------------------------------ inspection
    def _as_probabilities(self, kernels: Any) -> np.ndarray:
        """Row ``i`` = softmax of the logits when the classifier is certain of class ``i``."""
        return ops.convert_to_numpy(ops.softmax(ops.cast(kernels, "float32"), axis=-1))

    def common_confusion(self) -> np.ndarray:
        """The learned common confusion matrix as probabilities, ``(K, K)``, rows = truth."""
        self._check_built()
        return self._as_probabilities(
            weight_in_use(self.common_kernel, self.learning_rate_multiplier, "float32"))

    def confusion_matrices(self) -> np.ndarray:
        """The individual confusion matrices as probabilities, ``(A, K, K)``, rows = truth."""
        self._check_built()
        return self._as_probabilities(
            weight_in_use(self.kernel, self.learning_rate_multiplier, "float32"))

    def _check_built(self) -> None:
        if not self.built:
            raise ValueError("the layer is not built yet: call it on data (or fit) first")

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_annotators=self.num_annotators, num_classes=self.num_classes,
                      gate=None if self.gate is None
                      else keras.saving.serialize_keras_object(self.gate),
                      difference_weight=self.difference_weight, omega=self.omega,
                      init_scale=self.init_scale,
                      learning_rate_multiplier=self.learning_rate_multiplier)
        return config
