"""What every HTTP front shares, below all of them: the site (request ids, security headers, the
access log), reading a JSON body and the caller's key, rendering an answer or an error, the root
that hands each path to its front, the static files the HTML pages share, and the operations
(the account's reads, jobs, answers given once per idempotency key) that both the native API
and the Firecrawl API call. A front imports this part, never another front."""
