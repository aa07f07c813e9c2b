"""The environment chain laid out as a graph for an inline SVG: columns by depth (an environment sits one column
right of its deepest upstream), rows ordered by the mean row of the upstreams (fewer crossings), edges as curves
from an upstream's right side to a downstream's left side. Fan-out is one node with several edges leaving it,
fan-in one node with several edges arriving."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fleetflow.delivery.records import Record

NODE_WIDTH, NODE_HEIGHT = 168, 64
COLUMN_GAP, ROW_GAP, MARGIN = 64, 20, 8


class Node(Record):
    name: str
    column: int
    row: int
    x: int
    y: int
    width: int = NODE_WIDTH
    height: int = NODE_HEIGHT


class Edge(Record):
    upstream: str
    downstream: str
    path: str  # SVG path data


class Layout(Record):
    nodes: list[Node]
    edges: list[Edge]
    width: int
    height: int


def depths(order: Sequence[str], after: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Column of each environment: 0 without upstreams, else 1 + the deepest upstream (``order``: upstreams
    first). Unknown upstreams are ignored."""
    depth: dict[str, int] = {}
    for name in order:
        ups = [depth[u] for u in after.get(name, ()) if u in depth]
        depth[name] = 1 + max(ups) if ups else 0
    return depth


def layout(order: Sequence[str], after: Mapping[str, Sequence[str]]) -> Layout:
    depth = depths(order, after)
    columns: dict[int, list[str]] = {}
    for name in order:
        columns.setdefault(depth[name], []).append(name)
    rows: dict[str, float] = {}
    for column in sorted(columns):
        names = columns[column]

        def weight(name: str) -> tuple[float, str]:
            ups = [rows[u] for u in after.get(name, ()) if u in rows]
            return (sum(ups) / len(ups) if ups else 0.0, name)

        names.sort(key=weight)
        for i, name in enumerate(names):
            rows[name] = float(i)
    tallest = max((len(v) for v in columns.values()), default=0)
    height = MARGIN * 2 + tallest * NODE_HEIGHT + max(0, tallest - 1) * ROW_GAP
    nodes: dict[str, Node] = {}
    for column, names in columns.items():
        span = len(names) * NODE_HEIGHT + (len(names) - 1) * ROW_GAP
        top = (height - span) // 2  # centre each column: a fan-out's branches sit either side of their upstream
        for i, name in enumerate(names):
            nodes[name] = Node(name=name, column=column, row=i, x=MARGIN + column * (NODE_WIDTH + COLUMN_GAP),
                               y=top + i * (NODE_HEIGHT + ROW_GAP))
    edges: list[Edge] = []
    for name in order:
        for upstream in after.get(name, ()):
            if upstream not in nodes:
                continue
            a, b = nodes[upstream], nodes[name]
            x1, y1 = a.x + a.width, a.y + a.height // 2
            x2, y2 = b.x, b.y + b.height // 2
            bend = (x2 - x1) // 2
            edges.append(Edge(upstream=upstream, downstream=name,
                              path=f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2 - 6},{y2}"))
    width = MARGIN * 2 + (max(columns, default=0) + 1) * NODE_WIDTH + max(columns, default=0) * COLUMN_GAP
    return Layout(nodes=[nodes[n] for n in order], edges=edges, width=width, height=height)
