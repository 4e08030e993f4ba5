"""Token Dawid-Skene with a word-window text prior learned inside EM (Raykar et al. 2010).

The crowd's tags and the words are two views of the same truth: a token that no annotator
covered confidently but whose words read like a participant description ("patients with
...") is more likely inside a span. :class:`WindowPriorDawidSkene` learns a small text
model from the crowd's own posteriors and feeds it back as the per-token prior of
:class:`~.models.TokenDawidSkene`, in the way Raykar et al. (JMLR 2010, §2) alternate a
classifier and the annotators' confusions, with two changes for spans:

* the text model is a multinomial logistic regression on the words in a window of
  ``±window`` tokens around each token (one-hot word ids per offset, lower case, digits read
  as ``0``; :class:`~.batches.Vocabulary`), fitted on soft labels (the posteriors) with an L2
  penalty by L-BFGS;
* it is **cross-fitted**: the documents are split into ``n_folds`` folds and a token's prior
  comes from the model fitted on the other folds, so the prior never restates the crowd
  labels of the token it is a prior for (a model fitted on all documents would learn those
  labels word by word and add nothing but over-confidence).

EM: start from token Dawid-Skene without a prior; then ``n_rounds`` times: fit the text
models on the current posteriors, then token Dawid-Skene with that prior (started from the
current posteriors). Decoding as :class:`~.models.TokenDawidSkene` (tempered by
``temperature``). New documents get the prior of a text model fitted on all documents.

Given the :class:`~.labeling_functions.TokenVotes` of labeling functions (and any human
annotations), the inner model is :class:`~.weak.AbstainDawidSkene` (an abstain an outcome of
its own) and the text model learns from every token a human tagged or a function ran on: the
same prior for crowds, functions, or both (``benchmarks/results/spans.md``, step 6).

With ``word_forms`` the text model also reads each word's last three characters and its
shape at every offset (``Xx``, ``0.0``; :func:`~.batches.token_forms`): most words that
describe participants are rare, and a rare word is one out-of-vocabulary id to the words'
channel (``benchmarks/results/spans.md``, amendment 3).

Shapes: T tokens, K tags, V words (S suffixes, H shapes), F = (2·window + 1)·V + 1 features
(``+ (2·window + 1)·(S + H)`` with ``word_forms``).
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from ..arguments import check_count, check_number
from ..codes import ids_array
from ..errors import CrowdDataError
from ..numerics import id_keys, softmax_rows
from .annotations import SequenceAnnotations
from .base import SequenceLabelModel
from .batches import Vocabulary
from .labeling_functions import TokenVotes
from .models import TokenDawidSkene
from .tokens import token_strings
from .weak import AbstainDawidSkene

__all__ = ["WindowPriorDawidSkene", "window_features", "fit_soft_logistic", "document_folds",
           "word_texts"]


def document_folds(texts: Any, n_folds: int, seed: int, doc_ids: Any = None) -> np.ndarray:
    """(D,) the fold of each document: the documents ranked by the key of their text and
    ``seed`` (:func:`~crowd_keras.numerics.id_keys`) take the folds in turn. The folds are as
    even as they can be, and the split depends on the texts alone: not on the order in which
    the documents come (an export's task order) nor on what they are called (task ids or
    document ids), so the same crowd gives the same fit however it is handed over.

    Documents with the same text share a key: with ``doc_ids`` (D,) they are ranked by their
    ids (so that split too is the same in any order), else by position."""
    texts = np.asarray(texts, dtype=object)
    key = id_keys(texts, seed)
    if doc_ids is None:
        order = np.argsort(key, kind="stable")
    else:
        order = np.lexsort((_id_ranks(doc_ids, len(texts)), key))
    fold = np.empty(len(texts), dtype=np.int64)
    fold[order] = np.arange(len(texts)) % n_folds
    return fold


def word_texts(seq: SequenceAnnotations) -> list:
    """(D,) each document's tokens joined by single spaces: what the text model reads, so the
    folds keyed on it are the same whatever whitespace the text has between its words (LF or
    CRLF line ends, tabs, no-break spaces) and whether the crowd came as character offsets
    or as token lists."""
    words = token_strings(seq.texts, seq.tokens)
    ptr = seq.tokens.doc_ptr
    return [" ".join(words[ptr[d]:ptr[d + 1]].tolist()) for d in range(seq.n_docs)]


def _id_ranks(doc_ids: Any, n: int) -> np.ndarray:
    """(n,) each id's rank in sorted order (ids of mixed types: by type name, then value)."""
    ids = ids_array(doc_ids)
    if ids.shape != (n,):
        raise ValueError(f"doc_ids must be one id per text ({n}), got shape {ids.shape}")
    try:
        order = np.argsort(ids, kind="stable")
    except TypeError:      # 7 and "d7": no order between them, so one by type first
        order = np.array(sorted(range(n), key=lambda i: (type(ids[i]).__name__, ids[i])),
                         dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


def window_features(word_ids: np.ndarray, seq: SequenceAnnotations, window: int,
                    n_words: int, extra: Sequence[Tuple[np.ndarray, int]] = ()
                    ) -> sp.csr_matrix:
    """(T, F) one-hot words at offsets ``-window..window`` (a boundary id past the document's
    edges) and a bias column; F = (2·window + 1)·(n_words + 1) + 1.

    ``extra``: more channels ``(ids (T,), n_ids)`` read at the same offsets (such as the
    words' suffixes and shapes), each adding (2·window + 1)·(n_ids + 1) columns before the
    bias column."""
    T = seq.n_tokens
    pos, lens = seq.tokens.position, seq.tokens.lengths[seq.tokens.doc]
    cols, first = [], 0
    for ids, n_ids in [(word_ids, n_words), *extra]:
        width = n_ids + 1                    # id n_ids = outside the document
        for o in range(-window, window + 1):
            inside = (pos + o >= 0) & (pos + o < lens)
            src = np.clip(np.arange(T) + o, 0, max(T - 1, 0))
            cols.append(first + np.where(inside, ids[src], n_ids))
            first += width
    cols.append(np.full(T, first))
    col = np.stack(cols, 1).ravel()
    per_token = len(cols)
    indptr = np.arange(0, T * per_token + 1, per_token)
    return sp.csr_matrix((np.ones(len(col)), col, indptr), shape=(T, first + 1))


def fit_soft_logistic(X: sp.csr_matrix, q: np.ndarray, l2: float, max_iter: int,
                      w0: Any = None) -> np.ndarray:
    """(F, K) weights of a multinomial logistic regression fitted to soft labels ``q`` (n, K):
    minimises ``-Σ_t Σ_k q_tk log softmax(X W)_tk + ½·l2·‖W‖²`` (the bias column unpenalised)
    by L-BFGS."""
    f, k = X.shape[1], q.shape[1]
    XT = X.T.tocsr()
    pen = np.full((f, 1), l2)
    pen[-1] = 0.0

    def loss(w: np.ndarray) -> tuple:
        W = w.reshape(f, k)
        logits = np.asarray(X @ W)
        p, log_norm = softmax_rows(logits)
        value = log_norm @ q.sum(1) - np.einsum("nk,nk->", q, logits) \
            + 0.5 * float((pen * W * W).sum())
        grad = np.asarray(XT @ (p * q.sum(1, keepdims=True) - q)) + pen * W
        return value, grad.ravel()

    start = np.zeros(f * k) if w0 is None else np.asarray(w0, np.float64).ravel()
    res = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    return res.x.reshape(f, k)


class WindowPriorDawidSkene(SequenceLabelModel):
    """Token Dawid-Skene with a cross-fitted word-window prior (module docstring).

    Args:
        window: words on each side of the token.
        min_count: words seen fewer times are one out-of-vocabulary id.
        l2: L2 penalty of the text model (per weight, against a loss summed over tokens).
        n_folds: document folds of the cross-fitting (at least 2).
        n_rounds: text-model / Dawid-Skene alternations.
        text_max_iter: L-BFGS iterations per text-model fit.
        prior_strength, temperature, smoothing, max_iter, tol: of the inner
            :class:`~.models.TokenDawidSkene`.
        seed: the fold split (:func:`document_folds`).
        word_forms: the text model also reads each word's suffix (last three characters) and
            shape (:func:`~.batches.token_forms`) at every offset: rare words, one
            out-of-vocabulary id each to the words' channel, keep their form.

    ``fit(sequences)`` (human annotations) or ``fit(votes)`` (the ``TokenVotes`` of
    :func:`~.labeling_functions.apply_lfs`: functions, with any human annotations; the
    inner model is then :class:`~.weak.AbstainDawidSkene`, which has no ``temperature``).

    Attributes (besides the common ones): model_ (the final inner model: TokenDawidSkene, or
    AbstainDawidSkene for votes), token_prior_ (T, K) the cross-fitted prior, vocabulary_,
    form_vocabularies_ (the suffixes' and shapes' :class:`~.batches.Vocabulary`, or ``()``),
    window_ (the window the text weights were fitted with),
    text_weights_ (F, K) of the text model fitted on all documents, n_iter_ (inner EM
    iterations of the last round), votes_ (the ``TokenVotes`` fitted, or None).
    """

    def __init__(self, window: int = 2, min_count: int = 2, l2: float = 1.0, n_folds: int = 2,
                 n_rounds: int = 2, text_max_iter: int = 100, prior_strength: float = 3.0,
                 temperature: float = 1.0, smoothing: float = 0.01, max_iter: int = 100,
                 tol: float = 1e-7, seed: int = 0, word_forms: bool = False) -> None:
        self.window = window
        self.min_count = min_count
        self.l2 = l2
        self.n_folds = n_folds
        self.n_rounds = n_rounds
        self.text_max_iter = text_max_iter
        self.prior_strength = prior_strength
        self.temperature = temperature
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.word_forms = word_forms

    def _inner_fit(self, data: Any, init: Any = "mv", prior: Any = None) -> tuple:
        """The inner model fitted on ``data`` (sequences or votes) with the token ``prior``,
        and its untempered posteriors (T, K), the text model's soft labels."""
        if isinstance(data, TokenVotes):   # its EM starts from the vote shares
            model = AbstainDawidSkene(prior_strength=self.prior_strength,
                                      smoothing=self.smoothing, max_iter=self.max_iter,
                                      tol=self.tol).fit(data, token_prior=prior)
            return model, model.posteriors_
        model = TokenDawidSkene(prior_strength=self.prior_strength, temperature=self.temperature,
                                smoothing=self.smoothing, max_iter=self.max_iter, tol=self.tol,
                                init=init).fit(data, token_prior=prior)
        return model, model.em_posteriors_

    def _features(self, seq: SequenceAnnotations) -> sp.csr_matrix:
        extra = [(v.encode(seq).astype(np.int64), v.size) for v in self.form_vocabularies_]
        return window_features(self.vocabulary_.encode(seq).astype(np.int64), seq,
                               self.window_, self.vocabulary_.size, extra)

    def fit(self, sequences: Any, token_prior: Any = None) -> "WindowPriorDawidSkene":
        self._check_settings()
        name = type(self).__name__
        votes = sequences if isinstance(sequences, TokenVotes) else None
        check_count(self.n_folds, f"{name} n_folds", 2)
        check_count(self.window, f"{name} window")
        check_count(self.n_rounds, f"{name} n_rounds")
        check_count(self.text_max_iter, f"{name} text_max_iter")
        check_count(self.min_count, f"{name} min_count")   # NaN: every word out of vocabulary
        check_number(self.l2, f"{name} l2")
        temperature = check_number(self.temperature, f"{name} temperature")
        if temperature == 0:   # else named by the inner model, or by none at all
            raise ValueError(f"{name} temperature must be positive, got {self.temperature!r}")
        if votes is not None and temperature != 1:
            raise ValueError(f"{name}(temperature={self.temperature!r}) tempers the annotators' "
                             "evidence of token Dawid-Skene; on labeling-function votes the "
                             "inner model is AbstainDawidSkene, which has no temperature: "
                             "leave temperature=1")
        seq = (self._check_sequences(votes.sequences) if votes is not None else
               self._check_fit_sequences(sequences))
        if token_prior is not None:
            raise ValueError("WindowPriorDawidSkene learns its own token prior; use "
                             "TokenDawidSkene().fit(sequences, token_prior=...) for a given one")
        self.window_ = int(self.window)       # the text weights' window, whatever set_params does
        data = seq if votes is None else votes
        # the tokens with evidence: a human tag, or a function run on their document
        seen = seq.annotations.annotations_per_item() > 0
        if votes is not None:
            seen |= votes.applied[:, seq.tokens.doc].any(axis=0)
        evidence = np.zeros(seq.n_docs, dtype=bool)
        evidence[seq.tokens.doc[seen]] = True
        # the words, and the folds dealt, among the documents with evidence alone: a task
        # nobody annotated (an export's unlabelled tasks) must not move the others' tags
        learned = np.flatnonzero(evidence)
        self.vocabulary_ = Vocabulary(self.min_count).fit(seq, learned)
        self.form_vocabularies_ = tuple(Vocabulary(self.min_count, form).fit(seq, learned)
                                        for form in (("suffix", "shape") if self.word_forms
                                                     else ()))
        X = self._features(seq)
        texts = word_texts(seq)
        fold = np.empty(seq.n_docs, dtype=np.int64)
        for docs in (np.flatnonzero(evidence), np.flatnonzero(~evidence)):
            fold[docs] = document_folds([texts[d] for d in docs], int(self.n_folds),
                                        int(self.seed), seq.doc_ids[docs])
        tok_fold = fold[seq.tokens.doc]
        model, post = self._inner_fit(data)
        prior = np.full((seq.n_tokens, seq.n_tags), np.nan)
        weights = [None] * int(self.n_folds)
        for _ in range(int(self.n_rounds)):
            for f in range(int(self.n_folds)):
                train = seen & (tok_fold != f)
                if not train.any():
                    continue
                weights[f] = fit_soft_logistic(X[train], post[train], self.l2,
                                               self.text_max_iter, weights[f])
                rows = tok_fold == f
                prior[rows] = softmax_rows(np.asarray(X[rows] @ weights[f]))[0]
            model, post = self._inner_fit(data, init=post, prior=prior)
        self.model_ = model
        self.votes_ = votes
        self.token_prior_ = prior
        self.text_weights_ = fit_soft_logistic(X[seen], post[seen], self.l2, self.text_max_iter)
        self.n_iter_ = model.n_iter_
        self._set_fitted(seq, model.posteriors_, np.log(model.confusion_matrices_),
                         model.class_priors_)
        return self

    def text_proba(self, sequences: SequenceAnnotations) -> np.ndarray:
        """(T, K) the text model's ``p(tag | words)`` for the tokens of ``sequences``."""
        self._check_fitted()
        return softmax_rows(np.asarray(self._features(sequences) @ self.text_weights_))[0]

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        if self.votes_ is not None:
            raise CrowdDataError(f"{type(self).__name__} fitted on labeling-function votes "
                                 "scores the documents it was fitted on; for new documents, "
                                 "fit it on their TokenVotes (apply_lfs)")
        if token_prior is None:
            token_prior = self.text_proba(sequences)
        return self._handed_over(self.model_, sequences, token_prior)
