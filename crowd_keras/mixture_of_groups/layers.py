"""`MixtureOfGroups`: annotations explained by M group confusion matrices (Mena & Ñanculef 2019).

On top of a classifier's ``p(z|x)`` (batch, K), the crowd's label distribution is (Eqs. 1-3)

    p(y = j | x) = Σ_m α_m Σ_k p(z = k | x) β_m[k, j] = (p(z|x) · Σ_m α_m β_m)_j

with ``β_m`` row-stochastic (rows = true class; ``softmax`` of ``confusion_logits``) and
``α`` on the simplex (``softmax`` of ``group_logits``). Its parameter count, ``M K² + M``,
does not depend on the number of annotators (Table 1). Train it on label counts per item
with :class:`crowd_keras.losses.LabelCountCrossEntropy` (Eq. 4) — the "global"
scenario, where who gave which label is unknown.

Individual form (``num_annotators=A``, the authors' later "C-MoA" idea): each annotator
has a learned membership ``p(g | a) = softmax(membership_logits[a])`` and

    p(y = j | x, a) = Σ_m p(g = m | a) (p(z|x) · β_m)_j.

It follows the noise-layer protocol of :class:`crowd_keras.models.CrowdModel`: ``layer(probs)``
gives ``(batch, A, K)`` and ``layer([probs, annotator_ids])`` with ids padded with -1 gives
``(batch, k, K)``; the values are log-probabilities, which are valid logits
(``softmax(log p) = p``), for :class:`crowd_keras.losses.MaskedMultiCrossEntropy`
(``from_logits=True``). Cost per step ∝ ``batch × k × M × K``, not ``A``.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from .._keras_utils import (ChecksIdsAtEntry, KeepsTimeStepMask, batched_vector_matrix,
                            checked_finite, checked_int, floored_log, gather_annotators,
                            is_shape_list, softmax, split_pair)

__all__ = ["MixtureOfGroups", "default_group_accuracies"]

_FORMS = "MixtureOfGroups takes probs or [probs, annotator_ids]"
_GLOBAL_TAKES_PROBS = ("the global MixtureOfGroups takes probs only; give num_annotators=... to "
                       "call it with [probs, annotator_ids]")


def default_group_accuracies(num_groups: int, num_classes: int) -> np.ndarray:
    """Diagonal of each group's initial ``β``: from 0.9 (experts) down to 1/K (spammers).

    Different starting matrices break the symmetry between groups (identical groups would
    get identical gradients forever).
    """
    if num_groups == 1:
        return np.array([0.9])
    return np.linspace(0.9, 1.0 / num_classes, num_groups)



@keras.saving.register_keras_serializable(package="crowd_keras")
class MixtureOfGroups(ChecksIdsAtEntry, KeepsTimeStepMask, keras.layers.Layer):
    """Mixture of M group confusion matrices over the classifier's class probabilities.

    Args:
        num_groups: ``M``.
        num_classes: ``K`` (must match the last axis of the input probabilities).
        num_annotators: ``None`` (global form, output ``(batch, [time,] K)`` probabilities)
            or ``A`` (individual form with per-annotator memberships, output log-probabilities
            in the ``CrowdModel`` noise-layer layout, see the module doc).
        confusion_initializer: initializer of ``confusion_logits (M, K, K)``; default:
            log of matrices with diagonal :func:`default_group_accuracies` and the rest
            spread uniformly.
        epsilon: floor under probabilities before the log (individual form), in (0, 1).

    Weights: ``confusion_logits (M, K, K)``; global form ``group_logits (M,)`` (zeros:
    uniform α); individual form ``membership_logits (A, M)`` (zeros: uniform memberships).
    """

    def __init__(self, num_groups: int, num_classes: int, num_annotators: Optional[int] = None,
                 confusion_initializer: Any = None, epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.num_groups = checked_int(num_groups, "num_groups")
        self.num_classes = checked_int(num_classes, "num_classes", minimum=2)
        self.num_annotators = checked_int(num_annotators, "num_annotators", allow_none=True)
        self.confusion_initializer = (None if confusion_initializer is None
                                      else keras.initializers.get(confusion_initializer))
        # the floor under log: 0 or less gives -inf and NaN losses; 1 or more floors every
        # probability to one constant (no gradient)
        self.epsilon = checked_finite(epsilon, "epsilon")   # None failed in float() unnamed
        if not 0 < self.epsilon < 1:
            raise ValueError(f"epsilon must be positive and below 1, got {epsilon!r}")
        self.supports_masking = True

    @property
    def individual(self) -> bool:
        return self.num_annotators is not None

    # ------------------------------------------------------------------ weights
    def _default_confusion(self, shape: tuple, dtype: Any = None) -> Any:
        m, k, _ = shape
        acc = default_group_accuracies(m, k)
        beta = (np.eye(k)[None] * acc[:, None, None]
                + (1 - np.eye(k))[None] * ((1 - acc) / (k - 1))[:, None, None])
        return ops.convert_to_tensor(np.log(beta), dtype=dtype)

    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the shape unless ``probs`` are ``(batch, [time,] num_classes)``
        and ``annotator_ids`` ``(batch, k)``."""
        if is_shape_list(input_shape) and not self.individual:
            raise ValueError(_GLOBAL_TAKES_PROBS)
        probs_shape, ids_shape = split_pair(input_shape, _FORMS)
        if len(probs_shape) not in (2, 3) or (probs_shape[-1] is not None
                                              and int(probs_shape[-1]) != self.num_classes):
            raise ValueError(f"MixtureOfGroups(num_classes={self.num_classes}) expects "
                             f"probabilities of shape (batch, [time,] {self.num_classes}), got "
                             f"{tuple(probs_shape)}")
        if ids_shape is not None and len(ids_shape) != 2:
            raise ValueError(f"MixtureOfGroups: annotator_ids must be (batch, k), got shape "
                             f"{ids_shape}")

    def build(self, input_shape: Any) -> None:
        self.check_input_shape(input_shape)
        m, k = self.num_groups, self.num_classes
        self.confusion_logits = self.add_weight(
            shape=(m, k, k), name="confusion_logits",
            initializer=self.confusion_initializer or self._default_confusion)
        if self.individual:
            # per-annotator tables: not autocast (gather_rows), rows cast once gathered
            self.membership_logits = self.add_weight(shape=(self.num_annotators, m),
                                                     initializer="zeros", name="membership_logits",
                                                     autocast=False)
        else:
            self.group_logits = self.add_weight(shape=(m,), initializer="zeros",
                                                name="group_logits")

    # ------------------------------------------------------------------ forward
    def _betas(self, dtype: Any) -> Any:
        return softmax(ops.cast(self.confusion_logits, dtype), axis=-1)          # (M, K, K)

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, (list, tuple)):
            if not self.individual:
                raise ValueError(_GLOBAL_TAKES_PROBS)
            if len(inputs) != 2:
                raise ValueError(f"{_FORMS}, got a list of {len(inputs)} inputs")
            probs, ids = inputs
            return self._individual(probs, ids)
        if self.individual:
            return self._individual(inputs, None)
        beta = self._betas(inputs.dtype)
        alpha = softmax(ops.cast(self.group_logits, inputs.dtype))
        mixed = ops.einsum("m,mkj->kj", alpha, beta)                  # Σ_m α_m β_m (K, K)
        # cast back: Keras' torch backend computes float64 products in float32
        return ops.cast(ops.matmul(inputs, mixed), inputs.dtype)       # Eq. 3

    def _individual(self, probs: Any, ids: Any) -> Any:
        beta = self._betas(probs.dtype)
        seq = len(probs.shape) == 3
        # Σ_k probs[.., k] β_m[k, j] (batch, [time,] M, K): a tensordot (one 2-D matmul), as
        # Keras' Dense; the einsum on sequences ran as a batched matmul over the items
        per_group = ops.cast(ops.tensordot(probs, beta, axes=[[-1], [1]]), probs.dtype)
        if ids is None:
            member = softmax(ops.cast(self.membership_logits, probs.dtype), axis=-1)  # (A, M)
            out = ops.einsum("btmj,am->btaj" if seq else "bmj,am->baj", per_group, member)
        else:
            if len(ids.shape) != 2:
                raise ValueError(f"annotator_ids must be (batch, k), got shape {ids.shape}")
            # the listed annotators' rows, then the (row-wise) softmax: O(batch) per step, and
            # a gradient on those rows only (a sparse update with LazyAdam)
            logits, _ = gather_annotators(self.membership_logits, ids)   # (batch, k, M)
            chosen = softmax(ops.cast(logits, probs.dtype), axis=-1)
            if seq:
                chosen = ops.expand_dims(chosen, 1)                      # (batch, 1, k, M)
            # Σ_m chosen[.., k, m] per_group[.., m, j]: (batch, [time,] k, K)
            out = batched_vector_matrix(chosen, ops.expand_dims(per_group, -3))
        # at least in float32: in float16 the floor is subnormal and the log's gradient there
        # infinite (NaN gradients once a label's probability falls under it)
        return floored_log(out, self.epsilon)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if is_shape_list(input_shape):
            probs_shape, ids_shape = input_shape
            return tuple(probs_shape[:-1]) + (ids_shape[1], self.num_classes)
        if self.individual:
            return tuple(input_shape[:-1]) + (self.num_annotators, self.num_classes)
        return tuple(input_shape[:-1]) + (self.num_classes,)

    # ------------------------------------------------------------------ inspection
    def _require_built(self) -> None:
        if not self.built:
            raise ValueError("the layer is not built yet: call it on data (or fit) first")

    def group_confusions(self) -> np.ndarray:
        """``β`` as probabilities, (M, K, K), rows = true class."""
        self._require_built()
        return ops.convert_to_numpy(self._betas("float32"))

    def group_probabilities(self) -> np.ndarray:
        """Individual form: ``p(g | a)`` (A, M)."""
        self._require_built()
        if not self.individual:
            raise ValueError("the global MixtureOfGroups has no annotators; use "
                             "mixing_coefficients() or num_annotators=...")
        return ops.convert_to_numpy(ops.softmax(ops.cast(self.membership_logits, "float32"),
                                                axis=-1))

    def mixing_coefficients(self) -> np.ndarray:
        """``α`` (M,): learned (global) or the mean membership over annotators (individual)."""
        self._require_built()
        if self.individual:
            return self.group_probabilities().mean(axis=0)
        return ops.convert_to_numpy(ops.softmax(ops.cast(self.group_logits, "float32")))

    def global_confusion(self) -> np.ndarray:
        """The crowd's matrix ``Σ_m α_m β_m`` (K, K)."""
        return np.einsum("m,mkj->kj", self.mixing_coefficients(), self.group_confusions())

    def confusion_matrices(self) -> np.ndarray:
        """Individual form: each annotator's ``Σ_m p(g=m|a) β_m`` (A, K, K) (section 3.4)."""
        return np.einsum("am,mkj->akj", self.group_probabilities(), self.group_confusions())

    def set_parameters(self, confusions: Any = None, mixing: Any = None,
                       memberships: Any = None) -> None:
        """Load probabilities (e.g. from the EM trainer) into the logits.

        Args:
            confusions: (M, K, K) row-stochastic ``β``; zeros (here and below) are floored
                at ``epsilon`` before the log.
            mixing: (M,) ``α`` (global form).
            memberships: (A, M) ``p(g|a)`` (individual form).
        """
        self._require_built()
        eps = self.epsilon

        def logits(p: Any, shape: tuple, what: str) -> np.ndarray:
            p = np.asarray(p, dtype=np.float64)
            if p.shape != shape:
                raise ValueError(f"{what} must have shape {shape}, got {p.shape}")
            if (p < 0).any() or not np.allclose(p.sum(axis=-1), 1.0, atol=1e-4):
                raise ValueError(f"{what} must be non-negative and sum to 1 along the last axis")
            return np.log(np.maximum(p, eps))

        m, k = self.num_groups, self.num_classes
        if confusions is not None:
            self.confusion_logits.assign(logits(confusions, (m, k, k), "confusions"))
        if mixing is not None:
            if self.individual:
                raise ValueError("the individual form has memberships, not mixing coefficients")
            self.group_logits.assign(logits(mixing, (m,), "mixing"))
        if memberships is not None:
            if not self.individual:
                raise ValueError("memberships need num_annotators=...")
            self.membership_logits.assign(logits(memberships, (self.num_annotators, m),
                                                 "memberships"))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_groups=self.num_groups, num_classes=self.num_classes,
                      num_annotators=self.num_annotators, epsilon=self.epsilon,
                      confusion_initializer=(None if self.confusion_initializer is None else
                                             keras.initializers.serialize(
                                                 self.confusion_initializer)))
        return config
