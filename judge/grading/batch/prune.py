"""Kept Batch replies leave the batch log once their judgments are in the judgment cache, never before.

A kept reply (batch/state.py) is the only copy of a paid judgment until that judgment is stored;
after, the cache serves it and the reply is dead weight in a log read whole by every run. So a
run prunes only after its judgments are stored and fsynced (`synced()`), and only the replies
whose keys the cache holds: a judgment that failed is not stored, so its reply stays. A kill
before or during the prune leaves every reply the cache does not hold; the next run prunes.
"""

from __future__ import annotations

import logging
import sys

from oab_bench.conventions import BATCH_FILE
from oab_bench.judge.grading.batch.state import BatchLog
from oab_bench.judge.grading.judgment_store import JudgmentStore

logger = logging.getLogger(__name__)


def prune_kept(store: JudgmentStore) -> int:
    """Drop from the batch log beside `store` the kept replies whose judgments it holds, once they
    are on disk; nothing when there is none (the same call again drops nothing) or the cache
    cannot be written. The number dropped."""
    if store.path is None or not store.writable or not (store.path.parent / BATCH_FILE).is_file():
        return 0
    log = BatchLog(store.path.parent, access="either")
    store.refresh()
    held = {key for key in log.kept() if store.get(key) is not None}
    if not held:
        return 0
    try:
        store.fsync()  # lines another process wrote may still wait for its background fsync
        dropped = log.prune(held.__contains__)
    except OSError as e:  # the judgments are stored: a log left as it is costs disk, not money
        logger.warning("%s: kept replies not pruned (%s); a later run tries again", log.path, e.strerror or e)
        return 0
    if dropped:
        print(
            f"batch: {dropped} kept repl(ies) pruned from {log.path} (their judgments are stored)",
            file=sys.stderr,
        )
    return dropped
