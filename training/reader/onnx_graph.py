"""Reading BERT weights back out of an ONNX export (warm_start.py: our int8 reader;
bge_base.py: a 12-layer base): the graph's initializers, who consumes each tensor, and the
named bias a MatMul's output reaches, which names its anonymous weight."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_graph(path: Path):
    """(graph, initializers by name as numpy arrays, consumers: tensor name -> nodes reading it)."""
    import onnx
    from onnx import numpy_helper

    g = onnx.load(str(path)).graph
    init = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    consumers: dict[str, list] = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    return g, init, consumers


def bias_after(output: str, consumers: dict[str, list], init: dict[str, np.ndarray], hops: int) -> str | None:
    """The `….bias` initializer read by the nearest Add that `output` reaches within `hops` nodes
    (an fp32 export: MatMul → Add; a quantised one: MatMulInteger → Cast → Mul → Add)."""
    frontier, bias = [output], None
    for _ in range(hops):
        nxt = []
        for t in frontier:
            for c in consumers.get(t, []):
                named = [x for x in c.input if x.endswith(".bias") and x in init]
                if c.op_type == "Add" and named:
                    bias = named[0]
                nxt += list(c.output)
        if bias:
            return bias
        frontier = nxt
    return None
