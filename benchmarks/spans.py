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

5. issue 49's default-model candidates (token DS IO / BIO, BSC-seq's worker model, token DS
   with a cross-fitted word-window prior, each plain and with a calibrated threshold) and
   the registry's default, fitted on the 191 acl17-test abstracts and on all 4,740;
6. the labeling functions of ``examples/pico_lfs.py``: their summary, alone and with the
   crowd (``AbstainDawidSkene``);
7. step 6 of ``results/spans.md``: crowd + functions through the default (its text prior)
   against ``AbstainDawidSkene`` on the same votes and the default on the crowd alone, fitted
   on the 191 acl17-test abstracts and on all 4,740.

A paired bootstrap over the gold abstracts compares the recommended model (and the default)
with the authors' Dawid-Skene. The gold is read only to print the tables.

    python benchmarks/spans.py [--data ../shared/data] [--seeds 3] [--quick]
                               [--part all|select|select-mixed|default|mixed]

``--part select``: only the crowd-only choice of the default (held-out agreement F1 on 1,000
training abstracts, 3 draws; reads no gold); ``--part select-mixed``: the same criterion for
crowd + functions (step 6 of ``results/spans.md``: the default fitted on the functions' votes
with the crowd, against ``AbstainDawidSkene`` on the same votes; reads no gold);
``--part default``: 1, 5 and 6 (no taggers); ``--part mixed``: 1 and 7 (step 6 of
``results/spans.md`` on the gold half); ``--part all`` (the default): 1-7.
``--quick``: a slice of the train and dev splits, one seed, 2 epochs, 1 held-out draw,
HMM-Crowd, the candidates and the labeling functions on the 191 test abstracts only (select:
200 abstracts, 1 draw).
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
from benchmarks.common import DATA, count  # noqa: E402

import pico_lfs  # noqa: E402
import pico_tagger  # noqa: E402

from crowd_keras.datasets import load_pico  # noqa: E402
from crowd_keras.sequences.bsc import SequentialAnnotatorHMM  # noqa: E402
from crowd_keras.sequences.calibration import CalibratedThreshold  # noqa: E402
from crowd_keras.sequences.hmm import HMMCrowd  # noqa: E402
from crowd_keras.sequences.labeling_functions import apply_lfs, lf_summary  # noqa: E402
from crowd_keras.sequences.length_prior import SpanLengthPrior  # noqa: E402
from crowd_keras.sequences.models import TokenDawidSkene, TokenMajorityVote  # noqa: E402
from crowd_keras.sequences.quality import spans_token_mask, token_prf  # noqa: E402
from crowd_keras.sequences.registry import DEFAULT_SEQUENCE_MODEL, get_sequence_model  # noqa: E402
from crowd_keras.sequences.selection import (agreement_f1, choose_temperature,  # noqa: E402
                                             heldout_annotations, heldout_log_likelihood)
from crowd_keras.sequences.text_prior import WindowPriorDawidSkene  # noqa: E402
from crowd_keras.sequences.weak import AbstainDawidSkene  # noqa: E402

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

# ---------------------------------------------------------------------------- issue 49
#: The rule of ``results/spans.md`` ("Choosing the default sequence label model"), fixed
#: before any new candidate was scored on the gold half; printed with the tables.
RULE = """the default is chosen by the crowd alone: on 1,000 training abstracts (seed 0), one
annotation hidden per abstract with >= 2 (draws 0, 1, 2), each candidate fitted on the rest;
criterion: micro token F1 of its decoded tags against the hidden workers' tags (held-out
agreement), mean over draws; a more complex candidate (A < B < C < D < E < G; plain <
calibrated) must beat every simpler one by >= 0.002. The gold half is read only after that
choice."""

#: name -> (scheme, factory); A-C as first written in the rule, D added before any gold score,
#: E (amendment 2) and G (amendment 3) before their crowd-only scores.
CANDIDATES = {
    "A token DS (IO)": ("IO", TokenDawidSkene),
    "A + calibrated θ": ("IO", lambda: CalibratedThreshold(TokenDawidSkene())),
    "B token DS (BIO: B/I/O confusions)": ("BIO", TokenDawidSkene),
    "B + calibrated θ": ("BIO", lambda: CalibratedThreshold(TokenDawidSkene())),
    "C BSC-seq worker model (BIO chain)": ("BIO", SequentialAnnotatorHMM),
    "C + calibrated θ": ("BIO", lambda: CalibratedThreshold(SequentialAnnotatorHMM())),
    "D token DS + word-window prior (IO)": ("IO", WindowPriorDawidSkene),
    "D + calibrated θ": ("IO", lambda: CalibratedThreshold(WindowPriorDawidSkene())),
    "E D + the crowd's tag chain (IO)": ("IO", lambda: SpanLengthPrior(WindowPriorDawidSkene())),
    "G D + word forms: suffixes, shapes (IO)": ("IO",
                                                 lambda: WindowPriorDawidSkene(word_forms=True)),
}


