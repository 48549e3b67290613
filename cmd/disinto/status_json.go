package main

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"

	"github.com/disinto/disinto/lib/daemon"
)

// writeStatusJSON prints the report as `disinto status --json` shows it to
// people and scripts: every list is a list ([] rather than null), and every
// duration is in seconds (a field "x_seconds" where the daemon's wire and
// the ledger carry "x_ns").
func writeStatusJSON(w io.Writer, rep daemon.Report) error {
	fillNilSlices(reflect.ValueOf(&rep).Elem())
	raw, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(inSeconds(tree))
}

// fillNilSlices replaces every nil slice reachable from v (through
// structs, pointers, slices and maps of them) by an empty one.
func fillNilSlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fillNilSlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() || f.Kind() == reflect.Struct {
				fillNilSlices(f)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			fillNilSlices(v.Index(i))
		}
	case reflect.Map:
		// Map values are not addressable; the status has no lists in maps.
	}
}

// inSeconds renames each "x_ns" number of a decoded JSON tree to
// "x_seconds", its value divided by 1e9.
func inSeconds(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if n, ok := val.(json.Number); ok && strings.HasSuffix(k, "_ns") {
				if ns, err := n.Int64(); err == nil {
					out[strings.TrimSuffix(k, "_ns")+"_seconds"] = float64(ns) / 1e9
					continue
				}
			}
			out[k] = inSeconds(val)
		}
		return out
	case []any:
		for i := range x {
			x[i] = inSeconds(x[i])
		}
		return x
	}
	return v
}
