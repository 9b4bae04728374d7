"""Is ONNX Runtime's AMX int8 GEMM what makes us slow on Intel Xeons with AMX (issue 16)? A one-off A/B.

MLAS takes its AMX kernel for every u8 x s8 product once the kernel grants the process the AMX tile
state (`arch_prctl(ARCH_REQ_XCOMP_PERM)`), and there is no switch to refuse it. A seccomp filter
that fails that one call makes MLAS fall back to its AVX512-VNNI kernels, in a process of its own.
Fresh processes with and without the filter take turns; each loads the shipped int8 bundle and times
beam 4 on requests of 32 and greedy one sentence at a time with mt-bench's own engine and timing loops:

    python -m mtkit.benchmarks.amx [--rounds 3] [--limit 100] [--out FILE.json]

The outputs of both must be identical (the integer products are exact either way). Linux x86-64 only;
on a CPU without AMX both arms run the same kernels, which makes a null test.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import hashlib
import json
import statistics
import struct
import subprocess
import sys

from .bench import DATASETS   # mt-bench's two test sets; importing it loads neither onnxruntime nor torch

SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 158, 0x1023, 18
LIBC = ctypes.CDLL(None, use_errno=True)


def refuse_amx() -> None:
    """Install a seccomp filter that fails arch_prctl(ARCH_REQ_XCOMP_PERM) with EPERM, for this process
    and its children; everything else is allowed. Must run before onnxruntime initializes MLAS."""
    ld, jeq, ret = 0x20, 0x15, 0x06                        # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EPERM    # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO
    program = [(ld, 0, 0, 4), (jeq, 1, 0, 0xC000003E), (ret, 0, 0, allow),     # not x86-64: allow
               (ld, 0, 0, 0), (jeq, 0, 3, SYS_ARCH_PRCTL),                    # syscall number
               (ld, 0, 0, 16), (jeq, 0, 1, ARCH_REQ_XCOMP_PERM),              # its first argument
               (ret, 0, 0, deny), (ret, 0, 0, allow)]
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in program))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    if LIBC.prctl(38, 1, 0, 0, 0) or LIBC.prctl(22, 2, ctypes.byref(Program(len(program), ctypes.addressof(code))), 0, 0):
        raise OSError(ctypes.get_errno(), "seccomp filter not installed")   # 38 NO_NEW_PRIVS, 22 SET_SECCOMP


def amx_state() -> str:
    """What this process gets when it asks for the AMX tile state (asking twice is harmless)."""
    rc = LIBC.syscall(ctypes.c_long(SYS_ARCH_PRCTL), ctypes.c_long(ARCH_REQ_XCOMP_PERM), ctypes.c_long(XFEATURE_XTILEDATA))
    return "granted" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def child(arm: str, limit: int) -> dict:
    if arm == "no-amx":
        refuse_amx()
    from mtkit.runtime.bundle import resolve_model
    from mtkit.runtime.data_dir import corpus_file, default_data_dir
    from mtkit.runtime.text_io import read_lines

    from .engines import load
    from .worker import measure_latency, measure_throughput

    engine = load("ort-int8", {"bundle": str(resolve_model(None))}, threads=2)   # the shipped model
    result = {"arm": arm, "amx": amx_state(), "sets": {}}
    for name, prefix in DATASETS.items():
        lines = read_lines(corpus_file(default_data_dir(), prefix, "de"))[:limit]
        (beam,), beam_out = measure_throughput(engine, lines, "de", "en", reps=1, warmup=1, beam_size=4, batch_size=32)
        greedy_s, greedy_out = measure_latency(engine, lines, "de", "en", reps=1, warmup=3)
        digest = hashlib.sha256("\n".join(beam_out + greedy_out).encode()).hexdigest()[:16]
        result["sets"][name] = {"beam_s": beam["seconds"], "greedy_p50_ms": 1000 * statistics.median(greedy_s),
                                "outputs": digest}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=100, help="Sentences per set.")
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", choices=["amx", "no-amx"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.limit)))
        return
    runs = []
    for r in range(args.rounds):
        for arm in ("amx", "no-amx") if r % 2 == 0 else ("no-amx", "amx"):
            out = subprocess.run([sys.executable, "-m", "mtkit.benchmarks.amx", "--child", arm, "--limit", str(args.limit)],
                                 capture_output=True, text=True, check=True).stdout
            runs.append(json.loads(out.splitlines()[-1]))
            print(f"round {r + 1} {arm}: AMX {runs[-1]['amx']}, " + ", ".join(
                f"{n} beam {s['beam_s']:.2f} s greedy p50 {s['greedy_p50_ms']:.1f} ms" for n, s in runs[-1]["sets"].items()),
                flush=True)
    summary = {}
    for name in DATASETS:
        med = {arm: {k: statistics.median(r["sets"][name][k] for r in runs if r["arm"] == arm)
                     for k in ("beam_s", "greedy_p50_ms")} for arm in ("amx", "no-amx")}
        same = len({r["sets"][name]["outputs"] for r in runs}) == 1
        summary[name] = {"no-amx / amx beam time": med["no-amx"]["beam_s"] / med["amx"]["beam_s"],
                         "no-amx / amx greedy p50": med["no-amx"]["greedy_p50_ms"] / med["amx"]["greedy_p50_ms"],
                         "identical outputs": same, "medians": med}
        print(f"{name}: without AMX {summary[name]['no-amx / amx beam time']:.2f}x the beam time, "
              f"{summary[name]['no-amx / amx greedy p50']:.2f}x the greedy p50; outputs identical: {same}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"runs": runs, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
