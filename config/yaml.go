package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlLine is how yaml.v3 starts a syntax error: "yaml: line 3: ".
var yamlLine = regexp.MustCompile(`^yaml: line [0-9]+: `)

// maxLinesSearched bounds the prefixes yamlSyntax parses (a quadratic
// search; configs are a few hundred lines).
const maxLinesSearched = 5000

// parseYAML parses data as YAML and returns the document, or its syntax
// error naming the line of data that holds the problem: "line 6: did not
// find expected key ("  bad: 4")".
//
// yaml.v3 names another line: that of the context mark (where the
// mapping or sequence around the problem starts), counted from 0 for
// parser errors, so a key dedented on line 6 of a list that starts on
// line 4 is reported at line 3. Its problem mark is not exported, but the
// parser reads the file in order: the problem is on the last line of the
// shortest prefix of the file that fails with the same error.
func parseYAML(data []byte) (map[string]any, error) {
	var doc map[string]any
	err := yaml.Unmarshal(data, &doc)
	if err == nil {
		return doc, nil
	}
	return nil, syntaxError(data, err)
}

// syntaxError is err, yaml.v3's error for data, at the line of data that
// holds the problem.
func syntaxError(data []byte, err error) error {
	msg := err.Error()
	if !yamlLine.MatchString(msg) {
		return err // not a syntax error with a line
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := 1; k <= len(lines) && k <= maxLinesSearched; k++ {
		var part map[string]any
		if e := yaml.Unmarshal(bytes.Join(lines[:k], nil), &part); e != nil && e.Error() == msg {
			text := string(bytes.TrimRight(lines[k-1], "\r\n"))
			return fmt.Errorf("line %d: %s (%q)", k, yamlLine.ReplaceAllString(msg, ""), text)
		}
	}
	return errors.New(msg)
}

// listExamples are what a list looks like for the keys where [value] is
// not a good example.
var listExamples = map[string]string{
	"eal":    `["-l", "0-1", "--no-pci"]`,
	"lcores": "[1] (one EAL lcore id per port: lcores[i] polls ports[i])",
}

// listsAreLists refuses a single value in doc (the file) for a key of the
// Spec that is a list. mapstructure's weak typing would take it as a
// one-element list, but lcores: 2 may be meant as two lcores and
// eal: -l 0-1 as two arguments; the environment, which has no lists,
// gives them comma-separated instead.
func listsAreLists(doc map[string]any) error {
	var bad []string
	checkLists(reflect.TypeOf(Spec{}), "", doc, &bad)
	if len(bad) == 0 {
		return nil
	}
	return errors.New(strings.Join(bad, "; "))
}

// mapLists are the lists of maps (the top-level lists of structs): what
// one element is called, and an element's first keys with example
// values, the first taken from the value given where it is a string
// (ports: net_memif0 names a device).
var mapLists = map[string]struct {
	noun    string
	example [][2]string
}{
	"ports":      {"port", [][2]string{{"device", "net_memif0"}, {"address", "10.0.0.1/24"}}},
	"neighbours": {"neighbour", [][2]string{{"ip", "10.0.0.2"}, {"mac", "'02:00:00:00:00:02'"}}},
	"peers":      {"peer", [][2]string{{"prefix", "10.0.1.0/24"}, {"variant", "auto"}}},
}

// mapListShape shows how list key's elements are written, as a YAML
// flow list (unless block only) and as lines of their own, with values
// from given (a scalar for the first key, or a map) where it has them.
func mapListShape(key string, given any, blockOnly bool) string {
	ml := mapLists[key]
	var flow, lines []string
	for i, kv := range ml.example {
		v := kv[1]
		switch g := given.(type) {
		case string:
			if i == 0 && g != "" {
				v = g
			}
		case map[string]any:
			if s, ok := g[kv[0]].(string); ok && s != "" {
				v = s
			}
		}
		flow = append(flow, kv[0]+": "+v)
		indent := "    "
		if i == 0 {
			indent = "  - "
		}
		lines = append(lines, fmt.Sprintf("%q", indent+kv[0]+": "+v))
	}
	block := fmt.Sprintf("on lines of their own %q, %s", key+":", strings.Join(lines, ", "))
	if blockOnly {
		return block
	}
	return fmt.Sprintf("%s: [{%s}], or %s", key, strings.Join(flow, ", "), block)
}

func checkLists(t reflect.Type, prefix string, doc map[string]any, bad *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		val, ok := doc[tag]
		if tag == "" || !ok || val == nil {
			continue
		}
		key := prefix + tag
		_, ofMaps := mapLists[key]
		ofMaps = ofMaps && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct
		switch section, isMap := val.(map[string]any); {
		case ofMaps:
			noun := mapLists[key].noun
			list, isList := val.([]any)
			switch {
			case isMap:
				*bad = append(*bad, fmt.Sprintf("%s: one map, not a list of maps; start each %s with \"- \", e.g. %s", key, noun, mapListShape(key, section, true)))
			case !isList:
				*bad = append(*bad, fmt.Sprintf("%s: %s is one value, not a list of maps; write each %s as a map in a YAML list, e.g. %s", key, oneValue(val), noun, mapListShape(key, val, false)))
			}
			for j, el := range list {
				m, elIsMap := el.(map[string]any)
				if !elIsMap {
					*bad = append(*bad, fmt.Sprintf("%s[%d]: %s is not a map; write each %s as a map in a YAML list, e.g. %s", key, j, oneValue(el), noun, mapListShape(key, el, false)))
					break
				}
				checkLists(f.Type.Elem(), fmt.Sprintf("%s[%d].", key, j), m, bad)
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Name() == "": // a list, not a MAC
			if _, isList := val.([]any); isList {
				continue
			}
			one := oneValue(val)
			example, ok := listExamples[key]
			if !ok {
				example = "[" + one + "]"
			}
			*bad = append(*bad, fmt.Sprintf("%s: %s is one value, not a list; write a YAML list, e.g. %s: %s", key, one, key, example))
		case f.Type.Kind() == reflect.Struct && isMap:
			checkLists(f.Type, key+".", section, bad)
		}
	}
}

// oneValue is val as a message shows it: a string quoted.
func oneValue(val any) string {
	if s, isString := val.(string); isString {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(val)
}
