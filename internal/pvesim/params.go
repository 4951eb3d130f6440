package pvesim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// params merges query and body parameters (JSON or form), values as PVE reads them: numbers
// in decimal, booleans as 1/0.
func params(r *http.Request) map[string]string {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if len(body) == 0 {
		return out
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || body[0] == '{' {
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			for k, v := range m {
				out[k] = scalar(v)
			}
		}
		return out
	}
	if form, err := url.ParseQuery(string(body)); err == nil {
		for k, v := range form {
			out[k] = v[0]
		}
	}
	return out
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// boolParam reads a PVE boolean: 1/0, true/false, on/off, yes/no.
func boolParam(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "on", "yes":
		return true
	}
	return false
}
