// Package starts is the starts scenario: fresh daemons, ten per link
// (--smoke two, ring alone): the first 100 small RPCs of each against its
// steady P50 (the warm-up penalty), and the spread of the starts' 1 MB P50s
// (bimodal starts), with the page faults and the regions' mapping of each
// phase as evidence (perf/procstat).
package starts
