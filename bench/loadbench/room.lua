-- wrk script of loadbench's waiting-room run (room.go). LB_ROOM_MODE says
-- what every request is:
--   join  POST /api/v1/skus/<LB_SKU>/queue by a shopper never seen before
--         ("<LB_PREFIX>-<thread>-<n>")
--   poll  GET /api/v1/skus/<LB_SKU>/queue by one of the LB_USERS shoppers
--         who joined before the run ("<LB_PREFIX>-<i>"), round-robin
--   rejoin  POST to the same path by those shoppers: they join again
--   buy   POST /api/v1/orders with a pass: the shoppers and passes of the
--         file LB_PASSES.<thread> ("user<TAB>pass" per line), each line
--         used once, read as the requests go (a table of them all would
--         cost wrk's garbage collector more than the requests do)
-- loadbench appends report.lua.
local threads = 0

function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local mode, sku, prefix = "poll", "1", "u"
local users, n = 1, 0
local passes, last = nil, nil

function init(args)
  mode = os.getenv("LB_ROOM_MODE") or "poll"
  sku = os.getenv("LB_SKU") or "1"
  prefix = os.getenv("LB_PREFIX") or "u"
  users = tonumber(os.getenv("LB_USERS") or "1")
  -- Threads start at different shoppers.
  n = tid * 7919
  if mode == "buy" then
    passes = io.open(os.getenv("LB_PASSES") .. "." .. tid, "r")
  end
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  n = n + 1
  if mode == "join" then
    headers["X-User-ID"] = prefix .. "-" .. tid .. "-" .. n
    return wrk.format("POST", "/api/v1/skus/" .. sku .. "/queue", headers, "")
  elseif mode == "buy" then
    -- Past the end of its file a thread sends its last pass again (refused
    -- 403): the files are sized so that this does not happen.
    local line = passes:read("*l")
    if line then
      last = line
    end
    local tab = last:find("\t", 1, true)
    headers["X-User-ID"] = last:sub(1, tab - 1)
    return wrk.format("POST", "/api/v1/orders", headers,
      '{"sku_id":' .. sku .. ',"qty":1,"pass":"' .. last:sub(tab + 1) .. '"}')
  end
  headers["X-User-ID"] = prefix .. "-" .. (n % users)
  if mode == "rejoin" then
    return wrk.format("POST", "/api/v1/skus/" .. sku .. "/queue", headers, "")
  end
  return wrk.format("GET", "/api/v1/skus/" .. sku .. "/queue", headers)
end
