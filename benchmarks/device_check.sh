#!/usr/bin/env bash
# One prepared run on a bare GPU machine: the GPU figures of issues 11 and 14 and the device
# tests, inside a fixed time, with nothing fetched from the network.
#
#   here:    make device-bundle   # .device/: wheels, LUBM data, conformance cases
#   there:   OUT=dir bash benchmarks/device_check.sh [SECONDS]     (default 540)
#
# The machine is expected to hold Python 3.12 with CuPy, Numba, NumPy, SciPy, pyarrow,
# pytest, pytest-xdist and hypothesis (the workplace's GPU image does); the other packages
# come from .device/whl.  The project is put on PYTHONPATH under its import names
# (gpu_engine, gpu_engine.kernels from kernels/, gpu_engine.host from host/) without pip.
# Every step runs under its own time limit, most valuable first, and what it printed goes
# to $OUT: steps.tsv (step, exit status, seconds), log.txt, results.jsonl (the benchmarks'
# JSON lines), tests.txt and pytest.txt (the tests' summary and failures).  STEPS="chain
# gpu-tests" runs only the steps named, TESTS= only those tests; STANDIN=1 runs on the
# CuPy stand-in (a dry run on a machine without a GPU).
set -u
BUDGET=${1:-540}
OUT=${OUT:-$PWD/out}
PY=${PY:-python3}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
ROOT=$PWD

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME CAP COMMAND...: run COMMAND for at most CAP seconds (less when less is left,
# keeping RESERVE for the steps after it); record its status and time
step() {
    local name=$1 cap=$2 t0 rc lim
    shift 2
    case " ${STEPS:-$name} " in *" $name "*) ;; *) return ;; esac
    lim=$(left)
    lim=$((lim - ${RESERVE:-0}))
    [ "$lim" -gt "$cap" ] && lim=$cap
    if [ "$lim" -lt 10 ]; then
        printf '%s\tskipped\t0\n' "$name" >>"$OUT/steps.tsv"
        return
    fi
    echo "=== $name (limit ${lim} s)" >>"$OUT/log.txt"
    t0=$(date +%s)
    timeout -k 5 "$lim" "$@" >>"$OUT/log.txt" 2>&1
    rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$OUT/steps.tsv"
}

