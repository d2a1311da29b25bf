"""The report as one self-contained HTML file: inline style, charts as inline SVG, no script, no external URL.

Everything a user or a model file could have written (run names, notes, model paths, error messages) reaches the
page only through `html.escape`; the charts escape their own text (console.report.svg). A Content-Security-Policy
meta tag forbids the browser any fetch, so even a mistake here cannot make the page call out.
"""

from __future__ import annotations

from html import escape

from console.report.document import Block

CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222; margin: 32px auto; max-width: 980px;
       line-height: 1.45; padding: 0 16px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.finding { font-size: 19px; background: #f3f7fc; border-left: 5px solid #1f77b4; padding: 12px 16px; margin: 16px 0; }
.note { color: #666; font-size: 13px; margin: 4px 0; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
tr.good td { background: #eaf6ea; } tr.bad td { background: #fbecec; }
pre { background: #f6f6f6; padding: 8px 10px; font-size: 12px; white-space: pre-wrap; word-break: break-all; }
figure { margin: 12px 0; } svg { max-width: 100%; height: auto; }
@media print { body { margin: 0; max-width: none; } figure, table { page-break-inside: avoid; } }
"""
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


# ---- Public API
def render(blocks: list[Block]) -> str:
    title = next((block.text for block in blocks if block.kind == "title"), "Lab Console report")
    body = "\n".join(_block(block) for block in blocks)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n")


# ---- Private API
_TEXT_TAGS = {  # the blocks that are one escaped text, by kind
    "title": "<h1>{}</h1>",
    "heading": "<h2>{}</h2>",
    "finding": '<p class="finding">{}</p>',
    "note": '<p class="note">{}</p>',
    "code": "<pre>{}</pre>",
}


def _block(block: Block) -> str:
    text = escape(block.text)
    if block.kind in _TEXT_TAGS:
        return _TEXT_TAGS[block.kind].format(text)
    if block.kind == "figure":
        return f'<figure aria-label="{text}">{block.svg}</figure>'  # svg text escaped where made
    if block.kind == "table":
        head = "".join(f"<th>{escape(h)}</th>" for h in block.headers)
        rows = []
        for row, emphasis in block.emphasised_rows():
            css = f' class="{emphasis}"' if emphasis else ""
            rows.append(f"<tr{css}>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f"<p>{text}</p>"
