package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The enums are written as words in JSON (`tracer events --output json`,
// record files): "ignored", not 2. They read back from words and, for
// records written before, from numbers.

// MarshalJSON writes the event type's name.
func (t EventType) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads a name or a number.
func (t *EventType) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, (*uint32)(t), func(s string) (uint32, bool) {
		for _, x := range EventTypes() {
			if x.String() == s {
				return uint32(x), true
			}
		}
		return 0, false
	})
}

// MarshalJSON writes the disposition's name.
func (d Disposition) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a name or a number.
func (d *Disposition) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, (*uint32)(d), func(s string) (uint32, bool) {
		for _, x := range []Disposition{DispositionDefault, DispositionIgnored, DispositionHandler} {
			if x.String() == s {
				return uint32(x), true
			}
		}
		return 0, false
	})
}

// MarshalJSON writes the result's name.
func (r SignalResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a name or a number.
func (r *SignalResult) UnmarshalJSON(b []byte) error {
	var u uint32
	err := unmarshalEnum(b, &u, func(s string) (uint32, bool) {
		for x := SignalDelivered; x <= SignalLoseInfo; x++ {
			if x.String() == s {
				return uint32(x), true
			}
		}
		return 0, false
	})
	*r = SignalResult(int32(u))
	return err
}

// MarshalJSON writes the origin's flags as words ("watched|target"; "-"
// for none).
func (o Origin) MarshalJSON() ([]byte, error) { return json.Marshal(o.String()) }

// UnmarshalJSON reads flag words or a number.
func (o *Origin) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, (*uint32)(o), func(s string) (uint32, bool) {
		var v Origin
		if s == "-" {
			return 0, true
		}
		for _, w := range strings.Split(s, "|") {
			switch w {
			case "watched":
				v |= OriginWatched
			case "runtime":
				v |= OriginRuntime
			case "cni":
				v |= OriginCNI
			case "target":
				v |= OriginTarget
			default:
				return 0, false
			}
		}
		return uint32(v), true
	})
}

func unmarshalEnum(b []byte, v *uint32, word func(string) (uint32, bool)) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		x, ok := word(s)
		if !ok {
			return fmt.Errorf("unknown value %q", s)
		}
		*v = x
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("want a word or a number, got %s", b)
	}
	*v = uint32(n)
	return nil
}
