package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// Rate is a link rate in bits per second, read from a string such as
// 10G, 25G, 100M or 400G; 0 is auto (ask the port).
type Rate float64

// Bytes is a size in bytes, read from a string such as 512MiB, 2GiB or
// 1048576; 0 is none.
type Bytes int64

var (
	prefixType = reflect.TypeOf(netip.Prefix{})
	prefixList = reflect.TypeOf([]netip.Prefix{})
	addrType   = reflect.TypeOf(netip.Addr{})
	macType    = reflect.TypeOf(net.HardwareAddr{})
	rateType   = reflect.TypeOf(Rate(0))
	bytesType  = reflect.TypeOf(Bytes(0))
)

// typedHook parses the Spec's typed values from the strings of the file,
// the environment and the flags, once; mapstructure names the key of a
// value that fails.
func typedHook(from, to reflect.Type, data any) (any, error) {
	s, ok := data.(string)
	if !ok || from.Kind() != reflect.String {
		return data, nil
	}
	switch to {
	case prefixList: // from the environment: comma-separated
		var list []netip.Prefix
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			p, err := netip.ParsePrefix(f)
			if err != nil || p.Addr().Zone() != "" {
				return nil, fmt.Errorf("%q is not an IP address/prefix (e.g. 10.0.0.0/24 or 2001:db8::/64)", f)
			}
			list = append(list, p)
		}
		return list, nil
	case prefixType:
		if s == "" {
			return netip.Prefix{}, nil
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return nil, fmt.Errorf("%q is not an IP address/prefix (e.g. 10.0.0.1/24 or 2001:db8::1/64)", s)
		}
		return p, nil
	case addrType:
		if s == "" {
			return netip.Addr{}, nil
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an IP address (e.g. 10.0.0.1 or 2001:db8::1)", s)
		}
		return a.Unmap(), nil
	case macType:
		if s == "" {
			return net.HardwareAddr(nil), nil
		}
		hw, err := net.ParseMAC(s)
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("%q is not a MAC address like 02:00:00:00:00:01", s)
		}
		return hw, nil
	case rateType:
		if s == "" || s == "auto" {
			return Rate(0), nil
		}
		r, err := ParseRate(s)
		if err != nil {
			return nil, fmt.Errorf("%v; or auto to ask the port", err)
		}
		return Rate(r), nil
	case bytesType:
		if s == "" {
			return Bytes(0), nil
		}
		b, err := ParseBytes(s)
		if err != nil {
			return nil, err
		}
		return Bytes(b), nil
	}
	return data, nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// numberHook parses integers, numbers and booleans from strings as
// mapstructure's weak typing would (base prefixes allowed, "" left to it),
// but fails with the value and what is wanted ("10k" is not an integer),
// not strconv's words; and refuses a fraction where an integer is wanted,
// which mapstructure would truncate.
func numberHook(from, to reflect.Type, data any) (any, error) {
	if to == durationType {
		return data, durationUnit(data)
	}
	if f, ok := data.(float64); ok && isInt(to.Kind()) && f != math.Trunc(f) {
		return nil, fmt.Errorf("%v is not an integer", f)
	}
	s, ok := data.(string)
	if !ok || from.Kind() != reflect.String || s == "" {
		return data, nil
	}
	var err error
	switch k := to.Kind(); {
	case k >= reflect.Int && k <= reflect.Int64:
		if _, err = strconv.ParseInt(s, 0, to.Bits()); err != nil {
			return nil, numberError(s, "an integer", err)
		}
	case k >= reflect.Uint && k <= reflect.Uint64:
		if _, err = strconv.ParseUint(s, 0, to.Bits()); err != nil {
			return nil, numberError(s, "a non-negative integer", err)
		}
	case k == reflect.Float32 || k == reflect.Float64:
		if _, err = strconv.ParseFloat(s, to.Bits()); err != nil {
			return nil, numberError(s, "a number", err)
		}
	case k == reflect.Bool:
		if _, err = strconv.ParseBool(s); err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
	}
	return data, nil
}

// durationUnit refuses a duration given as a bare number (arp.timeout: 5
// in a file, HOMA_ARP_TIMEOUT=5), which would be read as nanoseconds; 0
// is 0 in any unit. A time.Duration (the defaults) passes.
func durationUnit(data any) error {
	var n string
	switch v := data.(type) {
	case int, int64, uint, uint64, float64:
		n = fmt.Sprint(v)
	case string:
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return nil // a duration or not, for the next hook to say
		}
		n = strings.TrimSpace(v)
	default:
		return nil
	}
	if f, _ := strconv.ParseFloat(n, 64); f == 0 {
		return nil
	}
	return fmt.Errorf("%s is a number without a unit; give a unit, e.g. %ss or %sms", n, n, n)
}

func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Int64 || k >= reflect.Uint && k <= reflect.Uint64
}

// numberError says why s is not what (a strconv error, err).
func numberError(s, what string, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range for %s", s, what)
	}
	return fmt.Errorf("%q is not %s", s, what)
}

// decodeHook is viper's default hooks with typedHook and numberHook
// first (typedHook's types, Bytes and Rate, are numbers from strings of
// their own).
var decodeHook = mapstructure.ComposeDecodeHookFunc(
	typedHook,
	numberHook,
	mapstructure.StringToTimeDurationHookFunc(),
	mapstructure.StringToSliceHookFunc(","),
)

// removedKeys are keys that once existed and did nothing; a config that
// still sets one is told what to use instead.
var removedKeys = map[string]string{
	"protocol.num_priorities": "it was never read; map priorities onto fewer TX queues with ports[].priority_map, and use fewer unscheduled levels with protocol.unsched_cutoffs",
}