def candidate_key(name: str) -> str:
    """A candidate's letter, with ``c`` after it for its calibrated variant (``D``, ``Dc``)."""
    return name.split()[0] + ("c" if "calibrated" in name else "")


def chosen(keys=None) -> dict:
    """The candidates of ``keys`` (:func:`candidate_key`; all for None)."""
    if not keys:
        return CANDIDATES
    known = {candidate_key(n) for n in CANDIDATES}
    if set(keys) - known:
        raise SystemExit(f"--candidates: no candidate {sorted(set(keys) - known)}; they are "
                         f"{sorted(known)}")
    return {n: c for n, c in CANDIDATES.items() if candidate_key(n) in keys}


def _views(seq) -> dict:
    return {"IO": seq if seq.scheme == "IO" else seq.with_scheme("IO"),
            "BIO": seq if seq.scheme == "BIO" else seq.with_scheme("BIO")}


def select_default(pico, n_docs: int, draws: int, candidates: dict = CANDIDATES) -> None:
    """The crowd-only table of the rule: held-out agreement F1 on training abstracts."""
    train = np.flatnonzero(pico.split == "train")
    docs = np.sort(np.random.default_rng(0).choice(train, min(n_docs, len(train)),
                                                   replace=False))
    views = _views(pico.sequences.subset(docs))
    print(f"\nchoosing the default from the crowd alone: {len(docs)} training abstracts, "
          f"{draws} draws (no gold read)")
    print("| candidate | held-out agreement F1 (mean) | per draw | held-out log-lik | θ chosen "
          "| time |\n|---|---:|---|---:|---|---:|")
    for name, (scheme, make) in candidates.items():
        full = views[scheme]
        f1s, lls, thetas = [], [], []
        start = time.perf_counter()
        for draw in range(draws):
            hidden = heldout_annotations(full, None, draw)
            model = make().fit(full.drop_annotations(hidden))
            f1s.append(agreement_f1(model.predict(), full, hidden))
            inner = getattr(model, "model_", model)
            lls.append(heldout_log_likelihood(inner, full, hidden)
                       if not isinstance(inner, SequentialAnnotatorHMM) else np.nan)
            if hasattr(model, "threshold_"):
                thetas.append(f"{model.threshold_:g}")
        ll = "" if np.isnan(lls).all() else f"{np.mean(lls):.5f}"
        print(f"| {name} | **{np.mean(f1s):.4f}** | {', '.join(f'{f:.4f}' for f in f1s)} | "
              f"{ll} | {', '.join(thetas)} | {time.perf_counter() - start:.0f} s |")


def confirm_default(pico, gold: "GoldHalf", fit_sets: dict,
                    candidates: dict = CANDIDATES) -> None:
    """Every candidate (and the default) on the gold half, fitted on each document set."""
    print(f"\nthe candidates on the gold half (default: {DEFAULT_SEQUENCE_MODEL!r}; "
          "chosen before this table was made)")
    print("| candidate | fitted on | P | R | F1 | fit time |\n|---|---|---:|---:|---:|---:|")
    boots = []
    for label, docs in fit_sets.items():
        seq = pico.sequences.subset(docs)
        views = _views(seq)
        sub_gold = {"IO": GoldHalf(views["IO"], pico.gold), "BIO": GoldHalf(views["BIO"], pico.gold)}
        fitted = []
        for name, (scheme, make) in candidates.items():
            model, t = timed_fit(make(), views[scheme])
            fitted.append((model, scheme, t))
            print(row(name, label, sub_gold[scheme].score(model.predict()), t))
        default = get_sequence_model()
        same = [(m, sch, t) for m, sch, t in fitted if sch == "IO" and type(m) is type(default)
                and m.get_params() == default.get_params()]
        if same:
            model, _, t = same[0]
        else:
            model, t = timed_fit(default, views["IO"])
        print(row(f"**default `{DEFAULT_SEQUENCE_MODEL}`** (a row above)" if same else
                  f"**default `{DEFAULT_SEQUENCE_MODEL}`**", label,
                  sub_gold["IO"].score(model.predict()), t))
        m, lo, hi, ple = sub_gold["IO"].bootstrap(model.predict(), gold_tags(
            sub_gold["IO"], pico.authors["DawidSkene"], pico.gold))
        boots.append(f"fitted on {label}: paired bootstrap over the gold abstracts (2,000 "
                     f"resamples), default − authors' DawidSkene: {m:+.3f} [{lo:+.3f}, "
                     f"{hi:+.3f}], P(≤ 0) = {ple:.3f}")
    print("\n" + "\n".join(boots))


