# Shared set-up for scripts/demo and scripts/test: a virtual environment in .venv with acpd
# installed (editable). Re-running is cheap: pip skips what is already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "acpd needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
STAMP=.venv/.acpd-installed-$1
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".$2"
    touch "$STAMP"
fi
# Bytecode for acpd's own modules, written once here: every daemon and CLI process the demo or
# the tests start imports them, and where PYTHONDONTWRITEBYTECODE is set (as on some CI
# machines) nothing else writes it, so each process would compile every module again (about
# half of a session daemon's CPU time). Only changed files are compiled.
.venv/bin/python -m compileall -q -j 0 src >/dev/null
