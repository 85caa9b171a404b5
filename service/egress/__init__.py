"""The SSRF guard's library, shared by both engines' guards.

``addresses``: which addresses are public, how a host literal is read, the errors users see.
``resolver``: the reactor's name resolver that drops non-public addresses (static downloads).

The Scrapy component is ``middlewares.egress_guard``; the browser's forward proxy is
``service.browser.egress``.
"""
