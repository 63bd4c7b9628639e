package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Source says where a Spec comes from besides the defaults and the
// environment.
type Source struct {
	File string // YAML file; "" for none
	// YAML is a config document given inline instead of File (an
	// embedded default); File wins when both are set.
	YAML string
	// Flags maps config keys to the command-line flags that set them; a flag
	// counts only when the user gave it.
	Flags map[string]*pflag.Flag
	// EAL, when not nil, replaces the file's eal list: run's arguments
	// after --. The lcores are checked against it.
	EAL []string
}

// ExampleFile is where the example config, every key documented, is: in
// the source tree and in the container image.
const ExampleFile = "config/example.yaml (in the image: /etc/homa-dpdk/example.yaml)"

// Load reads, merges and validates a Spec.
func Load(src Source) (*Spec, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	if src.File != "" {
		data, err := os.ReadFile(src.File)
		if err != nil {
			return nil, fmt.Errorf("config file: %w", err)
		}
		doc, err := parseYAML(data)
		if err == nil {
			err = listsAreLists(doc)
		}
		if err != nil {
			return nil, fmt.Errorf("config file %s: %w", src.File, err)
		}
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("config file %s: %w", src.File, err)
		}
	} else if src.YAML != "" {
		doc, err := parseYAML([]byte(src.YAML))
		if err == nil {
			err = listsAreLists(doc)
		}
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := v.ReadConfig(strings.NewReader(src.YAML)); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	v.SetEnvPrefix("HOMA")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if err := checkEnv(os.Environ()); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	keys := make([]string, 0, len(src.Flags))
	for k := range src.Flags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := defaults[k]; !ok && k != "eal" {
			return nil, fmt.Errorf("flag --%s is bound to unknown config key %q", src.Flags[k].Name, k)
		}
		if err := v.BindPFlag(k, src.Flags[k]); err != nil {
			return nil, fmt.Errorf("flag --%s: %w", src.Flags[k].Name, err)
		}
	}
	for _, k := range sortedKeys(removedKeys) {
		if v.IsSet(k) {
			return nil, fmt.Errorf("%s: %s is no longer a key: %s", where(src.File), k, removedKeys[k])
		}
	}
	var s Spec
	if err := v.UnmarshalExact(&s, viper.DecodeHook(decodeHook)); err != nil {
		return nil, decodeError(src.File, err)
	}
	if src.EAL != nil {
		s.EAL = src.EAL
	}
	for i := range s.Ports {
		s.Ports[i].applyDefaults()
	}
	if err := s.Validate(); err != nil {
		if src.File != "" && !onlyEnv(err) {
			return nil, fmt.Errorf("config %s: %w", src.File, err)
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := s.Normalize(); err != nil {
		return nil, fmt.Errorf("%s: %w", where(src.File), err)
	}
	return &s, nil
}

var (
	invalidKeys = regexp.MustCompile(`'([^']*)' has invalid keys: (.*)`)
	keyMessage  = regexp.MustCompile(`^'([^']+)' (.*)$`)
)

// hint adds what a value of the failed kind looks like.
func hint(msg string) string {
	switch {
	case strings.Contains(msg, "duration"):
		return msg + " (want a duration like 1ms, 5us, 2s)"
	case strings.Contains(msg, "'int'") || strings.Contains(msg, "'uint'"):
		return msg + " (want an integer)"
	case strings.Contains(msg, "'float"):
		return msg + " (want a number)"
	case strings.Contains(msg, "'bool'"):
		return msg + " (want true or false)"
	}
	return msg
}

func where(file string) string {
	if file != "" {
		return "config " + file
	}
	return "config"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeError rewrites mapstructure's messages so that each names the key
// in the file's terms: "unknown key protocol.max_incomming".
func decodeError(file string, err error) error {
	var msgs []string
	fileBlamed := false // a message is about the file's keys (or unknown)
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if line == "" || strings.HasPrefix(line, "decoding failed") || strings.HasSuffix(line, "error(s):") {
			continue
		}
		if m := invalidKeys.FindStringSubmatch(line); m != nil {
			// Unknown keys come from the file: a HOMA_ variable naming
			// none was refused by checkEnv.
			fileBlamed = true
			for _, k := range strings.Split(m[2], ", ") {
				msgs = append(msgs, unknownKey(m[1], k))
			}
			continue
		}
		if m := keyMessage.FindStringSubmatch(line); m != nil {
			if env := fromEnv(m[1]); env != "" {
				// The value came from the environment, not the file.
				msgs = append(msgs, m[1]+" (set by "+env+"): "+hint(m[2]))
				continue
			}
			fileBlamed = true
			msgs = append(msgs, m[1]+": "+hint(m[2]))
			continue
		}
		fileBlamed = true
		msgs = append(msgs, line)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("%s: %w", where(file), err)
	}
	if !fileBlamed {
		file = ""
	}
	return fmt.Errorf("%s: %w", where(file), errors.New(strings.Join(msgs, "; ")))
}

// unknownKey says that key k under parent ("protocol", "ports[0]"; "" at
// the top) is none of the config's, with the nearest one at its level.
func unknownKey(parent, k string) string {
	join := func(k string) string {
		if parent == "" {
			return k
		}
		return parent + "." + k
	}
	msg := "unknown key " + join(k)
	if near := nearest(k, keysAt(parent)); near != "" {
		msg += ": did you mean " + join(near) + "?"
	}
	return fmt.Sprintf("%s (see %s for the keys)", msg, ExampleFile)
}

// listIndex is a list element's index in a key: the [0] of ports[0].
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// keysAt lists the keys of the Spec under path ("protocol", "ports[0]";
// "" for the top level): the mapstructure names of that struct's fields.
func keysAt(path string) []string {
	t := reflect.TypeOf(Spec{})
	if path != "" {
		for _, part := range strings.Split(listIndex.ReplaceAllString(path, ""), ".") {
			f, ok := fieldTagged(t, part)
			if !ok {
				return nil
			}
			t = f.Type
			for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct {
				return nil
			}
		}
	}
	keys := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("mapstructure"); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// fieldTagged is t's field whose mapstructure name is name.
func fieldTagged(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("mapstructure") == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// onlyEnv reports whether every problem in a Validate error is about a
// key that the environment set: the file is not to blame then.
func onlyEnv(err error) bool {
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, " (set by "+envPrefix) {
			return false
		}
	}
	return true
}
