package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the MCP Streamable HTTP transport.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "MCP-Protocol-Version"
)

// newHTTPClient returns a client that keeps one idle keep-alive connection per
// worker, so that every request after the first reuses a connection and the
// measurement is of request handling, not of TCP handshakes.
func newHTTPClient(conns int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // loopback only: never route the load through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcResponse is the part of a JSON-RPC response the load tool checks.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError         bool   `json:"isError"`
		ProtocolVersion string `json:"protocolVersion"`
		Tools           []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"result"`
	Error *rpcError `json:"error"`
}

// session is one MCP client: an HTTP client, the server URL, the protocol version
// and, for stateful servers, the session id that initialize returned.
type session struct {
	hc       *http.Client
	url      string
	protocol string
	id       string // Mcp-Session-Id; "" for stateless
	nextID   int64
	buf      bytes.Buffer
	body     []byte
}

// statusError is an HTTP answer other than 200/202.
type statusError struct {
	Status int
	Body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("http status %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// call posts one JSON-RPC request (method and params as raw JSON) and returns its
// response. The answer may be a JSON body or an SSE stream (text/event-stream), in
// which case the event carrying the response with our id is returned.
func (s *session) call(ctx context.Context, method string, params []byte) (*rpcResponse, http.Header, error) {
	s.nextID++
	id := s.nextID
	s.body = s.body[:0]
	s.body = append(s.body, `{"jsonrpc":"2.0","id":`...)
	s.body = strconv.AppendInt(s.body, id, 10)
	s.body = append(s.body, `,"method":"`...)
	s.body = append(s.body, method...)
	s.body = append(s.body, '"')
	if len(params) > 0 {
		s.body = append(s.body, `,"params":`...)
		s.body = append(s.body, params...)
	}
	s.body = append(s.body, '}')
	h, raw, err := s.post(ctx, s.body)
	if err != nil {
		return nil, h, err
	}
	var resp rpcResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, h, fmt.Errorf("%s: response is not JSON-RPC: %w (%.200q)", method, err, raw)
	}
	if string(resp.ID) != strconv.FormatInt(id, 10) {
		return nil, h, fmt.Errorf("%s: response id %s, want %d", method, resp.ID, id)
	}
	if resp.Error != nil {
		return &resp, h, fmt.Errorf("%s: json-rpc error %d: %s", method, resp.Error.Code, resp.Error.Message)
	}
	if resp.Result == nil {
		return &resp, h, fmt.Errorf("%s: response has neither result nor error", method)
	}
	if resp.Result.IsError {
		return &resp, h, fmt.Errorf("%s: tool returned isError: %.200s", method, raw)
	}
	return &resp, h, nil
}

// notify posts a JSON-RPC notification; servers answer 202 Accepted (or 200).
func (s *session) notify(ctx context.Context, method string) error {
	body := []byte(`{"jsonrpc":"2.0","method":"` + method + `"}`)
	_, _, err := s.post(ctx, body)
	return err
}

// post sends body and returns the response headers and the JSON-RPC message in
// the answer (nil for 202 Accepted).
func (s *session) post(ctx context.Context, body []byte) (http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.protocol != "" {
		req.Header.Set(headerProtocol, s.protocol)
	}
	if s.id != "" {
		req.Header.Set(headerSession, s.id)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	s.buf.Reset()
	if resp.StatusCode == http.StatusAccepted {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = s.buf.ReadFrom(io.LimitReader(resp.Body, 512))
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, nil, &statusError{Status: resp.StatusCode, Body: s.buf.String()}
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		msg, err := firstSSEMessage(resp.Body)
		if err != nil {
			return resp.Header, nil, err
		}
		// Drain so the connection goes back to the pool for keep-alive.
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, msg, nil
	}
	if _, err := s.buf.ReadFrom(resp.Body); err != nil {
		return resp.Header, nil, fmt.Errorf("read response: %w", err)
	}
	return resp.Header, s.buf.Bytes(), nil
}

// firstSSEMessage reads an event stream up to the first event whose data is a
// JSON-RPC response (it has an id and a result or error); server-to-client requests
// and notifications that come first are skipped.
func firstSSEMessage(r io.Reader) ([]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 16<<20)
	var data []byte
	for {
		more := sc.Scan()
		line := sc.Bytes()
		if !more || len(line) == 0 {
			if len(data) > 0 && isResponse(data) {
				return data, nil
			}
			data = data[:0]
			if !more {
				if err := sc.Err(); err != nil {
					return nil, fmt.Errorf("read event stream: %w", err)
				}
				return nil, errors.New("event stream ended without a JSON-RPC response")
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
}

// isResponse tells a JSON-RPC response from a request or notification.
func isResponse(msg []byte) bool {
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(msg, &probe) == nil && len(probe.ID) > 0 && probe.Method == ""
}

// initParams is what the load tool says about itself in initialize.
func initParams(protocol string) []byte {
	return []byte(`{"protocolVersion":"` + protocol +
		`","capabilities":{},"clientInfo":{"name":"mcpload","version":"1.0.0"}}`)
}

// open makes s a stateful MCP session: initialize, remember the session id the
// server assigned, then notifications/initialized.
func (s *session) open(ctx context.Context) error {
	want := s.protocol
	s.protocol = "" // the version header is sent only after negotiation
	resp, h, err := s.call(ctx, "initialize", initParams(want))
	if err != nil {
		return err
	}
	s.id = h.Get(headerSession)
	s.protocol = want
	if v := resp.Result.ProtocolVersion; v != "" {
		s.protocol = v // the server may settle on an older revision
	}
	return s.notify(ctx, "notifications/initialized")
}

// close ends a stateful session with DELETE, as a well-behaved client does.
func (s *session) close(ctx context.Context) {
	if s.id == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	if err != nil {
		return
	}
	req.Header.Set(headerSession, s.id)
	if s.protocol != "" {
		req.Header.Set(headerProtocol, s.protocol)
	}
	resp, err := s.hc.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
