"""Firecrawl's API (``/v1`` and ``/v2``) on scrapespy's engine, ledger and jobs.

The clients people already use (``firecrawl-py``, ``@mendable/firecrawl-js``, the LangChain loader,
``firecrawl-mcp``) work against scrapespy with only their base URL and key changed. Each route
translates Firecrawl's request into the native one, calls the same business function the native
route calls, and translates the answer back; nothing here scrapes, bills or stores on its own.

- :mod:`service.firecrawl.options`: scrape options as a native request;
- :mod:`service.firecrawl.actions`: Firecrawl's actions as native steps, and what they made;
- :mod:`service.firecrawl.scrape`: the document of one page (and ``native_scrape``);
- :mod:`service.firecrawl.jobs`: crawl, batch scrape and map;
- :mod:`service.firecrawl.job_answers`: a job's status page, its errors, the active crawls;
- :mod:`service.firecrawl.ids`: job ids as Firecrawl's dashed UUIDs;
- :mod:`service.firecrawl.routes`: the routes, authentication and errors.

Error bodies stay scrapespy's (``{"error": message}``, the code in ``X-Error-Code``): the SDKs read
``error`` and the status, which are Firecrawl's.
"""
