package main

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// crowdResult is the outcome of a flash crowd.
type crowdResult struct {
	n          int
	statuses   map[int]int
	errors     int
	p50, p99   time.Duration
	max        time.Duration
	lastAnswer time.Duration // from the common start to the last answer
}

// crowd opens one keep-alive connection per buyer (each proved by a GET
// /healthz), then releases every buyer at the same instant to buy one unit of
// sku as a distinct user.
func crowd(url string, sku int64, n int, tag string) (crowdResult, error) {
	clients := make([]*http.Client, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	const wave = 250 // connections opened at a time, to stay inside the listen backlog
	for i := range clients {
		clients[i] = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	}
	for lo := 0; lo < n; lo += wave {
		for i := lo; i < min(lo+wave, n); i++ {
			wg.Go(func() {
				resp, err := clients[i].Get(url + "/healthz")
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		wg.Wait()
	}
	select {
	case err := <-errs:
		return crowdResult{}, fmt.Errorf("opening connections: %w", err)
	default:
	}
	body := fmt.Sprintf(`{"sku_id":%d,"qty":1}`, sku)
	lat := make([]time.Duration, n)
	status := make([]int, n)
	start := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(n)
	var t0 time.Time
	var last time.Duration
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url+"/api/v1/orders", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-User-ID", fmt.Sprintf("%s-crowd-%d", tag, i))
			ready.Done()
			<-start
			t := time.Now()
			resp, err := clients[i].Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				status[i] = resp.StatusCode
			}
			lat[i] = time.Since(t)
			since := time.Since(t0)
			mu.Lock()
			last = max(last, since)
			mu.Unlock()
		})
	}
	ready.Wait()
	time.Sleep(100 * time.Millisecond)
	t0 = time.Now()
	close(start)
	wg.Wait()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	r := crowdResult{n: n, statuses: map[int]int{}, lastAnswer: last}
	for _, s := range status {
		if s == 0 {
			r.errors++
		} else {
			r.statuses[s]++
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.p50, r.p99, r.max = lat[n/2], lat[min(n-1, n*99/100)], lat[n-1]
	return r, nil
}
