"""Sizes that would exhaust memory raise MemoryError (issue 21 C7, C4), under an address-space
limit as on a batch node: each case runs in a child interpreter, so that an abort (which kills
the interpreter) is seen as a failure instead of ending the test run."""

import subprocess
import sys
import textwrap

import pytest

LIMIT = 4_000_000_000  # bytes of address space, as `ulimit -v 4000000`

CASES = {
    "graph": "segcut.Graph(400_000_000)",
    "add_nodes": "segcut.Graph(10).add_nodes(3_000_000_000)",
    "grid_bk": textwrap.dedent(
        """
        g = segcut.Grid((6000, 6000))
        g.add_grid_edges(1, symmetric=True)
        t = np.zeros((6000, 6000), dtype=np.int64)
        t[0, 0] = 5
        g.add_grid_tedges(t, t[::-1, ::-1])
        del t
        g.maxflow(solver="bk")
        """
    ),
}


def run_limited(body: str) -> subprocess.CompletedProcess:
    code = "\n".join(
        [
            "import resource",
            f"resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))",
            "import numpy as np",
            "import segcut",
            "try:",
            textwrap.indent(textwrap.dedent(body).strip(), "    "),
            "except MemoryError as e:",
            "    print('MemoryError:', e)",
            "    raise SystemExit(3)",
            "print('fitted')",
        ]
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_too_large_raises_memory_error_not_an_abort(case):
    r = run_limited(CASES[case])
    out = r.stdout + r.stderr
    # A signal (an abort) is a negative status; 3: MemoryError was raised and caught.
    assert r.returncode >= 0, f"killed by signal {-r.returncode}: {out}"
    assert r.returncode == 3, out
    assert "needs about" in out or "cannot allocate" in out, out


def test_a_billion_components_is_refused():
    r = run_limited(
        """
        img = np.zeros((20, 20, 3), dtype=np.uint8)
        img[5:15, 5:15] = 200
        seeds = np.zeros((20, 20), dtype=np.uint8)
        seeds[10, 10] = 1
        seeds[0, 0] = 2
        try:
            segcut.segment(img, seeds, components=1_000_000_000)
        except ValueError as e:
            print("ValueError:", e)
            raise SystemExit(4)
        """
    )
    out = r.stdout + r.stderr
    assert r.returncode == 4, out
    assert "64" in out, out
