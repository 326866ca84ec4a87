-- report.lua: appended by loadbench to each of its wrk scripts. done()
-- prints the run's figures as one JSON line, "LBJSON {...}" (wrkResult).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LBJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.timeout, e.status))
end