#: Step 6 of ``results/spans.md``, fixed before F was fitted: name -> factory, fitted on
#: the functions' votes (with the crowd) or, for the last, on the crowd alone.
MIXED = {"F default on crowd + functions (D with AbstainDawidSkene inside)": WindowPriorDawidSkene,
         "crowd + functions (AbstainDawidSkene)": AbstainDawidSkene,
         "D crowd alone (the default, no functions)": WindowPriorDawidSkene}
MIXED_RULE = """crowd + functions (step 6): on the same 1,000 training abstracts and draws, one human
annotation hidden per abstract with >= 2, the functions' votes kept; criterion: held-out
agreement F1 against the hidden humans' tags; F is recommended for crowd + functions if it
beats AbstainDawidSkene on the same votes by >= 0.002. The gold half is read only after."""


def select_mixed(pico, n_docs: int, draws: int) -> None:
    """The crowd-only table of step 6: F, AbstainDawidSkene on the same votes, D alone."""
    train = np.flatnonzero(pico.split == "train")
    docs = np.sort(np.random.default_rng(0).choice(train, min(n_docs, len(train)),
                                                   replace=False))
    full = _views(pico.sequences.subset(docs))["IO"]
    print(f"\ncrowd + functions from the crowd alone: {len(docs)} training abstracts, {draws} "
          "draws (no gold read)")
    print("| model | held-out agreement F1 (mean) | per draw | time |\n|---|---:|---|---:|")
    f1s = {name: [] for name in MIXED}
    times = dict.fromkeys(MIXED, 0.0)
    for draw in range(draws):
        hidden = heldout_annotations(full, None, draw)
        rest = full.drop_annotations(hidden)
        votes = apply_lfs(rest, pico_lfs.PICO_LFS, progress=False)
        for name, make in MIXED.items():
            model, t = timed_fit(make(), rest if name.startswith("D crowd") else votes)
            times[name] += t
            f1s[name].append(agreement_f1(model.predict(), full, hidden))
    for name in MIXED:
        print(f"| {name} | **{np.mean(f1s[name]):.4f}** | "
              f"{', '.join(f'{f:.4f}' for f in f1s[name])} | {times[name]:.0f} s |")


def confirm_mixed(pico, fit_sets: dict) -> None:
    """Step 6 on the gold half: F, AbstainDawidSkene on the votes, D alone, per fit set."""
    print("\ncrowd + functions on the gold half (step 6; read after its crowd-only table)")
    print("| model | fitted on | P | R | F1 | fit time |\n|---|---|---:|---:|---:|---:|")
    for label, docs in fit_sets.items():
        seq = pico.sequences.subset(docs)
        gold = GoldHalf(seq, pico.gold)
        votes = apply_lfs(seq, pico_lfs.PICO_LFS, progress=False)
        for name, make in MIXED.items():
            model, t = timed_fit(make(), seq if name.startswith("D crowd") else votes)
            print(row(name, label, gold.score(model.predict()), t))


