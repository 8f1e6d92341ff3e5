package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/testtools"
)

// decodeSeeds are envelopes where decoders typically differ: number forms of ids,
// key case, null and absent fields, trailing data, batches, deep nesting.
var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a\u00e9\ud800","method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
	`{"ID":1,"Method":"ping"}`,
	`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","Id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":"x"}`,
	`{"jsonrpc":"2.0"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping",}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","jsonrpc":"1.0"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`[]`,
	`42`,
	`"x"`,
	`null`,
	`this is not json`,
	``,
	` `,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001) + `}`,
}

// FuzzDecodeLikeTheSDK feeds the same bytes to Helix's decoder and the go-sdk's
// jsonrpc.DecodeMessage: both accept or both refuse, and what they accept is the
// same message (kind, method, id, params, result, error) — except ids the go-sdk
// cannot read exactly, where Helix keeps the exact integer.
func FuzzDecodeLikeTheSDK(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareWithSDK(t, data)
	})
}

func compareWithSDK(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := jsonrpc.DecodeMessage(bytes.Clone(data))
	got, _, gotErr := decodeMessage(bytes.Clone(data))
	if wantErr == nil && errors.Is(gotErr, errIDNotInteger) {
		// Helix refuses the ids the go-sdk would truncate to another id.
		if r, ok := want.(*jsonrpc.Request); ok {
			if _, isInt := r.ID.Raw().(int64); isInt {
				return
			}
		}
		if r, ok := want.(*jsonrpc.Response); ok {
			if _, isInt := r.ID.Raw().(int64); isInt {
				return
			}
		}
		t.Fatalf("%q: Helix refuses an id the go-sdk reads as %#v", data, want)
	}
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: go-sdk error %v, Helix error %v", data, wantErr, gotErr)
	}
	if wantErr != nil {
		return
	}
	switch w := want.(type) {
	case *jsonrpc.Request:
		g, ok := got.(*jsonrpc.Request)
		if !ok {
			t.Fatalf("%q: go-sdk reads a request, Helix %T", data, got)
		}
		if g.Method != w.Method || !bytes.Equal(g.Params, w.Params) {
			t.Fatalf("%q: go-sdk %q %s, Helix %q %s", data, w.Method, w.Params, g.Method, g.Params)
		}
		compareIDs(t, data, w.ID, g.ID)
	case *jsonrpc.Response:
		g, ok := got.(*jsonrpc.Response)
		if !ok {
			t.Fatalf("%q: go-sdk reads a response, Helix %T", data, got)
		}
		we, _ := json.Marshal(w.Error)
		ge, _ := json.Marshal(g.Error)
		if !bytes.Equal(g.Result, w.Result) || !bytes.Equal(we, ge) {
			t.Fatalf("%q: go-sdk %s %s, Helix %s %s", data, w.Result, we, g.Result, ge)
		}
		compareIDs(t, data, w.ID, g.ID)
	}
}

// compareIDs: equal, or an integer beyond float64's exact range, where the go-sdk
// rounds and Helix does not.
func compareIDs(t *testing.T, data []byte, sdkID, helixID jsonrpc.ID) {
	t.Helper()
	if sdkID == helixID {
		return
	}
	n, ok := helixID.Raw().(int64)
	if ok && (n > 1<<53 || n < -(1<<53)) {
		return
	}
	t.Fatalf("%q: go-sdk id %#v, Helix id %#v", data, sdkID.Raw(), helixID.Raw())
}

func TestDecodeLikeTheSDK(t *testing.T) {
	t.Parallel()
	for _, s := range decodeSeeds {
		compareWithSDK(t, []byte(s))
	}
	// The two cases of the issue, by name.
	if _, _, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`)); err != nil {
		t.Errorf(`"id":1.0 refused: %v`, err)
	}
	if _, _, err := decodeMessage([]byte(`{"ID":1,"Method":"ping"}`)); err == nil {
		t.Error(`{"ID":1,"Method":"ping"} accepted`)
	}
}

