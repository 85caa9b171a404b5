"""Main-content extraction and markdown: corpus, scorer and a lexbor prototype."""