def labeling_functions(pico, gold: "GoldHalf", quick: bool = False) -> None:
    """examples/pico_lfs.py's functions: summary, alone, with the crowd (all abstracts;
    ``quick``: the 191 acl17-test abstracts)."""
    seq = pico.sequences
    label = "all 4,740"
    if quick:
        seq = seq.subset(np.flatnonzero(pico.split == "acl17-test"))
        gold, label = GoldHalf(seq, pico.gold), "acl17-test (191)"
    texts = dict(zip(seq.doc_ids, seq.texts))
    start = time.perf_counter()
    alone = apply_lfs(texts, pico_lfs.PICO_LFS, labels=["Participants"], progress=False)
    mixed = apply_lfs(seq, pico_lfs.PICO_LFS, progress=False)
    t_apply = time.perf_counter() - start
    print(f"\nlabeling functions (examples/pico_lfs.py; written from the training abstracts), "
          f"applied to {seq.n_docs} abstracts twice in {t_apply:.0f} s; summary on their tokens, "
          "accuracy on the gold half")
    print(lf_summary(alone, pico.gold).round(3).to_string(index=False))
    print("\n| model | fitted on | P | R | F1 | fit time |\n|---|---|---:|---:|---:|---:|")
    for name, data in (("functions alone (AbstainDawidSkene)", alone),
                       ("crowd alone (AbstainDawidSkene = token DS)", seq),
                       ("crowd + functions (AbstainDawidSkene)", mixed)):
        model, t = timed_fit(AbstainDawidSkene(), data)
        print(row(name, label, gold.score(model.predict()), t))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--seeds", type=count, default=3, help="tagger seeds (crowd and MV each)")
    p.add_argument("--epochs", type=count, default=15)
    p.add_argument("--draws", type=count, default=5, help="held-out draws for choosing τ")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--part", choices=("all", "select", "select-mixed", "default", "mixed"),
                   default="all",
                   help="select: the crowd-only choice of the default (no gold); select-mixed: "
                        "step 6's crowd-only table (crowd + functions; no gold); default: the "
                        "candidates, the default and the labeling functions on the gold half "
                        "(no taggers); mixed: step 6 on the gold half; all: everything but "
                        "the select parts")
    p.add_argument("--select-docs", type=count, default=1000)
    p.add_argument("--select-draws", type=count, default=3)
    p.add_argument("--candidates", nargs="+", metavar="KEY",
                   help="select/default: only these candidates, by letter, with c for a "
                        "calibrated variant (e.g. D Dc G); default: all")
    args = p.parse_args(argv)
    seeds = 1 if args.quick else args.seeds
    epochs = 2 if args.quick else args.epochs
    draws = 1 if args.quick else args.draws

    pico = load_pico(args.data)                              # all 4,740 abstracts, IO
    seq, split = pico.sequences, pico.split
    if args.part == "select":
        print(RULE)
        select_default(pico, 200 if args.quick else args.select_docs,
                       1 if args.quick else args.select_draws, chosen(args.candidates))
        return 0
    if args.part == "select-mixed":
        print(MIXED_RULE)
        select_mixed(pico, 200 if args.quick else args.select_docs,
                     1 if args.quick else args.select_draws)
        return 0
    gold = GoldHalf(seq, pico.gold)
    print(f"PICO: {seq.n_docs} abstracts, {seq.n_tokens} tokens, {len(seq.annotator_ids)} "
          f"workers, {len(seq.assign_doc)} worker-abstract annotations "
          f"({seq.annotations.n_annotations} token labels); gold half: {len(gold.docs)} "
          f"abstracts\nspans read: {seq.summary}\n")
    lines = ["| model | fitted on | P | R | F1 | fit time |", "|---|---|---:|---:|---:|---:|"]
    for name in ("HMMCrowd", "DawidSkene", "MajorityVote"):
        lines.append(row(f"authors' {name}", "(their file)", gold.spans(
            {d: pico.authors[name][d] for d in pico.gold})))
    acl = np.flatnonzero(split == "acl17-test")
    fit_sets = {"acl17-test (191)": acl}
    if not args.quick:
        fit_sets["all 4,740"] = np.arange(seq.n_docs)
    if args.part == "default":
        print("\n".join(lines))
        print("\n" + RULE)
        confirm_default(pico, gold, fit_sets, chosen(args.candidates))
        labeling_functions(pico, gold, args.quick)
        return 0
    if args.part == "mixed":
        print("\n".join(lines))
        print("\n" + MIXED_RULE)
        confirm_mixed(pico, fit_sets)
        return 0
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
    print("\n" + RULE)
    confirm_default(pico, gold, fit_sets, chosen(args.candidates))
    labeling_functions(pico, gold, args.quick)
    print("\n" + MIXED_RULE)
    confirm_mixed(pico, fit_sets)
    return 0


def gold_tags(gold: GoldHalf, spans: dict, docs: dict) -> np.ndarray:
    """(T,) 0/1 tags of ``spans`` restricted to the gold documents."""
    return spans_token_mask(gold.seq, {k: spans[k] for k in docs}).astype(int)


if __name__ == "__main__":
    sys.exit(main())
