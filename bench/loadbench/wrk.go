package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed users.lua
var usersLua []byte

//go:embed report.lua
var reportLua []byte

// wrkResult is what report.lua's done() reports.
type wrkResult struct {
	Requests      int64   `json:"requests"`
	DurationUS    int64   `json:"duration_us"`
	P50US         int64   `json:"p50_us"`
	P90US         int64   `json:"p90_us"`
	P99US         int64   `json:"p99_us"`
	MaxUS         int64   `json:"max_us"`
	ConnectErrors int64   `json:"connect_errors"`
	ReadErrors    int64   `json:"read_errors"`
	WriteErrors   int64   `json:"write_errors"`
	Timeouts      int64   `json:"timeouts"`
	Non2xx        int64   `json:"non2xx"`
	CPU           float64 `json:"-"` // CPU seconds wrk used
}

func (r wrkResult) rate() float64 {
	if r.DurationUS == 0 {
		return 0
	}
	return float64(r.Requests) / (float64(r.DurationUS) / 1e6)
}

func (r wrkResult) socketErrors() int64 {
	return r.ConnectErrors + r.ReadErrors + r.WriteErrors + r.Timeouts
}

// wrk runs the load client against url for d: every request a buy by a new
// user, round-robin over skus.
func (b *bench) wrk(url string, skus []int64, d time.Duration) (wrkResult, error) {
	ids := make([]string, len(skus))
	for i, id := range skus {
		ids[i] = strconv.FormatInt(id, 10)
	}
	b.runs++
	return b.runScript(url, "users.lua", usersLua, d,
		"LB_SKUS="+strings.Join(ids, ","), fmt.Sprintf("LB_PREFIX=%s-r%d", b.tag, b.runs))
}

// runScript runs wrk against url for d with the script lua followed by
// report.lua (written to the work directory as name) and env added to its
// environment.
func (b *bench) runScript(url, name string, lua []byte, d time.Duration, env ...string) (wrkResult, error) {
	script := filepath.Join(b.dir, name)
	if err := os.WriteFile(script, append(append(lua[:len(lua):len(lua)], '\n'), reportLua...), 0o600); err != nil {
		return wrkResult{}, err
	}
	//nolint:gosec // wrk from PATH, with arguments built here
	cmd := exec.Command("wrk", "-t", strconv.Itoa(b.cfg.threads), "-c", strconv.Itoa(b.conns),
		"-d", fmt.Sprintf("%ds", int(d.Seconds())), "--timeout", "10s", "-s", script, url)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if js, ok := strings.CutPrefix(line, "LBJSON "); ok {
			var r wrkResult
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				return r, fmt.Errorf("wrk result %q: %w", js, err)
			}
			r.CPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			return r, nil
		}
	}
	return wrkResult{}, fmt.Errorf("wrk printed no result: %s", out)
}
