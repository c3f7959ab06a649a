// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestScopeWebClientsComeAndGoDuringBatches: browsers open and close
// event streams, read the state and post that they are alive while
// batches arrive from two senders at once; then the view closes with
// streams still open. Every handler returns, no stream is left listed,
// and under the race detector no race is found.
func TestScopeWebClientsComeAndGoDuringBatches(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	batches := demoBatches(t)
	l := testLimits(4)
	l.Clients = 6
	w := newScopeWeb(l)
	w.heartbeat = 5 * time.Millisecond
	srv := httptest.NewServer(w.handler())
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	stop := make(chan struct{})
	var senders, browsers sync.WaitGroup
	for s := range 2 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := batches[(i+s)%len(batches)]
				w.addLogs(b.logs)
				w.addMetrics(b.metrics)
			}
		}()
	}
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		return client.Do(req)
	}
	for b := range 5 {
		browsers.Add(1)
		go func() {
			defer browsers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithCancel(context.Background())
				switch (i + b) % 3 {
				case 0: // a stream read for a few frames, then closed
					res, err := get(ctx, "/events")
					if err == nil {
						r := bufio.NewReader(res.Body)
						for range 3 + i%7 {
							if _, err := r.ReadString('\n'); err != nil {
								break
							}
						}
						if i%2 == 0 {
							// The page says it is alive, for a stream
							// that may have gone meanwhile.
							res, err := client.Post(srv.URL+"/api/alive?client=x", "", strings.NewReader(""))
							if err == nil {
								res.Body.Close()
							}
						}
						res.Body.Close()
					}
				case 1: // the state, read in full
					res, err := get(ctx, "/api/state")
					if err == nil {
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
					}
				case 2: // the state, abandoned mid-way
					res, err := get(ctx, "/api/state")
					if err == nil {
						_, _ = res.Body.Read(make([]byte, 64))
						cancel()
						res.Body.Close()
					}
				}
				cancel()
			}
		}()
	}
	time.Sleep(600 * time.Millisecond)
	// Streams still open when the view closes.
	var open []io.Closer
	for range 2 {
		res, err := get(context.Background(), "/events")
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, res.Body)
	}
	close(stop)
	senders.Wait()
	w.close()
	browsers.Wait()
	for _, c := range open {
		c.Close()
	}
	srv.Close()
	st := w.snapshotStats()
	if st.Clients != 0 || len(w.clients) != 0 || len(w.byID) != 0 {
		t.Errorf("streams left listed after every browser went: %d (%d, %d by id)", st.Clients, len(w.clients), len(w.byID))
	}
	if st.Batches == 0 {
		t.Error("no batch arrived")
	}
}

// TestServeStopsWhileBatchesAndBrowsersFlow: the scope with its browser
// view ends (its context cancelled) while batches arrive over OTLP from
// several senders and browsers stream: Serve returns promptly, with every
// goroutine of its servers stopped.
func TestServeStopsWhileBatchesAndBrowsersFlow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	batches := demoBatches(t)
	o := Options{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Frame: DefaultFrame, Limits: DefaultLimits()}
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, o, io.Discard, stderr) }()
	waitFor(t, "the scope listening", func() bool {
		return listeningRe.MatchString(stderr.String()) && browserViewRe.MatchString(stderr.String())
	})
	addr := listeningRe.FindStringSubmatch(stderr.String())[1]
	base := "http://" + browserViewRe.FindStringSubmatch(stderr.String())[1]

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for s := range 3 {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := batches[(i+s)%len(batches)]
				rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
				_, _ = plogotlp.NewGRPCClient(conn).Export(rctx, plogotlp.NewExportRequestFromLogs(b.logs))
				_, _ = pmetricotlp.NewGRPCClient(conn).Export(rctx, pmetricotlp.NewExportRequestFromMetrics(b.metrics))
				rcancel()
			}
		}()
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := client.Get(base + "/events")
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body) // until the view closes it
				res.Body.Close()
			}
		}()
	}
	time.Sleep(400 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("scope: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	close(stop)
	wg.Wait()
}
