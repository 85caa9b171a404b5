"""Write the main-content corpus: ``python -m bench.content.make_corpus``.

Every page is built from a seed, so the corpus is the same on every run. For each page it writes
``<name>.html``, ``<name>.expected.txt`` (the main content's text, the ground truth of the F1
score) and, for pages with tables, code or links worth checking, ``<name>.expected.md``: markdown
snippets, separated by ``<!-- snippet -->`` lines, that a good conversion contains.
``index.json`` gives each page's URL, layout and kind.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from urllib.parse import urljoin

from bench.content import holdout, holdout2, layouts
from bench.content.prose import Block, blocks_text, body, paragraph_segments, segments_text, title

CORPUS = Path(__file__).with_name("corpus")
SNIPPET_SEPARATOR = "<!-- snippet -->"

# (layout, kind, size, count): 36 pages over ten layouts, the prototype's tuning set.
PLAN = [
    ("news_semantic", "news", "normal", 4),
    ("news_hashed", "news", "normal", 4),
    ("blog_wp", "blog", "normal", 3),
    ("blog_wp", "blog", "short", 1),
    ("news_td", "news", "normal", 4),
    ("docs_sphinx", "docs", "normal", 3),
    ("docs_mkdocs", "docs", "normal", 3),
    ("product", "product", "normal", 3),
    ("brief", "brief", "short", 4),
    ("medium", "blog", "normal", 3),
    ("forum", "forum", "normal", 4),
]

# Written after the prototype was frozen; ``index.json`` marks these pages ``"split": "holdout"``.
HOLDOUT_PLAN = [
    ("reuters_like", "news", "normal", 2),
    ("bbc_like", "news", "normal", 2),
    ("legacy_table", "news", "normal", 2),
    ("qa_like", "forum", "normal", 2),
    ("recipe_blog", "blog", "normal", 2),
    ("docs_rtd", "docs", "normal", 2),
    ("shopify", "product", "normal", 1),
]

# Written after the prototype was frozen again (commit d5180c6): ``"split": "holdout2"``.
HOLDOUT2_PLAN = [
    ("guardian_like", "news", "normal", 2),
    ("ghost_blog", "blog", "normal", 2),
    ("br_divs", "news", "normal", 2),
    ("tailwind", "blog", "normal", 2),
    ("wiki_like", "docs", "normal", 2),
    ("discourse", "forum", "normal", 2),
]


def recipe_card(rng: random.Random) -> list[Block]:
    foods = ["flour", "butter", "sugar", "tomatoes", "olive oil", "cheese", "basil"]
    return [
        Block("h2", [("t", title(rng, "food", 3), "")]),
        Block("h3", [("t", "Ingredients", "")]),
        Block(
            "ul",
            items=[[("t", f"{rng.randint(1, 500)} g {rng.choice(foods)}", "")] for _ in range(6)],
        ),
        Block("h3", [("t", "Instructions", "")]),
        Block("ol", items=[paragraph_segments(rng, "food", 1, 0) for _ in range(5)]),
    ]


def forum_posts(rng: random.Random, topic: str) -> list[list[Block]]:
    posts = []
    for i in range(rng.randint(4, 9)):
        post = [Block("p", paragraph_segments(rng, topic, rng.randint(1, 4), 0.15))]
        if i and rng.random() < 0.3:
            post.insert(0, Block("quote", paragraph_segments(rng, topic, 1, 0)))
        if rng.random() < 0.2:
            post.append(Block("pre", code="widgetlib --verbose --retry 3 ./input.csv\n"))
        if rng.random() < 0.4:
            post.append(Block("p", paragraph_segments(rng, topic, rng.randint(1, 3), 0.1)))
        posts.append(post)
    return posts


def markdown_snippets(blocks: list[Block], url: str) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if b.kind == "table" and not any(s.startswith("|") for s in out):
            lines = ["| " + " | ".join(b.rows[0]) + " |", "|" + " --- |" * len(b.rows[0])]
            lines += ["| " + " | ".join(r) + " |" for r in b.rows[1:]]
            out.append("\n".join(lines))
        if b.kind == "pre" and not any(s.startswith("```") for s in out):
            out.append(f"```\n{b.code.rstrip()}\n```")
        if b.kind == "h2" and not any(s.startswith("## ") for s in out):
            out.append("## " + segments_text(b.segs))
        if b.kind == "figure" and not any(s.startswith("![") for s in out):
            out.append(f"![{b.alt}]({urljoin(url, b.src)})")
        if b.kind == "p" and not any(s.startswith("[") for s in out):
            for kind, text, href in b.segs:
                if kind == "a":
                    out.append(f"[{text}]({urljoin(url, href)})")
                    break
    return out


def build() -> dict[str, dict[str, str]]:
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.iterdir():
        old.unlink()
    index: dict[str, dict[str, str]] = {}
    seed = 0
    plan = [(*row, "tuning") for row in PLAN] + [(*row, "holdout") for row in HOLDOUT_PLAN]
    plan += [(*row, "holdout2") for row in HOLDOUT2_PLAN]
    modules = {"tuning": layouts, "holdout": holdout, "holdout2": holdout2}
    for layout, kind, size, count, split in plan:
        module = modules[split]
        for n in range(count):
            seed += 1
            rng = random.Random(seed * 7919)
            topic = rng.choice(["city", "science", "tech", "food", "sport"])
            if kind in ("docs", "blog") and rng.random() < 0.6:
                topic = "tech"
            name = f"{seed:02d}-{layout.replace('_', '-')}"
            t = title(rng, topic, rng.randint(6, 10))
            url = f"https://www.{layout.split('_')[0]}{n}.example/{topic}/2024/{name}.html"
            if kind == "forum":
                posts = forum_posts(rng, topic)
                html = getattr(module, layout)(rng, posts, topic, url, t)
                blocks = [b for post in posts for b in post]
            else:
                blocks = body(rng, kind, topic, size)
                if layout == "docs_mkdocs":
                    blocks.insert(2, Block("note", paragraph_segments(rng, topic, 2, 0.2)))
                if layout == "recipe_blog":
                    blocks += recipe_card(rng)
                html = getattr(module, layout)(rng, blocks, topic, url, t)
            (CORPUS / f"{name}.html").write_text(html)
            (CORPUS / f"{name}.expected.txt").write_text(blocks_text(blocks) + "\n")
            if any(b.kind in ("table", "pre") for b in blocks) and kind != "forum":
                snippets = markdown_snippets(blocks, url)
                (CORPUS / f"{name}.expected.md").write_text(
                    f"\n{SNIPPET_SEPARATOR}\n".join(snippets) + "\n"
                )
            index[name] = {"url": url, "layout": layout, "kind": kind, "split": split}
    (CORPUS / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return index


if __name__ == "__main__":
    pages = build()
    print(f"{len(pages)} pages written to {CORPUS}")
