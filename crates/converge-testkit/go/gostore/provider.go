package main

// The provider's logic, whichever protocol carries it: schemas, and each
// call on decoded objects (attribute name -> value; nil is null,
// unknownValue unknown). server5.go and server6.go translate the wire.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// unknownValue is cty's unknown value: msgpack extension 0.
type unknownValue struct{}

func init() {
	msgpack.RegisterExtEncoder(0, unknownValue{}, func(*msgpack.Encoder, reflect.Value) ([]byte, error) {
		return []byte{0}, nil
	})
	msgpack.RegisterExtDecoder(0, unknownValue{}, func(d *msgpack.Decoder, _ reflect.Value, n int) error {
		return d.ReadFull(make([]byte, n))
	})
}

func isUnknown(v interface{}) bool {
	switch v.(type) {
	case unknownValue, *unknownValue:
		return true
	}
	return false
}

type object = map[string]interface{}

// diag is a diagnostic: an error unless warning, about attribute if set.
type diag struct {
	warning   bool
	summary   string
	detail    string
	attribute string
}

func errorf(format string, args ...interface{}) []diag {
	return []diag{{summary: fmt.Sprintf(format, args...)}}
}

// attr is one attribute of a schema.
type attr struct {
	name                         string
	typ                          string // cty type JSON
	required, optional, computed bool
	sensitive                    bool
}

// block is a schema: its version and attributes.
type block struct {
	version int64
	attrs   []attr
}

type provider struct {
	release string
	// schemaVersion of gostore_item: 1 for releases 1.x, else 2.
	schemaVersion int64

	mu        sync.Mutex
	directory string
	readDelay time.Duration
}

func newProvider(release string) *provider {
	v := int64(2)
	if strings.HasPrefix(release, "1.") {
		v = 1
	}
	return &provider{release: release, schemaVersion: v}
}

// valueAttr is what schema version 1 called `content`.
func (p *provider) valueAttr() string {
	if p.schemaVersion == 1 {
		return "content"
	}
	return "value"
}

func (p *provider) providerSchema() block {
	return block{attrs: []attr{
		{name: "directory", typ: `"string"`, optional: true},
		{name: "read_delay_ms", typ: `"number"`, optional: true},
	}}
}

func (p *provider) itemSchema() block {
	return block{version: p.schemaVersion, attrs: []attr{
		{name: "id", typ: `"string"`, computed: true},
		{name: "key", typ: `"string"`, required: true},
		{name: p.valueAttr(), typ: `"string"`, required: true},
		{name: "note", typ: `"string"`, optional: true, sensitive: true},
		{name: "size", typ: `"number"`, computed: true},
		{name: "revision", typ: `"number"`, computed: true},
	}}
}

func (p *provider) dataSchema() block {
	return block{attrs: []attr{
		{name: "id", typ: `"string"`, computed: true},
		{name: "key", typ: `"string"`, required: true},
		{name: p.valueAttr(), typ: `"string"`, computed: true},
		{name: "revision", typ: `"number"`, computed: true},
	}}
}

const itemType = "gostore_item"

// decode reads a msgpack object; nil for null.
func decode(b []byte) (object, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var v interface{}
	if err := msgpack.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("expected an object, got %T", v)
	}
	return m, nil
}

// encode writes o with every attribute of s (missing ones null).
func encode(o object, s block) []byte {
	if o == nil {
		b, _ := msgpack.Marshal(nil)
		return b
	}
	full := object{}
	for _, a := range s.attrs {
		full[a.name] = o[a.name]
	}
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	var buf strings.Builder
	enc.Reset(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(full); err != nil {
		panic(err)
	}
	return []byte(buf.String())
}

func asInt(v interface{}) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), true
	case float64:
		return int64(n), true
	case float32:
		return int64(n), true
	}
	return 0, false
}

// stored is an object's file.
type stored struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Note     string `json:"note,omitempty"`
	Revision int64  `json:"revision"`
}

func (p *provider) path(key string) (string, []diag) {
	p.mu.Lock()
	dir := p.directory
	p.mu.Unlock()
	if dir == "" {
		return "", errorf("no directory: set the provider's directory or GOSTORE_DIRECTORY")
	}
	return filepath.Join(dir, key+".json"), nil
}

func (p *provider) load(key string) (*stored, []diag) {
	path, d := p.path(key)
	if d != nil {
		return nil, d
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errorf("reading %s: %v", path, err)
	}
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, errorf("%s is not an object file: %v", path, err)
	}
	return &s, nil
}

func (p *provider) save(s *stored) []diag {
	path, d := p.path(s.Key)
	if d != nil {
		return d
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return errorf("writing %s: %v", path, err)
	}
	return nil
}

