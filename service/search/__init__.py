"""Search: a query to the search backend the operator chose, and its web results scraped through
the scrape path (service.search.searcher). The backends are adapters behind one interface
(service.search.backend), picked by ``SCRAPESPY_SEARCH_BACKEND`` (service.search.provider)."""
