#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One entry point for a fresh machine: creates .venv, installs what the chosen job needs (pyproject.toml's core
# dependencies and the job's extras, only those not installed yet), builds the Cython extensions in place, then
# runs the job. Safe and quick to run again.
#   ./run.sh demo [args]     end-to-end demo                      (installs: build)
#   ./run.sh test [pytest args]                                   (installs: build, test, docs: tests build the site)
#   ./run.sh bench [args]    pyperf benchmarks in perf/           (installs: build, perf)
#   ./run.sh regress [args]  the latency regression check against the base commit, built beside (exit 1 on a regression)
#   ./run.sh docs [mkdocs args]   the documentation site: build (default) or serve   (installs: build, docs)
#   ./run.sh build           set-up and build only                (installs: build)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
VENV=${AERON_PY_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

pip_install() {
    # pip's own progress (collecting, downloading, building wheels, installing) on stderr, the job's output
    # stays alone on stdout; one warning this machine's pip configuration may print about a missing
    # find-links folder is dropped.
    "$VENV/bin/python" -m pip install --disable-pip-version-check "$@" \
        >&2 2> >(grep --line-buffered -v "is ignored: it is neither" >&2)
}

setup_venv() {    # $1: the job; the rest: the extras of pyproject.toml it needs besides the core dependencies
    local job=$1
    shift
    if [ ! -x "$VENV/bin/python" ]; then
        echo "run.sh: creating $VENV…" >&2
        "$PY" -m venv "$VENV"
        pip_install -q --upgrade pip
    fi
    local stamp="$VENV/.stamp-deps-$(IFS=-; echo "$*")" want
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        # Python 3.10 reads pyproject.toml with tomli, the package tomllib came from.
        "$VENV/bin/python" -c "import tomllib" 2>/dev/null || pip_install -q "tomli>=2"
        # What this job needs and no earlier job installed: a later job adds only its own (demo, then test).
        local missing
        missing=$("$VENV/bin/python" - "$VENV/.requirements-installed" "$@" <<'PYEOF'
import sys

try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib
installed, *extras = sys.argv[1:]
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = list(project.get("dependencies", []))
for extra in extras:
    wanted += project["optional-dependencies"][extra]
try:
    have = set(open(installed).read().splitlines())
except FileNotFoundError:
    have = set()
print("\n".join(dict.fromkeys(r for r in wanted if r not in have)))
PYEOF
)
        if [ -n "$missing" ]; then
            local -a requirements
            mapfile -t requirements <<<"$missing"
            echo "run.sh: $job needs the core dependencies and the extras ${*:-(none)} of pyproject.toml;" \
                 "installing what is not installed yet: ${requirements[*]}…" >&2
            pip_install "${requirements[@]}"
            printf '%s\n' "${requirements[@]}" >>"$VENV/.requirements-installed"
        fi
        echo "$want" >"$stamp"
    fi
    # Make the in-place build importable from anywhere (perf scripts, pyperf workers, samples, Spark's Python
    # workers), as an editable install would, without building twice.
    "$VENV/bin/python" -c "import site, sys; open(site.getsitepackages()[0] + '/aeron-py-dev.pth', 'w').write(sys.argv[1] + chr(10))" "$ROOT"
}

build() {
    local stamp="$VENV/.stamp-build" progress=0 started=$SECONDS
    if [ ! -e "$stamp" ] || [ -n "$(find aeron tests/cython setup.py -newer "$stamp" \
            \( -name '*.pyx' -o -name '*.pxd' -o -name '*.h' -o -name setup.py \) -print -quit)" ]; then
        progress=1
        # About 2 to 3 minutes of CPU in all: 1 min 21 s measured on 2 cores at a load of 1 to 2, 7 min 48 s and
        # 9 min at a load of 10 to 12 (docs/getting-started.md); later builds recompile only what changed.
        echo "run.sh: building the Cython extensions whose sources changed, one line per module (all" \
             "$(find aeron/_core tests/cython -name '*.pyx' | wc -l) from scratch: 1.5 min on 2 idle cores, up to 10" \
             "on a busy machine; compiler output in $VENV/.build.log)…" >&2
    fi
    # flock: concurrent builds in one tree would race on the generated .c files. With progress on, setup.py
    # prints "[ i/n] Cythonizing ..." and "[ i/n] compiled ..." per module; compiler warnings stay in the log.
    if ! AERON_PY_BUILD_TESTS=1 AERON_PY_BUILD_PROGRESS=$progress flock "$ROOT/.build.lock" \
            "$VENV/bin/python" setup.py -q build_ext --inplace -j 2 2>&1 \
            | tee "$VENV/.build.log" | { grep --line-buffered -E '^\[ *[0-9]+/[0-9]+\] ' || true; } >&2; then
        cat "$VENV/.build.log" >&2
        echo "build failed" >&2
        exit 1
    fi
    [ "$progress" = 0 ] || echo "run.sh: built in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s" >&2
    touch "$stamp"
}

cmd=${1:-}
shift || true
case "$cmd" in
    build) setup_venv build build; build ;;
    test)  setup_venv test build test docs; build; exec "$VENV/bin/python" -m pytest "$@" ;;
    demo)  setup_venv demo build; build; exec "$VENV/bin/python" -m aeron.samples.demo "$@" ;;
    bench) setup_venv bench build perf; build; exec "$VENV/bin/python" perf/run_all.py "$@" ;;
    regress) setup_venv regress build perf; build; cd perf; exec "$VENV/bin/python" compare.py "$@" ;;
    docs)  setup_venv docs build docs; build; NO_MKDOCS_2_WARNING=1 exec "$VENV/bin/python" -m mkdocs "${@:-build}" ;;
    *) echo "usage: $0 {demo|test|bench|regress|docs|build} [args]" >&2; exit 2 ;;
esac
