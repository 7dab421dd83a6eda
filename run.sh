#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One entry point for a fresh machine: creates .venv, installs what pyproject.toml lists, builds the
# Cython extensions in place, then runs the chosen job. Safe and quick to run again.
#   ./run.sh demo [args]     end-to-end demo
#   ./run.sh test [pytest args]
#   ./run.sh bench [args]    pyperf benchmarks in perf/
#   ./run.sh regress [args]  the latency regression suite against perf/baseline.json (exit 1 on a regression)
#   ./run.sh build           set-up and build only
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
VENV=${AERON_PY_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

setup_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        echo "run.sh: setting up $VENV…" >&2
        "$PY" -m venv "$VENV"
    fi
    local stamp="$VENV/.stamp-deps" want
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "run.sh: installing the dependencies pyproject.toml lists (build, test, perf, docs)…" >&2
        "$VENV/bin/python" -m pip install -q --upgrade pip 2>&1 | { grep -v "is ignored: it is neither" || true; }
        # Dependencies come from pyproject.toml alone (build, test, perf and docs extras); Python 3.10 reads
        # it with tomli, the package tomllib came from.
        "$VENV/bin/python" -c "import tomllib" 2>/dev/null || "$VENV/bin/python" -m pip install -q "tomli>=2"
        "$VENV/bin/python" - <<'PYEOF' > "$VENV/.requirements.txt"
try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib
p = tomllib.load(open("pyproject.toml", "rb"))
extras = p["project"]["optional-dependencies"]
deps = set(p["project"]["dependencies"])
for name in ("build", "test", "perf", "docs"):
    deps.update(extras[name])
print("\n".join(sorted(deps)))
PYEOF
        "$VENV/bin/python" -m pip install -q -r "$VENV/.requirements.txt" 2>&1 | { grep -v "is ignored: it is neither" || true; }
        echo "$want" > "$stamp"
    fi
    # Make the in-place build importable from anywhere (perf scripts, pyperf workers, samples),
    # as an editable install would, without building twice.
    "$VENV/bin/python" -c "import site, sys; open(site.getsitepackages()[0] + '/aeron-py-dev.pth', 'w').write(sys.argv[1] + chr(10))" "$ROOT"
}

build() {
    # Say so when sources changed since the last build (or there was none): a first build takes about a minute.
    local stamp="$VENV/.stamp-build"
    if [ ! -e "$stamp" ] || [ -n "$(find aeron tests/cython setup.py -newer "$stamp" \
            \( -name '*.pyx' -o -name '*.pxd' -o -name '*.h' -o -name setup.py \) -print -quit)" ]; then
        echo "run.sh: building Cython extensions (first time ~1 min)…" >&2
    fi
    # flock: concurrent builds in one tree would race on the generated .c files.
    AERON_PY_BUILD_TESTS=1 flock "$ROOT/.build.lock" \
        "$VENV/bin/python" setup.py -q build_ext --inplace -j 2 >"$VENV/.build.log" 2>&1 \
        || { cat "$VENV/.build.log"; echo "build failed" >&2; exit 1; }
    touch "$stamp"
}

cmd=${1:-}
shift || true
case "$cmd" in
    build) setup_venv; build ;;
    test)  setup_venv; build; exec "$VENV/bin/python" -m pytest "$@" ;;
    demo)  setup_venv; build; exec "$VENV/bin/python" -m aeron.samples.demo "$@" ;;
    bench) setup_venv; build; exec "$VENV/bin/python" perf/run_all.py "$@" ;;
    regress) setup_venv; build; cd perf; exec "$VENV/bin/python" compare.py --run "$@" ;;
    *) echo "usage: $0 {demo|test|bench|regress|build} [args]" >&2; exit 2 ;;
esac
