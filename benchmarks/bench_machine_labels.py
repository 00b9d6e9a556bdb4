"""Calibration of prediction-powered inference with machine labels, and a real readout.

Run (from the checkout, so that its abrank is imported):
      PYTHONPATH=. python benchmarks/bench_machine_labels.py --splits 1000
      PYTHONPATH=. python benchmarks/bench_machine_labels.py --splits 200 --no-dl   (quick)

**Calibration on the demo** (2,000 queries, ΔNDCG@10 of the reranker against BM25, queries
both arms hold). The demo's judgments play the humans; a synthetic labeller
(:func:`abrank.demo.machine_labels.machine_labels`) plays the machine: each grade off by
one with probability 0.3, and in the *biased* case each document the reranker shows in its
top 10 and BM25 does not is graded one higher with probability 0.3 more. Every arm is
scored once under each kind of label; then, for each of ``--splits`` random splits, the
human labels are kept on a uniform random 10% of the queries and the three 95% intervals
are drawn from the per-query deltas:

* human 10% only: the t-interval of the human-label deltas of the sample;
* machine-filled: the t-interval of the deltas under human labels on the sample and
  machine labels elsewhere (the humans judged the same pool as the machine);
* PPI++: :func:`abrank.stats.ppi.ppi_mean` of the human deltas on the sample, corrected
  machine deltas on it, and the machine deltas of the other queries.

Each interval's coverage of the all-human delta (the human labels on every query) is
counted, and the mean width of each against the human-only one. Goals: PPI's coverage
>= 93% and its interval >= 20% narrower than the human 10%'s, in both cases; the filled
interval's coverage is reported beside it (it fails in the biased case).

**DL19 + DL20, BM25 -> RankVicuna-7B** (../shared/data/trec-dl-passage): the real qrels
play the humans on a random half of the 97 queries (10% would leave 10 queries), and the
biased labeller (grades off by one with probability 0.3, RankVicuna's documents raised)
labels every judged document. The readout (``abrank run``'s) prints kappa, tau, the
three estimates and the verdicts that change.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import abrank
from abrank.demo import generate_demo
from abrank.demo.machine_labels import favoured_documents, human_sample, machine_labels
from abrank.stats.ppi import ppi_mean

ROOT = Path(__file__).resolve().parent.parent
DL = ROOT.parent / "shared" / "data" / "trec-dl-passage"
METRIC = "ndcg@10"
LEVEL = 0.95


def deltas(control: pd.DataFrame, treatment: pd.DataFrame, judgments: pd.DataFrame) -> pd.Series:
    """Per-query ΔNDCG@10 (NaN where undefined) over the queries both arms hold."""
    both = np.intersect1d(control["query_id"].unique(), treatment["query_id"].unique())
    c = abrank.evaluate(control, judgments, [METRIC])[METRIC]
    t = abrank.evaluate(treatment, judgments, [METRIC])[METRIC]
    return (t.reindex(both) - c.reindex(both)).rename("delta")


def t_interval(values: np.ndarray) -> tuple[float, float]:
    n = values.size
    half = stats.t.ppf(0.5 + LEVEL / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return values.mean() - half, values.mean() + half


def calibrate(case: str, bias: float, splits: int, seed: int) -> dict:
    """The coverage and widths of the three intervals over ``splits`` human samples."""
    demo = generate_demo()
    favoured = favoured_documents(demo.control, demo.treatment)
    machine = machine_labels(demo.judgments, seed=seed, favoured=favoured, bias=bias)
    human = deltas(demo.control, demo.treatment, demo.judgments)
    labels = deltas(demo.control, demo.treatment, machine).reindex(human.index)
    target = float(human.mean())  # the all-human delta (defined queries)
    dh, dm = human.to_numpy(), labels.to_numpy()
    n_queries = dh.size
    size = int(round(0.1 * n_queries))
    rng = np.random.default_rng(seed)
    found = {name: {"cover": 0, "width": 0.0} for name in ("human", "filled", "ppi")}
    lams = []
    for _ in range(splits):
        sample = np.zeros(n_queries, dtype=bool)
        sample[rng.choice(n_queries, size=size, replace=False)] = True
        labelled = sample & np.isfinite(dh)
        filled = np.where(sample, dh, dm)
        estimate = ppi_mean(
            dh[labelled], np.nan_to_num(dm[labelled]), dm[~sample & np.isfinite(dm)]
        )
        lams.append(estimate.lam)
        intervals = {
            "human": t_interval(dh[labelled]),
            "filled": t_interval(filled[np.isfinite(filled)]),
            "ppi": estimate.ci(LEVEL),
        }
        for name, (low, high) in intervals.items():
            found[name]["cover"] += int(low <= target <= high)
            found[name]["width"] += (high - low) / splits
    return {
        "case": case,
        "target": target,
        "machine_delta": float(np.nanmean(dm)),
        "coverage": {name: f["cover"] / splits for name, f in found.items()},
        "width": {name: f["width"] for name, f in found.items()},
        "lambda": float(np.mean(lams)),
    }


def dl_readout(seed: int) -> None:
    """The DL19 + DL20 BM25 -> RankVicuna readout with simulated machine labels."""
    if not DL.is_dir():
        print(f"(no {DL}: the DL19 + DL20 readout is skipped)")
        return
    folder = Path(tempfile.mkdtemp(prefix="abrank-ml-"))
    try:
        runs = {"bm25": "bm25-flat.top100", "rankvicuna": "bm25-flat.top100+rankvicuna-7b"}
        frames = {}
        for arm, name in runs.items():
            text = "".join((DL / "runs" / f"dl{y}.{name}.txt").read_text() for y in (19, 20))
            (folder / f"{arm}.run").write_text(text)
            frames[arm] = pd.read_csv(
                folder / f"{arm}.run",
                sep=r"\s+",
                header=None,
                names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
                dtype={0: str, 2: str},
            )
        qrels = pd.concat(
            pd.read_csv(
                DL / f"qrels.dl{y}-passage.txt",
                sep=r"\s+",
                header=None,
                names=["query_id", "iter", "doc_id", "grade"],
                dtype={0: str, 2: str},
            )
            for y in (19, 20)
        )[["query_id", "doc_id", "grade"]]
        favoured = favoured_documents(frames["bm25"], frames["rankvicuna"], rank="rank")
        machine = machine_labels(qrels, seed=seed, favoured=favoured, bias=0.3)
        human = human_sample(qrels, share=0.5, seed=seed + 1)
        for name, frame in (("human", human), ("machine", machine)):
            frame.assign(iter=0)[["query_id", "iter", "doc_id", "grade"]].to_csv(
                folder / f"{name}.qrels", sep=" ", header=False, index=False
            )
        (folder / "dl.yaml").write_text(
            "name: dl-machine-labels\n"
            "control: {name: bm25, path: bm25.run}\n"
            "treatments: [{name: rankvicuna, path: rankvicuna.run, uses_model: vicuna-7b}]\n"
            "judgments:\n"
            "  - {path: human.qrels, kind: human}\n"
            "  - {path: machine.qrels, kind: machine, model: vicuna-13b-judge}\n"
            "metrics: [ndcg@10, map@100, recall@20]\n"
            "relevance_threshold: 2\n"
            "analysis: {seed: 7, resamples: 2000}\n"
        )
        readout = abrank.run_experiment(folder / "dl.yaml")
        labels = readout.model.diagnostics.machine_labels
        print(
            "\nDL19 + DL20 BM25 -> RankVicuna-7B, human labels on half the queries, biased labeller"
        )
        print(
            f"  queries: human {labels.human_queries}, machine {labels.machine_queries}; "
            f"overlap {labels.overlap} documents"
        )
        print(
            f"  kappa linear {labels.kappa_linear:.3f}, quadratic {labels.kappa_quadratic:.3f}; "
            f"machine - human {labels.mean_difference:+.3f}; tau {labels.tau:.3f}"
        )
        for arm, figures in labels.per_arm.items():
            print(
                f"  {arm} top 10: kappa linear {figures['kappa_linear']:.3f}, "
                f"machine - human {figures['mean_difference']:+.3f}"
            )
        for comp in readout.model.comparisons:
            if comp.segment is not None:
                continue
            cells = []
            for name in ("human", "filled", "ppi"):
                est = comp.estimates[name]
                low, high = est["ci"]
                cells.append(
                    f"{name} {est['delta']:+.4f} [{low:+.4f}, {high:+.4f}] {est['verdict']}"
                )
            print(f"  {comp.metric:10s} " + " | ".join(cells))
        changed = labels.verdicts_changed
        print(f"  verdicts changed: {list(changed) if changed else 'none'}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--no-dl", action="store_true", help="skip the DL19 + DL20 readout")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"demo, ΔNDCG@10, human labels on 10% of queries, {args.splits} splits, 95% intervals")
    print(
        "| labeller | all-human Δ | machine Δ | coverage: PPI | human 10% | filled | "
        "width PPI / human 10% | width filled / human 10% | mean λ |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for case, bias in (("off by one (p = 0.3)", 0.0), ("off by one + favours treatment", 0.3)):
        r = calibrate(case, bias, args.splits, args.seed)
        cov, width = r["coverage"], r["width"]
        print(
            f"| {case} | {r['target']:+.4f} | {r['machine_delta']:+.4f} | {cov['ppi']:.3f} | "
            f"{cov['human']:.3f} | {cov['filled']:.3f} | {width['ppi'] / width['human']:.3f} | "
            f"{width['filled'] / width['human']:.3f} | {r['lambda']:.2f} |"
        )
    if not args.no_dl:
        dl_readout(args.seed)
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
