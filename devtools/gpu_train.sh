#!/usr/bin/env bash
# One device `run` of the GPU training runbook (docs/gpu_runbook.md): install what the GPU image
# lacks, train for at most SECONDS (then mt-train's own SIGINT handling saves last.pt), and put the
# run's log, metrics and fp16 weights (the newest, and a mean of the last saves) under $OUT in parts
# under the 16 MiB a returned file may have.
#   bash devtools/gpu_train.sh SECONDS [CONFIG] [EPOCHS] [mt-train options, e.g. --set optim.max_tokens=16384]
# SECONDS 0 only installs and unpacks: the first of two calls when the tree and .gpu/ together pass
# the 64 MiB a call carries (the runbook's slim tree).
# The first call starts from the shipped weights (or .gpu/init.pt when present, or the shipped weights
# grown by mt-grow with GROW="--ffn-dim 2048", say); later calls on the same warm machine resume
# runs/gpu. The corpora come from .gpu/data.tar.xz (devtools/gpu_prepare.sh), unpacked once.
set -euo pipefail
seconds=${1:?seconds to train}
config=${2:-configs/deen_v2.toml}
epochs=${3:-12}
extra=("${@:4}")
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
cd "$(dirname "$0")/.."

if ! python3 -P -c "import mtkit.train" 2>/dev/null; then
    if compgen -G ".gpu/whl/*.whl" >/dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .gpu/whl/*.whl
    fi
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir .
fi
if [[ ! -d .gpu/data ]]; then
    python3 -c "import tarfile; tarfile.open('.gpu/data.tar.xz').extractall('.gpu', filter='data')"
    find .gpu/data -type f ! -name '*.gz' -print0 | xargs -0 -n 1 -P "$(nproc)" gzip -1   # the config names .gz files
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
lscpu | grep -E 'Model name|avx512f' | cut -c1-120 || true
if [[ "$seconds" == 0 ]]; then
    echo "set up only (SECONDS 0): installed and unpacked; the next call trains"
    exit 0
fi

export MT_DATA_DIR="$PWD/.gpu/data" PYTHONUNBUFFERED=1
if [[ -f runs/gpu/checkpoints/last.pt ]]; then
    start=(--resume)
else
    init=models/de-en/checkpoint.fp16.pt
    if [[ -n "${GROW:-}" && ! -f .gpu/init.pt ]]; then
        mt-grow "$init" .gpu/init.pt $GROW
    fi
    [[ -f .gpu/init.pt ]] && init=.gpu/init.pt
    start=(--init-from "$init")
fi
status=0
timeout -s INT -k 60 "$seconds" mt-train "$config" "${start[@]}" --epochs "$epochs" --output-dir runs/gpu "${extra[@]}" \
    2>&1 | tee -a "$out/train.log" || status=$?
echo "mt-train exit status: $status (124: stopped at the time limit, last.pt saved)"

cp runs/gpu/metrics.jsonl "$out/" 2>/dev/null || true
# Two weight sets come back: the newest (weights.fp16.pt) and, when the run saved epoch checkpoints,
# the mean of the newest with the last two of them (mean.fp16.pt): averaging the last two saves of the
# first GPU run gained 4 BLEU on the dev sets over either. 2 x 3 parts + log + metrics = the 8 files
# a call may return.
python3 -P - "$out" <<'PY'   # -P: the checkout's own mtkit/ folder must not shadow the installed package
import sys
from pathlib import Path
from mtkit.export.ship import half_precision_checkpoint
from mtkit.train.average import average_checkpoints
out, ckpts = Path(sys.argv[1]), Path("runs/gpu/checkpoints")
newest = max((p for p in (ckpts / "averaged.pt", ckpts / "last.pt") if p.is_file()), key=lambda p: p.stat().st_mtime)
half_precision_checkpoint(newest, out / "weights.fp16.pt")   # what --init-from and mt-export read
print("weights from", newest)
epochs = sorted(ckpts.glob("epoch*.pt"))[-2:]
if epochs:
    average_checkpoints([(p, 1.0) for p in (newest, *epochs)], ckpts / "mean.pt")
    half_precision_checkpoint(ckpts / "mean.pt", out / "mean.fp16.pt")
    print("mean of", newest, *epochs)
PY
for weights in "$out"/*.fp16.pt; do
    split -b 15M -d "$weights" "$weights.part"
    rm "$weights"
done
ls -la "$out"
