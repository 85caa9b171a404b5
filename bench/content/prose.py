"""Deterministic prose and article bodies for the content corpus.

A body is a list of blocks; each block renders to HTML (``to_html``), to the text a reader of the
main content would keep (``to_text``) and, for the markdown checks, to GitHub-flavoured markdown.
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass, field

TOPICS: dict[str, dict[str, list[str]]] = {
    "city": {
        "n": "council budget transit plan mayor residents bridge housing district ferry tunnel "
        "zoning permit commuters neighbourhood library station contractor inspector".split(),
        "v": "approved delayed funded criticised reviewed expanded rejected postponed announced "
        "questioned extended restored inspected".split(),
        "a": "municipal contested overdue ambitious costly temporary regional historic narrow "
        "crowded northern".split(),
    },
    "science": {
        "n": "researchers telescope galaxy sample protein climate glacier model experiment "
        "satellite particle reef enzyme sediment genome orbit laboratory dataset".split(),
        "v": "measured observed predicted detected confirmed sequenced mapped simulated "
        "analysed recorded isolated estimated".split(),
        "a": "distant microscopic unexpected faint frozen ancient coastal thermal rare "
        "precise seasonal".split(),
    },
    "tech": {
        "n": "compiler database server cache kernel browser framework release developers "
        "scheduler queue protocol benchmark runtime library container index cluster".split(),
        "v": "deployed refactored optimised migrated profiled patched shipped benchmarked "
        "deprecated rewrote parallelised cached".split(),
        "a": "concurrent incremental stable experimental faster legacy distributed "
        "lightweight asynchronous verbose strict".split(),
    },
    "food": {
        "n": "bakery recipe dough harvest orchard chef market vineyard cheese kitchen "
        "festival farmers spices bread tomatoes olive menu".split(),
        "v": "baked roasted harvested fermented tasted seasoned served aged pickled "
        "grilled sourced blended".split(),
        "a": "crusty seasonal smoky tender rustic fragrant local sweet bitter fresh "
        "traditional".split(),
    },
    "sport": {
        "n": "striker coach season league stadium referee match keeper club injury "
        "transfer fans tournament captain squad trophy".split(),
        "v": "scored defended signed benched equalised trained conceded celebrated "
        "suspended promoted relegated".split(),
        "a": "decisive young veteran late dramatic unbeaten injured relentless narrow home".split(),
    },
}

GLUE = "after before while because although during since despite across within".split()
TOPIC_NAMES = sorted(TOPICS)


def sentence(rng: random.Random, topic: str, words: int | None = None) -> str:
    t = TOPICS[topic]
    n = words or rng.randint(9, 24)
    out: list[str] = []
    while len(out) < n:
        out += [
            "the",
            rng.choice(t["a"]),
            rng.choice(t["n"]),
            rng.choice(t["v"]),
            rng.choice(["a", "the", "several", "two", "most"]),
            rng.choice(t["n"]),
        ]
        if len(out) < n:
            out[-1] += ","
            out.append(rng.choice(GLUE))
    out = out[:n]
    out[-1] = out[-1].rstrip(",")
    text = " ".join(out)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "?", "!"] if n < 12 else ".")


def title(rng: random.Random, topic: str, words: int = 7) -> str:
    return sentence(rng, topic, words).rstrip(".?!").title()


# Inline segments: (kind, text, href) with kind in t, a, em, strong, code.
Segment = tuple[str, str, str]


def paragraph_segments(
    rng: random.Random, topic: str, sentences: int, links: float = 0.3
) -> list[Segment]:
    segs: list[Segment] = []
    for _ in range(sentences):
        s = sentence(rng, topic)
        r = rng.random()
        words = s.split(" ")
        if r < links and len(words) > 6:
            i = rng.randint(1, len(words) - 4)
            pre, mid, post = words[:i], words[i : i + 2], words[i + 2 :]
            href = rng.choice(["/news/", "/2024/03/", "https://example.org/", "../topics/"])
            href += "-".join(w.strip(",.?!").lower() for w in mid)
            segs += [
                ("t", " ".join(pre) + " ", ""),
                ("a", " ".join(mid), href),
                ("t", " " + " ".join(post) + " ", ""),
            ]
        elif r < links + 0.15 and len(words) > 6:
            i = rng.randint(1, len(words) - 3)
            kind = rng.choice(["em", "strong"])
            segs += [
                ("t", " ".join(words[:i]) + " ", ""),
                (kind, words[i], ""),
                ("t", " " + " ".join(words[i + 1 :]) + " ", ""),
            ]
        else:
            segs.append(("t", s + " ", ""))
    return segs


def segments_html(segs: list[Segment]) -> str:
    out = []
    for kind, text, href in segs:
        t = html.escape(text, quote=False)
        if kind == "t":
            out.append(t)
        elif kind == "a":
            out.append(f'<a href="{html.escape(href)}">{t}</a>')
        else:
            out.append(f"<{kind}>{t}</{kind}>")
    return "".join(out).strip()


def segments_text(segs: list[Segment]) -> str:
    return " ".join("".join(s[1] for s in segs).split())


@dataclass
class Block:
    kind: str  # p h2 h3 ul ol table pre quote figure note
    segs: list[Segment] = field(default_factory=list)
    items: list[list[Segment]] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    code: str = ""
    lang: str = ""
    src: str = ""
    alt: str = ""

    def to_html(self, p_attr: str = "") -> str:
        a = f" {p_attr}" if p_attr else ""
        k = self.kind
        if k == "p":
            return f"<p{a}>{segments_html(self.segs)}</p>"
        if k in ("h2", "h3"):
            return f"<{k}>{segments_html(self.segs)}</{k}>"
        if k in ("ul", "ol"):
            lis = "".join(f"<li>{segments_html(i)}</li>" for i in self.items)
            return f"<{k}>{lis}</{k}>"
        if k == "quote":
            return f"<blockquote><p>{segments_html(self.segs)}</p></blockquote>"
        if k == "table":
            head = "".join(f"<th>{html.escape(c)}</th>" for c in self.rows[0])
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                for r in self.rows[1:]
            )
            return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        if k == "pre":
            cls = f' class="language-{self.lang}"' if self.lang else ""
            return f"<pre><code{cls}>{html.escape(self.code, quote=False)}</code></pre>"
        if k == "note":
            return (
                "<div class='admonition note'><p class='admonition-title'>Note</p>"
                f"<p>{segments_html(self.segs)}</p></div>"
            )
        if k == "figure":
            return (
                f'<figure><img src="{html.escape(self.src)}" alt="{html.escape(self.alt)}" '
                f'width="800" height="450" loading="lazy">'
                f"<figcaption>{segments_html(self.segs)}</figcaption></figure>"
            )
        raise ValueError(k)

    def to_text(self) -> str:
        k = self.kind
        if k == "figure":
            return ""  # captions are not body text, as in the ScrapingHub benchmark's articleBody
        if k in ("p", "h2", "h3", "quote"):
            return segments_text(self.segs)
        if k == "note":
            return "Note\n" + segments_text(self.segs)
        if k in ("ul", "ol"):
            return "\n".join(segments_text(i) for i in self.items)
        if k == "table":
            return "\n".join(" ".join(r) for r in self.rows)
        if k == "pre":
            return self.code
        raise ValueError(k)


CODE_SNIPPETS = {
    "python": [
        "def retry(call, attempts=3):\n    for n in range(attempts):\n        try:\n"
        "            return call()\n        except TimeoutError:\n            if n == attempts - 1:"
        "\n                raise\n",
        'import json\n\nwith open("config.json") as f:\n    settings = json.load(f)\n'
        'if settings["workers"] < 2 and not settings.get("debug"):\n    print("single worker")\n',
        "class Cache:\n    def __init__(self, size=128):\n        self.size = size\n"
        "        self.items = {}\n\n    def get(self, key):\n        return self.items.get(key)\n",
    ],
    "bash": [
        "pip install --upgrade widgetlib\n"
        "widgetlib init --path ./data && widgetlib serve --port 8080\n",
        'export WIDGET_TOKEN="abc123"\ncurl -s -H "Authorization: Bearer $WIDGET_TOKEN" '
        "http://localhost:8080/v1/items | jq .\n",
    ],
    "javascript": [
        "const client = new WidgetClient({ timeout: 5000 });\n"
        "const items = await client.list({ limit: 10 });\n"
        "items.filter((i) => i.price < 20 && i.stock > 0).forEach(console.log);\n",
    ],
}


def table_rows(rng: random.Random, topic: str, cols: int, rows: int) -> list[list[str]]:
    t = TOPICS[topic]
    header = ["Name"] + [rng.choice(t["a"]).title() + " " + str(c) for c in range(1, cols)]
    out = [header]
    for _ in range(rows):
        out.append(
            [rng.choice(t["n"]).title()] + [str(rng.randint(1, 999)) for _ in range(cols - 1)]
        )
    return out


def body(rng: random.Random, kind: str, topic: str, size: str = "normal") -> list[Block]:
    """A main-content body: news, blog, docs, product or brief."""
    blocks: list[Block] = []
    n_par = {"short": rng.randint(2, 3), "normal": rng.randint(7, 12), "long": 20}[size]

    def p(sent: int | None = None, links: float = 0.3) -> Block:
        return Block("p", paragraph_segments(rng, topic, sent or rng.randint(2, 5), links))

    def h(kind: str = "h2") -> Block:
        return Block(kind, [("t", title(rng, topic, rng.randint(3, 6)), "")])

    if kind in ("news", "brief"):
        for i in range(n_par):
            if i and i % 4 == 0 and size != "short":
                blocks.append(h())
            blocks.append(p())
            if i == 2 and size != "short" and rng.random() < 0.5:
                blocks.append(Block("quote", paragraph_segments(rng, topic, 1, 0)))
            if i == 1 and size != "short" and rng.random() < 0.6:
                blocks.append(
                    Block(
                        "figure",
                        paragraph_segments(rng, topic, 1, 0),
                        src=f"/images/{rng.randint(1000, 9999)}.jpg",
                        alt=title(rng, topic, 4),
                    )
                )
        if size != "short" and rng.random() < 0.5:
            blocks.insert(
                len(blocks) // 2,
                Block("ul", items=[paragraph_segments(rng, topic, 1, 0.2) for _ in range(4)]),
            )
    elif kind == "blog":
        for i in range(n_par):
            if i % 3 == 0 and i:
                blocks.append(h())
            blocks.append(p())
            if i == 3:
                lang = rng.choice(sorted(CODE_SNIPPETS))
                blocks.append(Block("pre", code=rng.choice(CODE_SNIPPETS[lang]), lang=lang))
            if i == 5:
                blocks.append(
                    Block("ol", items=[paragraph_segments(rng, topic, 1, 0.1) for _ in range(3)])
                )
    elif kind == "docs":
        blocks.append(p(3, 0.2))
        for s in range(rng.randint(3, 5)):
            blocks.append(h())
            blocks.append(p(rng.randint(2, 4), 0.4))
            if s % 2 == 0:
                lang = rng.choice(sorted(CODE_SNIPPETS))
                blocks.append(Block("pre", code=rng.choice(CODE_SNIPPETS[lang]), lang=lang))
            if s == 1:
                blocks.append(Block("table", rows=table_rows(rng, topic, rng.randint(3, 4), 4)))
            if s == 2:
                blocks.append(h("h3"))
                blocks.append(
                    Block("ul", items=[paragraph_segments(rng, topic, 1, 0.3) for _ in range(4)])
                )
            blocks.append(p(2, 0.1))
    elif kind == "product":
        blocks.append(p(4, 0))
        blocks.append(p(3, 0))
        blocks.append(h())
        blocks.append(Block("ul", items=[paragraph_segments(rng, topic, 1, 0) for _ in range(5)]))
        blocks.append(h())
        blocks.append(Block("table", rows=table_rows(rng, topic, 2, 7)))
        blocks.append(p(2, 0))
    else:
        raise ValueError(kind)
    return blocks


def blocks_html(blocks: list[Block], p_attr: str = "") -> list[str]:
    return [b.to_html(p_attr) for b in blocks]


def blocks_text(blocks: list[Block]) -> str:
    return "\n\n".join(t for t in (b.to_text() for b in blocks) if t)
