package main

import (
	"os/exec"
	"strings"
)

// dpdkVersion is the DPDK version pkg-config reports, for `version`.
func dpdkVersion() string {
	out, err := exec.Command("pkg-config", "--modversion", "libdpdk").Output()
	if err != nil {
		return "DPDK version unknown"
	}
	return "DPDK " + strings.TrimSpace(string(out))
}