// state is the resource state of an object file.
func (p *provider) state(s *stored) object {
	o := object{
		"id":          s.Key,
		"key":         s.Key,
		p.valueAttr(): s.Value,
		"size":        int64(len(s.Value)),
		"revision":    s.Revision,
	}
	if s.Note != "" {
		o["note"] = s.Note
	}
	return o
}

func (p *provider) configure(config object) []diag {
	event("configure")
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir, ok := config["directory"].(string); ok && dir != "" {
		p.directory = dir
	} else {
		p.directory = os.Getenv("GOSTORE_DIRECTORY")
	}
	if ms, ok := asInt(config["read_delay_ms"]); ok {
		p.readDelay = time.Duration(ms) * time.Millisecond
	}
	return nil
}

func (p *provider) validateItem(config object) []diag {
	if key, ok := config["key"].(string); ok && strings.ContainsAny(key, "/\\") {
		return []diag{{summary: "invalid key", detail: fmt.Sprintf("%q: a key may not contain a slash", key), attribute: "key"}}
	}
	return nil
}

// plan: the planned state and the attributes whose change replaces.
func (p *provider) plan(prior, proposed object) (object, []string, []diag) {
	if proposed == nil {
		return nil, nil, nil
	}
	planned := object{}
	for k, v := range proposed {
		planned[k] = v
	}
	value := proposed[p.valueAttr()]
	if s, ok := value.(string); ok {
		planned["size"] = int64(len(s))
	} else {
		planned["size"] = unknownValue{}
	}
	if prior == nil {
		planned["id"] = unknownValue{}
		planned["revision"] = unknownValue{}
		return planned, nil, nil
	}
	var replace []string
	if !equal(prior["key"], proposed["key"]) {
		replace = append(replace, "key")
		planned["id"] = unknownValue{}
		planned["revision"] = unknownValue{}
		return planned, replace, nil
	}
	if equal(prior[p.valueAttr()], value) && equal(prior["note"], proposed["note"]) {
		planned["revision"] = prior["revision"]
	} else {
		planned["revision"] = unknownValue{}
	}
	planned["id"] = prior["id"]
	return planned, nil, nil
}

func equal(a, b interface{}) bool {
	if isUnknown(a) || isUnknown(b) {
		return false
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func (p *provider) apply(prior, planned object) (object, []diag) {
	if planned == nil {
		key, _ := prior["key"].(string)
		path, d := p.path(key)
		if d != nil {
			return prior, d
		}
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return prior, errorf("deleting %s: %v", path, err)
		}
		return nil, nil
	}
	key, _ := planned["key"].(string)
	value, _ := planned[p.valueAttr()].(string)
	note, _ := planned["note"].(string)
	s := &stored{Key: key, Value: value, Note: note, Revision: 1}
	if prior != nil && equal(prior["key"], planned["key"]) {
		existing, d := p.load(key)
		if d != nil {
			return prior, d
		}
		if existing != nil {
			s.Revision = existing.Revision
			if existing.Value != value || existing.Note != note {
				s.Revision++
			}
		}
	} else if existing, _ := p.load(key); existing != nil {
		return nil, errorf("an object with key %q already exists", key)
	}
	if d := p.save(s); d != nil {
		return nil, d
	}
	return p.state(s), nil
}

func (p *provider) read(current object) (object, []diag) {
	p.mu.Lock()
	delay := p.readDelay
	p.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	key, _ := current["key"].(string)
	if key == "" {
		key, _ = current["id"].(string)
	}
	s, d := p.load(key)
	if d != nil || s == nil {
		return nil, d
	}
	return p.state(s), nil
}

func (p *provider) importState(id string) (object, []diag) {
	s, d := p.load(id)
	if d != nil {
		return nil, d
	}
	if s == nil {
		return nil, errorf("no object with key %q to import", id)
	}
	return object{"id": id, "key": id}, nil
}

// upgrade reads a raw JSON state of any earlier schema version.
func (p *provider) upgrade(version int64, raw []byte) (object, []diag) {
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, errorf("the stored state is not JSON: %v", err)
	}
	if version > p.schemaVersion {
		return nil, errorf("state of schema version %d is newer than this release's (%d)", version, p.schemaVersion)
	}
	if version == 1 && p.schemaVersion == 2 {
		o["value"] = o["content"]
		delete(o, "content")
	}
	// JSON numbers arrive as float64.
	for _, k := range []string{"size", "revision"} {
		if n, ok := o[k].(float64); ok {
			o[k] = int64(n)
		}
	}
	return o, nil
}

func (p *provider) readData(config object) (object, []diag) {
	key, _ := config["key"].(string)
	s, d := p.load(key)
	if d != nil {
		return nil, d
	}
	if s == nil {
		return nil, errorf("no object with key %q", key)
	}
	return object{"id": key, "key": key, p.valueAttr(): s.Value, "revision": s.Revision}, nil
}
