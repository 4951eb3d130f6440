package pvesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// writeData writes PVE's success envelope, {"data": ...}.
func writeData(w http.ResponseWriter, data any) {
	writeEnvelope(w, map[string]any{"data": data})
}

func writeEnvelope(w http.ResponseWriter, env map[string]any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	_ = json.NewEncoder(w).Encode(env)
}

// writeError writes a failed call the way pveproxy does: the first line of the message is the
// HTTP reason phrase (all go-proxmox reports for a 500) and, for 5xx handler errors, the
// body is {"data":null,"message":"...\n"}. 401 and 595 have an empty body.
func writeError(w http.ResponseWriter, code int, message string) {
	reason, _, _ := strings.Cut(message, "\n")
	var body []byte
	if code != http.StatusUnauthorized && code != 595 {
		body, _ = json.Marshal(map[string]any{"data": nil, "message": message + "\n"})
	}
	writeRaw(w, code, reason, body)
}

// writeParamError is PVE's 400: reason "Parameter verification failed." and a map from
// parameter to problem.
func writeParamError(w http.ResponseWriter, errs map[string]string) {
	body, _ := json.Marshal(map[string]any{"data": nil, "errors": errs, "message": "Parameter verification failed.\n"})
	writeRaw(w, http.StatusBadRequest, "Parameter verification failed.", body)
}

// paramError is the 400 for a single parameter.
func paramError(w http.ResponseWriter, param, problem string) {
	writeParamError(w, map[string]string{param: problem})
}

// writeRaw sends a status line with a custom reason phrase. net/http always writes the
// standard text for a code, so the connection is hijacked; a writer that cannot be hijacked
// (a recorder) gets the standard status line and the same body.
func writeRaw(w http.ResponseWriter, code int, reason string, body []byte) {
	if sw, logged := w.(*statusWriter); logged {
		sw.setStatus(code)
	}
	if hj, ok := w.(http.Hijacker); ok {
		conn, buf, err := hj.Hijack()
		if err == nil {
			defer conn.Close()
			reason = strings.NewReplacer("\r", " ", "\n", " ").Replace(reason)
			fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json;charset=UTF-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", code, reason, len(body))
			_, _ = buf.Write(body)
			_ = buf.Flush()
			return
		}
		if !errors.Is(err, http.ErrNotSupported) {
			return
		}
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// notImplemented is pveproxy's answer for a path or method it has no handler for.
func notImplemented(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, fmt.Sprintf("Method '%s %s' not implemented", r.Method, strings.TrimPrefix(r.URL.Path, apiPrefix)))
}