# --- packages and the project's import names ----------------------------------------------
SITE=$(mktemp -d /tmp/gpu-engine-site.XXXXXX)
chmod 755 "$SITE"  # the read-only-install test runs the CLI as another user, from here
trap 'rm -rf "$SITE"' EXIT
mkdir -p "$SITE/gpu_engine"
# the wheels go into the interpreter's own site-packages where it lets us (a bare machine's,
# as root), so that tests' subprocesses with a PYTHONPATH of their own import them too;
# else beside the project
if ls .device/whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        .device/whl/*.whl >>"$OUT/log.txt" 2>&1 ||
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" .device/whl/*.whl >>"$OUT/log.txt" 2>&1 || echo "wheels failed" >>"$OUT/log.txt"
fi
# the datalog-conformance package and the conformance cases travel compressed (70 MB -> 2)
[ -f .device/datalog_conformance.tar.xz ] && tar -C "$SITE" -xJf .device/datalog_conformance.tar.xz
cp -r gpu_engine/. "$SITE/gpu_engine/"
cp -r kernels "$SITE/gpu_engine/kernels"
cp -r host "$SITE/gpu_engine/host"
cp -r examples "$SITE/gpu_engine/examples"
export PYTHONPATH="$SITE:$ROOT"
DEVICE=gpu
if [ "${STANDIN:-0}" = 1 ]; then
    export PYTHONPATH="$ROOT/tests/cupy_standin:$PYTHONPATH"
fi
# the benchmarks read ../shared/bench-data (LUBM); the bundle carries what they need
if [ ! -e ../shared/bench-data/lubm ] && [ -d .device/shared ]; then
    ln -sfn "$ROOT/.device/shared" ../shared 2>>"$OUT/log.txt"
fi
if [ ! -d ../shared/conformance ] && [ -f .device/conformance.tar.xz ]; then
    tar -C ../shared/ -xJf .device/conformance.tar.xz 2>>"$OUT/log.txt"
fi

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
    $PY -c "import sys, numpy, cupy; print(sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__, cupy.cuda.runtime.getDeviceCount(), 'device(s)')" 2>&1
} >"$OUT/device.txt"
R="$OUT/results.jsonl"

# --- 0. the CPU kernels compiled once, on every core (kernels/precompile.py), instead of in
#     each benchmark's first samples and in each of the test workers
step precompile 60 $PY -m gpu_engine.kernels.precompile --jobs "$(nproc)"
# --- 1. a smoke test: the demo on the device (LUBM(1), LUBM_L) ----------------------------
step demo 90 $PY -m gpu_engine.host.demo --device $DEVICE
# --- the host CPU's speed (the host twin runs small updates there): the demo on the CPU
step demo-cpu 30 $PY -m gpu_engine.host.demo --device cpu
# --- 2. issue 11: 1,000-fact deletions on LUBM(10)/(50) LUBM_L, the default against Remat
#     (ten samples each, as the issue asks: a median that one slow sample cannot move)
step small-lubm10 150 $PY -m benchmarks.incremental --suite small --only 'LUBM_L@LUBM(10)' \
    --algorithms remat,dredc,auto --repeats 10 --device $DEVICE --in-process --out "$R"
step small-lubm50 150 $PY -m benchmarks.incremental --suite small --only 'LUBM_L@LUBM(50)' \
    --algorithms remat,dredc,auto --repeats 10 --device $DEVICE --in-process --out "$R"
# --- 3. issue 11: rounds with one-fact deltas ----------------------------------------------
step chain 60 $PY -m benchmarks.chain --sizes 1000,10000 --programs chain --no-case \
    --peers '' --device $DEVICE --out "$R"
# --- 4. issue 14: equality, 100 deletions, DRed≈ / auto against Remat≈ ---------------------
step eq-sameas 150 $PY -m benchmarks.equality_update --dataset sameas --entities 600000 \
    --deletions 100 --deleting any --samples 3 --warmup --algorithms remat,dred_eq,auto \
    --device $DEVICE --out "$R"
step eq-lubm 180 $PY -m benchmarks.equality_update --dataset lubm_dup --universities 10 \
    --deletions 100 --deleting any --samples 2 --warmup --algorithms remat,dred_eq,auto \
    --device $DEVICE --out "$R"
# --- 5. issue 11: 1,000-fact deletions on DAG-R 2k/10k and SSPE 10k/100k -------------------
step small-dag 90 $PY -m benchmarks.incremental --suite small --only 'DAG-R@n=2000 m=10000' \
    --only 'SSPE@n=10000 m=100000' --algorithms remat,dredc,bfc,auto --repeats 3 --device $DEVICE \
    --in-process --out "$R"
# --- 6. issue 17: the streaming benchmark, LUBM(10), 60 micro-batches, each mode once ----
step streaming 60 $PY -m benchmarks.streaming --case lubm --batches 60 --repeats 1 \
    --device $DEVICE --quiet --out "$R"
# --- steps run only when STEPS names them (a second run with what the first left over) ---
# optional NAME CAP COMMAND...: as step, but only when STEPS names NAME
optional() { case " ${STEPS:-} " in *" $1 "*) step "$@" ;; esac; }
# issue 14 on deletions that split no class (`no-key`: no key, e-mail or owl:sameAs facts)
optional eq-sameas-nokey 90 $PY -m benchmarks.equality_update --dataset sameas \
    --entities 600000 --deletions 100 --deleting no-key --samples 3 --warmup \
    --algorithms remat,dred_eq,auto --device $DEVICE --out "$R"
optional eq-lubm-nokey 90 $PY -m benchmarks.equality_update --dataset lubm_dup \
    --universities 10 --deletions 100 --deleting no-key --samples 2 --warmup \
    --algorithms remat,dred_eq,auto --device $DEVICE --out "$R"
# issue 11 item 7: every algorithm of the small suite on the other LUBM rule sets
for rules in LUBM_LE LUBM_U; do
    optional "small-${rules#LUBM_}10" 100 $PY -m benchmarks.incremental --suite small \
        --only "${rules}@LUBM(10)" --repeats 3 --device $DEVICE --in-process --out "$R"
done
# --- 7. the test suite with the GPU as its device (make gpu-test), with the time left:
# every test whose device is a parameter runs on the GPU, and device="auto" picks it too.
# -v streams each result, so a run cut short still reports what failed so far
WORKERS=${WORKERS:-$(($(nproc) - 1))}  # pytest-xdist processes (0: none)
XDIST=()
[ "$WORKERS" -gt 0 ] && XDIST=(-n "$WORKERS")
RESERVE=0 step gpu-tests 100000 env GPU_ENGINE_TEST_DEVICE=gpu $PY -m pytest -v \
    -p no:cacheprovider -p no:benchmark "${XDIST[@]}" --continue-on-collection-errors \
    --durations=15 ${TESTS:-tests}
sed -n '/=== gpu-tests/,$p' "$OUT/log.txt" >"$OUT/tests.txt"
grep -E "^=+ .*(passed|failed|error)" "$OUT/tests.txt" | tail -1 >"$OUT/pytest.txt"
grep -E "(FAILED|ERROR) tests/|^(FAILED|ERROR) " "$OUT/tests.txt" | sort -u >>"$OUT/pytest.txt"
echo "$(grep -cE "PASSED" "$OUT/tests.txt") passed so far" >>"$OUT/pytest.txt"
cat "$OUT/steps.tsv"
