package kernel

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// `tracer events --output json` spells the enums as words; they read back
// from words, and from the numbers of records written before.
func TestJSONEnumsAreWords(t *testing.T) {
	ev := &SignalEvent{Header: Header{Type: EventSignalGenerate, Origin: OriginWatched | OriginTarget},
		Signal: 15, Result: SignalIgnored, Disposition: DispositionIgnored}
	var b bytes.Buffer
	if err := NewJSONEncoder(&b).Encode(ev); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`"type":"signal"`, `"origin":"watched|target"`, `"result":"ignored"`, `"disposition":"ignored"`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in %s", want, out)
		}
	}
	var back SignalEvent
	data, _ := json.Marshal(ev)
	if err := json.Unmarshal(data, &back); err != nil || back.Result != ev.Result || back.Disposition != ev.Disposition ||
		back.Origin != ev.Origin || back.Type != ev.Type {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, ev)
	}
	var old SignalEvent
	if err := json.Unmarshal([]byte(`{"type":4,"origin":9,"result":1,"disposition":1}`), &old); err != nil ||
		old.Type != EventSignalGenerate || old.Origin != OriginWatched|OriginTarget || old.Result != SignalIgnored || old.Disposition != DispositionIgnored {
		t.Errorf("numbers: %+v, %v", old, err)
	}
	if err := json.Unmarshal([]byte(`{"disposition":"sometimes"}`), &old); err == nil {
		t.Error("an unknown word was accepted")
	}
}
