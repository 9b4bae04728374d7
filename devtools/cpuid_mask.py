"""gdb script behind devtools/avx2-only: ONNX Runtime's and CTranslate2's libraries see an AVX2-only
CPU (no AVX-512, no AVX-VNNI or AVX512-VNNI, no AMX), as on a Zen 3, while everything else runs as is.

A breakpoint sits on each `cpuid` and `xgetbv` in those libraries (found with objdump, cached) and
one on the instruction after it, where the feature bits are cleared. Both libraries choose their
kernels from these instructions alone (MLAS, pytorch/cpuinfo, cpu_features, oneDNN's Xbyak), so their
AVX2 kernels run at full speed, under ptrace but with no other stop. The CPU's own micro-architecture
stays: a Zen 5 running AVX2 code is not a Zen 3.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import gdb

LIBRARIES = ("onnxruntime_pybind11_state", "libonnxruntime.so", "libctranslate2")
CLEAR = {  # (leaf, subleaf, register): feature bits to clear
    (7, 0, "rbx"): sum(1 << b for b in (16, 17, 21, 26, 27, 28, 30, 31)),  # AVX512 F DQ IFMA PF ER CD BW VL
    (7, 0, "rcx"): sum(1 << b for b in (1, 6, 8, 11, 12, 14)),     # VBMI VBMI2 GFNI VNNI BITALG VPOPCNTDQ
    (7, 0, "rdx"): sum(1 << b for b in (8, 22, 23, 24, 25)),       # VP2INTERSECT, AMX-BF16, FP16, AMX
    (7, 1, "rax"): sum(1 << b for b in (4, 5)),                    # AVX-VNNI, AVX512_BF16
}
XCR0_AVX512_STATE = 0xE0    # opmask, ZMM_Hi256, Hi16_ZMM: "the OS saves AVX-512 registers"
CACHE = Path(os.environ.get("MT_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
             / "mtkit") / "cpuid_sites"      # mtkit's cache (runtime/bundle.cache_root; gdb's Python lacks mtkit)
pending = {}                # thread -> (instruction, leaf, subleaf) between the two breakpoints
# `avx2-only --trace-only`: the same breakpoints, nothing cleared; what gdb alone costs a process.
MASK = gdb.convenience_variable("avx2_only_trace_only") is None


def register(name):
    return int(gdb.parse_and_eval(f"${name}")) & 0xFFFFFFFF


class Before(gdb.Breakpoint):
    def __init__(self, address, instruction):
        super().__init__(f"*{address:#x}", internal=True)
        self.instruction = instruction

    def stop(self):
        pending[gdb.selected_thread().ptid] = (self.instruction, register("rax"), register("rcx"))
        return False


class After(gdb.Breakpoint):
    def stop(self):
        instruction, leaf, subleaf = pending.pop(gdb.selected_thread().ptid, (None, None, None))
        if instruction == "xgetbv" and subleaf == 0:
            clear("rax", XCR0_AVX512_STATE)
        elif instruction == "cpuid":
            for (clear_leaf, clear_subleaf, name), bits in CLEAR.items():
                if (leaf, subleaf) == (clear_leaf, clear_subleaf):
                    clear(name, bits)
        return False


def clear(name, bits):
    """Clear the bits in the register; with --trace-only write it back unchanged, the same work."""
    gdb.execute(f"set ${name} = {register(name) & ~(bits if MASK else 0)}")


def sites(path):
    """Offsets of cpuid (2 bytes) and xgetbv (3 bytes) in the library, by disassembly: a byte search
    would also find them inside other instructions, where a breakpoint would corrupt the code."""
    stat = os.stat(path)
    cached = CACHE / f"{Path(path).name}-{stat.st_size}-{int(stat.st_mtime)}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True,
                             check=True).stdout
    found = [(int(m[1], 16), m[2]) for m in re.finditer(r"^\s*([0-9a-f]+):\s+(cpuid|xgetbv)\s*$", listing, re.M)]
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(found))
    return found


def load_address(path):
    real = os.path.realpath(path)
    with open(f"/proc/{gdb.selected_inferior().pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[2] == "00000000" and os.path.realpath(fields[5]) == real:
                return int(fields[0].split("-")[0], 16)
    raise gdb.GdbError(f"{path} is not mapped")


def on_new_objfile(event):
    path = event.new_objfile.filename
    if not any(name in os.path.basename(path) for name in LIBRARIES):
        return
    base = load_address(path)
    for offset, instruction in sites(path):
        Before(base + offset, instruction)
        After(f"*{base + offset + (2 if instruction == 'cpuid' else 3):#x}", internal=True)


gdb.events.new_objfile.connect(on_new_objfile)
