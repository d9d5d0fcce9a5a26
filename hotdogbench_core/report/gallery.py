"""Photo cards: each photo, its label and every model's answer (wrong ones in red); a thumbnail strip."""
from __future__ import annotations

import html

from .format import TONE


def _answer(v, truth) -> str:
    if v is None:
        return f"<span style='{TONE['none']}'>no answer</span>"
    word = "hot dog" if v else "not hot dog"
    if truth is None:
        return word
    return f"<span style='{TONE['ok' if v == truth else 'bad']}'>{word}</span>"


def gallery_html(rows: list[dict], thumbs: dict[int, str], scored: bool = True) -> str:
    """Cards: the photo, its label, and each model's answer (wrong ones in red)."""
    card = ("border:1px solid #dee2e6;border-radius:6px;padding:6px;width:190px;font-size:12px;line-height:1.4;"
            "overflow-wrap:anywhere")
    pic = "width:100%;height:120px;object-fit:contain;background:#f8f9fa;display:block"
    cards = []
    for r in rows:
        img = (f'<img alt="photo {r["id"]}" src="{thumbs[r["id"]]}" style="{pic}">' if r["id"] in thumbs
               else f'<div style="{pic};line-height:120px;text-align:center;color:#868e96">no image</div>')
        truth = r.get("is_hot_dog") if scored else None
        head = f"#{r['id']} · {html.escape(str(r['category']))}"
        if scored:
            head += f" · {'hot dog' if truth else 'not hot dog'}"
        answers = "".join(f"<div>{html.escape(m)}: {_answer(v, truth)}</div>" for m, v in r["answers"].items())
        every = r.get("all_wrong") and scored
        style = card + (";border:2px solid #c92a2a" if every else "")
        badge = f"<div style='{TONE['bad']}'>every model wrong</div>" if every else ""
        cls = "card all-wrong" if every else "card"
        cards.append(f'<div class="{cls}" style="{style}">{img}<div><b>{head}</b></div>{badge}{answers}</div>')
    return '<div class="gallery" style="display:flex;flex-wrap:wrap;gap:10px">' + "".join(cards) + "</div>"


def thumb_strip_html(items: list[tuple[int, str, str]]) -> str:
    """A row of thumbnails: (id, category, data URI)."""
    cells = "".join(f'<figure style="margin:0;text-align:center;font-size:11px"><img src="{uri}" alt="{i}" '
                    f'style="height:72px;max-width:96px;object-fit:contain"><figcaption>{html.escape(cat)}'
                    f'</figcaption></figure>' for i, cat, uri in items)
    return f'<div style="display:flex;flex-wrap:wrap;gap:8px">{cells}</div>'
