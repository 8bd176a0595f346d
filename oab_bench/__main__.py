"""`python -m oab_bench ...` is the `oab-bench` command."""

from oab_bench.scripts.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
