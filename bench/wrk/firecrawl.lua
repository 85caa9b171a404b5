-- POST /v2/scrape (Firecrawl's API) over the 20 benchmark pages, as firecrawl-py sends it:
-- Authorization: Bearer, the SDK's defaults (markdown, main content only). A response counts
-- as failed unless it is a success holding markdown.
local key = os.getenv("BENCH_KEY")
local target = os.getenv("BENCH_TARGET")
local threads = {}
local i = 0
failures = 0  -- a global: done() reads every thread's through thread:get

function setup(thread)
  table.insert(threads, thread)
end

function request()
  i = i + 1
  local body = '{"url":"' .. target .. "/article-" .. (i % 20) .. '.html","formats":["markdown"]}'
  return wrk.format("POST", "/v2/scrape",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}, body)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"success":true', 1, true)
      or not string.find(body, '"markdown":"', 1, true) then
    failures = failures + 1
  end
end

function done(summary, latency, requests)
  local failed = 0
  for _, thread in ipairs(threads) do failed = failed + (thread:get("failures") or 0) end
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"failed":%d,"socket_errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), failed,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
