// Package slowdown is the perf harness's slowdown scenario, the Homa
// papers' experiment on one machine: clients and a server in network
// namespaces, a tc bottleneck with 8 strict-priority bands, Homa daemons
// against kernel TCP under the workloads W1-W5. See Method for what is
// measured and how, and Distortions for what a 2-CPU virtual machine
// does to it.
package slowdown
