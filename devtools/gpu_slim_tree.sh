#!/usr/bin/env bash
# Make room in the device tool's 64 MiB per call (docs/gpu_runbook.md): every call carries the
# tracked tree (58.7 MiB), 34.6 MiB of it the shipped checkpoint, which the GPU needs only once.
#   bash devtools/gpu_slim_tree.sh on     # before the first call: the checkpoint leaves the index (the
#                                         # file stays on disk), is ignored, and is copied to .gpu/init.pt
#   bash devtools/gpu_slim_tree.sh off    # after the last call: everything as it was
# While "on", a pre-commit hook refuses every commit: one would delete the checkpoint from git.
# .gpu/ort/: onnxruntime-gpu split into parts that fit a call beside the slim tree (24 MiB): 38 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
checkpoint=models/de-en/checkpoint.fp16.pt
exclude=.git/info/exclude
hook=.git/hooks/pre-commit
case "${1:-}" in
on)
    git rm -q --cached "$checkpoint"
    mkdir -p .git/info .git/hooks .gpu && echo "/$checkpoint" >> "$exclude"
    cp "$checkpoint" .gpu/init.pt
    printf '#!/bin/sh\necho "devtools/gpu_slim_tree.sh is on: run it with off before committing" >&2\nexit 1\n' > "$hook"
    chmod +x "$hook"
    if [[ ! -d .gpu/ort ]] && compgen -G "${ORT_GPU_WHEEL:-/nonexistent}" >/dev/null; then
        mkdir -p .gpu/ort && split -b 38M -d "$ORT_GPU_WHEEL" ".gpu/ort/$(basename "$ORT_GPU_WHEEL").part"
    fi
    git ls-files -z | xargs -0 du -cb | tail -1 | awk '{printf "tracked tree now %.1f MB\n", $1 / 1e6}'
    ;;
off)
    git reset -q -- "$checkpoint"
    grep -vxF "/$checkpoint" "$exclude" > "$exclude.tmp" || true
    mv "$exclude.tmp" "$exclude"
    rm -f "$hook"
    git status --short -- "$checkpoint"
    ;;
*)
    echo "usage: $0 on|off   (ORT_GPU_WHEEL=path/to/onnxruntime_gpu-*.whl with on: also split it into .gpu/ort)" >&2
    exit 2
    ;;
esac
