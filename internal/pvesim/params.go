package pvesim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// readParams merges body parameters (JSON or form) and query parameters, the query winning as
// in pve-http-server, with values as PVE reads them (JSON numbers in decimal, JSON booleans as
// 1/0). Path parameters may be repeated only with the same value; they are left out of the
// result. On a bad request it answers 400 and returns false.
func readParams(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	out := map[string]string{}
	var body []byte
	if decodesBody(r) {
		var err error
		if body, err = io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
			writeError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
			return nil, false
		}
	}
	isJSON := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	if isJSON && decodesBody(r) && len(body) == 0 {
		// pve-http-server runs decode_json on whatever body a JSON PUT or POST has.
		writeError(w, http.StatusInternalServerError, `malformed JSON string, neither tag, array, object, number, string or atom, at character offset 0 (before "(end of string)")`)
		return nil, false
	}
	if len(body) > 0 {
		if isJSON {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				writeError(w, http.StatusBadRequest, "malformed JSON body: "+err.Error())
				return nil, false
			}
			for k, v := range m {
				out[k] = scalar(v)
			}
		} else {
			form, err := url.ParseQuery(string(body))
			if err != nil {
				writeError(w, http.StatusBadRequest, "malformed form body: "+err.Error())
				return nil, false
			}
			for k, v := range form {
				out[k] = v[0]
			}
		}
	}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	for _, k := range []string{"node", "vmid", "upid", "storage"} {
		pathValue := r.PathValue(k)
		if v, ok := out[k]; ok && pathValue != "" {
			if v != pathValue {
				paramError(w, k, "duplicate parameter (already defined in URI) with conflicting values!")
				return nil, false
			}
			delete(out, k)
		}
	}
	return out, true
}

// decodesBody tells whether pve-http-server takes parameters from the request's body
// (extract_params): only a PUT's or a POST's. It never decodes another method's body,
// whatever its Content-Type: proxmox-go sends GET and DELETE as application/json without a
// body. A GET or DELETE announcing a length never gets here: ServeHTTP refuses it as PVE does.
func decodesBody(r *http.Request) bool {
	return r.Method == http.MethodPut || r.Method == http.MethodPost
}

// readAllowedParams reads a request's parameters and refuses, as PVE's schema check does,
// any not in allowed.
func readAllowedParams(w http.ResponseWriter, r *http.Request, allowed ...string) (map[string]string, bool) {
	p, ok := readParams(w, r)
	if !ok {
		return nil, false
	}
	if !onlyAllowed(w, p, allowed...) {
		return nil, false
	}
	return p, true
}

// onlyAllowed answers PVE's 400 when p has a parameter outside allowed.
func onlyAllowed(w http.ResponseWriter, p map[string]string, allowed ...string) bool {
	if problems := checkParams(p, allowed...); len(problems) > 0 {
		writeParamError(w, problems)
		return false
	}
	return true
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