// Number ids that are no integer of int64 are invalid requests (-32600, the
// transports answer them with id null), in a batch element too; integer
// spellings float64 holds exactly are that integer.
func TestNonIntegerIDsRefused(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"1.5", "-0.25", "123456789012345678901234567890", "-123456789012345678901234567890", "9223372036854775808", "1e19", "1e300"} {
		_, _, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}`))
		if !errors.Is(err, errIDNotInteger) {
			t.Errorf("id %s: %v, want it refused", raw, err)
			continue
		}
		if e := parseErrorResponse(err); e.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(e.Message, raw) {
			t.Errorf("id %s answered %d %q", raw, e.Code, e.Message)
		}
	}
	body, err := decodeBody([]byte(`[{"jsonrpc":"2.0","id":2.5,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`))
	if err != nil || len(body.msgs) != 1 || len(body.refused) != 1 || body.refused[0].at != 0 || body.refused[0].err.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("batch: %+v %v", body, err)
	}
	for raw, want := range map[string]int64{"1.0": 1, "1e3": 1000, "-2E2": -200, "9007199254740992.0": 1 << 53} {
		m, _, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}`))
		if err != nil || m.(*jsonrpc.Request).ID.Raw() != any(want) {
			t.Errorf("id %s: %v %v, want %d", raw, m, err, want)
		}
	}
}

func TestExactIDs(t *testing.T) {
	t.Parallel()
	if !exactIDs {
		t.Fatal("jsonrpc.ID's layout changed: integer ids are read through float64 again")
	}
	for _, n := range []int64{0, 1, -1, 1<<53 + 1, math.MaxInt64, math.MinInt64} {
		raw := strconv.FormatInt(n, 10)
		m, _, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		id := m.(*jsonrpc.Request).ID
		if id.Raw() != any(n) || string(encodeID(id)) != raw {
			t.Errorf("id %s read as %#v, written as %s", raw, id.Raw(), encodeID(id))
		}
	}
	want, _ := jsonrpc.MakeID(float64(7))
	if int64ID(7) != want {
		t.Error("int64ID(7) differs from the go-sdk's id 7")
	}
}

func TestDecodeBodyNullIDAndBatches(t *testing.T) {
	t.Parallel()
	body, err := decodeBody([]byte(`[{"jsonrpc":"2.0","id":null,"method":"tools/call"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"tools/call"}]`))
	if err != nil || !body.batch || len(body.msgs) != 3 || len(body.nullID) != 1 || body.nullID[0] != 0 {
		t.Fatalf("%+v %v", body, err)
	}
	if e := invalidRequest(body.msgs[0], true); e == nil || e.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("id null: %v", e)
	}
	if e := invalidRequest(body.msgs[1], false); e != nil {
		t.Errorf("notification refused: %v", e)
	}
	if e := invalidRequest(body.msgs[2], false); e == nil || e.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("tools/call without id: %v", e)
	}
	for in, code := range map[string]int64{`this is not json`: -32700, `{"a":1,}`: -32700, `42`: -32600, `[]`: -32600, `{}`: -32600} {
		_, err := decodeBody([]byte(in))
		if err == nil {
			t.Errorf("%s accepted", in)
			continue
		}
		if e := parseErrorResponse(err); e.Code != code {
			t.Errorf("%s: code %d, want %d", in, e.Code, code)
		}
	}
}

func TestDecodeStringInternsMethods(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"tools/call", "tools/list", "initialize", "notifications/initialized", "ping", "tools/cal", "resources/read", ""} {
		raw := []byte(`"` + m + `"`)
		got, err := decodeString(raw)
		if err != nil || got != m {
			t.Errorf("decodeString(%s) = %q, %v", raw, got, err)
		}
	}
}

func TestDecodeStringAllocs(t *testing.T) {
	// Not parallel: allocation counts are the whole process's.
	testtools.SkipAllocsUnderRace(t)
	raw := []byte(`"tools/call"`)
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeString(raw) }); n != 0 {
		t.Errorf("decodeString(%s): %v allocations, want 0", raw, n)
	}
}
