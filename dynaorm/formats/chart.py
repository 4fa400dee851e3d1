"""A chart of a design (``dynaorm model MODULE:table --chart OUT.html``): one
self-contained HTML page, an inline SVG and no network, drawing the table and each index
(its key attributes and projection), each entity (its type name, key templates, fields and
the rows a write of it writes, by role) and a line from each entity to the table and to
every index it lands in, labelled with the entity's key templates there."""

import html
from collections.abc import Mapping, Sequence
from typing import Any, Final

_CHAR: Final = 7.2  # px per character of the 12px monospace text
_LABEL_CHAR: Final = 6.0  # px per character of a label's 10px monospace text
_CURVE: Final = 60  # px between a line's label and the index boxes, at least
_LINE: Final = 16
_PAD: Final = 10
_GAP: Final = 24
_LEFT: Final = 20
_COLORS: Final = {"table": "#1f6feb", "gsi": "#8250df", "lsi": "#bf8700",
                  "vector": "#1a7f37"}


def _box(x: float, y: float, width: float, title: str, lines: Sequence[str], color: str,
         anchor: str) -> list[str]:
    """An SVG box: a coloured title bar and its lines of text."""
    height = _LINE * (len(lines) + 1) + _PAD * 2
    out = [f'<g id="{html.escape(anchor)}">',
           f'<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="6" fill="#ffffff" '
           f'stroke="{color}" stroke-width="2"/>',
           f'<rect x="{x}" y="{y}" width="{width}" height="{_LINE + _PAD}" rx="6" '
           f'fill="{color}"/>',
           f'<text x="{x + _PAD}" y="{y + _LINE}" class="title">{html.escape(title)}</text>']
    for i, line in enumerate(lines):
        out.append(f'<text x="{x + _PAD}" y="{y + _LINE * (i + 2) + _PAD}">'
                   f'{html.escape(line)}</text>')
    return [*out, "</g>"]


def _width(title: str, lines: Sequence[str]) -> float:
    return max(len(t) for t in (title, *lines)) * _CHAR + 2 * _PAD


def _index_lines(table: Mapping[str, Any], index: Mapping[str, Any] | None) -> list[str]:
    if index is None:
        return [f"pk {table['pk']}" + (f"   sk {table['sk']}" if table.get("sk") else ""),
                *(f"{k} {table[k]}" for k in ("type_attribute", "ttl", "stream")
                  if table.get(k))]
    if index["kind"] == "vector":
        return [f"vector {index['attribute']} ({index['dimensions']}, {index['distance']})",
                f"partition {index.get('partition') or '-'}",
                f"filters {', '.join(index.get('filters') or ()) or '-'}"]
    pk = ", ".join(index.get("pk") or [table["pk"]])
    sk = ", ".join(index.get("sk") or ())
    projection = index.get("projection", "ALL")
    native = " (native)" if index.get("native") else ""
    return [f"pk {pk}" + (f"   sk {sk}" if sk else "") + native,
            f"projection {projection if isinstance(projection, str) else ', '.join(projection)}"]


def _entity_lines(e: Mapping[str, Any]) -> list[str]:
    lines = [f"type {e['type_name']}", f"pk {e['pk']}"]
    if e.get("sk") is not None:
        lines.append(f"sk {e['sk']}")
    fields = ", ".join(f["name"] + ("*" if f.get("encrypted") else "") for f in e["fields"])
    lines.append(f"fields {fields}" if len(fields) < 60 else f"fields ({len(e['fields'])})")
    rules = [r for r, on in (("unique " + ", ".join(u["field"] for u in e.get("unique", ())),
                              e.get("unique")), ("versioned", e.get("versioned")),
                             ("encrypted", e.get("encrypted")), ("previous layout",
                                                                 e.get("previous"))) if on]
    if rules:
        lines.append("; ".join(rules))
    for write in ("insert", "update", "delete"):
        rows = e.get("writes", {}).get(write, {})
        lines.append(f"{write}: " + ", ".join(f"{role} {n}" for role, n in rows.items()))
    return lines


def _labels(table: str, e: Mapping[str, Any], drawn: set[str]) -> list[tuple[str, str]]:
    """``(target, label)`` of each line from entity ``e``: to the table and to each index
    it lands in that is drawn, labelled with its key templates there."""
    templates = {i["name"]: i for i in e.get("indexes", ())}
    return [(t, f"{e['pk']} / {e['sk']}" if t == table else
             f"{templates[t]['pk']} / {templates[t].get('sk')}" if t in templates else
             "history" if t == e.get("history_index") else "its attributes")
            for t in [table, *e.get("lands_in", ())] if t in drawn]


def chart_of(model: Mapping[str, Any]) -> str:
    """The chart of ``model`` (:func:`~dynaorm.schema.model.model_of`) as an HTML page."""
    table = model["table"]
    targets = [(table["name"], None)] + [
        (i["name"], i) for i in table.get("indexes", ())]
    entities = list(model.get("entities", ()))
    boxes = [(e["name"], _entity_lines(e)) for e in entities]
    left = max([_width(n, lines) for n, lines in boxes] or [200.0])
    labels = [_labels(table["name"], e, {n for n, _ in targets}) for e in entities]
    longest = max([len(label) for found in labels for _, label in found] or [0])
    # (the index boxes start past the longest label: no label reaches into a box)
    right_x = _LEFT + left + max(260, 6 + longest * _LABEL_CHAR + _CURVE)
    svg = []
    places = {}
    y = 50.0
    for (name, index) in targets:
        kind = "table" if index is None else index["kind"]
        title = f"{'table' if index is None else kind.upper()} {name}"
        lines = _index_lines(table, index)
        svg += _box(right_x, y, _width(title, lines), title, lines, _COLORS[kind],
                    f"index-{name}")
        places[name] = (right_x, y + (_LINE + _PAD) / 2)
        y += _LINE * (len(lines) + 1) + _PAD * 2 + _GAP
    bottom = y
    y = 50.0
    edges = []
    for (name, lines), reached in zip(boxes, labels, strict=True):
        svg += _box(_LEFT, y, left, name, lines, "#57606a", f"entity-{name}")
        for k, (target, label) in enumerate(reached):  # (each line leaves at its height)
            start, end = (_LEFT + left, y + (_LINE + _PAD) / 2 + k * _LINE), places[target]
            edges += [f'<path d="M{start[0]},{start[1]} C{start[0] + 120},{start[1]} '
                      f'{end[0] - 120},{end[1]} {end[0]},{end[1]}" class="edge"/>',
                      f'<text x="{start[0] + 6}" y="{start[1] - 3}" class="label">'
                      f"{html.escape(label)}</text>"]
        y += _LINE * (len(lines) + 1) + _PAD * 2 + _GAP
    height = max(y, bottom) + 20
    width = right_x + max([_width(f"x {n}", _index_lines(table, i)) for n, i in targets]) + 40
    title = f"dynaorm design of table {table['name']}"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{margin:0;background:#f6f8fa;font-family:sans-serif}"
        "svg text{font:12px monospace;fill:#24292f}svg text.title{fill:#fff;font-weight:bold}"
        "svg text.label{font-size:10px;fill:#57606a}"
        ".edge{fill:none;stroke:#8c959f;stroke-width:1.5}</style></head><body>",
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{_LEFT}" y="28" style="font-size:16px;font-weight:bold">'
        f"{html.escape(title)}</text>", *edges, *svg, "</svg>", "</body></html>", ""])
