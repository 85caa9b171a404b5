"""The extractors and markdown converters the content benchmark compares.

A main-content candidate maps ``(html, url)`` to the main content's text; a markdown converter
maps an HTML fragment and its URL to markdown. A candidate whose library is not installed is
left out of the run (``available``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser

from service.extraction import main_content as lexbor_main

Extractor = Callable[[str, str], str]


def whole_page(html: str, url: str) -> str:
    tree = LexborHTMLParser(html)
    tree.strip_tags(["script", "style", "noscript", "template"])
    return tree.body.text(separator=" ") if tree.body is not None else ""


def trafilatura_text(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url, include_comments=False) or ""


def trafilatura_default(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url) or ""


def trafilatura_markdown(html: str, url: str) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            html,
            url=url,
            include_comments=False,
            output_format="markdown",
            include_formatting=True,
            include_links=True,
            include_images=True,
        )
        or ""
    )


def readability_text(html: str, url: str) -> str:
    import lxml.html
    from readability import Document

    summary = Document(html, url=url).summary(html_partial=True)
    return lxml.html.fromstring(summary).text_content()


def resiliparse_text(html: str, url: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, comments=False)


def justext_text(html: str, url: str) -> str:
    import justext

    paragraphs = justext.justext(html.encode(), justext.get_stoplist("English"))
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


_goose = None


def goose_text(html: str, url: str) -> str:
    global _goose
    from goose3 import Goose

    if _goose is None:
        _goose = Goose({"enable_image_fetching": False})
    return _goose.extract(raw_html=html).cleaned_text or ""


def lexbor_text(html: str, url: str) -> str:
    return lexbor_main.extract_main(html, url, markdown=False).text


def lexbor_markdown(html: str, url: str) -> str:
    return lexbor_main.extract_main(html, url).markdown


# name -> (module that must be importable, function)
TEXT_CANDIDATES: dict[str, tuple[str, Extractor]] = {
    "whole page text (selectolax)": ("selectolax", whole_page),
    "trafilatura extract": ("trafilatura", trafilatura_text),
    "trafilatura extract (defaults)": ("trafilatura", trafilatura_default),
    "readability-lxml": ("readability", readability_text),
    "resiliparse main_content": ("resiliparse", resiliparse_text),
    "justext": ("justext", justext_text),
    "goose3": ("goose3", goose_text),
    "lexbor_main (prototype)": ("selectolax", lexbor_text),
}


def md_html_to_markdown(fragment: str, url: str) -> str:
    import html_to_markdown

    options = html_to_markdown.ConversionOptions(
        extract_metadata=False,
        autolinks=False,
        base_url=url,
        preprocessing=html_to_markdown.PreprocessingOptions(enabled=False),
    )
    return html_to_markdown.convert(fragment, options).content or ""


def md_markdownify(fragment: str, url: str) -> str:
    from markdownify import markdownify

    return markdownify(fragment, heading_style="ATX", code_language_callback=None)


def md_html2text(fragment: str, url: str) -> str:
    import html2text

    converter = html2text.HTML2Text(baseurl=url, bodywidth=0)
    converter.mark_code = False
    return converter.handle(fragment)


MARKDOWN_CONVERTERS: dict[str, tuple[str, Extractor]] = {
    "html-to-markdown": ("html_to_markdown", md_html_to_markdown),
    "markdownify": ("markdownify", md_markdownify),
    "html2text": ("html2text", md_html2text),
}

# Whole pipelines: page in, markdown of the main content out.
MARKDOWN_PIPELINES: dict[str, tuple[str, Extractor]] = {
    "trafilatura extract markdown": ("trafilatura", trafilatura_markdown),
    "lexbor_main + html-to-markdown": ("html_to_markdown", lexbor_markdown),
}


def available(table: dict[str, tuple[str, Extractor]]) -> dict[str, Extractor]:
    return {name: fn for name, (module, fn) in table.items() if importlib.util.find_spec(module)}
