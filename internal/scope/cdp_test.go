// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// A small client of the Chrome DevTools Protocol for the browser test: it
// starts headless Chromium, talks to one page over a WebSocket (RFC 6455,
// the client side: masked text frames out, unmasked frames in) and offers
// navigate, evaluate and screenshot. The module has no WebSocket or CDP
// library, and the test needs only this.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// cdpPage is one page of a headless Chromium.
type cdpPage struct {
	conn   net.Conn
	r      *bufio.Reader
	mu     sync.Mutex
	nextID int
	// errors are the page's uncaught exceptions and console errors.
	errors []string
}

var devtoolsRe = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startChromium runs chromium headless with a remote debugging port and
// returns its first page. The browser is stopped when the test ends.
func startChromium(t *testing.T, chromium string, width, height int) *cdpPage {
	t.Helper()
	// Not t.TempDir: the browser's helper processes may still write to its
	// profile for a moment after it is stopped.
	profile, err := os.MkdirTemp("", "deltaq-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars", "--font-render-hinting=none",
		"--remote-debugging-port=0", "--user-data-dir="+profile,
		fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the browser profile %s", profile)
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsRe.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var browserURL string
	select {
	case browserURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium printed no DevTools address within 30 s")
	}
	u, err := url.Parse(browserURL)
	if err != nil {
		t.Fatal(err)
	}
	// The page targets: GET /json/list on the same host.
	var targets []struct {
		Type, WebSocketDebuggerURL string
	}
	res, err := http.Get("http://" + u.Host + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			p, err := dialCDP(tg.WebSocketDebuggerURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.conn.Close() })
			for _, m := range []string{"Runtime.enable", "Page.enable"} {
				p.call(t, m, nil)
			}
			p.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{
				"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
			})
			return p
		}
	}
	t.Fatalf("no page target in %+v", targets)
	return nil
}

// dialCDP opens the WebSocket at wsURL.
func dialCDP(wsURL string) (*cdpPage, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	k := base64.StdEncoding.EncodeToString(key)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", u.RequestURI(), u.Host, k)
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(k + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if res.StatusCode != http.StatusSwitchingProtocols ||
		res.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake: %s", res.Status)
	}
	return &cdpPage{conn: conn, r: r}, nil
}

// writeFrame sends one masked text frame.
func (p *cdpPage) writeFrame(payload []byte) error {
	hdr := []byte{0x81} // FIN, text
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n < 1<<16:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	_, err := p.conn.Write(append(hdr, masked...))
	return err
}

// readMessage returns the next text message, joining continuation frames and
// answering pings.
func (p *cdpPage) readMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(p.r, h[:]); err != nil {
			return nil, err
		}
		op, n := h[0]&0x0f, uint64(h[1]&0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(p.r, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(p.r, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if n > 256<<20 {
			return nil, fmt.Errorf("websocket frame of %d bytes", n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(p.r, data); err != nil {
			return nil, err
		}
		switch op {
		case 0x8:
			return nil, errors.New("websocket closed by the browser")
		case 0x9, 0xa: // ping (not expected from Chromium), pong
			continue
		}
		msg = append(msg, data...)
		if h[0]&0x80 != 0 {
			return msg, nil
		}
	}
}

// call sends a command and returns its result, recording the page's errors
// from the events that arrive meanwhile.
func (p *cdpPage) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	id := p.nextID
	req, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	_ = p.conn.SetDeadline(time.Now().Add(60 * time.Second))
	if err := p.writeFrame(req); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		b, err := p.readMessage()
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var m struct {
			ID     int
			Method string
			Params json.RawMessage
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		switch {
		case m.ID == id && m.Error != nil:
			t.Fatalf("%s: %s", method, m.Error.Message)
		case m.ID == id:
			return m.Result
		case m.Method == "Runtime.exceptionThrown":
			p.errors = append(p.errors, string(m.Params))
		case m.Method == "Runtime.consoleAPICalled" && strings.Contains(string(m.Params), `"type":"error"`):
			p.errors = append(p.errors, string(m.Params))
		}
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value
// (JSON-serialisable) into v.
func (p *cdpPage) eval(t *testing.T, expr string, v any) {
	t.Helper()
	raw := p.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		t.Fatalf("evaluate %q: %s", expr, raw)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			t.Fatalf("evaluate %q: %v (value %s)", expr, err, r.Result.Value)
		}
	}
}

// waitTrue evaluates expr, a boolean expression, until it holds (20 s).
func (p *cdpPage) waitTrue(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		p.eval(t, expr, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			p.eval(t, "document.body.innerText", &body)
			t.Fatalf("timed out waiting for %s; page text:\n%s", what, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot writes a PNG of the whole page, width pixels wide, to path.
func (p *cdpPage) screenshot(t *testing.T, path string, width int) {
	t.Helper()
	var height int
	p.eval(t, "document.documentElement.scrollHeight", &height)
	p.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
	})
	var r struct{ Data string }
	if err := json.Unmarshal(p.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}), &r); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// typeInto empties the box selector names, focuses it and types text into
// it as a keyboard would (Input.insertText): the page sees the input events
// a person's typing makes, and a number box takes only what it would from
// a person (text that is no number leaves it empty and "bad input").
func (p *cdpPage) typeInto(t *testing.T, selector, text string) {
	t.Helper()
	p.eval(t, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.focus(); e.value = "";
		e.dispatchEvent(new Event("input")); return true; })()`, selector), nil)
	if text != "" {
		p.call(t, "Input.insertText", map[string]any{"text": text})
	}
}

// cdpKeys are the keys press sends: the DOM key, its code and its Windows
// virtual key code, and the text it types.
var cdpKeys = map[string]struct {
	code, text string
	vk         int
}{
	"Tab": {"Tab", "", 9}, "Enter": {"Enter", "\r", 13}, " ": {"Space", " ", 32},
	"Escape": {"Escape", "", 27}, "ArrowLeft": {"ArrowLeft", "", 37},
}

// press presses and releases key on the element that has the focus, as a
// keyboard does (Input.dispatchKeyEvent): the page sees keydown, the
// default action (Tab moves the focus, Enter or Space presses a button,
// an arrow moves a slider) and keyup.
func (p *cdpPage) press(t *testing.T, key string) {
	t.Helper()
	k, ok := cdpKeys[key]
	if !ok {
		t.Fatalf("press: no key %q", key)
	}
	down := map[string]any{"type": "rawKeyDown", "key": key, "code": k.code, "windowsVirtualKeyCode": k.vk}
	if k.text != "" {
		down["type"], down["text"] = "keyDown", k.text
	}
	p.call(t, "Input.dispatchKeyEvent", down)
	p.call(t, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "code": k.code, "windowsVirtualKeyCode": k.vk})
}
