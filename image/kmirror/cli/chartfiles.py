"""The files `scripts/chart-rules` writes into chart/kmirror from chartrules.py: the schema
(chartschema.py), files/rules.json and the README's table.

files/rules.json is what the templates look up instead of knowing the rules: which cluster block
plays source and target, which value becomes which variable (and which Secret key is mounted
where), which variables each protocol, mechanism and method read, what counts as a credential.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from kmirror.cli import chartrules as cr
from kmirror.cli.chartschema import NOTICE, updated_schema
from kmirror.config import secret, sides


def rules_json() -> str:
    reads = {
        "|".join(who): sorted(cr.verdict(who).reads)
        for who in cr.combinations()
        if cr.verdict(who).valid
    }
    rows = [
        {
            "name": r.name,
            "when": ".".join(r.when),
            "kind": r.kind,
            "secret": ".".join(r.secret),
            "key": ".".join(r.key),
            "file": r.file,
            "default": r.default,
            # A cluster-block value its side does not read still reaches the image, which
            # refuses it (KMIRROR_STRICT) or warns; auth.<side> values only where read.
            "block": r.block,
        }
        for r in cr.ROWS
    ]
    doc = {
        "comment": f"What the templates look up instead of restating the image's rules; {NOTICE}.",
        "prefixes": dict(sides.SIDES),
        "roles": cr.roles(),
        # The values naming a side's protocol, mechanism and method: "reads" is keyed by them.
        "readsBy": [".".join(p) for p in (cr.PROTOCOL, cr.MECHANISM, cr.METHOD)],
        "rows": rows,
        "reads": reads,
        # config.secret.is_secret_key, for extraEnv and the extra properties.
        "credential": f"(?i){secret._SECRET_KEY.pattern}",
        "notCredential": f"(?i){secret._NOT_SECRET.pattern}",
    }
    return json.dumps(doc, indent=1) + "\n"


README_BEGIN = f"<!-- rules:start ({NOTICE}) -->\n"
README_END = "<!-- rules:end -->\n"


def updated_readme(text: str) -> str:
    head, begin, rest = text.partition(README_BEGIN)
    _, end, tail = rest.partition(README_END)
    if not begin or not end:
        raise ValueError(f"no markers {README_BEGIN.strip()} / {README_END.strip()}")
    return head + README_BEGIN + readme_table() + README_END + tail


def _value(path: cr.Path_) -> str:
    """How the README names a side-view value: relative to its block, or under auth."""
    found = cr.values_path("<block>", "<side>", path)
    return ".".join(found[1:] if found[0] == "<block>" else found)


def readme_table() -> str:
    """Per protocol, mechanism and method: the values a block (with auth.<side>) needs and the
    other ones the image reads."""
    lines = [
        "| `securityProtocol` | `sasl.mechanism` | Needs | Also reads |",
        "| --- | --- | --- | --- |",
    ]
    fixed = {cr.BOOTSTRAP, cr.PROTOCOL, cr.MECHANISM, cr.METHOD}
    for p in sides.PROTOCOLS:
        cells: dict[tuple[str, str], list[str]] = {}
        for q, m, x in cr.combinations():
            verdict = cr.verdict((q, m, x))
            read = [r.when for r in cr.ROWS if r.name in verdict.reads]
            if q != p or not verdict.valid or (m and cr.MECHANISM not in read):
                continue  # another protocol, refused, or a mechanism it does not read
            if x != cr.METHODS[0] and cr.METHOD not in read:
                continue  # the method matters not: one line
            need = [w for w in sorted(verdict.required) if w not in fixed]
            also = [w for w in dict.fromkeys(read) if w not in fixed and w not in need]
            row = tuple(", ".join(f"`{_value(w)}`" for w in ws) or "-" for ws in (need, also))
            label = f"`{m}`" + (f" with `{_value(cr.METHOD)}: {x}`" if cr.METHOD in read else "")
            cells.setdefault((row[0], row[1]), []).append(label if m else "-")
        for (needs, reads), labels in cells.items():
            lines.append(f"| `{p}` | {', '.join(labels)} | {needs} | {reads} |")
    return "\n".join(lines) + "\n"


# Each file under chart/kmirror -> its new text from the old one.
OUTPUTS: Mapping[str, Callable[[str], str]] = {
    "values.schema.json": updated_schema,
    "files/rules.json": lambda _old: rules_json(),
    "README.md": updated_readme,
}
