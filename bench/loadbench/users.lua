-- wrk script of loadbench: every request is a buy by a user never seen
-- before ("<LB_PREFIX>-<thread>-<n>"), spread round-robin over the SKU ids in
-- LB_SKUS (comma-separated). done() prints the figures as one JSON line.
local threads = 0

function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local skus = {}
local base = ""
local n = 0

function init(args)
  for id in string.gmatch(os.getenv("LB_SKUS") or "1", "%d+") do
    skus[#skus + 1] = id
  end
  base = (os.getenv("LB_PREFIX") or "u") .. "-" .. tid .. "-"
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  n = n + 1
  headers["X-User-ID"] = base .. n
  return wrk.format("POST", "/api/v1/orders", headers, '{"sku_id":' .. skus[(n % #skus) + 1] .. ',"qty":1}')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LBJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.timeout, e.status))
end
