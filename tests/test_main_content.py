"""The main-content heuristic on small hand-written pages: what it keeps and what it drops."""

from __future__ import annotations

from service.extraction.main_content import extract_main

_SENTENCES = [
    "The river rose by two metres overnight after three days of steady rain upstream.",
    "Engineers at the lock said the gates held, though the towpath stayed closed until noon.",
    "Residents of the lower town moved cars and furniture to higher ground before dawn.",
    "The council opened the school hall as a shelter and served soup to forty families.",
    "Forecasters expect the water to fall slowly over the weekend if the rain eases.",
    "Insurers have sent assessors to the warehouses along the quay, the mayor said.",
]


def _paragraphs(words: str, count: int = 4) -> str:
    return "".join(f"<p>{words} {_SENTENCES[i % len(_SENTENCES)]}</p>" for i in range(count))


def _page(body: str, head: str = "") -> str:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


def _menu(items: int) -> str:
    links = "".join(
        f'<li><a href="/section/{i}">Section number {i} of the site</a></li>' for i in range(items)
    )
    return f"<ul>{links}</ul>"


def _teasers(count: int, word: str = "Teaser") -> str:
    cards = "".join(
        f'<li><h3><a href="/story/{i}">{word} headline number {i} about the weather</a></h3>'
        f"<p>{word} summary {i}: a short account of something else that happened this week "
        f"somewhere in the region.</p></li>"
        for i in range(count)
    )
    return f"<ul>{cards}</ul>"


def test_a_link_dense_menu_larger_than_the_article_does_not_hide_it() -> None:
    # The mega-menu holds most of the page's text, so it looked like the page's wrapper; the
    # article sits in a block whose class says both "sidebar" and "content".
    html = _page(
        f'<header class="page-header"><nav class="navigation">{_menu(80)}</nav><h1>Flood</h1>'
        f"</header>"
        f'<div class="main page-content with-sidebar">{_paragraphs("Flood", 3)}</div>'
    )
    text = extract_main(html, "https://example.org/").text
    assert "The river rose by two metres" in text
    assert "Section number" not in text


def test_the_microdata_article_body_wins_over_a_teaser_heavy_container() -> None:
    # Links to other stories between the paragraphs (each a linked heading) cost the body more
    # than its prose earns; the page marks its body itself.
    inline = "".join(
        f'<div class="embedded"><ul><li><h3><a href="/story/{i}">Inline headline {i} about '
        f"another event</a></h3></li></ul></div><p>{_SENTENCES[i]}</p>"
        for i in range(6)
    )
    html = _page(
        f"<article><h1>Flood</h1>"
        f'<div class="media"><div><div>Photo: a long caption about the picture of the river at '
        f"dawn, taken from the old bridge by our photographer.</div></div></div>"
        f'<div itemprop="articleBody">{inline}</div></article>'
    )
    text = extract_main(html).text
    assert text.startswith("The river rose by two metres")
    assert "Insurers have sent assessors" in text
    assert "Inline headline" not in text
    assert "Photo: a long caption" not in text


def test_the_article_holding_the_h1_wins_over_the_cards_beside_it() -> None:
    cards = "".join(
        f'<article class="postbox post-{i}"><p>Card {i}: '
        f"{_SENTENCES[i]} {_SENTENCES[i + 1]}</p></article>"
        for i in range(4)
    )
    html = _page(
        f'<div class="columns"><article class="postbox post-1"><h1>Flood</h1>'
        f"<p>Own story. {_SENTENCES[0]}</p><p>{_SENTENCES[1]}</p><p>{_SENTENCES[2]}</p></article>"
        f'<article class="postbox post-1"><h3>You may also like</h3>{cards}</article></div>'
    )
    content = extract_main(html)
    assert content.title == "Flood"
    assert content.text.startswith("Own story.")
    assert "Card" not in content.text


