package config

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// yamlLine is how yaml.v3 starts a syntax error: "yaml: line 3: ".
var yamlLine = regexp.MustCompile(`^yaml: line [0-9]+: `)

// maxLinesSearched bounds the prefixes yamlSyntax parses (a quadratic
// search; configs are a few hundred lines).
const maxLinesSearched = 5000

// yamlSyntax parses data as YAML and returns its syntax error, if any,
// naming the line of data that holds the problem: "line 6: did not find
// expected key ("  bad: 4")".
//
// yaml.v3 names another line: that of the context mark (where the
// mapping or sequence around the problem starts), counted from 0 for
// parser errors, so a key dedented on line 6 of a list that starts on
// line 4 is reported at line 3. Its problem mark is not exported, but the
// parser reads the file in order: the problem is on the last line of the
// shortest prefix of the file that fails with the same error.
func yamlSyntax(data []byte) error {
	var doc map[string]any
	err := yaml.Unmarshal(data, &doc)
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !yamlLine.MatchString(msg) {
		return err // not a syntax error with a line: viper reports it
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
