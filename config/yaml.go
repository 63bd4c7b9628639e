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

func checkLists(t reflect.Type, prefix string, doc map[string]any, bad *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		val, ok := doc[tag]
		if tag == "" || !ok || val == nil {
			continue
		}
		key := prefix + tag
		switch section, isMap := val.(map[string]any); {
		case f.Type.Kind() == reflect.Slice && f.Type.Name() == "": // a list, not a MAC
			if _, isList := val.([]any); isList {
				continue
			}
			one := fmt.Sprint(val)
			if _, isString := val.(string); isString {
				one = fmt.Sprintf("%q", val)
			}
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
