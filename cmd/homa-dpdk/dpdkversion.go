package main

import "github.com/homa-dpdk/homa-dpdk/dpdk"

// dpdkVersion is the version of the DPDK library the program runs with,
// for `version`.
func dpdkVersion() string { return dpdk.Version() }
