-- POST /scrape over the 20 benchmark pages; BENCH_MAX responses per thread, then stop.
-- BENCH_FIELDS adds JSON members to the body ('"formats":["markdown"],"only_main_content":true');
-- a response counts as failed unless it also holds BENCH_EXPECT ('"markdown":'), so that
-- fields the service ignored measure nothing.
local key = os.getenv("BENCH_KEY")
local target = os.getenv("BENCH_TARGET")
local engine = os.getenv("BENCH_ENGINE") or "static"
local page = os.getenv("BENCH_PAGE")
local max = tonumber(os.getenv("BENCH_MAX") or "0")
local fields = os.getenv("BENCH_FIELDS") or ""
local expect = os.getenv("BENCH_EXPECT") or ""
local threads = {}
local i, seen = 0, 0
failures = 0  -- a global: done() reads every thread's through thread:get

function setup(thread)
  table.insert(threads, thread)
end

function request()
  i = i + 1
  local url = page and (target .. page) or (target .. "/article-" .. (i % 20) .. ".html")
  local body = '{"url":"' .. url .. '","engine":"' .. engine .. '"' ..
    (fields ~= "" and ("," .. fields) or "") .. "}"
  return wrk.format("POST", "/scrape",
    {["Content-Type"] = "application/json", ["X-API-Key"] = key}, body)
end

function response(status, headers, body)
  seen = seen + 1
  if status ~= 200 or not string.find(body, '"success":true', 1, true)
      or not string.find(body, expect, 1, true) then
    failures = failures + 1
  end
  if max > 0 and seen >= max then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local failed = 0
  for _, thread in ipairs(threads) do failed = failed + (thread:get("failures") or 0) end
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"failed":%d,"socket_errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), failed,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