def test_a_sibling_that_continues_the_best_block_joins_it() -> None:
    # The story is split in two sibling divs; the teaser list beside them weighs down their
    # parent, so the first part alone scored best, and the second part was lost.
    html = _page(
        f'<div class="wrap">'
        f'<div class="part">{_paragraphs("First", 6)}</div>'
        f'<div class="more-stories">{_teasers(12)}</div>'
        f'<div class="part">{_paragraphs("Second", 3)}</div>'
        f"</div>"
    )
    text = extract_main(html).text
    assert "First The river rose" in text
    assert "Second The river rose" in text
    assert "Teaser summary" not in text


def test_portuguese_and_spanish_class_names_mark_boilerplate_and_body() -> None:
    html = _page(
        f'<div class="pagina">'
        f'<div class="cabecalho"><p>Assine já a nossa revista e ganhe um brinde especial '
        f"neste mês de promoção.</p></div>"
        f'<div class="conteudo-materia">{_paragraphs("Corpo", 3)}</div>'
        f'<div class="comentarios"><p>Comentário de um leitor que achou a notícia muito '
        f"interessante e quis dizer isso.</p><p>Outro comentário bastante longo de outro leitor "
        f"sobre o mesmo assunto da matéria.</p></div>"
        f'<div class="relacionados">{_paragraphs("Relacionado", 1)}</div>'
        f'<div class="rodape"><p>Todos os direitos reservados à editora, que publica esta '
        f"revista desde mil novecentos e noventa.</p></div>"
        f"</div>"
    )
    text = extract_main(html).text
    assert "Corpo The river rose" in text
    for dropped in ("Assine", "Comentário", "Relacionado", "direitos reservados"):
        assert dropped not in text


def test_a_heading_slug_in_an_id_is_not_a_boilerplate_name() -> None:
    # Sphinx gives each section the slug of its heading: "sharing" is not a share bar here.
    sections = "".join(
        f'<div class="section" id="{slug}"><h2>{slug}</h2>{_paragraphs(slug, 2)}</div>'
        for slug in ("sharing-with-a-single-developer", "working-on-the-history-of-a-branch")
    )
    html = _page(f'<div class="body" role="main"><h1>Guide</h1>{sections}</div>')
    text = extract_main(html).text
    assert "sharing-with-a-single-developer The river rose" in text
    assert "working-on-the-history-of-a-branch The river rose" in text


def test_short_cjk_sentences_count_as_prose() -> None:
    sentences = "".join(
        f"<p>一波波接續性低溫寒流報到，已將山巒披上彩衣{i}。</p>" for i in range(12)
    )
    html = _page(
        '<div class="intro"><h2>這是我們的共同天地，喜歡碧海藍天，'
        "喜歡悠閒生活，愛好大自然的真善美。</h2></div>"
        f'<div class="article-content">{sentences}</div>'
    )
    text = extract_main(html).text
    assert "一波波接續性低溫寒流報到" in text
    assert "共同天地" not in text


def test_a_body_of_br_separated_text_is_kept_without_the_sidebar() -> None:
    prose = "<br><br>".join(_SENTENCES)
    html = _page(
        f'<table><tr><td class="left">{_menu(6)}</td>'
        f'<td><font size="2">{prose}</font></td></tr></table>'
        f'<div class="sidebar"><p>{_SENTENCES[0]} (from our partners)</p></div>'
    )
    text = extract_main(html).text
    assert text.startswith("The river rose by two metres")
    assert "Insurers have sent assessors" in text
    assert "partners" not in text
    assert "Section number" not in text


def test_the_title_is_the_h1_that_the_head_names_not_the_logo() -> None:
    html = _page(
        f'<h1 class="logo">Daily River</h1><article><h1>Flood closes the towpath</h1>'
        f"{_paragraphs('Body', 3)}</article>",
        head="<title>Flood closes the towpath | Daily River</title>",
    )
    content = extract_main(html)
    assert content.title == "Flood closes the towpath"
    assert "Flood closes the towpath" not in content.text
    assert content.text.startswith("Body The river rose")
