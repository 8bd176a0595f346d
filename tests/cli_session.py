"""`oab-bench` commands read from stdin, one JSON argv a line, run one after another in this process
(tests/users.py's `session_as`): a user's several runs pay lighteval's seconds of imports once.
Each reply is one JSON line {code, stdout, stderr} on the descriptor stdout had; fd 1 itself goes to
stderr, so nothing a library prints there can break a reply."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import in_process


def main() -> None:
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        proc = in_process(json.loads(line), cwd=Path.cwd())
        replies.write(
            json.dumps({"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}) + "\n"
        )
        replies.flush()


if __name__ == "__main__":
    main()
