package nicq

import "fmt"

// Marking is where a packet's priority travels on the wire.
type Marking int

const (
	// MarkDSCP puts the priority in the IPv4 TOS top 3 bits (TOS = p<<5),
	// as the kernel Homa module does.
	MarkDSCP Marking = iota
	// MarkPCP puts it in an 802.1Q tag's priority code point.
	MarkPCP
)

// ParseMarking reads "dscp" or "pcp".
func ParseMarking(s string) (Marking, error) {
	switch s {
	case "dscp":
		return MarkDSCP, nil
	case "pcp":
		return MarkPCP, nil
	}
	return 0, fmt.Errorf("priority marking %q: choose dscp or pcp", s)
}

func (m Marking) String() string {
	if m == MarkPCP {
		return "pcp"
	}
	return "dscp"
}
