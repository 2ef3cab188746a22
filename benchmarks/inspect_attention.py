"""Where examples/attention.py's warps wait: its default forms at B 4, H 32, S 4096 on the card.

Launches each form once (D 64 with key tiles of 128, D 128 with 64: the tuner's picks
on the card) after one warm-up, for a profiler; with OUTDIR, also writes each form's PTX
and its ptxas report there:

    python benchmarks/inspect_attention.py [OUTDIR]
    ncu --clock-control none --section WarpStateStats --section SchedulerStats \
        --section ComputeWorkloadAnalysis --section Occupancy -k regex:attention \
        --launch-skip 1 --launch-count 1 python benchmarks/inspect_attention.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.attention import ROWS, attention  # noqa: E402

FORMS = [(64, 128), (128, 64)]  # (D, BC)
B, H, S = 4, 32, 4096


def main(out: Path | None) -> None:
    for d, bc in FORMS:
        q, k, v = (torch.randn(B * H * S, d, device="cuda").half() for _ in range(3))
        o = torch.empty(B * H * S, d, device="cuda")
        view = attention.variant(G=1, D=d, BC=bc)
        for _ in range(2):  # the warm-up, then the launch a profiler skips to
            view[(S // ROWS, B * H)](q, k, v, o, S, d**-0.5)
        torch.cuda.synchronize()
        if out is None:
            continue
        out.mkdir(parents=True, exist_ok=True)
        ptx = out / f"attention_d{d}_bc{bc}.ptx"
        ptx.write_text(view.compile(chip="sm_90a").ptx)
        report = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(ptx), "-o", "/dev/null"],
                                capture_output=True, text=True, check=True)  # fmt: skip
        print(ptx.name, report.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
