"""PICO spans from the crowd: label models and taggers, token P/R/F1 on the gold half.

Everything in one run, on the 98 acl17-test abstracts with gold spans (a medical student's;
the data README's protocol: a token is a maximal run of non-space characters, positive when a
span overlaps it):

1. the authors' aggregates (their HMM-Crowd, token Dawid-Skene and majority vote files);
2. our label models, fitted on the crowd spans of all 4,740 abstracts: token majority vote
   (at least half of the workers listed), token Dawid-Skene (IO, shrinkage 3), HMM-Crowd (BIO);
3. taggers (embedding + BiLSTM, ``examples/pico_tagger.py``) trained on the crowd train split
   through the sequence crowd layer, and the same tagger trained on majority-vote tags, one
   row per seed; epochs chosen by each model's own loss on the crowd dev split;
4. the recommended model: token Dawid-Skene with the crowd taggers' mean ``p(tag | text)``
   as a per-token prior (on the dev and test abstracts, which the taggers never trained on)
   and tempered decoding, τ chosen in this run by the held-out worker likelihood on the crowd
   dev split (``choose_temperature``): no setting is read from the gold.

A paired bootstrap over the gold abstracts compares the recommended model with the authors'
Dawid-Skene. The gold is read only to print the tables.

    python benchmarks/spans.py [--data ../shared/data] [--seeds 3] [--quick]

``--quick``: a slice of the train and dev splits, one seed, 2 epochs, 1 held-out draw, and
HMM-Crowd on the 191 test abstracts only.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import pico_tagger  # noqa: E402

from crowd_keras.datasets import load_pico  # noqa: E402
from crowd_keras.sequences.hmm import HMMCrowd  # noqa: E402
from crowd_keras.sequences.models import TokenDawidSkene, TokenMajorityVote  # noqa: E402
from crowd_keras.sequences.quality import spans_token_mask, token_prf  # noqa: E402
from crowd_keras.sequences.selection import choose_temperature  # noqa: E402

TEMPERATURES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class GoldHalf:
    """Token scores on the gold abstracts of one :class:`SequenceAnnotations`."""

    def __init__(self, seq, gold: dict) -> None:
        self.seq = seq
        self.docs = np.flatnonzero(np.isin(seq.doc_ids, list(gold)))
        self.on = np.isin(seq.tokens.doc, self.docs)
        self.gold = spans_token_mask(seq, gold)[self.on]
        self.doc_of = seq.tokens.doc[self.on]

    def score(self, tags) -> tuple:
        return token_prf(np.asarray(tags)[self.on] > 0, self.gold)

    def spans(self, spans: dict) -> tuple:
        return token_prf(spans_token_mask(self.seq, spans)[self.on], self.gold)

    def bootstrap(self, a, b, n: int = 2000, seed: int = 0) -> tuple:
        """Paired bootstrap over gold abstracts of F1(a) - F1(b): mean, 2.5 %, 97.5 %,
        P(diff <= 0)."""
        def counts(tags):
            pred = np.asarray(tags)[self.on] > 0
            per = [np.bincount(self.doc_of, weights=w, minlength=self.seq.n_docs)[self.docs]
                   for w in (pred & self.gold, pred, self.gold)]
            return np.stack(per, 1)
        w = np.random.default_rng(seed).multinomial(len(self.docs), np.full(len(self.docs),
                                                    1 / len(self.docs)), size=n)

        def f1(c):
            s = w @ c
            return 2 * s[:, 0] / (s[:, 1] + s[:, 2])
        d = f1(counts(a)) - f1(counts(b))
        return d.mean(), np.quantile(d, 0.025), np.quantile(d, 0.975), float((d <= 0).mean())


def row(name: str, fitted_on: str, prf: tuple, seconds=None) -> str:
    t = "" if seconds is None else f"{seconds:.1f} s"
    return f"| {name} | {fitted_on} | {prf[0]:.3f} | {prf[1]:.3f} | **{prf[2]:.3f}** | {t} |"


def timed_fit(model, seq, **kw):
    start = time.perf_counter()
    model.fit(seq, **kw)
    return model, time.perf_counter() - start


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=Path(os.environ.get(
        "CROWD_KERAS_DATA", ROOT.parent / "shared" / "data")))
    p.add_argument("--seeds", type=int, default=3, help="tagger seeds (crowd and MV each)")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--draws", type=int, default=5, help="held-out draws for choosing τ")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    seeds = 1 if args.quick else args.seeds
    epochs = 2 if args.quick else args.epochs
    draws = 1 if args.quick else args.draws

    pico = load_pico(args.data)                              # all 4,740 abstracts, IO
    seq, split = pico.sequences, pico.split
    gold = GoldHalf(seq, pico.gold)
    print(f"PICO: {seq.n_docs} abstracts, {seq.n_tokens} tokens, {len(seq.annotator_ids)} "
          f"workers, {len(seq.assign_doc)} worker-abstract annotations "
          f"({seq.annotations.n_annotations} token labels); gold half: {len(gold.docs)} "
          f"abstracts\nspans read: {seq.summary}\n")
    lines = ["| model | fitted on | P | R | F1 | fit time |", "|---|---|---:|---:|---:|---:|"]
    for name in ("HMMCrowd", "DawidSkene", "MajorityVote"):
        lines.append(row(f"authors' {name}", "(their file)", gold.spans(
            {d: pico.authors[name][d] for d in pico.gold})))
    mv, t = timed_fit(TokenMajorityVote(), seq)
    lines.append(row("token majority vote (≥ half of the listed workers)", "-",
                     gold.score(mv.predict()), t))
    ds, t = timed_fit(TokenDawidSkene(), seq)
    lines.append(row(f"token Dawid-Skene (IO, shrinkage 3; {ds.n_iter_} EM it.)", "all 4,740",
                     gold.score(ds.predict()), t))
    if args.quick:
        acl = np.flatnonzero(split == "acl17-test")
        hseq = seq.subset(acl).with_scheme("BIO")
        hmm, t = timed_fit(HMMCrowd(), hseq)
        hgold = GoldHalf(hseq, pico.gold)
        lines.append(row(f"HMM-Crowd (BIO; {hmm.n_iter_} EM it.)", "acl17-test (191)",
                         hgold.score(hmm.predict()), t))
    else:
        hmm, t = timed_fit(HMMCrowd(), seq.with_scheme("BIO"))
        lines.append(row(f"HMM-Crowd (BIO; {hmm.n_iter_} EM it.)", "all 4,740",
                         gold.score(hmm.predict()), t))

    # taggers from the crowd and from majority vote (train split only)
    d = pico_tagger.load(args.data, quick=args.quick)
    tag_lines = ["| tagger trained on | seed | P | R | F1 | epochs (best) | time |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
    f1s = {"crowd": [], "mv": []}
    prior_sum, n_prior = None, 0
    for seed in range(seeds):
        for kind in ("crowd", "mv"):
            tagger, info = pico_tagger.train_tagger(d, kind, seed, epochs,
                                                    **pico_tagger.CROWD_LAYER)
            probs = pico_tagger.predict_tokens(tagger, d)          # dev + acl17-test
            tags = np.nan_to_num(probs[:, 1]) > 0.5
            prf = pico_tagger.gold_scores(d, tags)
            f1s[kind].append(prf[2])
            name = "crowd, through CrowdLayer" if kind == "crowd" else "majority-vote tags"
            tag_lines.append(f"| {name} | {seed} | {prf[0]:.3f} | {prf[1]:.3f} | {prf[2]:.3f} | "
                             f"{info['epochs']} ({info['best_epoch']}) | "
                             f"{info['seconds']:.0f} s |")
            if kind == "crowd":
                prior_sum = probs if prior_sum is None else prior_sum + probs
                n_prior += 1
    for kind, label in (("crowd", "crowd"), ("mv", "majority vote")):
        f = np.array(f1s[kind])
        sd = f"{f.std(ddof=1):.3f}" if len(f) > 1 else "n/a"
        tag_lines.append(f"| **{label}: mean ± sd over {len(f)} seeds** | | | | "
                         f"**{f.mean():.3f}** ± {sd} | | |")

    # the recommended model: DS + the crowd taggers' prior, tempered; τ from crowd dev only
    prior = np.full((seq.n_tokens, seq.n_tags), np.nan)
    _, rows = seq.tokens.subset(pd.Index(seq.doc_ids).get_indexer(d["seq"].doc_ids))
    prior[rows] = prior_sum / n_prior
    dev = np.flatnonzero(split == "dev")
    start = time.perf_counter()
    tau, table = choose_temperature(seq, dev, TEMPERATURES, n_draws=draws, token_prior=prior)
    t_choose = time.perf_counter() - start
    rec, t = timed_fit(TokenDawidSkene(temperature=tau), seq, token_prior=prior)
    untempered = rec.tempered_proba(1.0)[:, 1] > 0.5
    lines.append(row(f"token DS + crowd-tagger prior, τ = 1 (mean of {n_prior} seeds)",
                     "all 4,740", gold.score(untempered), t))
    lines.append(row(f"**recommended: token DS + crowd-tagger prior, τ = {tau:g}**", "all 4,740",
                     gold.score(rec.predict()), t))
    print("\n".join(lines))
    m, lo, hi, ple = gold.bootstrap(rec.predict(), gold_tags(gold, pico.authors["DawidSkene"],
                                                                 pico.gold))
    print(f"\npaired bootstrap over the {len(gold.docs)} gold abstracts (2,000 resamples), "
          f"recommended − authors' DawidSkene: {m:+.3f} [{lo:+.3f}, {hi:+.3f}], "
          f"P(≤ 0) = {ple:.3f}")
    print(f"\nτ chosen on the crowd dev split ({len(dev)} abstracts, {draws} held-out draws, "
          f"{t_choose:.0f} s; no gold): held-out worker log-likelihood per token label")
    print("| τ | held-out log-lik | agreement F1 |\n|---:|---:|---:|")
    for _, r in table.iterrows():
        mark = " ←" if r["temperature"] == tau else ""
        print(f"| {r['temperature']:g} | {r['heldout_loglik']:.5f}{mark} | "
              f"{r['agreement_f1']:.3f} |")
    print("\ntaggers (the same BiLSTM; F1 on the gold half)")
    print("\n".join(tag_lines))
    return 0


def gold_tags(gold: GoldHalf, spans: dict, docs: dict) -> np.ndarray:
    """(T,) 0/1 tags of ``spans`` restricted to the gold documents."""
    return spans_token_mask(gold.seq, {k: spans[k] for k in docs}).astype(int)


if __name__ == "__main__":
    sys.exit(main())
