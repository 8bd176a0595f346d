"""What the judge-sweep tests share: made-up real answers of known quality, priced judges of the stub
server written as specs, and the command run in-process."""

from __future__ import annotations

import json

from oab_bench.judge.sweep.decide import AgreementFigures, JudgeRow, ProbeFigures
from oab_bench.judge.validity.probes import build_probes
from oab_bench.judge.validity.stats import Figure
from oab_bench.scripts.cli import main
from tests.helpers import answers_file

EXAMS = ["39_direito_penal", "40_direito_civil"]  # two whole exams: 10 questions
MARK = "Fim da resposta."  # in every real answer: tells them from the probes at the server
PRICE = {"ref": (2.0, 8.0), "content": (1.0, 4.0), "max": (0.01, 0.01), "zero": (0.01, 0.02)}


def made_up_answers(pool, folder):
    """Real answers of three made-up models: the official answer, half of it, nothing."""
    rows = [r for r in pool if r.exam_id in EXAMS]
    probes = build_probes(rows, pool, ["reference", "partial"])
    texts = {
        k: {p.question_id: "\n".join(p.turns) + f"\n{MARK}" for p in probes if p.kind == k}
        for k in ("reference", "partial")
    }
    folder.mkdir(parents=True, exist_ok=True)
    return [
        answers_file(folder / "good.jsonl", "m-good", texts["reference"]),
        answers_file(folder / "half.jsonl", "m-half", texts["partial"]),
        answers_file(folder / "bad.jsonl", "m-bad", {q: f"Não sei. {MARK}" for q in texts["reference"]}),
    ]


def spec(name, server, suffix=""):
    pin, pout = PRICE[name]
    return f"openai/judge-{name}{suffix},api_base={server.url},price_input={pin},price_output={pout}"


def sweep_args(dataset, answers, tmp_path, ref, *candidates, extra=()) -> list[str]:
    """`judge-sweep`'s arguments (after the command) with this --dataset and these --answers (None, []: the flag left
    out), the cache and output under `tmp_path`, JSON on stdout."""
    args = [*(["--dataset", str(dataset)] if dataset else []), "--questions", *EXAMS]
    args += ["--answers", *map(str, answers)] if answers else []
    args += ["--reference-judge", ref, *[x for c in candidates for x in ("--candidate", c)]]
    args += ["--cache", str(tmp_path / "cache"), "--output", str(tmp_path / "out"), "--no-progress"]
    return [*args, "--resamples", "200", "--format", "json", *extra]


def sweep(capsys, dataset, answers, tmp_path, ref, *candidates, extra=()):
    """`judge-sweep` in this process (sweep_args): (rc, out, err)."""
    args = sweep_args(dataset, answers, tmp_path, ref, *candidates, extra=extra)
    capsys.readouterr()
    rc = main(["judge-sweep", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def records(folder):
    return [
        json.loads(x)
        for f in ("judgments.jsonl", "probe_judgments.jsonl")
        for x in (folder / f).read_text().splitlines()
    ]


def judge_row(name, cost, verdict="discriminates", kappa=0.9, low=0.85, flips=0.0, failed=None):
    """A made-up row of a sweep's table."""
    fig = Figure(value=kappa, ci_low=low, ci_high=1.0)
    return JudgeRow(
        judge=name,
        probe=ProbeFigures(verdict=verdict, reference_pct=95.0, swapped_pct=1.0, ordering=1.0),
        agreement=AgreementFigures(
            exam_ccc=fig,
            kappa_pass=fig,
            flips=int(flips * 10),
            flip_rate=flips,
            exam_mae=fig,
            ranking_tau=fig,
        ),
        cost_usd_per_model=cost,
        cost_usd_per_model_batch=None if cost is None else cost / 2,
        calls=1,
        seconds=1.0,
        pareto=False,
        failed=failed,
    )
