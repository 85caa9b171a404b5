"""The dashboard: a server-rendered web page for people, mounted at ``/dashboard``.

Sign up and log in, see the balance and the prices, make the API key (shown once), buy credits,
read the usage and the ledger, and try a scrape. ``service.dashboard.app.Dashboard`` is the Klein
app; templates and static files ship in this package.
"""
