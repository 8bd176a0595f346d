"""Answers from lighteval details files of the oab_bench task (`DIR/details/<model>/<time>/*.parquet`)."""

from __future__ import annotations

from pathlib import Path

from dataset_builder.errors import SourceError

from .answers import Answer


def details_files(path: Path) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("details_*.parquet") if "oab_bench" in p.name)
    if not files:
        raise SourceError(
            "no oab_bench details parquet found (run lighteval with --save-details)", file=str(path)
        )
    return files


def model_of(file: Path) -> str:
    """lighteval writes details under details/<model name, may contain '/'>/<timestamp>/."""
    parts = file.parts
    if "details" in parts:
        i = len(parts) - 1 - parts[::-1].index("details")
        name = "/".join(parts[i + 1 : -2])
        if name:
            return name
    return file.parent.parent.name


def plain(x):
    """Parquet gives numpy arrays where JSON had lists: back to plain Python (for JSON, and models)."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple) or type(x).__name__ == "ndarray":
        return [plain(v) for v in x]
    if hasattr(x, "item") and type(x).__module__ == "numpy":
        return x.item()
    return x


def details_judgments(file: Path) -> dict[int, dict]:
    """Row (from 1, as the readers count) -> the row's `oab_judgment` metric, in plain Python."""
    import pandas as pd

    metrics = pd.read_parquet(file, columns=["metric"])["metric"]
    return {n: plain((m or {}).get("oab_judgment") or {}) for n, m in enumerate(metrics, start=1)}


def load_lighteval_answers(path: Path) -> list[Answer]:
    import pandas as pd

    out: dict[tuple[str, str], Answer] = {}
    for file in details_files(path):
        df = pd.read_parquet(file, columns=["doc", "model_response"])
        model = model_of(file)
        for n, (doc, response) in enumerate(zip(df["doc"], df["model_response"], strict=True)):
            specific = doc.get("specific") or {}
            qid = specific.get("question_id")
            if not qid:
                raise SourceError(
                    "row has no doc.specific.question_id: not an oab_bench details file",
                    file=str(file),
                    line=n + 1,
                )
            texts = list(response.get("text_post_processed") or response.get("text") or [])
            out[(model, qid)] = Answer(
                model=model, question_id=qid, turns=[texts[0] if texts else ""], source=str(file), line=n + 1
            )
    return list(out.values())
