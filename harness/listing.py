"""A listing page of 50 products and a Crawl4AI-shaped schema that reads it (issue 36): shared by
tests/test_e2e_records.py and bench/selectors.py."""

from __future__ import annotations

import json
from typing import Any


def product(n: int) -> str:
    return (
        f'<article class="product" data-sku="SKU-{n:03d}">'
        f'<h2 class="name">  Widget {n} </h2>'
        f'<span class="price">$1,{n:03d}.50</span>'
        f'<a class="more" href="/products/{n}">details</a>'
        f'<img src="img/{n}.png" alt="w{n}">'
        f'<div class="brand"><span class="label">Acme</span><span class="country">de</span></div>'
        f'<ul class="tags"><li>tag{n}a</li><li>tag{n}b</li></ul>'
        f'<p class="stock">In stock: {n} left</p>'
        "</article>"
    )


PRODUCTS = [product(n) for n in range(1, 51)]
LISTING = (
    "<!doctype html><html><head><title>Shop</title></head><body><main>"
    + "".join(PRODUCTS)
    + '<a href="/shop/listing">again</a></main></body></html>'
)
# the same products, written by a script: only a browser sees them
SHELL = (
    "<!doctype html><html><head><title>Shop</title></head><body><main id=app></main><script>"
    f"document.getElementById('app').innerHTML = {json.dumps(''.join(PRODUCTS))};"
    "</script></body></html>"
)

SCHEMA: dict[str, Any] = {
    "name": "Products",
    "baseSelector": "article.product",
    "baseFields": [{"name": "sku", "type": "attribute", "attribute": "data-sku"}],
    "fields": [
        {"name": "name", "selector": "h2.name", "type": "text", "transform": "uppercase"},
        {"name": "price", "selector": ".price", "type": "text", "transform": "number"},
        {"name": "url", "selector": "a.more", "type": "attribute", "attribute": "href"},
        {"name": "image", "selector": "img", "type": "attribute", "attribute": "src"},
        {
            "name": "brand",
            "selector": "div.brand",
            "type": "nested",
            "fields": [
                {"name": "label", "selector": ".label", "type": "text", "transform": "lowercase"},
                {"name": "country", "selector": ".country", "type": "text"},
            ],
        },
        {
            "name": "tags",
            "selector": "./ul/li",  # XPath, relative to the record
            "type": "list",
            "fields": [{"name": "tag", "type": "text"}],
        },
        {"name": "left", "selector": "p.stock", "type": "regex", "pattern": r"(\d+) left"},
        {"name": "rating", "selector": ".rating", "type": "text", "default": "unrated"},
    ],
}
