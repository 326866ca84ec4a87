-- wrk script of loadbench: every request is a buy by a user never seen
-- before ("<LB_PREFIX>-<thread>-<n>"), spread round-robin over the SKU ids in
-- LB_SKUS (comma-separated). loadbench appends report.lua.
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
