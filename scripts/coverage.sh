#!/usr/bin/env bash
# Branch coverage of ctxgate/ and plugins/ over the whole test suite, measured the same way every time: the test
# command's pytest line (scripts/test.sh) under pytest-cov, counting the xdist workers and every Python process the
# tests start (the suite and the verbs run in subprocesses in many tests; see scripts/coverage.toml). Prints the
# total and each package's figures (statements, branches, and coverage.py's combined percentage); the combined
# data stays in $COVERAGE_DIR (default out/coverage/) for `coverage html` or `coverage report -m`.
# Extra arguments go to pytest (a test file, -k). The tests' own pass/fail is printed and is this script's status.
# Run from a checkout with its .venv (scripts/bootstrap.sh; pytest-cov is in the dev extra).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
DATA="${COVERAGE_DIR:-$ROOT/out/coverage}"
rm -rf "$DATA"
mkdir -p "$DATA"
# absolute, and inherited: a subprocess started in a temporary folder writes its data here
export COVERAGE_FILE="$DATA/.coverage"
PY=.venv/bin/python
SELECT=("$@")
[ ${#SELECT[@]} -eq 0 ] && SELECT=(tests)
"$PY" -m pytest "${SELECT[@]}" -n 2 -q \
  --cov="$ROOT/ctxgate" --cov="$ROOT/plugins" --cov-config=scripts/coverage.toml --cov-report=
status=$?
# pytest-cov combines what it finds at the end of the session; a process that outlived it (a server's last child)
# or wrote after it is combined here
"$PY" -m coverage combine --rcfile=scripts/coverage.toml --keep -q "$DATA" >/dev/null 2>&1 || true
"$PY" -m coverage json --rcfile=scripts/coverage.toml -q -o "$DATA/coverage.json"
"$PY" - "$DATA/coverage.json" "$ROOT" <<'PY'
import json
import sys

files = json.load(open(sys.argv[1]))["files"]
root = sys.argv[2].rstrip("/") + "/"


def figures(prefix: str) -> str:
    chosen = [f["summary"] for name, f in files.items() if (name if name.startswith("/") else root + name).startswith(root + prefix)]
    st, st_hit = sum(s["num_statements"] for s in chosen), sum(s["covered_lines"] for s in chosen)
    br, br_hit = sum(s["num_branches"] for s in chosen), sum(s["covered_branches"] for s in chosen)
    both = 100 * (st_hit + br_hit) / (st + br)
    return (
        f"{prefix or 'total':9} {len(chosen):4} files  statements {st_hit}/{st} {100 * st_hit / st:.1f}%  "
        f"branches {br_hit}/{br} {100 * br_hit / br:.1f}%  combined {both:.1f}%"
    )


for prefix in ("ctxgate/", "plugins/", ""):
    print(figures(prefix))
PY
echo "tests exit status: $status"
exit "$status"
