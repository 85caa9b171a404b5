-- ScrapyRT: GET /crawl.json for static, POST with playwright meta for js.
local target = os.getenv("BENCH_TARGET")
local engine = os.getenv("BENCH_ENGINE") or "static"
local page = os.getenv("BENCH_PAGE")
local threads = {}
local i = 0
failures = 0  -- a global: done() reads every thread's through thread:get

function setup(thread)
  table.insert(threads, thread)
end

function request()
  i = i + 1
  local url = page and (target .. page) or (target .. "/article-" .. (i % 20) .. ".html")
  if engine == "js" then
    local body = '{"spider_name":"article_js","request":{"url":"' .. url ..
      '","meta":{"playwright":true}}}'
    return wrk.format("POST", "/crawl.json", {["Content-Type"] = "application/json"}, body)
  end
  return wrk.format("GET", "/crawl.json?spider_name=article&url=" .. url)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"status": "ok"', 1, true) then
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
